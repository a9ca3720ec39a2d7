package stats

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// latencyKeys returns n TTFT-like nanosecond keys: 50–450 ms.
func latencyKeys(n int) []uint64 {
	rng := rand.New(rand.NewPCG(1, 2))
	k := make([]uint64, n)
	for i := range k {
		k[i] = uint64(50e6 + rng.Int64N(400e6))
	}
	return k
}

// BenchmarkRadixSort sorts 40,000 concurrency events (the arrivals and
// departures of BenchmarkSummarize's 20,000 requests, spread over 10
// minutes) against slices.Sort.
func BenchmarkRadixSort(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	events := make([]uint64, 40_000)
	for i := range events {
		events[i] = uint64(rng.Int64N(int64(600*time.Second)))<<1 | uint64(i&1)
	}
	keys, scratch := make([]uint64, len(events)), make([]uint64, len(events))
	b.Run("baseline_slices.Sort", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			copy(keys, events)
			slices.Sort(keys)
		}
	})
	b.Run("RadixSort", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			copy(keys, events)
			RadixSort(keys, scratch)
		}
	})
}

// BenchmarkOf computes the statistics of n latencies (median, p50, p90,
// p95, p99) against a baseline that only sorts a copy of them. At 512 keys
// and below Of sorts (selectSortMax); at 513 it builds a histogram: the
// two cases show the cost on each side of the threshold.
func BenchmarkOf(b *testing.B) {
	ps := []float64{50, 90, 95, 99}
	for _, n := range []int{512, 513, 2048, 20_000} {
		src := latencyKeys(n)
		keys, scratch := make([]uint64, n), make([]uint64, n)
		b.Run(fmt.Sprintf("n=%d/baseline_slices.Sort", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				copy(keys, src)
				slices.Sort(keys)
			}
		})
		b.Run(fmt.Sprintf("n=%d/Of", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				copy(keys, src)
				Of(keys, scratch, ps, Int)
			}
		})
	}
}

// BenchmarkGaps computes the statistics of 550,000 ITL gaps held in 20,000
// lists (BenchmarkSummarize's shape) in place, against Of over a copy of
// them (the copy included) and against copying and sorting them.
func BenchmarkGaps(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	lists := make([][]time.Duration, 20_000)
	total := 0
	for i := range lists {
		lists[i] = make([]time.Duration, 10+rng.IntN(36))
		for j := range lists[i] {
			lists[i][j] = time.Duration(10e6 + rng.Int64N(30e6))
		}
		total += len(lists[i])
	}
	ps := []float64{50, 90, 95, 99}
	keys, scratch := make([]uint64, total), make([]uint64, total)
	fill := func() {
		keys = keys[:0]
		for _, l := range lists {
			for _, g := range l {
				keys = append(keys, gapKey(g))
			}
		}
	}
	b.Logf("%d gaps", total)
	b.Run("baseline_copy+slices.Sort", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			fill()
			slices.Sort(keys)
		}
	})
	b.Run("copy+Of", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			fill()
			Of(keys, scratch, ps, Int)
		}
	})
	b.Run("Gaps", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Gaps(len(lists), func(i int) []time.Duration { return lists[i] }, ps)
		}
	})
}
