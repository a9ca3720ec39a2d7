package stats

import "math"

// ValidPercent reports whether p is a percentile in [0, 100] (false for
// NaN).
func ValidPercent(p float64) bool { return p >= 0 && p <= 100 }

// VirtualIndex returns numpy's linear-method position of percentile p (in
// [0, 100]) among n sorted values: the lower index i and the fraction t
// toward i+1 (t is 0 when i is the last index). numpy's "linear" method
// computes the virtual index as (n − 1)·q with q = p/100 (its own form, "to
// avoid some rounding issues", not the n·q + α + q(1−α−β) − 1 of its other
// methods); the same arithmetic is used here so results agree to the last
// bit.
func VirtualIndex(n int, p float64) (i int, t float64) {
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

// Lerp is numpy's _lerp: a + (b−a)·t, or b − (b−a)·(1−t) when t ≥ 0.5.
//
// The products are converted to float64 explicitly so they cannot be fused
// with the sum into an FMA (see the package doc): a fused lerp differs from
// numpy's in the last bit. TestParityDumpGolden shows it: p33.3 of [200, 300] is
// 233.3 on amd64 and in numpy's arithmetic, and was 233.29999999999998 on
// arm64 before these conversions.
func Lerp(a, b, t float64) float64 {
	d := b - a
	if t >= 0.5 {
		return b - float64(d*(1-t))
	}
	return a + float64(d*t)
}

// LerpAt evaluates numpy's linear percentile p over n sorted values read
// through at (see VirtualIndex and Lerp); at is called with the one or two
// indexes VirtualIndex names.
func LerpAt(n int, p float64, at func(int) float64) float64 {
	i, t := VirtualIndex(n, p)
	if t == 0 {
		return at(i)
	}
	return Lerp(at(i), at(i+1), t)
}
