package saturation

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmmetrics/llmmetrics"
)

// gapRecord is okRecord with its first token at firstMS after recT0 and a
// server prefill time (0: not reported).
func gapRecord(firstMS float64, gapsMS []float64, prefillMS float64) llmmetrics.Record {
	r := okRecord(firstMS-5, 5, gapsMS, len(gapsMS)+1)
	r.ServerPrefill = msDur(prefillMS)
	return r
}

func tens(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = 10
	}
	return out
}

// The timelines of TestCountStalls, in ms after recT0. Request 0's tokens
// arrive at 10, 20, 30, 130, 140, 150, 250, 260, 270: long gaps [30, 130]
// and [150, 250]. Request 3's at 15, 25, 35, 135, 145, 155: long gap
// [35, 135]. Every other gap is 10 ms: 21 gaps, 3 of them long, median
// 10 ms, threshold 50 ms, and a first token "at the end" of a gap lies
// within 10 ms of it.
var (
	stallA = []float64{10, 10, 100, 10, 10, 100, 10, 10}
	stallB = []float64{10, 10, 100, 10, 10}
)

func TestCountStalls(t *testing.T) {
	tests := []struct {
		name    string
		records []llmmetrics.Record
		want    Stalls
	}{
		{
			// Request 1's first token arrives at 130, the end of request
			// 0's first long gap and 5 ms before the end of request 3's;
			// request 2's at 250, the end of request 0's second.
			name: "every long gap ends with another request's first token",
			records: []llmmetrics.Record{
				gapRecord(10, stallA, 0), gapRecord(130, tens(5), 0), gapRecord(250, tens(3), 0), gapRecord(15, stallB, 0),
			},
			want: Stalls{Gaps: 21, LongGaps: 3, Overlapping: 3, AtRandom: 0},
		},
		{
			// The first tokens arrive at 80 and 200, the middles of request
			// 0's long gaps (request 3's gap [35, 135] has its middle at 85,
			// within 10 ms of 80): a cause unrelated to prefills.
			name: "first tokens in the middle of the gaps",
			records: []llmmetrics.Record{
				gapRecord(10, stallA, 0), gapRecord(80, tens(5), 0), gapRecord(200, tens(3), 0), gapRecord(15, stallB, 0),
			},
			want: Stalls{Gaps: 21, LongGaps: 3, Overlapping: 0, AtRandom: 3},
		},
		{
			// A first token at each gap's end, but the server says those
			// prefills took 5 ms: less than half of the 90 ms the gaps
			// exceed the median by, so they do not explain them (a pause
			// of the whole server delays first tokens too).
			name: "short server prefills do not explain long gaps",
			records: []llmmetrics.Record{
				gapRecord(10, stallA, 0), gapRecord(130, tens(5), 5), gapRecord(250, tens(3), 5), gapRecord(15, stallB, 0),
			},
			want: Stalls{Gaps: 21, LongGaps: 3, Overlapping: 0, AtRandom: 0},
		},
		{
			// The same with prefills of 45 ms: 2 × 45 ≥ 90.
			name: "server prefills of half the excess explain them",
			records: []llmmetrics.Record{
				gapRecord(10, stallA, 0), gapRecord(130, tens(5), 45), gapRecord(250, tens(3), 45), gapRecord(15, stallB, 0),
			},
			want: Stalls{Gaps: 21, LongGaps: 3, Overlapping: 3, AtRandom: 0},
		},
		{
			// First tokens after the gaps' ends (at 180 and 330), their
			// prefills counted back from them covering the gaps: 180 − 160
			// = 20 ≤ 30 + 10 and 180 ≥ 130 − 10; 180 − 160 ≤ 35 + 10;
			// 330 − 190 = 140 ≤ 150 + 10. A chunked prefill's first token
			// comes after the steps it slowed.
			name: "a prefill that covers the gap",
			records: []llmmetrics.Record{
				gapRecord(10, stallA, 0), gapRecord(180, tens(5), 160), gapRecord(330, tens(3), 190), gapRecord(15, stallB, 0),
			},
			want: Stalls{Gaps: 21, LongGaps: 3, Overlapping: 3, AtRandom: 0},
		},
		{
			// The same first tokens without server prefill times: 180 is
			// 50 ms after 130, nothing links it to the gap.
			name: "late first tokens without server times",
			records: []llmmetrics.Record{
				gapRecord(10, stallA, 0), gapRecord(180, tens(5), 0), gapRecord(330, tens(3), 0), gapRecord(15, stallB, 0),
			},
			want: Stalls{Gaps: 21, LongGaps: 3, Overlapping: 0, AtRandom: 0},
		},
		{
			// A request's own first token never explains its gap, and a
			// failed request's gaps are not counted, while its first token
			// is another request's prefill all the same.
			name: "own first token; a failed request's gaps",
			records: []llmmetrics.Record{
				gapRecord(10, stallA, 0),
				func() llmmetrics.Record {
					r := gapRecord(130, []float64{10, 10, 10, 10, 10, 500}, 0)
					r.Outcome = llmmetrics.OutcomeError
					return r
				}(),
			},
			want: Stalls{Gaps: 8, LongGaps: 2, Overlapping: 1, AtRandom: 0},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := CountStalls(tc.records, 0)
			require.True(t, ok)
			tc.want.MedianITL, tc.want.Factor, tc.want.Threshold = 10*time.Millisecond, 5, 50*time.Millisecond
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestCountStallsMedianAndFactor(t *testing.T) {
	// Gaps 10, 20, 30, 40 ms: the median of an even count is the mean of
	// the middle two, 25 ms; factor 3 → 75 ms, so none is long.
	got, ok := CountStalls([]llmmetrics.Record{gapRecord(10, []float64{40, 10, 30, 20}, 0)}, 3)
	require.True(t, ok)
	assert.Equal(t, Stalls{MedianITL: 25 * time.Millisecond, Factor: 3, Threshold: 75 * time.Millisecond, Gaps: 4}, got)

	for _, bad := range []float64{0, 1, -2, math.NaN(), math.Inf(1)} {
		got, ok := CountStalls([]llmmetrics.Record{gapRecord(10, []float64{10, 10, 10}, 0)}, bad)
		require.True(t, ok)
		assert.Equal(t, DefaultStallFactor, got.Factor, "factor %v", bad)
		assert.Equal(t, 50*time.Millisecond, got.Threshold)
	}

	// Chunks that came in bursts: a median gap of 0 (several chunks a
	// read, timed alike), or under a millisecond, says nothing of the
	// engine's steps.
	for _, gaps := range [][]float64{{0, 0, 0, 40}, {0.2, 0.5, 0.9, 40}} {
		_, ok = CountStalls([]llmmetrics.Record{gapRecord(10, gaps, 0), gapRecord(51, []float64{0}, 0)}, 0)
		assert.False(t, ok, "gaps %v", gaps)
	}
	got, ok = CountStalls([]llmmetrics.Record{gapRecord(10, []float64{1, 1, 1, 40}, 0)}, 0)
	require.True(t, ok, "a median of 1 ms is read")
	assert.Equal(t, 1, got.LongGaps)

	_, ok = CountStalls([]llmmetrics.Record{okRecord(0, 10, nil, 1), {}}, 0)
	assert.False(t, ok, "no gap kept: nothing to count")
	withoutITL := gapRecord(10, []float64{10, 10}, 0)
	withoutITL.ITL = nil
	_, ok = CountStalls([]llmmetrics.Record{withoutITL}, 0)
	assert.False(t, ok, "a record whose gaps were not kept has none")
}

// stallLevels are two loads whose second has the given stall counts.
func stallLevels(st *Stalls) []Level {
	return []Level{tputLevel(1, 100), {Load: 2, Summary: llmmetrics.Summary{OutputThroughput: 190}, PrefillStalls: st}}
}

func TestPrefillStallSignal(t *testing.T) {
	ten := func(over, random int) *Stalls {
		return &Stalls{MedianITL: 10 * time.Millisecond, Factor: 5, Threshold: 50 * time.Millisecond, Gaps: 500, LongGaps: 10, Overlapping: over, AtRandom: random}
	}
	tests := []struct {
		name  string
		st    *Stalls
		fires bool
		need  float64
	}{
		// Halfway from the chance rate to all: 4 of 10 by chance → 0.7.
		{"7 of 10, 4 by chance", ten(7, 4), true, 0.7},
		{"6 of 10, 4 by chance", ten(6, 4), false, 0},
		// No chance hit: half of the long gaps.
		{"5 of 10, none by chance", ten(5, 0), true, 0.5},
		{"4 of 10, none by chance", ten(4, 0), false, 0},
		{"2 of 2 is below the 3 a cause needs", &Stalls{Factor: 5, LongGaps: 2, Overlapping: 2}, false, 0},
		{"3 of 3", &Stalls{Factor: 5, LongGaps: 3, Overlapping: 3}, true, 0.5},
		{"no long gap", &Stalls{Factor: 5, Gaps: 100}, false, 0},
		{"not counted", nil, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Find(stallLevels(tc.st), Options{})
			require.NoError(t, err)
			require.Len(t, res.Levels, 2)
			assert.Equal(t, tc.st, res.Levels[1].PrefillStalls, "the counts are reported")
			var got *Reason
			for _, r := range res.Levels[1].Reasons {
				if r.Signal == SignalPrefillStall {
					got = &r
				}
			}
			if !tc.fires {
				assert.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			assert.InDelta(t, float64(tc.st.Overlapping)/float64(tc.st.LongGaps), got.Value, 1e-12)
			assert.InDelta(t, tc.need, got.Threshold, 1e-12)
		})
	}

	res, err := Find(stallLevels(ten(9, 0)), Options{})
	require.NoError(t, err)
	assert.Contains(t, res.Levels[1].Reasons, Reason{Signal: SignalPrefillStall, Value: 0.9, Threshold: 0.5, Message: "9 of 10 gaps over 5× the median ITL (10 ms) ended with another request's first token or inside its prefill (0 had one at their middle, by chance): prompts stall decoding — chunked prefill or a prefill token budget"})

	res, err = Find(stallLevels(ten(9, 0)), Options{Skip: SignalPrefillStall})
	require.NoError(t, err)
	assert.Empty(t, res.Levels[1].Reasons)
}

// Repeats of one load sum their counts; the first entry's median stays.
func TestPrefillStallsMerged(t *testing.T) {
	a := &Stalls{MedianITL: 10 * time.Millisecond, Factor: 5, Threshold: 50 * time.Millisecond, Gaps: 100, LongGaps: 2, Overlapping: 2}
	b := &Stalls{MedianITL: 12 * time.Millisecond, Factor: 5, Threshold: 60 * time.Millisecond, Gaps: 90, LongGaps: 3, Overlapping: 1, AtRandom: 1}
	levels := []Level{
		{Load: 2, Summary: llmmetrics.Summary{OutputThroughput: 190}, PrefillStalls: a},
		{Load: 2, Summary: llmmetrics.Summary{OutputThroughput: 200}, PrefillStalls: b},
		{Load: 2, Summary: llmmetrics.Summary{OutputThroughput: 195}},
	}
	res, err := Find(levels, Options{})
	require.NoError(t, err)
	require.Len(t, res.Levels, 1)
	assert.Equal(t, &Stalls{MedianITL: 10 * time.Millisecond, Factor: 5, Threshold: 50 * time.Millisecond, Gaps: 190, LongGaps: 5, Overlapping: 3, AtRandom: 1},
		res.Levels[0].PrefillStalls)
	// 3 of 5, 1 by chance: 0.6 < 0.2 + 0.4.
	assert.Empty(t, res.Levels[0].Reasons)
	assert.Equal(t, 100, a.Gaps, "the input is not modified")
}
