package compare

import (
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// The statistics of compare, each a function of plain numbers.
//
// Percentiles and means of per-request values get a bootstrap over
// requests: each side is resampled with replacement, the statistic is
// computed on each resample, and the 95 % interval of the change is the
// 2.5th to 97.5th percentile of the resampled changes (the percentile
// method). Two devices make it cheap enough to run thousands of times:
//
//   - A quantile of a resample needs only one or two of its order
//     statistics, and the k-th smallest of n resampled indices is
//     floor(n·U(k)), where U(k), the k-th smallest of n uniforms, is
//     Beta(k, n−k+1) and the next ones follow by the Markov property of
//     uniform order statistics. So the resampled quantile is drawn
//     exactly, in O(1), not by drawing and sorting n values.
//   - Inter-token gaps are not independent within a request, so ITL
//     resamples requests with all their gaps (a cluster bootstrap): the
//     gaps are sorted once, and each resample weighs every gap by how many
//     times its request was drawn.

// ciLevel is the confidence of an interval judged alone: two-sided 95 %.
// With several load levels, each metric's intervals are widened by Holm's
// procedure (holm.go).
const ciLevel = 0.95

// tails returns the percentiles (in percent) that bound a two-sided
// interval of confidence conf: 2.5 and 97.5 at 0.95.
func tails(conf float64) (lo, hi float64) {
	lo = 100 * (1 - conf) / 2
	return lo, 100 - lo
}

// stat is one statistic of a distribution: a percentile (p in percent) or,
// with mean set, the mean.
type stat struct {
	p    float64
	mean bool
}

// bootIID returns b bootstrap replicates of each statistic of the sorted
// per-request values xs: reps[i][j] is stat j of resample i.
func bootIID(xs []float64, stats []stat, b int, rng *rand.Rand) [][]float64 {
	n := len(xs)
	// The order statistics (1-based ranks) the percentiles need, ascending.
	var ranks []int
	for _, s := range stats {
		if !s.mean {
			lo, hi, _ := rankOf(n, s.p)
			ranks = append(ranks, lo, hi)
		}
	}
	slices.Sort(ranks)
	ranks = slices.Compact(ranks)
	at := func(k int) int { i, _ := slices.BinarySearch(ranks, k); return i }
	vals := make([]float64, len(ranks))
	reps := make([][]float64, b)
	for i := range reps {
		u, prev := 0.0, 0
		for r, k := range ranks {
			// U(k) given U(prev) = u: u + (1−u)·Beta(k−prev, n−k+1).
			u += (1 - u) * betaRand(float64(k-prev), float64(n-k+1), rng)
			prev = k
			vals[r] = xs[min(int(float64(n)*u), n-1)]
		}
		rep := make([]float64, len(stats))
		for j, s := range stats {
			if s.mean {
				rep[j] = resampledMean(xs, rng.Uint64())
				continue
			}
			lo, hi, frac := rankOf(n, s.p)
			rep[j] = lerp(vals[at(lo)], vals[at(hi)], frac)
		}
		reps[i] = rep
	}
	return reps
}

// resampledMean returns the mean of len(xs) values drawn from xs with
// replacement. It draws with xorshift64* seeded by seed, in local
// variables, and maps a 32-bit draw to an index by multiply-shift (bias
// below len(xs)/2³²): 1.5 times faster than rand.Rand.IntN
// (BenchmarkResampledMean), in the inner loop of every mean's bootstrap.
func resampledMean(xs []float64, seed uint64) float64 {
	n := uint64(len(xs))
	x := seed | 1
	sum := 0.0
	for range n {
		x ^= x >> 12
		x ^= x << 25
		x ^= x >> 27
		sum += xs[((x*0x2545F4914F6CDD1D)>>32*n)>>32]
	}
	return sum / float64(n)
}

// betaRand draws from Beta(a, b), a, b ≥ 1.
func betaRand(a, b float64, rng *rand.Rand) float64 {
	if a == 1 {
		// The smallest of b uniforms: 1 − V^(1/b).
		return -math.Expm1(math.Log1p(-rng.Float64()) / b)
	}
	return distuv.Beta{Alpha: a, Beta: b, Src: rng}.Rand()
}

// rankOf returns the 1-based ranks of the two order statistics numpy's
// linear percentile p of n sorted values interpolates between, and the
// weight of the upper one.
func rankOf(n int, p float64) (lo, hi int, frac float64) {
	h := float64(n-1) * p / 100
	f := math.Floor(h)
	lo = int(f) + 1
	hi = min(lo+1, n)
	return lo, hi, float64(h - f)
}

func lerp(a, b, frac float64) float64 {
	if frac == 0 {
		return a
	}
	return a + float64(frac*(b-a))
}

// clustered is a sample of values grouped in resampling units (the gaps
// of requests): xs sorted, unit[i] the unit of xs[i].
type clustered struct {
	xs    []float64
	unit  []int32
	units int
}

// bootClustered returns b bootstrap replicates of each statistic of c,
// resampling units with replacement and keeping each unit's values.
func bootClustered(c clustered, stats []stat, b int, rng *rand.Rand) [][]float64 {
	reps := make([][]float64, b)
	count := make([]int32, c.units)
	for i := range reps {
		clear(count)
		for range c.units {
			count[rng.IntN(c.units)]++
		}
		reps[i] = weightedStats(c, count, stats)
	}
	return reps
}

// weightedStats returns each statistic of the sequence in which c.xs[k]
// appears count[c.unit[k]] times.
func weightedStats(c clustered, count []int32, stats []stat) []float64 {
	var total int64
	sum := 0.0
	for k, x := range c.xs {
		w := count[c.unit[k]]
		total += int64(w)
		sum += float64(w) * x
	}
	rep := make([]float64, len(stats))
	for j, s := range stats {
		if s.mean {
			rep[j] = sum / float64(total)
			continue
		}
		rep[j] = weightedPercentile(c, count, total, s.p)
	}
	return rep
}

// weightedPercentile is numpy's linear percentile p of the sequence in
// which c.xs[k] appears count[c.unit[k]] times (total values in all).
func weightedPercentile(c clustered, count []int32, total int64, p float64) float64 {
	lo, hi, frac := rankOf(int(total), p)
	var seen int64
	vlo := math.NaN()
	for k, x := range c.xs {
		seen += int64(count[c.unit[k]])
		if math.IsNaN(vlo) && seen >= int64(lo) {
			vlo = x
		}
		if seen >= int64(hi) {
			return lerp(vlo, x, frac)
		}
	}
	return vlo
}

// percentileOf is numpy's linear percentile p of xs, which it sorts.
func percentileOf(xs []float64, p float64) float64 {
	slices.Sort(xs)
	lo, hi, frac := rankOf(len(xs), p)
	return lerp(xs[lo-1], xs[hi-1], frac)
}

// welch returns the interval of confidence conf of mean(b) − mean(a) for
// two sets of replicates (time batches or repeats) by Welch's t interval,
// with the standard errors sa, sb and degrees of freedom from the
// replicate counts.
func welch(diff, sa float64, na int, sb float64, nb int, conf float64) (lo, hi float64) {
	va, vb := sa*sa, sb*sb
	v := va + vb
	if v == 0 {
		return diff, diff
	}
	df := v * v / (va*va/float64(na-1) + vb*vb/float64(nb-1))
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(1 - (1-conf)/2)
	h := t * math.Sqrt(v)
	return diff - h, diff + h
}

// meanSE returns the mean of xs and its standard error (sample standard
// deviation / √n).
func meanSE(xs []float64) (mean, se float64) {
	n := float64(len(xs))
	for _, x := range xs {
		mean += x
	}
	mean /= n
	ss := 0.0
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / (n - 1) / n)
}
