package stats

import (
	"math/bits"
	"slices"
)

// RadixSort sorts keys in place in increasing order, using scratch (len ≥
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
// nanosecond timestamps spread over minutes). BenchmarkRadixSort: 0.68 ms
// for those 40,000 events against 3.2 ms for slices.Sort (2-core Xeon VM,
// medians of 5).
func RadixSort(keys, scratch []uint64) {
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
// setup for the few keys of a RadixSort bucket).
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
