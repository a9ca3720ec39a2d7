package stats

import "math/bits"

// Sum128 is an exact sum of uint64 keys, in 128 bits: the mean of integer
// nanoseconds is then exact before its one final rounding, whatever the
// order or the number of keys. The zero value is an empty sum.
type Sum128 struct{ hi, lo uint64 }

// Add adds k to the sum.
func (s *Sum128) Add(k uint64) {
	var c uint64
	s.lo, c = bits.Add64(s.lo, k, 0)
	s.hi += c
}

// Mean returns the sum divided by n (n > 0) as the float64 nearest to
// quotient + remainder/n. Every key must be ≤ MaxInt64 so that hi < n and
// the 128-by-64-bit division cannot overflow.
func (s Sum128) Mean(n int) float64 {
	q, r := bits.Div64(s.hi, s.lo, uint64(n))
	return float64(q) + float64(r)/float64(n)
}
