package llmmetrics

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var recT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// ms converts milliseconds to a Duration.
func msDur(v float64) time.Duration { return time.Duration(math.Round(v * 1e6)) }

// rec builds an OK Record that starts startMS after recT0, gets its first
// token ttftMS later and then one chunk per gap; it ends 1 ms after the last
// token. n is the output token count.
func okRecord(startMS, ttftMS float64, gapsMS []float64, n int) Record {
	start := recT0.Add(msDur(startMS))
	first := start.Add(msDur(ttftMS))
	last := first
	var itl []time.Duration
	for _, g := range gapsMS {
		itl = append(itl, msDur(g))
		last = last.Add(msDur(g))
	}
	return Record{
		Start: start, FirstToken: first, LastToken: last, End: last.Add(time.Millisecond),
		InputTokens: 10, OutputTokens: n, Chunks: len(gapsMS) + 1, ITL: itl,
	}
}

// failed builds a Record with the given outcome that never got a token.
func endedRecord(startMS, lenMS float64, o Outcome) Record {
	start := recT0.Add(msDur(startMS))
	return Record{Start: start, End: start.Add(msDur(lenMS)), InputTokens: 10, OutputTokens: 0, Outcome: o}
}

func repeatMS(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func mustPercentile(t *testing.T, d Distribution, p float64) time.Duration {
	t.Helper()
	v, ok := d.Percentile(p)
	require.True(t, ok, "p%v missing", p)
	return v
}

func TestSummarizeSingleRequest(t *testing.T) {
	r := okRecord(0, 150, []float64{20, 30, 25, 25}, 5)
	r.InputTokens = 42
	s := Summarize([]Record{r}, SummaryOptions{
		Duration: 2 * time.Second,
		SLO:      SLO{TTFT: 200 * time.Millisecond, TPOT: 25 * time.Millisecond, E2EL: time.Second},
	})

	assert.Equal(t, 1, s.Requests)
	assert.Equal(t, 1, s.Completed)
	assert.Equal(t, 0, s.Failed)
	assert.Equal(t, 42, s.InputTokens)
	assert.Equal(t, 5, s.OutputTokens)
	assert.InDelta(t, 0.5, s.RequestThroughput, 1e-12)     // 1 / 2 s
	assert.InDelta(t, 2.5, s.OutputThroughput, 1e-12)      // 5 / 2 s
	assert.InDelta(t, 23.5, s.TotalTokenThroughput, 1e-12) // 47 / 2 s

	assert.Equal(t, Distribution{Count: 1, Mean: msDur(150), Median: msDur(150), Min: msDur(150), Max: msDur(150),
		Percentiles: []PercentileValue{{50, msDur(150)}, {90, msDur(150)}, {95, msDur(150)}, {99, msDur(150)}}}, s.TTFT)
	// TPOT = (250 − 150) ms / 4 = 25 ms; E2EL = LastToken − Start = 250 ms.
	assert.Equal(t, msDur(25), s.TPOT.Mean)
	assert.Equal(t, msDur(250), s.E2EL.Mean)
	assert.Equal(t, 1, s.E2EL.Count)
	// ITL [20 30 25 25]: sorted 20 25 25 30; std = √12.5 ms; p90 at index
	// 2.7 = 25 + 0.7 × 5 = 28.5 ms; p99 at 2.97 = 29.85 ms.
	assert.Equal(t, 4, s.ITL.Count)
	assert.Equal(t, msDur(25), s.ITL.Mean)
	assert.Equal(t, msDur(25), s.ITL.Median)
	assert.Equal(t, 3535534*time.Nanosecond, s.ITL.Std)
	assert.Equal(t, msDur(20), s.ITL.Min)
	assert.Equal(t, msDur(30), s.ITL.Max)
	assert.Equal(t, msDur(28.5), mustPercentile(t, s.ITL, 90))
	assert.Equal(t, msDur(29.85), mustPercentile(t, s.ITL, 99))

	// TPOT is exactly on its 25 ms limit: good.
	assert.Equal(t, 1, s.Goodput.Good)
	assert.Equal(t, 5, s.Goodput.GoodTokens)
	assert.InDelta(t, 0.5, s.Goodput.RequestsPerSecond, 1e-12)
	assert.InDelta(t, 2.5, s.Goodput.TokensPerSecond, 1e-12)
	assert.InDelta(t, 1.0, s.Goodput.Attainment, 0)
	assert.InDelta(t, 1.0, s.Goodput.UsefulWorkRatio, 0)
	assert.Equal(t, 1, s.PeakConcurrency)
	assert.InDelta(t, 0.1255, s.MeanConcurrency, 1e-12) // 251 ms busy / 2 s
	assert.Equal(t, msDur(25), s.TPOT.Mean)
	assert.Equal(t, msDur(25), s.TokenWeightedTPOT)
}

func TestSummarizeGolden(t *testing.T) {
	tests := []struct {
		name    string
		records []Record
		opts    SummaryOptions
		check   func(t *testing.T, s Summary)
	}{
		{
			name:    "one output token",
			records: []Record{okRecord(0, 80, nil, 1), okRecord(10, 120, nil, 1), okRecord(20, 95, []float64{30}, 2)},
			opts:    SummaryOptions{Duration: time.Second, SLO: SLO{TPOT: time.Millisecond}},
			check: func(t *testing.T, s Summary) {
				// TTFT 80 95 120: mean 98.333… ms, population std 16.499158… ms.
				assert.Equal(t, 3, s.TTFT.Count)
				assert.Equal(t, 98333333*time.Nanosecond, s.TTFT.Mean)
				assert.Equal(t, msDur(95), s.TTFT.Median)
				assert.Equal(t, 16499158*time.Nanosecond, s.TTFT.Std)
				// Only the N = 2 request has a TPOT (30 ms / 1).
				assert.Equal(t, 1, s.TPOT.Count)
				assert.Equal(t, msDur(30), s.TPOT.Mean)
				// N ≤ 1 meets any TPOT limit; the 30 ms TPOT misses 1 ms.
				assert.Equal(t, 2, s.Goodput.Good)
				assert.Equal(t, 2, s.Goodput.GoodTokens)
				assert.InDelta(t, 2.0/4.0, s.Goodput.UsefulWorkRatio, 1e-12)
				assert.InDelta(t, 2.0/3.0, s.Goodput.ByThreshold.TPOT, 1e-12)
				assert.InDelta(t, 1.0, s.Goodput.ByThreshold.TTFT, 0)
			},
		},
		{
			name:    "tokens in one chunk",
			records: []Record{okRecord(0, 300, nil, 50)},
			opts:    SummaryOptions{Duration: time.Second},
			check: func(t *testing.T, s Summary) {
				// 50 tokens in one chunk: TPOT 0, no ITL gap.
				assert.Equal(t, 1, s.TPOT.Count)
				assert.Equal(t, time.Duration(0), s.TPOT.Max)
				assert.Equal(t, 0, s.ITL.Count)
				_, ok := s.ITL.Percentile(99)
				assert.False(t, ok, "an empty distribution has no percentiles")
				assert.InDelta(t, 50.0, s.OutputThroughput, 1e-12)
				assert.Equal(t, msDur(300), s.E2EL.Max)
			},
		},
		{
			name: "failed and canceled mixed in",
			records: []Record{
				okRecord(0, 100, []float64{50, 50, 50}, 4),
				endedRecord(5, 20, OutcomeError),
				okRecord(10, 140, []float64{60, 60}, 3),
				endedRecord(20, 300, OutcomeCanceled),
				okRecord(30, 200, []float64{100, 100, 100, 100}, 5),
			},
			opts: SummaryOptions{Duration: 3 * time.Second, SLO: SLO{TTFT: 150 * time.Millisecond, E2EL: 600 * time.Millisecond}},
			check: func(t *testing.T, s Summary) {
				assert.Equal(t, 5, s.Requests)
				assert.Equal(t, 3, s.Completed)
				assert.Equal(t, 1, s.Failed)
				assert.Equal(t, 1, s.Canceled)
				assert.Equal(t, 30, s.InputTokens) // failed requests' prompts excluded
				assert.Equal(t, 12, s.OutputTokens)
				assert.InDelta(t, 1.0, s.RequestThroughput, 1e-12)
				assert.Equal(t, 3, s.TTFT.Count)
				assert.Equal(t, 3, s.E2EL.Count)
				assert.Equal(t, 9, s.ITL.Count)
				// Good: the first two (TTFT 100/140 ms, E2EL 250/260 ms); the
				// third has TTFT 200 ms > 150 ms. Attainment counts all 5.
				assert.Equal(t, 2, s.Goodput.Good)
				assert.InDelta(t, 2.0/5.0, s.Goodput.Attainment, 1e-12)
				assert.InDelta(t, 2.0/5.0, s.Goodput.ByThreshold.TTFT, 1e-12)
				assert.InDelta(t, 3.0/5.0, s.Goodput.ByThreshold.E2EL, 1e-12)
				assert.InDelta(t, 3.0/5.0, s.Goodput.ByThreshold.ITL, 1e-12) // unset limit
				assert.InDelta(t, 7.0/12.0, s.Goodput.UsefulWorkRatio, 1e-12)
				// Intervals [0,251) [5,25) [10,271) [20,320) [30,631) ms: 4 in flight at 30 ms.
				assert.Equal(t, 4, s.PeakConcurrency)
			},
		},
		{
			name:    "all failed",
			records: []Record{endedRecord(0, 10, OutcomeError), endedRecord(5, 10, OutcomeError), endedRecord(30, 5, OutcomeCanceled)},
			opts:    SummaryOptions{SLO: SLO{TTFT: 100 * time.Millisecond}},
			check: func(t *testing.T, s Summary) {
				assert.Equal(t, 0, s.Completed)
				assert.Equal(t, 2, s.Failed)
				assert.Equal(t, 1, s.Canceled)
				assert.Equal(t, msDur(35), s.Duration) // max(End) − min(Start)
				for _, m := range []Latency{LatencyTTFT, LatencyTPOT, LatencyITL, LatencyE2EL} {
					assert.Equal(t, Distribution{}, s.Distribution(m), m.String())
				}
				assert.Zero(t, s.RequestThroughput)
				assert.Zero(t, s.Goodput.Good)
				assert.Zero(t, s.Goodput.Attainment)
				assert.Zero(t, s.Goodput.UsefulWorkRatio)
				assert.Equal(t, 2, s.PeakConcurrency) // [0,10) and [5,15)
				assert.InDelta(t, 25.0/35.0, s.MeanConcurrency, 1e-12)
			},
		},
		{
			name:    "long and short outputs",
			records: []Record{okRecord(0, 100, repeatMS(10, 1000), 1001), okRecord(0, 100, repeatMS(100, 10), 11)},
			opts:    SummaryOptions{Duration: 12 * time.Second},
			check: func(t *testing.T, s Summary) {
				// TPOT 10 ms and 100 ms: request-weighted 55 ms; token-weighted
				// (10 s + 1 s) / 1010 = 10.891089… ms.
				assert.Equal(t, msDur(55), s.TPOT.Mean)
				assert.Equal(t, 10891089*time.Nanosecond, s.TokenWeightedTPOT)
				assert.Equal(t, msDur(45), s.TPOT.Std)
				assert.Equal(t, 10891089*time.Nanosecond, s.ITL.Mean) // each gap counts once
				assert.Equal(t, msDur(10), s.ITL.Median)
				assert.Equal(t, 2, s.PeakConcurrency)
			},
		},
		{
			name: "heavy tail",
			records: func() []Record {
				var rs []Record
				for i := range 100 {
					ttft := 50.0
					if i == 99 {
						ttft = 5050
					}
					rs = append(rs, okRecord(float64(i)*10, ttft, []float64{20}, 2))
				}
				return rs
			}(),
			opts: SummaryOptions{Duration: 10 * time.Second, Percentiles: []float64{50, 99, 99.9}},
			check: func(t *testing.T, s Summary) {
				// 99 × 50 ms and one 5,050 ms: p99 at index 98.01 =
				// 50 + 0.01 × 5,000 = 100 ms; p99.9 at 98.901 = 4,555 ms.
				assert.Equal(t, msDur(50), s.TTFT.Median)
				assert.Equal(t, msDur(50), mustPercentile(t, s.TTFT, 50))
				assert.Equal(t, msDur(100), mustPercentile(t, s.TTFT, 99))
				assert.Equal(t, msDur(4555), mustPercentile(t, s.TTFT, 99.9))
				assert.Equal(t, msDur(100), s.TTFT.Mean)
				assert.Equal(t, msDur(5050), s.TTFT.Max)
			},
		},
		{
			name:    "empty input",
			records: nil,
			check: func(t *testing.T, s Summary) {
				assert.Equal(t, Summary{}, s)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, Summarize(tt.records, tt.opts))
		})
	}
}

func TestSummarizeSLOOnTheLimit(t *testing.T) {
	slo := SLO{TTFT: msDur(200), TPOT: msDur(25), ITL: msDur(40), E2EL: msDur(300)}
	onLimit := okRecord(0, 200, []float64{20, 40, 20, 20}, 5) // TTFT 200, TPOT 100/4 = 25, max gap 40, E2EL 300
	justOver := func(f func(r *Record)) Record {
		r := onLimit
		r.ITL = slices.Clone(r.ITL)
		f(&r)
		return r
	}
	tests := []struct {
		name string
		r    Record
		want sloCheck
	}{
		{"all on the limit", onLimit, sloCheck{Completed: true, TTFO: true, TTFT: true, TPOT: true, ITL: true, E2EL: true}},
		{"TTFT 1 ns over", justOver(func(r *Record) { r.Start = r.Start.Add(-1) }),
			sloCheck{Completed: true, TTFO: true, TTFT: false, TPOT: true, ITL: true, E2EL: false}},
		// 100 ms + 1 ns over 4 tokens: Record.TPOT rounds to 25 ms, but the
		// limit is compared exactly.
		{"TPOT a quarter ns over", justOver(func(r *Record) { r.LastToken = r.LastToken.Add(1); r.End = r.LastToken }),
			sloCheck{Completed: true, TTFO: true, TTFT: true, TPOT: false, ITL: true, E2EL: false}},
		{"largest gap 1 ns over", justOver(func(r *Record) { r.ITL[1]++ }),
			sloCheck{Completed: true, TTFO: true, TTFT: true, TPOT: true, ITL: false, E2EL: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, slo.checkRecord(tt.r))
			s := Summarize([]Record{tt.r}, SummaryOptions{SLO: slo})
			assert.Equal(t, countIf(tt.want.met()), s.Goodput.Good)
		})
	}
	d, ok := justOver(func(r *Record) { r.LastToken = r.LastToken.Add(1) }).TPOT()
	require.True(t, ok)
	assert.Equal(t, msDur(25), d, "the rounded TPOT hides the excess the SLO sees")
}

func TestSummarizeDurationAndPercentileOptions(t *testing.T) {
	rs := []Record{okRecord(0, 10, []float64{10}, 2), okRecord(100, 10, []float64{10}, 2)}
	// Records span Start 0 to End 100+10+10+1 = 121 ms.
	s := Summarize(rs, SummaryOptions{})
	assert.Equal(t, msDur(121), s.Duration)
	assert.Equal(t, []float64{50, 90, 95, 99}, percentileList(s.TTFT))

	s = Summarize(rs, SummaryOptions{Duration: -time.Second, Percentiles: []float64{}})
	assert.Equal(t, msDur(121), s.Duration, "negative Duration means computed")
	assert.Empty(t, s.TTFT.Percentiles)

	s = Summarize(rs, SummaryOptions{Percentiles: []float64{99.9, math.NaN(), -1, 101, 0}})
	assert.Equal(t, []float64{99.9, 0}, percentileList(s.TTFT), "invalid percentiles are dropped, order kept")
}

func percentileList(d Distribution) []float64 {
	var out []float64
	for _, p := range d.Percentiles {
		out = append(out, p.P)
	}
	return out
}

func TestSummaryJSON(t *testing.T) {
	s := Summarize([]Record{okRecord(0, 150, []float64{20, 30}, 3), endedRecord(1, 5, OutcomeCanceled)},
		SummaryOptions{Duration: time.Second, Percentiles: []float64{50, 99.9}, SLO: sloChat})
	b, err := json.Marshal(s)
	require.NoError(t, err)

	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	for _, k := range []string{"requests", "completed", "failed", "canceled", "duration_ns", "input_tokens",
		"output_tokens", "reasoning_tokens", "request_throughput", "output_throughput", "total_token_throughput", "ttft", "ttfo", "tpot",
		"itl", "e2el", "tpot_token_weighted_ns", "peak_concurrency",
		"mean_concurrency", "slo", "goodput"} {
		assert.Contains(t, m, k)
	}
	ttft := m["ttft"].(map[string]any)
	assert.InDelta(t, 150e6, ttft["mean_ns"], 0)
	assert.Equal(t, []any{map[string]any{"p": 50.0, "value_ns": 150e6}, map[string]any{"p": 99.9, "value_ns": 150e6}}, ttft["percentiles"])
	assert.Equal(t, map[string]any{"ttft_ns": 200e6, "tpot_ns": 100e6}, m["slo"])

	var back Summary
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, s, back)
	v, ok := back.TTFT.Percentile(99.9)
	assert.True(t, ok)
	assert.Equal(t, msDur(150), v)
}

// TestSummarizeTTFO: TTFO is one value per OK request with an answer token,
// and reasoning tokens add up over OK requests. By hand:
//   - A: reasoning from 100 ms, answer at 700 ms: TTFT 100, TTFO 700, 40 of
//     60 tokens reasoning;
//   - B: answer only, first token at 200 ms: TTFT = TTFO = 200;
//   - C: reasoning only (cut by the length limit before any answer): TTFT
//     150, no TTFO, 20 reasoning tokens;
//   - D: reasoning then answer at 400 ms, 10 reasoning tokens;
//   - E: failed after its answer started (FirstOutput 50 ms): not counted.
//
// TTFO samples {700, 200, 400} ms: mean 433.333… ms, median 400 ms, min
// 200, max 700, population std √((266.6…² + 233.3…² + 33.3…²)/3) =
// √(126,666.6…/3) = √(42,222.2…) ms ≈ 205.480467 ms; p90 by numpy's linear interpolation =
// 400 + 0.8·(700 − 400) = 640 ms. TTFT samples {100, 200, 150, 400}.
// Reasoning tokens 40 + 0 + 20 + 10 = 70.
func TestSummarizeTTFO(t *testing.T) {
	a := okRecord(0, 100, []float64{300, 300}, 60)
	a.FirstOutput, a.ReasoningTokens = a.Start.Add(msDur(700)), 40
	b := okRecord(0, 200, []float64{10}, 2)
	b.FirstOutput = b.FirstToken
	c := okRecord(0, 150, []float64{10}, 20)
	c.ReasoningTokens = 20
	d := okRecord(0, 400, nil, 11)
	d.FirstOutput, d.ReasoningTokens = d.FirstToken, 10
	e := okRecord(0, 50, nil, 5)
	e.FirstOutput, e.ReasoningTokens, e.Outcome = e.FirstToken, 4, OutcomeError

	s := Summarize([]Record{a, b, c, d, e}, SummaryOptions{Percentiles: []float64{90}})
	assert.Equal(t, 4, s.TTFT.Count)
	assert.Equal(t, 3, s.TTFO.Count)
	assert.Equal(t, time.Duration(433_333_333), s.TTFO.Mean) // 1300 ms / 3, rounded
	assert.Equal(t, msDur(400), s.TTFO.Median)
	assert.Equal(t, msDur(200), s.TTFO.Min)
	assert.Equal(t, msDur(700), s.TTFO.Max)
	assert.Equal(t, time.Duration(205_480_467), s.TTFO.Std)
	assert.Equal(t, msDur(640), mustPercentile(t, s.TTFO, 90))
	assert.Equal(t, 70, s.ReasoningTokens)
	assert.Equal(t, 60+2+20+11, s.OutputTokens, "reasoning stays inside the output tokens")

	// Without reasoning, TTFO is TTFT.
	plain := []Record{b, b, d}
	sp := Summarize(plain, SummaryOptions{})
	sp.TTFO.Std, sp.TTFT.Std = 0, 0
	assert.Equal(t, sp.TTFT, sp.TTFO)
	// Records from before FirstOutput existed have no TTFO at all.
	old := okRecord(0, 100, []float64{10}, 2)
	assert.Zero(t, Summarize([]Record{old}, SummaryOptions{}).TTFO.Count)
}

// TestSummarizeProperties checks invariants on random runs.
func TestSummarizeProperties(t *testing.T) {
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 99))
		rs := randomRunRecords(rng, 1+rng.IntN(300))
		slo := SLO{TTFT: msDur(float64(rng.IntN(300))), TPOT: msDur(float64(rng.IntN(50))), ITL: msDur(float64(rng.IntN(200)))}
		s := Summarize(rs, SummaryOptions{SLO: slo, Percentiles: []float64{0, 10, 50, 90, 99, 100}})
		for _, m := range []Latency{LatencyTTFT, LatencyTPOT, LatencyITL, LatencyE2EL} {
			d := s.Distribution(m)
			if d.Count == 0 {
				continue
			}
			assert.LessOrEqual(t, d.Min, d.Mean, "seed %d %s", seed, m)
			assert.LessOrEqual(t, d.Mean, d.Max, "seed %d %s", seed, m)
			assert.Equal(t, d.Min, mustPercentile(t, d, 0))
			assert.Equal(t, d.Max, mustPercentile(t, d, 100))
			assert.Equal(t, d.Median, d.Percentiles[2].Value)
			assert.True(t, slices.IsSortedFunc(d.Percentiles, func(a, b PercentileValue) int { return int(a.Value - b.Value) }),
				"seed %d %s: percentiles monotone in p", seed, m)
		}
		assert.LessOrEqual(t, s.Goodput.RequestsPerSecond, s.RequestThroughput)
		assert.LessOrEqual(t, s.Goodput.TokensPerSecond, s.OutputThroughput)
		for _, a := range []float64{s.Goodput.Attainment, s.Goodput.UsefulWorkRatio, s.Goodput.ByThreshold.TTFT,
			s.Goodput.ByThreshold.TPOT, s.Goodput.ByThreshold.ITL, s.Goodput.ByThreshold.E2EL} {
			assert.GreaterOrEqual(t, a, 0.0)
			assert.LessOrEqual(t, a, 1.0)
		}
		assert.LessOrEqual(t, s.Goodput.Attainment, s.Goodput.ByThreshold.TTFT)
		assert.Equal(t, s.Requests, s.Completed+s.Failed+s.Canceled)
		good := 0
		for _, r := range rs {
			good += countIf(slo.Met(r))
		}
		assert.Equal(t, good, s.Goodput.Good)
	}
}

func randomRunRecords(rng *rand.Rand, n int) []Record {
	rs := make([]Record, n)
	for i := range rs {
		start := float64(rng.IntN(10000))
		switch rng.IntN(10) {
		case 0:
			rs[i] = endedRecord(start, float64(rng.IntN(500)), OutcomeError)
			continue
		case 1:
			rs[i] = endedRecord(start, float64(rng.IntN(500)), OutcomeCanceled)
			continue
		}
		chunks := rng.IntN(40)
		gaps := make([]float64, chunks)
		for j := range gaps {
			gaps[j] = rng.ExpFloat64() * 20
		}
		rs[i] = okRecord(start, rng.ExpFloat64()*100, gaps, chunks+1+rng.IntN(3))
	}
	return rs
}

// FuzzSummarize feeds Summarize arbitrary records: it must not panic and no
// float field may be NaN or Inf (json.Marshal rejects both).
func FuzzSummarize(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, int64(0), uint8(3))
	f.Add([]byte{255, 255, 255, 255, 255, 255, 255, 255, 0, 0, 0, 0, 0, 0, 0, 0, 128}, int64(-5), uint8(0))
	f.Add(make([]byte, 64), int64(1), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, dur int64, sloBits uint8) {
		var rs []Record
		next := fuzzInt64s(&data)
		for len(data) > 0 && len(rs) < 64 {
			r := Record{
				Start:        time.Unix(0, next()),
				InputTokens:  int(next() % 100000),
				OutputTokens: int(next() % 100000),
				Outcome:      Outcome(next() % 4),
			}
			if v := next(); v%3 != 0 {
				r.FirstToken = r.Start.Add(time.Duration(v >> 8))
				r.LastToken = r.FirstToken.Add(time.Duration(next()))
			}
			if v := next(); v%2 == 0 {
				r.End = r.Start.Add(time.Duration(v))
			}
			for g := next() % 5; g > 0; g-- {
				r.ITL = append(r.ITL, time.Duration(next()))
			}
			rs = append(rs, r)
		}
		slo := SLO{}
		if sloBits&1 != 0 {
			slo.TTFT = time.Duration(sloBits) * time.Millisecond
		}
		if sloBits&2 != 0 {
			slo.TPOT = time.Duration(sloBits)
		}
		if sloBits&4 != 0 {
			slo.ITL = -time.Second
		}
		s := Summarize(rs, SummaryOptions{Duration: time.Duration(dur), SLO: slo, Percentiles: []float64{0, 50, 99.9, 100}})
		_, err := json.Marshal(s)
		require.NoError(t, err)
		assertFiniteFloats(t, reflect.ValueOf(s), "Summary")
		assert.Equal(t, len(rs), s.Completed+s.Failed+s.Canceled)
	})
}

func assertFiniteFloats(t *testing.T, v reflect.Value, path string) {
	t.Helper()
	switch v.Kind() {
	case reflect.Float64:
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			t.Errorf("%s = %v", path, f)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			assertFiniteFloats(t, v.Field(i), path+"."+v.Type().Field(i).Name)
		}
	case reflect.Slice:
		for i := range v.Len() {
			assertFiniteFloats(t, v.Index(i), path)
		}
	}
}

// TestSummarizeAllocs checks that Summarize's allocations do not grow with
// the number of requests (sample buffers are pooled).
func TestSummarizeAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under -race")
	}
	small, large := benchRunRecords(100, 1_000), benchRunRecords(10_000, 100_000)
	opts := SummaryOptions{SLO: sloChat}
	Summarize(large, opts) // warm the pool with a large buffer
	a := testing.AllocsPerRun(20, func() { Summarize(small, opts) })
	b := testing.AllocsPerRun(20, func() { Summarize(large, opts) })
	assert.LessOrEqual(t, b, a+1, "allocations must not scale with requests")
	assert.LessOrEqual(t, b, 10.0)
}

// fuzzInt64s returns a function that takes the next 8 bytes of *data as a
// big-endian int64 (zeros once data runs out), for building fuzz inputs.
func fuzzInt64s(data *[]byte) func() int64 {
	return func() int64 {
		var v int64
		for range 8 {
			v <<= 8
			if len(*data) > 0 {
				v |= int64((*data)[0])
				*data = (*data)[1:]
			}
		}
		return v
	}
}

func jsonFloat(f float64) string { b, _ := json.Marshal(f); return string(b) }

func TestSummaryCacheAndGeneration(t *testing.T) {
	// Three completed requests and one failed one (excluded everywhere):
	//   A: input 1000, cached 800, write 0;   gaps 40 ms         → generation 40 ms
	//   B: input 3000, cached 1200, write 500; one chunk          → generation 0
	//   C: input 0 (not reported);             gaps 10 + 30 ms    → generation 40 ms
	//   F: failed, input 9999, cached 9999.
	// Σ cached = 2000, Σ write = 500, Σ input = 4000 → hit rate 0.5.
	// Generation: {0, 40, 40} ms → mean 26.666667 ms, median 40 ms, min 0, max 40.
	a := okRecord(0, 100, []float64{40}, 2)
	a.InputTokens, a.CachedInputTokens = 1000, 800
	b := okRecord(0, 100, nil, 1)
	b.InputTokens, b.CachedInputTokens, b.CacheWriteInputTokens = 3000, 1200, 500
	c := okRecord(0, 100, []float64{10, 30}, 3)
	c.InputTokens = 0
	f := endedRecord(0, 10, OutcomeError)
	f.InputTokens, f.CachedInputTokens = 9999, 9999
	s := Summarize([]Record{a, b, c, f}, SummaryOptions{})
	assert.Equal(t, 4000, s.InputTokens)
	assert.Equal(t, 2000, s.CachedInputTokens)
	assert.Equal(t, 500, s.CacheWriteInputTokens)
	assert.InDelta(t, 0.5, s.PrefixCacheHitRate, 0)
	assert.Equal(t, 3, s.GenerationTime.Count)
	assert.Equal(t, msDur(40), s.GenerationTime.Median)
	assert.Equal(t, time.Duration(0), s.GenerationTime.Min)
	assert.Equal(t, msDur(40), s.GenerationTime.Max)
	assert.Equal(t, time.Duration(26666667), s.GenerationTime.Mean)
	// E2EL = TTFT + generation, request by request: the maxima agree.
	assert.Equal(t, s.TTFT.Max+s.GenerationTime.Max, s.E2EL.Max)

	t.Run("no input reported: hit rate 0", func(t *testing.T) {
		s := Summarize([]Record{c}, SummaryOptions{})
		assert.Zero(t, s.PrefixCacheHitRate)
	})
	t.Run("JSON names", func(t *testing.T) {
		b, err := json.Marshal(s)
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m))
		assert.EqualValues(t, 2000, m["cached_input_tokens"])
		assert.EqualValues(t, 500, m["cache_write_input_tokens"])
		assert.EqualValues(t, 0.5, m["prefix_cache_hit_rate"])
		assert.Contains(t, m, "generation_time")
		assert.NotContains(t, m, "tokens_saturated", "omitted when false")
	})
}

func TestSummaryTTFOAttainment(t *testing.T) {
	// TTFO 300 ms (good), 900 ms (misses 500 ms), and no answer token (misses).
	recs := []Record{
		withOutput(okRecord(0, 100, []float64{40}, 2), 300),
		withOutput(okRecord(0, 100, []float64{40}, 2), 900),
		okRecord(0, 100, []float64{40}, 2),
	}
	s := Summarize(recs, SummaryOptions{SLO: SLO{TTFO: 500 * time.Millisecond}})
	assert.Equal(t, 1, s.Goodput.Good)
	assert.InDelta(t, 1.0/3.0, s.Goodput.Attainment, 1e-15)
	assert.InDelta(t, 1.0/3.0, s.Goodput.ByThreshold.TTFO, 1e-15)
	assert.InDelta(t, 1.0, s.Goodput.ByThreshold.TTFT, 0, "TTFT unset: every OK request")
}

func TestSummaryTokenTotalsSaturate(t *testing.T) {
	// Two records claiming math.MaxInt output tokens would wrap to −2 in a
	// plain sum; the totals hold at math.MaxInt and say so.
	a := okRecord(0, 100, []float64{40}, math.MaxInt)
	a.InputTokens = math.MaxInt
	b := a
	s := Summarize([]Record{a, b}, SummaryOptions{Duration: time.Second})
	assert.True(t, s.TokensSaturated)
	assert.Equal(t, math.MaxInt, s.OutputTokens)
	assert.Equal(t, math.MaxInt, s.InputTokens)
	assert.Equal(t, math.MaxInt, s.Goodput.GoodTokens)
	assert.Positive(t, s.OutputThroughput)
	assert.Positive(t, s.TotalTokenThroughput)
	assert.InDelta(t, 2*float64(math.MaxInt), s.TotalTokenThroughput, 1e5, "input + output as floats: no wrap-around")
	assert.Positive(t, s.TokenWeightedTPOT+1, "never negative")
	assert.GreaterOrEqual(t, s.Goodput.UsefulWorkRatio, 0.0)

	ok := Summarize([]Record{okRecord(0, 100, []float64{40}, 2)}, SummaryOptions{})
	assert.False(t, ok.TokensSaturated)
}

// TestSummaryJSONReadsOlderFiles reads a Summary written by an earlier
// version, which also held the request-weighted TPOT mean under
// tpot_request_weighted_ns (now only TPOT.Mean): the key is ignored, and
// every other figure is kept.
func TestSummaryJSONReadsOlderFiles(t *testing.T) {
	old := `{"requests": 2, "completed": 2, "tpot": {"count": 2, "mean_ns": 55000000},
		"tpot_request_weighted_ns": 55000000, "tpot_token_weighted_ns": 10891089}`
	var s Summary
	require.NoError(t, json.Unmarshal([]byte(old), &s))
	assert.Equal(t, 2, s.Completed)
	assert.Equal(t, msDur(55), s.TPOT.Mean)
	assert.Equal(t, 10891089*time.Nanosecond, s.TokenWeightedTPOT)
	b, err := json.Marshal(s)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "tpot_request_weighted_ns")
}
