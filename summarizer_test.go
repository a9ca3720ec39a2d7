package llmmetrics

import (
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmmetrics/llmmetrics/internal/timebase"
)

// summarizeAll adds rs to a new Summarizer with opts and returns its Summary.
func summarizeAll(t *testing.T, rs []Record, opts SummaryOptions) Summary {
	t.Helper()
	z, err := NewSummarizer(opts)
	require.NoError(t, err)
	for _, r := range rs {
		z.Add(r)
	}
	return z.Summary()
}

// TestSummarizerByHand checks a Summarizer against figures computed by hand
// for three requests: two OK, one failed.
//
//	A: start 0, first token 100 ms, gaps 10, 30 ms, last token 140 ms, end 141 ms, N 3
//	B: start 50 ms, first token 250 ms, gap 20 ms, last token 270 ms, end 271 ms, N 2
//	C: start 60 ms, failed at 160 ms
//
// TTFT {100, 200}: mean 150, median 150. ITL {10, 30, 20}: mean 20,
// median 20, max 30. TPOT {40/2, 20/1} = {20, 20} ms. E2EL {140, 220}.
// Output tokens 5 over 271 ms; peak concurrency 3 (all three in flight
// between 60 and 141 ms); SLO TTFT ≤ 150 ms: A good (3 tokens), B not.
func TestSummarizerByHand(t *testing.T) {
	a := okRecord(0, 100, []float64{10, 30}, 3)
	b := okRecord(50, 200, []float64{20}, 2)
	c := endedRecord(60, 100, OutcomeError)
	s := summarizeAll(t, []Record{a, b, c}, SummaryOptions{SLO: SLO{TTFT: 150 * time.Millisecond}})

	assert.Equal(t, 3, s.Requests)
	assert.Equal(t, 2, s.Completed)
	assert.Equal(t, 1, s.Failed)
	assert.Equal(t, 5, s.OutputTokens)
	assert.Equal(t, 20, s.InputTokens)
	assert.Equal(t, msDur(271), s.Duration)
	assert.InDelta(t, 5/0.271, s.OutputThroughput, 1e-9)
	assert.Equal(t, 2, s.TTFT.Count)
	assert.Equal(t, msDur(150), s.TTFT.Mean)
	assert.Equal(t, msDur(150), s.TTFT.Median)
	assert.Equal(t, msDur(50), s.TTFT.Std)
	assert.Equal(t, 3, s.ITL.Count)
	assert.Equal(t, msDur(20), s.ITL.Mean)
	assert.Equal(t, msDur(20), s.ITL.Median)
	assert.Equal(t, msDur(30), s.ITL.Max)
	assert.Equal(t, msDur(20), s.TPOT.Mean)
	assert.Equal(t, msDur(20), s.TokenWeightedTPOT) // (40 + 20) / (2 + 1)
	assert.Equal(t, msDur(180), s.E2EL.Mean)
	assert.Equal(t, msDur(30), s.GenerationTime.Mean) // (40 + 20) / 2
	assert.Equal(t, 3, s.PeakConcurrency)
	assert.InDelta(t, (141+221+100)/271.0, s.MeanConcurrency, 1e-12)
	assert.Equal(t, 1, s.Goodput.Good)
	assert.Equal(t, 3, s.Goodput.GoodTokens)
	assert.InDelta(t, 1/3.0, s.Goodput.Attainment, 1e-15)
	assert.InDelta(t, 3/5.0, s.Goodput.UsefulWorkRatio, 1e-15)
}

// TestSummarizerMatchesSummarize adds the same records, in the same order,
// to a Summarizer and to Summarize: the Summaries are equal to the bit, on
// the generators that check Summarize's fast path against the Record
// methods. Where the records mix clocks whose wall and monotonic readings
// disagree, or lie beyond any common time base, PeakConcurrency may differ
// (see Summarizer) and is left out; every other field is still equal.
func TestSummarizerMatchesSummarize(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	mono := time.Now()
	ancient := time.Date(-3, 1, 1, 0, 0, 0, 0, time.UTC)
	slos := []SLO{{}, sloChat, {TTFT: 100 * time.Millisecond, TPOT: 100 * time.Millisecond, ITL: 50 * time.Millisecond, E2EL: time.Second}}
	tests := []struct {
		name     string
		gen      func(rng *rand.Rand) Record
		peakSame bool
	}{
		{"wall clock", func(rng *rand.Rand) Record { return orderedRecord(rng, t0) }, true},
		{"monotonic", func(rng *rand.Rand) Record { return orderedRecord(rng, mono) }, true},
		{"zero base", func(rng *rand.Rand) Record { return orderedRecord(rng, time.Time{}) }, true},
		// One process's clocks: a wall-clock time and a monotonic one
		// 1 s apart are 1 s apart on either clock.
		{"mixed clocks of one process", func(rng *rand.Rand) Record {
			return orderedRecord(rng, []time.Time{mono.Round(0), mono}[rng.IntN(2)])
		}, true},
		{"before year 1", func(rng *rand.Rand) Record { return orderedRecord(rng, ancient) }, true},
		{"run of ordinary requests", func(rng *rand.Rand) Record { return randomRunRecords(rng, 1)[0] }, true},
		{"real clocks", realClockRecord, false},
		{"wall and monotonic bases", func(rng *rand.Rand) Record {
			return orderedRecord(rng, []time.Time{t0, mono}[rng.IntN(2)])
		}, false},
		{"adversarial", func(rng *rand.Rand) Record { return adversarialRecord(rng, t0, mono) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(31, 32))
			for trial := range 300 {
				rs := make([]Record, 1+rng.IntN(60))
				for i := range rs {
					rs[i] = tt.gen(rng)
				}
				opts := SummaryOptions{SLO: slos[trial%len(slos)], Percentiles: []float64{0, 10, 50, 99.9, 100}}
				if trial%4 == 3 {
					opts.Duration = 90 * time.Second
				}
				want := Summarize(rs, opts)
				got := summarizeAll(t, rs, opts)
				if !tt.peakSame {
					want.PeakConcurrency, got.PeakConcurrency = 0, 0
				}
				require.Equal(t, want, got, "trial %d", trial)
			}
		})
	}
}

// TestSummarizerLargeRun crosses many column blocks (gaps and per-request
// sets), where the block boundaries must not change a value or its order.
func TestSummarizerLargeRun(t *testing.T) {
	rs := benchRunRecords(20_000, 550_000)
	opts := SummaryOptions{SLO: sloChat, Percentiles: []float64{25, 50, 75, 90, 99, 99.9}}
	z, err := NewSummarizer(opts)
	require.NoError(t, err)
	for _, r := range rs {
		z.Add(r)
	}
	want := Summarize(rs, opts)
	require.Equal(t, want, z.Summary())
	require.Equal(t, want, z.Summary(), "Summary leaves the Summarizer unchanged")
	assert.Greater(t, len(z.gaps.blocks), 10)
	assert.Equal(t, 550_000, z.gaps.n)
}

// TestSummarizerIncremental: Summary can be called between Adds; each
// equals Summarize over the records added so far.
func TestSummarizerIncremental(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	rs := randomRunRecords(rng, 300)
	z, err := NewSummarizer(SummaryOptions{SLO: sloChat})
	require.NoError(t, err)
	assert.Equal(t, Summarize(nil, SummaryOptions{SLO: sloChat}), z.Summary(), "empty")
	for i, r := range rs {
		z.Add(r)
		if i%37 == 0 || i == len(rs)-1 {
			require.Equal(t, Summarize(rs[:i+1], SummaryOptions{SLO: sloChat}), z.Summary(), "after %d records", i+1)
		}
	}
}

// TestSummarizerCopiesGaps: the caller's ITL slice is reused after Add (as
// a decoder does with its scratch buffer); the Summary is unchanged.
func TestSummarizerCopiesGaps(t *testing.T) {
	z, err := NewSummarizer(SummaryOptions{})
	require.NoError(t, err)
	r := okRecord(0, 100, []float64{10, 30}, 3)
	z.Add(r)
	r.ITL[0], r.ITL[1] = time.Hour, time.Hour
	s := z.Summary()
	assert.Equal(t, msDur(30), s.ITL.Max)
	assert.Equal(t, msDur(20), s.ITL.Mean)
}

func TestSummarizerSetDuration(t *testing.T) {
	z, err := NewSummarizer(SummaryOptions{Duration: time.Second})
	require.NoError(t, err)
	z.Add(okRecord(0, 100, []float64{10, 30}, 3)) // spans 141 ms
	assert.Equal(t, time.Second, z.Summary().Duration)
	assert.InDelta(t, 3.0, z.Summary().OutputThroughput, 1e-12)
	z.SetDuration(2 * time.Second)
	assert.InDelta(t, 1.5, z.Summary().OutputThroughput, 1e-12)
	z.SetDuration(0) // back to the records' span
	assert.Equal(t, msDur(141), z.Summary().Duration)
}

// TestSummarizerPercentilesOwned: the Summarizer keeps its own copy of the
// percentiles; an empty non-nil list still means none.
func TestSummarizerPercentilesOwned(t *testing.T) {
	ps := []float64{50, 99}
	z, err := NewSummarizer(SummaryOptions{Percentiles: ps})
	require.NoError(t, err)
	ps[1] = 10
	z.Add(okRecord(0, 100, nil, 1))
	assert.Equal(t, []float64{50, 99}, percentileList(z.Summary().TTFT))

	z, err = NewSummarizer(SummaryOptions{Percentiles: []float64{}})
	require.NoError(t, err)
	z.Add(okRecord(0, 100, nil, 1))
	assert.Empty(t, z.Summary().TTFT.Percentiles)
}

func TestNewSummarizerRejects(t *testing.T) {
	tests := []struct {
		name string
		opts SummaryOptions
		want error
	}{
		{"negative SLO limit", SummaryOptions{SLO: SLO{TPOT: -time.Millisecond}}, ErrInvalid},
		{"NaN percentile", SummaryOptions{Percentiles: []float64{50, math.NaN()}}, ErrInvalid},
		{"percentile above 100", SummaryOptions{Percentiles: []float64{101}}, ErrInvalid},
		{"negative percentile", SummaryOptions{Percentiles: []float64{-1}}, ErrInvalid},
		{"negative duration", SummaryOptions{Duration: -time.Second}, ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			z, err := NewSummarizer(tt.opts)
			require.ErrorIs(t, err, tt.want)
			assert.Nil(t, z)
			assert.Regexp(t, `^llmmetrics: `, err.Error())
		})
	}
}

// TestSummarizerConcurrentAdds: Adds from several goroutines all count
// (run with -race); the order-independent figures equal Summarize's.
func TestSummarizerConcurrentAdds(t *testing.T) {
	rs := randomRunRecords(rand.New(rand.NewPCG(7, 8)), 800)
	z, err := NewSummarizer(SummaryOptions{})
	require.NoError(t, err)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < len(rs); i += 4 {
				z.Add(rs[i])
			}
		})
	}
	wg.Wait()
	got, want := z.Summary(), Summarize(rs, SummaryOptions{})
	assert.Equal(t, want.Requests, got.Requests)
	assert.Equal(t, want.Completed, got.Completed)
	assert.Equal(t, want.OutputTokens, got.OutputTokens)
	assert.Equal(t, want.PeakConcurrency, got.PeakConcurrency)
	assert.Equal(t, want.Duration, got.Duration)
	// Integer means are exact whatever the order; percentiles too.
	assert.Equal(t, want.ITL.Count, got.ITL.Count)
	assert.Equal(t, want.ITL.Mean, got.ITL.Mean)
	assert.Equal(t, want.ITL.Percentiles, got.ITL.Percentiles)
	assert.Equal(t, want.TTFT.Percentiles, got.TTFT.Percentiles)
}

// TestSummarizerMemory: what a Summarizer holds is the numbers: for
// requests with 16 gaps each, 8 bytes per gap, 8 per per-request value
// (TTFT, TTFO, TPOT, E2EL, GenerationTime) and 16 for the concurrency
// events: 184 bytes per request. The live heap after 200,000 requests
// (one Record reused, as a decoder does) must stay within 10 % of that:
// the last block of each of the 7 columns has up to 256 KiB of spare room,
// up to 9 bytes per request here (fewer as the run grows).
func TestSummarizerMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("adds 200,000 records")
	}
	const n, gaps = 200_000, 16
	r := okRecord(0, 100, repeatMS(5, gaps), gaps+1)
	r.FirstOutput = r.FirstToken
	z, err := NewSummarizer(SummaryOptions{})
	require.NoError(t, err)
	runtime.GC() // twice: pooled buffers of earlier tests go on the second
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range n {
		r.ITL[i%gaps] = time.Duration(5e6 + i%1000) // reused, as a decoder reuses its buffer
		z.Add(r)
	}
	runtime.GC()
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	perRecord := float64(after.HeapAlloc-before.HeapAlloc) / n
	t.Logf("%.1f bytes per request held (%.2f per gap)", perRecord, perRecord/gaps)
	assert.InDelta(t, 184, perRecord, 184*0.10)
	runtime.KeepAlive(z)
	require.Equal(t, n*gaps, z.Summary().ITL.Count)
}

// FuzzSummarizerMatchesSummarize: for any records, a Summarizer's Summary
// equals Summarize's; PeakConcurrency too whenever every Start and End can
// be taken as an offset from the first Start (the documented exception).
func FuzzSummarizerMatchesSummarize(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, uint8(3))
	f.Add(make([]byte, 64), uint8(0xff))
	mono := time.Now()
	f.Fuzz(func(t *testing.T, data []byte, mode uint8) {
		rs, opts := fuzzRecords(data, mode, mono)
		opts.Percentiles = []float64{0, 50, 99.9}
		want, got := Summarize(rs, opts), summarizeAll(t, rs, opts)
		if !sharesTimeBase(rs) {
			want.PeakConcurrency, got.PeakConcurrency = 0, 0
		}
		require.Equal(t, want, got)
	})
}

// sharesTimeBase reports whether every Start and End of rs is an offset
// from the first Start.
func sharesTimeBase(rs []Record) bool {
	if len(rs) == 0 {
		return true
	}
	b := timebase.New(rs[0].Start)
	for _, r := range rs {
		if _, ok := b.Offset(r.Start); !ok {
			return false
		}
		if _, ok := b.Offset(r.End); !ok && r.End.After(r.Start) {
			return false
		}
	}
	return true
}
