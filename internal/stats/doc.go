// Package stats holds the numeric kernels behind llmmetrics.Summarize:
// numpy's linear-percentile arithmetic, an exact 128-bit integer sum, radix
// selection of order statistics, a radix sort, and a log-linear bucketing
// that selects among values that were never copied. They have no public
// meaning; package llmmetrics turns what they compute (float64
// nanoseconds) into Distributions.
//
// A sample set is a []uint64 of keys of one Kind: non-negative integers
// (nanoseconds), or the bit patterns of non-negative float64 values, which
// order like the values. Every function here works in place on buffers the
// caller owns (see Buffer) and allocates nothing per value.
//
// The floating-point expressions whose rounding matters are written with an
// explicit float64 conversion of every product that is then added: the Go
// specification lets an implementation fuse x*y + z into one FMA
// instruction (arm64 does, amd64 does not) unless an explicit conversion
// rounds the product first, and the results must be the same bits on every
// CPU (CI runs TestParityDumpGolden, in the root package, on amd64 and arm64).
package stats
