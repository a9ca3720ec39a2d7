package saturation

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmmetrics/llmmetrics"
)

func msDur(v float64) time.Duration { return time.Duration(math.Round(v * 1e6)) }

var recT0 = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// okRecord builds an OK Record that starts startMS after recT0, gets its
// first token ttftMS later and then one chunk per gap; it ends 1 ms after
// the last token. n is the output token count.
func okRecord(startMS, ttftMS float64, gapsMS []float64, n int) llmmetrics.Record {
	start := recT0.Add(msDur(startMS))
	first := start.Add(msDur(ttftMS))
	last := first
	var itl []time.Duration
	for _, g := range gapsMS {
		itl = append(itl, msDur(g))
		last = last.Add(msDur(g))
	}
	return llmmetrics.Record{
		Start: start, FirstToken: first, FirstOutput: first, LastToken: last, End: last.Add(time.Millisecond),
		InputTokens: 10, OutputTokens: n, Chunks: len(gapsMS) + 1, ITL: itl,
	}
}

// tput is a level with only an output-token throughput figure.
func tputLevel(load, tokPerSec float64) Level {
	return Level{Load: load, Summary: llmmetrics.Summary{OutputThroughput: tokPerSec}}
}

// withTTFT adds a TTFT distribution with the given median and p99 (ms).
func withTTFTLevel(l Level, p50, p99 float64) Level {
	l.Summary.TTFT = llmmetrics.Distribution{Count: 100, Median: msDur(p50), Max: msDur(p99 * 2),
		Percentiles: []llmmetrics.PercentileValue{{P: 50, Value: msDur(p50)}, {P: 99, Value: msDur(p99)}}}
	return l
}

// withAttainment adds request data with the given SLO attainment and token
// goodput.
func withAttainmentLevel(l Level, attainment, goodTokPerSec float64) Level {
	l.Summary.Requests = 100
	l.Summary.Completed = 100
	l.Summary.Goodput.Attainment = attainment
	l.Summary.Goodput.TokensPerSecond = goodTokPerSec
	return l
}

func firedSignals(rs []Reason) Signal {
	var s Signal
	for _, r := range rs {
		s |= r.Signal
	}
	return s
}

func TestFind(t *testing.T) {
	tests := []struct {
		name        string
		levels      []Level
		opts        Options
		wantFound   bool
		wantLevel   int
		wantSignals Signal
		wantBest    int
		wantMaxGood int
	}{
		{
			name:      "classic curve saturates at 100 users",
			levels:    []Level{tputLevel(10, 5000), tputLevel(50, 25000), tputLevel(100, 35000), tputLevel(200, 30000)},
			wantFound: true, wantLevel: 2, wantSignals: SignalKnee,
			wantBest: -1, wantMaxGood: -1,
		},
		{
			// A doubling sweep of the fake server: each step up to 16 is
			// sub-linear (per-unit throughput falls from 422 to 235) but still
			// gains 58 % and 73 % of what linear scaling from the previous
			// level would; against the lowest level's 422 per unit, 4 → 8
			// would read as 47 % and call a knee at 8.
			name: "gradual sub-linearity of a batching server is not a knee",
			levels: []Level{tputLevel(1, 422), tputLevel(2, 800), tputLevel(4, 1379), tputLevel(8, 2178),
				tputLevel(16, 3758), tputLevel(32, 3387)},
			wantFound: true, wantLevel: 5, wantSignals: SignalKnee | SignalThroughputDrop,
			wantBest: -1, wantMaxGood: -1,
		},
		{
			name:      "perfectly linear scaling",
			levels:    []Level{tputLevel(10, 5000), tputLevel(50, 25000), tputLevel(100, 50000), tputLevel(200, 100000)},
			wantFound: false, wantLevel: -1, wantBest: -1, wantMaxGood: -1,
		},
		{
			name: "throughput rises slowly while p99 TTFT explodes",
			levels: []Level{
				withTTFTLevel(tputLevel(10, 5000), 50, 100),
				withTTFTLevel(tputLevel(20, 9500), 52, 140),   // 90 % of linear
				withTTFTLevel(tputLevel(40, 18000), 55, 450),  // 85 %; p99 4.5×, p50 1.1×
				withTTFTLevel(tputLevel(80, 34000), 60, 3000), // 80 %
			},
			wantFound: true, wantLevel: 2, wantSignals: SignalTailGrowth,
			wantBest: -1, wantMaxGood: -1,
		},
		{
			name: "median grows with the tail: not a queue signal",
			levels: []Level{
				withTTFTLevel(tputLevel(10, 5000), 50, 100),
				withTTFTLevel(tputLevel(20, 10000), 200, 400),
			},
			wantFound: false, wantLevel: -1, wantBest: -1, wantMaxGood: -1,
		},
		{
			name: "SLO attainment falls below the target",
			levels: []Level{
				withAttainmentLevel(tputLevel(1, 1000), 1, 1000),
				withAttainmentLevel(tputLevel(2, 2000), 0.95, 1900),
				withAttainmentLevel(tputLevel(3, 3000), 0.7, 2100),
			},
			wantFound: true, wantLevel: 2, wantSignals: SignalAttainment,
			wantBest: 2, wantMaxGood: 1,
		},
		{
			name: "attainment target from options",
			levels: []Level{
				withAttainmentLevel(tputLevel(1, 1000), 1, 1000),
				withAttainmentLevel(tputLevel(2, 2000), 0.95, 1900),
			},
			opts:      Options{AttainmentTarget: 0.99},
			wantFound: true, wantLevel: 1, wantSignals: SignalAttainment,
			wantBest: 1, wantMaxGood: 0,
		},
		{
			name:      "throughput falls without a knee first",
			levels:    []Level{tputLevel(10, 5000), tputLevel(20, 10000), tputLevel(30, 9000)},
			opts:      Options{Skip: SignalKnee},
			wantFound: true, wantLevel: 2, wantSignals: SignalThroughputDrop,
			wantBest: -1, wantMaxGood: -1,
		},
		{
			name:      "small dip within the drop tolerance",
			levels:    []Level{tputLevel(10, 5000), tputLevel(20, 10000), tputLevel(30, 9600)},
			opts:      Options{Skip: SignalKnee},
			wantFound: false, wantLevel: -1, wantBest: -1, wantMaxGood: -1,
		},
		{
			name:      "stricter knee fraction",
			levels:    []Level{tputLevel(10, 5000), tputLevel(20, 9000)}, // 80 % of linear
			opts:      Options{KneeFraction: 0.9},
			wantFound: true, wantLevel: 1, wantSignals: SignalKnee,
			wantBest: -1, wantMaxGood: -1,
		},
		{
			name: "request throughput measure",
			levels: []Level{
				{Load: 1, Summary: llmmetrics.Summary{RequestThroughput: 10, OutputThroughput: 1000}},
				{Load: 2, Summary: llmmetrics.Summary{RequestThroughput: 12, OutputThroughput: 2000}}, // 20 % of linear in req/s
			},
			opts:      Options{Throughput: ThroughputRequests},
			wantFound: true, wantLevel: 1, wantSignals: SignalKnee,
			wantBest: -1, wantMaxGood: -1,
		},
		{
			name: "empty and zero levels are skipped",
			levels: []Level{{Load: 0}, tputLevel(10, 0), tputLevel(20, 1000), tputLevel(40, 2000), {Load: 60},
				{Load: 80, Summary: llmmetrics.Summary{Requests: 50, Failed: 50}}}, // a real collapse: every request failed
			// 80 is also the lowest load with requests: its attainment is a
			// note (the SLO unmet at the lowest load), not a reason.
			wantFound: true, wantLevel: 5, wantSignals: SignalKnee | SignalThroughputDrop,
			wantBest: -1, wantMaxGood: -1,
		},
		{
			name:      "no levels",
			levels:    nil,
			wantFound: false, wantLevel: -1, wantBest: -1, wantMaxGood: -1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Find(tt.levels, tt.opts)
			require.NoError(t, err)
			assert.Equal(t, tt.wantFound, got.Found)
			assert.Equal(t, tt.wantLevel, got.Level)
			assert.Equal(t, tt.wantSignals, firedSignals(got.Reasons), "%v", got.Reasons)
			assert.Equal(t, tt.wantBest, got.BestGoodputLevel)
			assert.Equal(t, tt.wantMaxGood, got.MaxGoodLevel)
			require.Len(t, got.Levels, len(tt.levels))
			if got.Found {
				assert.Equal(t, tt.levels[got.Level].Load, got.Load)
				for _, r := range got.Reasons {
					assert.NotEmpty(t, r.String())
				}
			}
		})
	}
}

func TestFindClassicDetails(t *testing.T) {
	got, err := Find([]Level{tputLevel(10, 5000), tputLevel(50, 25000), tputLevel(100, 35000), tputLevel(200, 30000)}, Options{})
	require.NoError(t, err)
	require.True(t, got.Found)
	require.Len(t, got.Reasons, 1)
	r := got.Reasons[0]
	// Linear: 500 tok/s per user. 50 → 100 gains 10,000 / 50 = 200: 40 %.
	assert.InDelta(t, 0.4, r.Value, 1e-12)
	assert.InDelta(t, 0.5, r.Threshold, 0)
	assert.Equal(t, "knee: from load 50 to 100 throughput grew by 200 tok/s per unit of load, 40% of linear scaling (threshold 50%)", r.Message)
	// 200 users: throughput falls 14 % below the 35,000 peak (and the knee).
	assert.Equal(t, SignalKnee|SignalThroughputDrop, firedSignals(got.Levels[3].Reasons))
	assert.Equal(t, []float64{5000, 25000, 35000, 30000},
		[]float64{got.Levels[0].Throughput, got.Levels[1].Throughput, got.Levels[2].Throughput, got.Levels[3].Throughput})
}

func TestFindObjectives(t *testing.T) {
	levels := []Level{
		withAttainmentLevel(withTTFTLevel(tputLevel(1, 100), 50, 100), 1, 100),
		withAttainmentLevel(withTTFTLevel(tputLevel(2, 200), 55, 180), 1, 200),
		withAttainmentLevel(withTTFTLevel(tputLevel(3, 300), 60, 250), 1, 300),
	}
	obj, err := llmmetrics.ParseObjective("p99 ttft<=200ms")
	require.NoError(t, err)
	got, err := Find(levels, Options{Objectives: []llmmetrics.Objective{obj}})
	require.NoError(t, err)
	assert.False(t, got.Found, "no signal fired (p99 grew only 2.5×)")
	assert.Equal(t, 1, got.MaxGoodLevel, "load 3 fails p99 TTFT ≤ 200 ms")
	assert.InDelta(t, 2.0, got.MaxGoodLoad, 0)
	assert.Equal(t, 2, got.BestGoodputLevel)
	require.Len(t, got.Levels[2].Objectives, 1)
	assert.False(t, got.Levels[2].Objectives[0].Pass)
	assert.Equal(t, msDur(-50), got.Levels[2].Objectives[0].Margin)

	// An objective on a percentile the summaries lack never passes.
	missing := llmmetrics.Objective{Latency: llmmetrics.LatencyTTFT, Percentile: 95, Limit: time.Second}
	got, err = Find(levels, Options{Objectives: []llmmetrics.Objective{missing}})
	require.NoError(t, err)
	assert.Equal(t, -1, got.MaxGoodLevel)
}

func TestFindFromSummaries(t *testing.T) {
	// Summaries computed by Summarize: p99 TTFT explodes at the third
	// level while the median holds.
	mk := func(load float64, tail float64) Level {
		var rs []llmmetrics.Record
		for i := range 100 {
			ttft := 50.0
			if i >= 98 {
				ttft = tail
			}
			rs = append(rs, okRecord(float64(i), ttft, []float64{10, 10}, 3))
		}
		return Level{Load: load, Summary: llmmetrics.Summarize(rs, llmmetrics.SummaryOptions{Duration: time.Duration(load) * time.Second})}
	}
	got, err := Find([]Level{mk(1, 60), mk(2, 80), mk(3, 2000)}, Options{Skip: SignalKnee | SignalThroughputDrop})
	require.NoError(t, err)
	require.True(t, got.Found)
	assert.Equal(t, 2, got.Level)
	assert.Equal(t, SignalTailGrowth, firedSignals(got.Reasons))
	assert.Equal(t, "ttft", got.Reasons[0].Latency)
	assert.Equal(t, 2, got.MaxGoodLevel, "every request is good with the zero SLO")

	b, err := json.Marshal(got)
	require.NoError(t, err)
	var back Result
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, got, back)
}

func TestOptionsValidate(t *testing.T) {
	nan := math.NaN()
	bad := []Options{
		{Throughput: 9},
		{KneeFraction: -0.1}, {KneeFraction: 1.5}, {KneeFraction: nan},
		{DropTolerance: -1}, {DropTolerance: 1}, {DropTolerance: nan},
		{TailGrowth: 1}, {TailGrowth: 0.5}, {TailGrowth: math.Inf(1)}, {TailGrowth: nan},
		{MedianFlat: 0.9}, {MedianFlat: nan},
		{TailPercentile: 50}, {TailPercentile: 101}, {TailPercentile: nan},
		{AttainmentTarget: -0.1}, {AttainmentTarget: 1.1}, {AttainmentTarget: nan},
		{TailLatencies: []llmmetrics.Latency{7}},
		{Objectives: []llmmetrics.Objective{{Percentile: 120}}},
	}
	for _, o := range bad {
		err := o.Validate()
		require.ErrorIs(t, err, ErrInvalidOptions, "%+v", o)
		assert.Regexp(t, "^llmmetrics: invalid saturation options: ", err.Error())
		got, ferr := Find([]Level{tputLevel(1, 1), tputLevel(2, 0.1)}, o)
		assert.Equal(t, err, ferr, "FindSaturation returns Validate's error")
		assert.False(t, got.Found)
		assert.Empty(t, got.Levels)
	}
	// An invalid objective's error is wrapped with %w: both sentinels match.
	err := Options{Objectives: []llmmetrics.Objective{{Percentile: 120}}}.Validate()
	assert.ErrorIs(t, err, ErrInvalidOptions)
	assert.ErrorIs(t, err, llmmetrics.ErrInvalid)

	good := Options{KneeFraction: 1, DropTolerance: 0.1, TailGrowth: 2, MedianFlat: 1, TailPercentile: 100,
		AttainmentTarget: 1, TailLatencies: []llmmetrics.Latency{llmmetrics.LatencyTTFT, llmmetrics.LatencyE2EL}, Throughput: ThroughputTotalTokens}
	assert.NoError(t, good.Validate())
}

func TestSignalText(t *testing.T) {
	assert.Equal(t, "knee", SignalKnee.String())
	assert.Equal(t, "knee|tail_growth", (SignalKnee | SignalTailGrowth).String())
	b, err := (SignalThroughputDrop | SignalAttainment).MarshalText()
	require.NoError(t, err)
	assert.Equal(t, "throughput_drop|attainment", string(b))
	var s Signal
	require.NoError(t, s.UnmarshalText(b))
	assert.Equal(t, SignalThroughputDrop|SignalAttainment, s)
	assert.ErrorIs(t, s.UnmarshalText([]byte("melting")), llmmetrics.ErrInvalid)
	assert.Equal(t, "compute_bound|prefill_stall", (SignalComputeBound | SignalPrefillStall).String())
	assert.Equal(t, "Signal(4096)", Signal(4096).String())
}
