package llmmetrics

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// benchRunRecords builds n requests with totalGaps ITL gaps in all (request
// lengths alternate around the mean), with jittered latencies.
func benchRunRecords(n, totalGaps int) []Record {
	rng := rand.New(rand.NewPCG(11, 12))
	rs := make([]Record, n)
	mean := totalGaps / n
	for i := range rs {
		g := mean
		switch {
		case i == n-1:
			g = totalGaps
		case i%2 == 0:
			g = mean + mean/2
		default:
			g = mean - mean/2
		}
		g = min(g, totalGaps)
		totalGaps -= g
		start := recT0.Add(time.Duration(rng.Int64N(int64(600 * time.Second))))
		first := start.Add(time.Duration(50e6 + rng.Int64N(400e6)))
		itl := make([]time.Duration, g)
		last := first
		for j := range itl {
			itl[j] = time.Duration(10e6 + rng.Int64N(30e6))
			last = last.Add(itl[j])
		}
		// FirstOutput as a Tracker sets it for a stream without reasoning.
		rs[i] = Record{Start: start, FirstToken: first, FirstOutput: first, LastToken: last, End: last.Add(time.Millisecond),
			InputTokens: 500, OutputTokens: g + 1, Chunks: g + 1, ITL: itl}
	}
	return rs
}

// BenchmarkSummarize measures Summarize on 20,000 requests with 550,000 ITL
// gaps against a baseline that only copies and slices.Sorts the same gaps.
func BenchmarkSummarize(b *testing.B) {
	rs := benchRunRecords(20_000, 550_000)
	gaps := 0
	for _, r := range rs {
		gaps += len(r.ITL)
	}
	require.Equal(b, 550_000, gaps)
	opts := SummaryOptions{SLO: sloChat}

	b.Run("Summarize", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Summarize(rs, opts)
		}
	})
	// The same records through a Summarizer: Add each, then Summary
	// (the gaps are copied once more than Summarize copies them).
	b.Run("Summarizer", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			z, _ := NewSummarizer(opts)
			for _, r := range rs {
				z.Add(r)
			}
			z.Summary()
		}
	})
	b.Run("baseline_slices.Sort_ITL", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]int64, 0, gaps)
		for b.Loop() {
			buf = buf[:0]
			for i := range rs {
				for _, g := range rs[i].ITL {
					buf = append(buf, int64(g))
				}
			}
			slices.Sort(buf)
		}
	})
}
