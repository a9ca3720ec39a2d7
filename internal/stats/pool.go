package stats

import "sync"

// bufPool holds key buffers so repeated Summarize calls do not allocate
// them again.
var bufPool sync.Pool

// Buffer returns a pooled buffer of n keys (contents undefined). Give it
// back with Release once nothing refers to it.
func Buffer(n int) *[]uint64 {
	if b, ok := bufPool.Get().(*[]uint64); ok && cap(*b) >= n {
		*b = (*b)[:n]
		return b
	}
	b := make([]uint64, n)
	return &b
}

// Release returns a buffer from Buffer to the pool.
func Release(b *[]uint64) { bufPool.Put(b) }

// histPool holds the 2^16-bucket histograms of the selection.
var histPool = sync.Pool{New: func() any { return new(hist) }}

// hist is a histogram of up to 2^16 buckets (radix digits or logBuckets).
type hist [1 << 16]uint32
