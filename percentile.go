package llmmetrics

import (
	"math"
	"math/bits"
	"slices"
	"sync"
	"time"
)

// Percentile returns the p-th percentile of values with numpy's default
// ("linear") method: the values are sorted, the virtual index
// i = p/100 × (len−1) is computed, and the result interpolates linearly
// between the two values around i. It is the method `vllm bench serve` uses.
//
// p is in percent (0–100), like numpy and like people say "p99": p = 0 gives
// the minimum, p = 100 the maximum, p = 50 the median (for an even count,
// the mean of the two middle values).
//
// Percentile returns NaN when values is empty, when p is NaN or outside
// [0, 100], and when any value is NaN (numpy propagates NaN the same way).
// ±Inf values are ordered normally. values is not modified; Percentile
// copies and sorts it (O(n log n), one allocation). It is safe for
// concurrent use.
func Percentile(values []float64, p float64) float64 {
	s, ok := sortedCopy(values, p)
	if !ok {
		return math.NaN()
	}
	return lerpAt(len(s), p, func(i int) float64 { return s[i] })
}

// sortedCopy returns a sorted copy of values, or false when a percentile
// of them is NaN: values empty, p NaN or outside [0, 100], or a NaN value.
func sortedCopy(values []float64, p float64) ([]float64, bool) {
	if len(values) == 0 || !validPercent(p) {
		return nil, false
	}
	s := slices.Clone(values)
	for _, v := range s {
		if math.IsNaN(v) {
			return nil, false
		}
	}
	slices.Sort(s)
	return s, true
}

// PercentileNearestRank returns the p-th percentile of values with the
// nearest-rank method: the smallest value v such that at least p percent of
// the values are ≤ v (numpy's "inverted_cdf" method). Unlike Percentile, the
// result is always one of the observed values, which suits a user who must
// quote a latency that really happened.
//
// p is in percent (0–100); p = 0 gives the minimum and p = 100 the maximum.
// It returns NaN for empty input, for NaN p or p outside [0, 100], and when
// any value is NaN. values is not modified. It is safe for concurrent use.
func PercentileNearestRank(values []float64, p float64) float64 {
	s, ok := sortedCopy(values, p)
	if !ok {
		return math.NaN()
	}
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

// validPercent reports whether p is a percentile in [0, 100].
func validPercent(p float64) bool { return p >= 0 && p <= 100 }

// lerpAt evaluates numpy's linear percentile over n sorted values read
// through at (see virtualIndex and lerp).
func lerpAt(n int, p float64, at func(int) float64) float64 {
	i, t := virtualIndex(n, p)
	if t == 0 {
		return at(i)
	}
	return lerp(at(i), at(i+1), t)
}

// virtualIndex returns numpy's linear-method position of percentile p among
// n sorted values: the lower index i and the fraction t toward i+1 (t is 0
// when i is the last index). numpy's "linear" method computes the virtual
// index as (n − 1)·q with q = p/100 (its own form, "to avoid some rounding
// issues", not the n·q + α + q(1−α−β) − 1 of its other methods); the same
// arithmetic is used here so results agree to the last bit.
func virtualIndex(n int, p float64) (i int, t float64) {
	q := p / 100
	idx := float64(n-1) * q
	idx = min(max(idx, 0), float64(n-1))
	lo := math.Floor(idx)
	i, t = int(lo), idx-lo
	if i+1 >= n {
		t = 0
	}
	return i, t
}

// lerp is numpy's _lerp: a + (b−a)·t, or b − (b−a)·(1−t) when t ≥ 0.5.
//
// The products are converted to float64 explicitly: the Go specification
// lets an implementation fuse x*y + z into one FMA instruction (arm64
// does, amd64 does not) unless an explicit conversion rounds the product,
// and a fused lerp differs from numpy's in the last bit (paritydump showed
// it: p33.3 of [200, 300] is 233.3 on amd64 and in numpy's arithmetic, and
// was 233.29999999999998 on arm64 before these conversions).
func lerp(a, b, t float64) float64 {
	d := b - a
	if t >= 0.5 {
		return b - float64(d*(1-t))
	}
	return a + float64(d*t)
}

// PercentileValue is one requested percentile of a Distribution: P is in
// percent (0–100), Value the latency at that percentile. It encodes to JSON
// as {"p": 99, "value_ns": 123456789}.
type PercentileValue struct {
	// P is the percentile in percent (0–100).
	P float64 `json:"p"`
	// Value is the latency at percentile P, rounded to the nanosecond.
	Value time.Duration `json:"value_ns"`
}

// Distribution summarizes one sample set (all TTFTs, all TPOTs, all ITL gaps
// or all E2ELs of a run) with the statistics `vllm bench serve` reports:
// mean, median, population standard deviation, min, max and the requested
// percentiles (numpy linear). All durations are rounded to the nearest
// nanosecond.
//
// An empty sample set has Count 0 and every other field zero or empty: check
// Count before reading the statistics (vLLM reports such a set as zeros).
//
// JSON field names are stable:
//
//	{"count": 3, "mean_ns": ..., "median_ns": ..., "std_ns": ..., "min_ns": ...,
//	 "max_ns": ..., "percentiles": [{"p": 99, "value_ns": ...}]}
type Distribution struct {
	// Count is the number of samples.
	Count int `json:"count"`
	// Mean is the arithmetic mean.
	Mean time.Duration `json:"mean_ns"`
	// Median is the 50th percentile (numpy linear).
	Median time.Duration `json:"median_ns"`
	// Std is the population standard deviation (numpy's np.std, ddof = 0).
	Std time.Duration `json:"std_ns"`
	// Min is the smallest sample.
	Min time.Duration `json:"min_ns"`
	// Max is the largest sample.
	Max time.Duration `json:"max_ns"`
	// Percentiles holds the requested percentiles in the order requested
	// (omitted from JSON when empty).
	Percentiles []PercentileValue `json:"percentiles,omitempty"`
}

// Percentile returns the value at percentile p (in percent) when p was
// requested in SummaryOptions.Percentiles. p = 0, 50 and 100 are always
// available (Min, Median and Max). ok is false when the distribution is
// empty or p was not requested.
func (d Distribution) Percentile(p float64) (v time.Duration, ok bool) {
	if d.Count == 0 {
		return 0, false
	}
	for _, pv := range d.Percentiles {
		if pv.P == p {
			return pv.Value, true
		}
	}
	switch p {
	case 0:
		return d.Min, true
	case 50:
		return d.Median, true
	case 100:
		return d.Max, true
	}
	return 0, false
}

// roundDur rounds a float64 number of nanoseconds to a Duration, saturating
// at the Duration range (and mapping NaN to 0).
func roundDur(ns float64) time.Duration {
	switch {
	case ns != ns:
		return 0
	case ns >= math.MaxInt64:
		return math.MaxInt64
	case ns <= math.MinInt64:
		return math.MinInt64
	}
	return time.Duration(math.Round(ns))
}

// radixSort sorts keys in place in increasing order, using scratch (len ≥
// len(keys)) as the second buffer. It does not allocate.
//
// One most-significant-digit pass distributes the keys by the top 13 bits
// of key − min(keys) into scratch (8,192 buckets); each bucket then holds
// the keys of one contiguous value range, so sorting every bucket on its
// own sorts the whole. Buckets are small for spread-out keys (about 5 keys
// each for the 40,000 concurrency events of BenchmarkSummarize) and are
// sorted by insertion sort; a large one (clustered keys) goes through
// slices.Sort or lsdRadixSort. That costs four sequential passes instead of
// the two per 13-bit digit of an LSD sort over the whole spread (8 for
// nanosecond timestamps spread over minutes).
func radixSort(keys, scratch []uint64) {
	n := len(keys)
	lo, span, done := radixPrelude(keys)
	if done {
		return
	}
	hi, width := lo+span, bits.Len64(span)
	const topDigit = 13
	shift := uint(max(width-topDigit, 0))
	var counts [1<<topDigit + 1]int
	c := counts[:(hi-lo)>>shift+1]
	for _, k := range keys {
		c[(k-lo)>>shift]++
	}
	sum := 0
	for i, v := range c {
		c[i] = sum
		sum += v
	}
	dst := scratch[:n]
	for _, k := range keys {
		b := (k - lo) >> shift
		dst[c[b]] = k
		c[b]++
	}
	// c[b] is now the end of bucket b (and the start of bucket b+1).
	start := 0
	for _, end := range c {
		if bucket := dst[start:end]; len(bucket) >= 512 {
			lsdRadixSort(bucket, keys[start:end])
		} else if len(bucket) > 16 {
			slices.Sort(bucket)
		} else {
			insertionSort(bucket)
		}
		start = end
	}
	copy(keys, dst)
}

// insertionSort sorts a short slice in place (cheaper than slices.Sort's
// setup for the few keys of a radixSort bucket).
func insertionSort(keys []uint64) {
	for i := 1; i < len(keys); i++ {
		k, j := keys[i], i
		for ; j > 0 && keys[j-1] > k; j-- {
			keys[j] = keys[j-1]
		}
		keys[j] = k
	}
}

// radixPrelude is how both radix sorts start: fewer than 512 keys are
// sorted with slices.Sort here (done); otherwise it returns min(keys) and
// the spread max − min, and done is true when the keys are all equal.
func radixPrelude(keys []uint64) (lo, span uint64, done bool) {
	if len(keys) < 512 {
		slices.Sort(keys)
		return 0, 0, true
	}
	lo, hi := keys[0], keys[0]
	for _, k := range keys {
		lo, hi = min(lo, k), max(hi, k)
	}
	return lo, hi - lo, hi == lo
}

// lsdRadixSort sorts keys in place in increasing order with a
// least-significant digit radix sort on key − min(keys), using scratch
// (len ≥ len(keys)) as the second buffer. The digit width adapts to the
// spread of the keys (at most 13 bits, so a histogram fits in cache):
// latencies spread over less than 2^26 ns (67 ms) take 2 passes, over 2^39
// ns (9 min) 3. It does not allocate.
func lsdRadixSort(keys, scratch []uint64) {
	n := len(keys)
	lo, span, done := radixPrelude(keys)
	if done {
		return
	}
	width := bits.Len64(span)
	const maxDigit = 13
	passes := (width + maxDigit - 1) / maxDigit
	digit := uint((width + passes - 1) / passes)
	mask := uint64(1)<<digit - 1
	var counts [1 << maxDigit]int
	src, dst := keys, scratch[:n]
	for p := range uint(passes) {
		shift := p * digit
		c := counts[:mask+1]
		clear(c)
		for _, k := range src {
			c[((k-lo)>>shift)&mask]++
		}
		sum := 0
		for i, v := range c {
			c[i] = sum
			sum += v
		}
		for _, k := range src {
			b := ((k - lo) >> shift) & mask
			dst[c[b]] = k
			c[b]++
		}
		src, dst = dst, src
	}
	if passes%2 == 1 {
		copy(keys, src)
	}
}

// histPool holds the 2^16-bucket histograms of selectRanks.
var histPool = sync.Pool{New: func() any { return new([1 << 16]uint32) }}

// intKeyStats returns the smallest and largest of keys (len ≥ 1) and their
// mean, computed exactly from a 128-bit sum (see addKey and intMean).
func intKeyStats(keys []uint64) (lo, hi uint64, mean float64) {
	lo, hi = keys[0], keys[0]
	var sumHi, sumLo uint64
	for _, k := range keys {
		lo, hi = min(lo, k), max(hi, k)
		sumHi, sumLo = addKey(sumHi, sumLo, k)
	}
	return lo, hi, intMean(sumHi, sumLo, len(keys))
}

// addKey adds k to the 128-bit sum sumHi:sumLo.
func addKey(sumHi, sumLo, k uint64) (uint64, uint64) {
	var c uint64
	sumLo, c = bits.Add64(sumLo, k, 0)
	return sumHi + c, sumLo
}

// intMean returns the 128-bit sum sumHi:sumLo of n keys divided by n. Every
// key is ≤ MaxInt64, so sumHi < n and Div64 cannot overflow.
func intMean(sumHi, sumLo uint64, n int) float64 {
	q, r := bits.Div64(sumHi, sumLo, uint64(n))
	return float64(q) + float64(r)/float64(n)
}

// distKeys computes a Distribution from unsorted keys: non-negative
// nanosecond counts, or (float) the bit patterns of non-negative float64
// nanosecond values, which order like the values. keys and scratch (len ≥
// len(keys)) are clobbered.
//
// The mean of integer keys is exact (128-bit sum); the standard deviation
// takes a second pass like numpy. Instead of sorting, the order statistics
// the median and percentiles need are found with selectRanks, which costs
// a few sequential passes. Percentiles use numpy's linear method.
func distKeys(keys, scratch []uint64, ps []float64, float bool) Distribution {
	n := len(keys)
	if n == 0 {
		return Distribution{}
	}
	if !float {
		lo, hi, mean := intKeyStats(keys)
		return distKeysStats(keys, scratch, ps, false, lo, hi, mean)
	}
	lo, hi := keys[0], keys[0]
	var sum float64
	for _, k := range keys {
		lo, hi = min(lo, k), max(hi, k)
		sum += math.Float64frombits(k)
	}
	return distKeysStats(keys, scratch, ps, true, lo, hi, sum/float64(n))
}

// distKeysStats is distKeys for a caller that already knows the smallest
// and largest key and the mean. mean must be what distKeys would compute:
// for float keys, the float64 sum in key order divided by n.
//
// The standard deviation is numpy's two-pass formula: Σ(x − mean)² in key
// order, after the mean is known. That second pass is fused with the first
// histogram pass of the selection, which reads every key anyway; the sum
// is accumulated in the same order, so it is bit-for-bit the same.
func distKeysStats(keys, scratch []uint64, ps []float64, float bool, lo, hi uint64, mean float64) Distribution {
	n := len(keys)
	if n == 0 {
		return Distribution{}
	}
	var rankBuf [32]int
	ranks := rankSet(n, ps, &rankBuf)
	var outBuf [32]uint64
	out := outBuf[:0]
	if len(ranks) > len(outBuf) {
		out = make([]uint64, len(ranks))
	}
	out = out[:len(ranks)]
	h := histPool.Get().(*[1 << 16]uint32)
	var ss float64
	if n <= selectSortMax || lo == hi {
		for _, k := range keys {
			d := keyVal(k, float) - mean
			ss += float64(d * d) // no FMA: see lerp
		}
		selectRanks(keys, scratch[:n], 0, ranks, out, h, lo, hi)
	} else {
		// selectRanks's histogram pass, with the squared deviations
		// summed in the same loop.
		shift, nb := digitShape(n, lo, hi)
		c := h[:nb]
		clear(c)
		if float {
			for _, k := range keys {
				c[(k-lo)>>shift]++
				d := math.Float64frombits(k) - mean
				ss += float64(d * d) // no FMA: see lerp
			}
		} else {
			for _, k := range keys {
				c[(k-lo)>>shift]++
				d := float64(k) - mean
				ss += float64(d * d) // no FMA: see lerp
			}
		}
		gatherRanks(keys, scratch[:n], 0, ranks, out, h, lo, hi, shift, nb)
	}
	histPool.Put(h)
	return distFromRanks(n, ps, float, ranks, out, lo, hi, mean, ss)
}

// keyVal returns the value a key stands for (see distKeys).
func keyVal(k uint64, float bool) float64 {
	if float {
		return math.Float64frombits(k)
	}
	return float64(k)
}

// rankSet returns the ranks (0-based, sorted, unique) of the order
// statistics the median and the percentiles ps of n values read, in buf
// when it is large enough.
func rankSet(n int, ps []float64, buf *[32]int) []int {
	ranks := buf[:0]
	add := func(i int, t float64) {
		ranks = append(ranks, i)
		if t != 0 {
			ranks = append(ranks, i+1)
		}
	}
	add(virtualIndex(n, 50))
	for _, p := range ps {
		add(virtualIndex(n, p))
	}
	slices.Sort(ranks)
	return slices.Compact(ranks)
}

// distFromRanks assembles the Distribution of n keys from their statistics
// and the keys out[i] of rank ranks[i].
func distFromRanks(n int, ps []float64, float bool, ranks []int, out []uint64, lo, hi uint64, mean, ss float64) Distribution {
	at := func(i int) float64 {
		j, _ := slices.BinarySearch(ranks, i)
		return keyVal(out[j], float)
	}
	d := Distribution{
		Count:  n,
		Mean:   roundDur(mean),
		Median: roundDur(lerpAt(n, 50, at)),
		Std:    roundDur(math.Sqrt(ss / float64(n))),
		Min:    roundDur(keyVal(lo, float)),
		Max:    roundDur(keyVal(hi, float)),
	}
	if len(ps) > 0 {
		d.Percentiles = make([]PercentileValue, len(ps))
		for i, p := range ps {
			d.Percentiles[i] = PercentileValue{P: p, Value: roundDur(lerpAt(n, p, at))}
		}
	}
	return d
}

// selectSortMax is the size up to which selectRanks sorts instead of
// building a histogram.
const selectSortMax = 2048

// digitShape returns the shift and the bucket count of one radix-selection
// pass over n keys in [lo, hi] (lo < hi): bucket b holds the keys with
// (key − lo) >> shift == b. The digit has about log2(n) − 3 bits (8 keys per
// bucket on average), between 10 and 16: a smaller histogram than 2^16
// buckets stays in the L1/L2 cache, so the counting pass is faster, and the
// few buckets that hold a wanted rank stay small enough to sort.
func digitShape(n int, lo, hi uint64) (shift uint, nb int) {
	digit := min(max(bits.Len(uint(n))-3, 10), 16)
	shift = uint(max(bits.Len64(hi-lo)-digit, 0))
	return shift, int((hi-lo)>>shift) + 1
}

// selectRanks sets out[i] to the element of rank ranks[i] − base (0-based,
// in increasing order) of keys. ranks must be sorted, unique and within
// [base, base+len(keys)). Every key lies in [lo, hi]; lo and hi need not be
// attained (bounds are enough: they only size the histogram, and lo == hi
// still means every key equals lo). keys and scratch (same length) are
// clobbered.
//
// It is a most-significant-digit radix selection: one pass builds a
// histogram of the top significant bits of key − lo (see digitShape), the
// buckets that hold a wanted rank are gathered into scratch, and the search
// recurses into each of them with the next bits. Small inputs are sorted.
func selectRanks(keys, scratch []uint64, base int, ranks []int, out []uint64, h *[1 << 16]uint32, lo, hi uint64) {
	n := len(keys)
	if len(ranks) == 0 {
		return
	}
	if n <= selectSortMax {
		slices.Sort(keys)
		for i, r := range ranks {
			out[i] = keys[r-base]
		}
		return
	}
	if lo == hi {
		for i := range out {
			out[i] = lo
		}
		return
	}
	shift, nb := digitShape(n, lo, hi)
	c := h[:nb]
	clear(c)
	for _, k := range keys {
		c[(k-lo)>>shift]++
	}
	gatherRanks(keys, scratch, base, ranks, out, h, lo, hi, shift, nb)
}

// gatherRanks is the rest of selectRanks once h[:nb] holds the histogram of
// (key − lo) >> shift: it finds the buckets holding a wanted rank, gathers
// them into scratch and recurses into each.
func gatherRanks(keys, scratch []uint64, base int, ranks []int, out []uint64, h *[1 << 16]uint32, lo, hi uint64, shift uint, nb int) {
	var wantBuf [32]rankBucket
	var mark bucketSet
	want, _ := findRankBuckets(h[:nb], base, ranks, wantBuf[:0], &mark)
	for _, k := range keys {
		b := (k - lo) >> shift // < nb ≤ 2^16
		if mark.has(uint16(b)) {
			scratch[h[b]] = k
			h[b]++
		}
	}
	// Bucket b holds keys in [lo + b<<shift, lo + (b+1)<<shift − 1], also
	// bounded by hi; those bounds are the next level's lo and hi, so no
	// pass is spent finding each bucket's exact min and max.
	selectInBuckets(want, scratch, keys, ranks, out, h, func(b int) (uint64, uint64) {
		bLo := lo + uint64(b)<<shift
		return bLo, bLo + min(hi-bLo, uint64(1)<<shift-1)
	})
}

// rankBucket is a histogram bucket that holds at least one wanted rank:
// its index b, the rank of its first key, its size, and the wanted ranks
// ranks[r0:r1] it holds.
type rankBucket struct{ b, start, count, r0, r1 int }

// bucketSet is a bitmap of histogram buckets (up to 2^16).
type bucketSet [1 << 10]uint64

func (s *bucketSet) add(b int) { s[b>>6] |= 1 << (b & 63) }

// has reports whether bucket b is in the set; a uint16 index needs no
// bounds check.
func (s *bucketSet) has(b uint16) bool { return s[b>>6]&(1<<(b&63)) != 0 }

// findRankBuckets walks the histogram c once (the first key of bucket 0 has
// rank base) and appends to want each bucket that holds a wanted rank,
// marking it in mark. It then sets c[b] of each wanted bucket to the
// offset where its keys go when the wanted buckets are gathered in order
// into one region, and returns that region's size.
func findRankBuckets(c []uint32, base int, ranks []int, want []rankBucket, mark *bucketSet) ([]rankBucket, int) {
	cum, ri := base, 0
	for b := 0; b < len(c) && ri < len(ranks); b++ {
		cnt := int(c[b])
		if ranks[ri] >= cum+cnt {
			cum += cnt
			continue
		}
		r0 := ri
		for ri < len(ranks) && ranks[ri] < cum+cnt {
			ri++
		}
		want = append(want, rankBucket{b: b, start: cum, count: cnt, r0: r0, r1: ri})
		mark.add(b)
		cum += cnt
	}
	off := 0
	for _, w := range want {
		c[w.b] = uint32(off)
		off += w.count
	}
	return want, off
}

// selectInBuckets finishes a selection once the keys of the wanted buckets
// are gathered in bucket order into gathered: it selects each bucket's
// ranks within its region, using the same region of tmp as scratch.
// bounds returns the value range of a bucket.
func selectInBuckets(want []rankBucket, gathered, tmp []uint64, ranks []int, out []uint64, h *[1 << 16]uint32, bounds func(b int) (lo, hi uint64)) {
	off := 0
	for _, w := range want {
		lo, hi := bounds(w.b)
		end := off + w.count
		selectRanks(gathered[off:end], tmp[off:end], w.start, ranks[w.r0:w.r1], out[w.r0:w.r1], h, lo, hi)
		off = end
	}
}

// logBucket maps a key to one of about 56,000 buckets whose width grows
// with the key (as in an HDR histogram): keys below 2,048 have a bucket
// each, and above that every power-of-two range [2^e, 2^(e+1)) is split
// into 1,024 buckets of width 2^(e−10). It is non-decreasing in v (the
// ranges are consecutive), so buckets can stand in for radix digits in a
// selection, and it needs no min or max: Summarize counts the ITL gaps
// into it while it first reads them. The relative width (≤ 1/1,024) keeps
// the buckets around a percentile small for any spread of latencies.
func logBucket(v uint64) int {
	// sh = e − 10 for v ≥ 1,024 in [2^e, 2^(e+1)), else 0; v >> sh is
	// then in [1,024, 2,048) (or v itself, below 2,048).
	sh := uint(bits.Len64(v >> 11))
	return int(v>>sh) + int(sh)<<10
}

// logBucketCount bounds logBucket: bits.Len64(v>>10) ≤ 54, so the bucket is
// below 55 × 1,024.
const logBucketCount = 55 << 10

// logBucketRange returns the smallest and the largest key of bucket b:
// the inverse of logBucket.
func logBucketRange(b int) (lo, hi uint64) {
	sh := uint(max(b>>10-1, 0))
	m := uint64(b - int(sh)<<10)
	return m << sh, m<<sh + (uint64(1)<<sh - 1)
}
