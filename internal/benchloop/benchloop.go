// Package benchloop is the loop of an interleaved benchmark, shared by the
// benchmarks of the root package and of otelsdk. It imports testing and is
// imported only by _test.go files.
package benchloop

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// ring bounds the block times an interleaved benchmark keeps: the last
// 16,384 rounds, plenty for a median.
const ring = 1 << 14

// Times holds the times of an interleaved benchmark's blocks: [block][round].
type Times [][]time.Duration

// Interleave is the loop of an interleaved benchmark. On a shared machine
// the load changes between sub-benchmarks (±30% here), so a ratio of two
// sub-benchmarks measures the neighbours as much as the code; Interleave
// instead calls every block once per round of b.Loop, the first of them in
// turn, and times each call, so that the blocks of one round ran in the
// same fraction of a millisecond. Each block does a fixed amount of work;
// the caller divides by it.
func Interleave(b *testing.B, blocks ...func()) Times {
	n := len(blocks)
	times := make(Times, n)
	for k := range times {
		times[k] = make([]time.Duration, ring)
	}
	round := 0
	for b.Loop() {
		slot := round & (ring - 1)
		for j := range n {
			k := (j + round) % n // who goes first rotates
			start := time.Now()
			blocks[k]()
			times[k][slot] = time.Since(start)
		}
		round++
	}
	for k := range times {
		times[k] = times[k][:min(round, ring)]
	}
	return times
}

// Median is the median time of block k: a preempted block or a GC moves it
// little, a sum a lot.
func (t Times) Median(k int) time.Duration {
	d := slices.Clone(t[k])
	slices.Sort(d)
	return d[len(d)/2]
}

// Ratio is the median over rounds of f of one round's block times (indexed
// like the blocks), such as the time of block 1 over block 0's: a ratio
// within a round compares work done under the same load.
func (t Times) Ratio(f func(round []time.Duration) float64) float64 {
	r := make([]float64, len(t[0]))
	round := make([]time.Duration, len(t))
	for i := range r {
		for k := range t {
			round[k] = t[k][i]
		}
		r[i] = f(round)
	}
	slices.Sort(r)
	return r[len(r)/2]
}

// Over is the ratio of block k's time to block 0's (the floor's) in one round.
func Over(k int) func([]time.Duration) float64 {
	return func(round []time.Duration) float64 { return float64(round[k]) / float64(round[0]) }
}

// PerUnit is a block time per unit of work, in nanoseconds, for ReportMetric.
func PerUnit(d time.Duration, units int) float64 { return float64(d.Nanoseconds()) / float64(units) }

// ParallelBlock returns a block that runs work(0) … work(p−1) at once on p
// goroutines started here, and returns when all have finished; the
// goroutines end with the benchmark. Waking them costs a few microseconds
// per block, so a block should run for hundreds.
func ParallelBlock(b *testing.B, p int, work func(w int)) func() {
	var wg sync.WaitGroup
	start := make([]chan struct{}, p)
	for w := range start {
		start[w] = make(chan struct{})
		go func() {
			for range start[w] {
				work(w)
				wg.Done()
			}
		}()
	}
	b.Cleanup(func() {
		for _, c := range start {
			close(c)
		}
	})
	return func() {
		wg.Add(p)
		for _, c := range start {
			c <- struct{}{}
		}
		wg.Wait()
	}
}
