package stats

import (
	"math"
	"math/bits"
	"slices"
	"time"
)

// SketchPoints is how many points a GapSketch keeps: a list of gaps up to
// this long is kept whole, a longer one as a GapSketch.
const SketchPoints = 1024

// GapSketch is a fixed-size summary of a list of n > SketchPoints gaps:
// its exact count, sum, sum of squared deviations, min and max, and
// SketchPoints points. The sorted gaps are cut into SketchPoints blocks of
// ⌊n/SketchPoints⌋ or ⌈n/SketchPoints⌉ consecutive ranks; point j is the
// middle gap of block j and stands for every gap of it. Its size is about
// 8 KiB whatever n.
type GapSketch struct {
	n        int
	sum      Sum128
	sumSq    float64 // Σ(x − mean)² about the list's own mean
	min, max uint64
	points   []uint64 // SketchPoints of them: 8 KiB, a size class of its own
}

// NewGapSketch returns the sketch of gaps (negative gaps count as 0), which
// must hold more than SketchPoints gaps. It copies and sorts them (a radix
// sort: O(n) time, 16 bytes per gap for the time of the call); gaps is not
// modified.
func NewGapSketch(gaps []time.Duration) *GapSketch {
	n := len(gaps)
	buf := make([]uint64, 2*n)
	keys, scratch := buf[:n], buf[n:]
	s := &GapSketch{n: n, points: make([]uint64, SketchPoints)}
	for i, g := range gaps {
		k := gapKey(g)
		keys[i] = k
		s.sum.Add(k)
	}
	mean := s.sum.Mean(n)
	for _, k := range keys {
		d := float64(k) - mean
		s.sumSq += float64(d * d)
	}
	RadixSort(keys, scratch)
	s.min, s.max = keys[0], keys[n-1]
	for j := range s.points {
		lo, hi := s.block(j)
		s.points[j] = keys[lo+(hi-lo-1)/2]
	}
	return s
}

// N returns the number of gaps the sketch summarizes.
func (s *GapSketch) N() int { return s.n }

// block returns the ranks [lo, hi) of block j.
func (s *GapSketch) block(j int) (lo, hi int) {
	return j * s.n / SketchPoints, (j + 1) * s.n / SketchPoints
}

// weight returns how many gaps point j stands for.
func (s *GapSketch) weight(j int) uint64 {
	lo, hi := s.block(j)
	return uint64(hi - lo)
}

// Mixed computes the Sample of the gaps of list(0), …, list(lists − 1)
// (kept whole) and of the sketches together, for the median and the
// percentiles ps, as Gaps does for lists alone. N, Mean, Min and Max (and
// so the 0th and 100th percentiles) are exact; SumSq is exact up to float rounding (the sketches' sums of
// squares are combined with the parallel formula, not summed in one
// order). Each order statistic is exact in the multiset where every gap
// of a sketch's block is replaced by the block's point: it lies between
// the true order statistics Σ⌈n_i/SketchPoints⌉ ranks below and above
// (the sum over the sketches). It costs two passes over the lists and the
// points, and sorts only the values of the histogram buckets (relative
// width ≤ 1/1,024) that hold the wanted ranks.
func Mixed(lists int, list func(i int) []time.Duration, sketches []*GapSketch, ps []float64) Sample {
	c := make([]uint64, logBucketCount)
	var sum Sum128
	n := 0
	lo, hi := uint64(math.MaxUint64), uint64(0)
	for i := range lists {
		for _, g := range list(i) {
			v := gapKey(g)
			sum.Add(v)
			c[logBucket(v)]++
			lo, hi = min(lo, v), max(hi, v)
		}
		n += len(list(i))
	}
	for _, sk := range sketches {
		n += sk.n
		sum.add128(sk.sum)
		lo, hi = min(lo, sk.min), max(hi, sk.max)
		for j, p := range sk.points {
			c[logBucket(p)] += sk.weight(j)
		}
	}
	s := Sample{N: n, kind: Int}
	if n == 0 {
		return s
	}
	s.Mean = sum.Mean(n)
	s.Min, s.Max = float64(lo), float64(hi)
	var ss float64
	for i := range lists {
		for _, g := range list(i) {
			d := float64(gapKey(g)) - s.Mean
			ss += float64(d * d)
		}
	}
	for _, sk := range sketches {
		d := sk.sum.Mean(sk.n) - s.Mean
		ss += sk.sumSq + float64(sk.n)*float64(d*d)
	}
	s.SumSq = ss

	var rankBuf [maxRanks]int
	ranks, out := s.setRanks(rankSet(n, ps, rankBuf[:0]))
	selectWeighted(c, lists, list, sketches, ranks, out)
	// The first and last ranks are the exact min and max.
	if ranks[0] == 0 {
		out[0] = lo
	}
	if ranks[len(ranks)-1] == n-1 {
		out[len(out)-1] = hi
	}
	return s
}

// weighted is a value standing for w gaps.
type weighted struct{ v, w uint64 }

// selectWeighted sets out[k] to the value of rank ranks[k] (sorted) of the
// weighted multiset counted in the histogram c.
func selectWeighted(c []uint64, lists int, list func(i int) []time.Duration, sketches []*GapSketch, ranks []int, out []uint64) {
	// The buckets that hold the ranks, and the rank of each one's first
	// gap.
	base := make(map[int]uint64)
	var mark bucketSet
	var cum uint64
	ri := 0
	for b := 0; b < len(c) && ri < len(ranks); b++ {
		if uint64(ranks[ri]) < cum+c[b] {
			base[b] = cum
			mark.add(b)
			for ri < len(ranks) && uint64(ranks[ri]) < cum+c[b] {
				ri++
			}
		}
		cum += c[b]
	}
	var got []weighted
	for i := range lists {
		for _, g := range list(i) {
			if v := gapKey(g); mark.has(uint16(logBucket(v))) {
				got = append(got, weighted{v, 1})
			}
		}
	}
	for _, sk := range sketches {
		for j, p := range sk.points {
			if mark.has(uint16(logBucket(p))) {
				got = append(got, weighted{p, sk.weight(j)})
			}
		}
	}
	slices.SortFunc(got, func(a, b weighted) int {
		switch {
		case a.v < b.v:
			return -1
		case a.v > b.v:
			return 1
		}
		return 0
	})
	ri, cur := 0, -1
	for _, x := range got {
		if b := logBucket(x.v); b != cur {
			cur, cum = b, base[b]
		}
		for ri < len(ranks) && uint64(ranks[ri]) < cum+x.w {
			out[ri] = x.v
			ri++
		}
		cum += x.w
	}
}

// add128 adds the sum o.
func (s *Sum128) add128(o Sum128) {
	var c uint64
	s.lo, c = bits.Add64(s.lo, o.lo, 0)
	s.hi += o.hi + c
}
