package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/cmd/llmmetrics/internal/servermetrics"
	"github.com/llmmetrics/llmmetrics/saturation"
)

func durp(d time.Duration) *time.Duration { return &d }

// phasesOf aggregates scrape payloads of servermetrics' testdata as one
// level's.
func phasesOf(t *testing.T, files ...string) servermetrics.Phases {
	t.Helper()
	a := servermetrics.NewAggregator()
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join("..", "servermetrics", "testdata", f))
		require.NoError(t, err)
		s, err := servermetrics.Parse(bytes.NewReader(b))
		require.NoError(t, err)
		a.Add(0, s)
	}
	return a.Phases()
}

// A level of a vLLM server read from its /metrics at the level's start and
// end (servermetrics/testdata/vllm_v1_phases_*.txt: 160 requests finished,
// queue mean 1.5 s and p99 6 s in (5, 10], prefill mean 100 ms and p99 in
// the first bucket, decode mean 4 s), the client's mean TTFT 1.9 s over
// 150 completed requests: the wait is 1.9 − 0.1 = 1.8 s, 1.5 s of it in the
// engine's queue.
func TestServerTimeOfVLLMPhases(t *testing.T) {
	p := phasesOf(t, "vllm_v1_phases_before.txt", "vllm_v1_phases_after.txt")
	st := serverTimeOfPhases(p, llmmetrics.Distribution{Count: 150, Mean: 1900 * time.Millisecond})
	require.NotNil(t, st)
	require.NotNil(t, st.Decode)
	decodeP99 := st.Decode.P99
	assert.Equal(t, &ServerTime{
		Source: "vLLM histograms", Requests: 160, TTFTMean: 1900 * time.Millisecond,
		Wait:    &TimeStat{Count: 150, Mean: 1800 * time.Millisecond},
		Queue:   &TimeStat{Count: 160, Mean: 1500 * time.Millisecond, P99: durp(6 * time.Second), P99Bucket: []time.Duration{5 * time.Second, 10 * time.Second}},
		Prefill: &TimeStat{Count: 160, Mean: 100 * time.Millisecond, P99: durp(297 * time.Millisecond), P99Bucket: []time.Duration{0, 300 * time.Millisecond}},
		Decode:  &TimeStat{Count: 160, Mean: 4 * time.Second, P99: decodeP99, P99Bucket: []time.Duration{2500 * time.Millisecond, 5 * time.Second}},
	}, st)
	assert.Equal(t, "TTFT mean 1.90 s = 1.80 s waiting before the engine + 100 ms prefill; the engine's own queue 1.50 s on average, p99 ≈ 6.00 s (5.00 s–10.0 s); prefill p99 under 300 ms (vLLM histograms, 160 requests finished in the level; p99 from the buckets)",
		serverTimeLine(st, 150))

	// A TTFT below the prefill mean: no wait, said so.
	st = serverTimeOfPhases(p, llmmetrics.Distribution{Count: 150, Mean: 80 * time.Millisecond})
	assert.Nil(t, st.Wait)
	assert.True(t, strings.HasPrefix(serverTimeLine(st, 150), "TTFT mean 80 ms, while the engine's prefill alone averages 100 ms; the engine's own queue"))

	// One scrape, or a server without the histograms: nothing.
	assert.Nil(t, serverTimeOfPhases(phasesOf(t, "vllm_v1_phases_after.txt"), llmmetrics.Distribution{Count: 1, Mean: time.Second}))
	assert.Nil(t, serverTimeOfPhases(phasesOf(t, "sglang.txt", "sglang.txt"), llmmetrics.Distribution{Count: 1, Mean: time.Second}))
}

// SGLang exports its queue time only: no prefill, so no wait; the open
// +Inf bucket gives a lower bound.
func TestServerTimeLineQueueOnly(t *testing.T) {
	st := &ServerTime{Source: "SGLang histograms", Requests: 12, TTFTMean: 2 * time.Second,
		Queue: &TimeStat{Count: 12, Mean: 1200 * time.Millisecond, P99: durp(3000 * time.Second), P99Bucket: []time.Duration{3000 * time.Second}}}
	assert.Equal(t, "TTFT mean 2.00 s; the engine's own queue 1.20 s on average, p99 over 3000.0 s (SGLang histograms, 12 requests finished in the level; p99 from the buckets)",
		serverTimeLine(st, 12))
}

// rec is a completed record with a TTFT and the server's times (ms; 0:
// not reported).
func rec(ttftMS, prefillMS, decodeMS float64) llmmetrics.Record {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	first := t0.Add(ms(ttftMS))
	return llmmetrics.Record{Start: t0, FirstToken: first, LastToken: first.Add(time.Second), End: first.Add(time.Second),
		OutputTokens: 10, Chunks: 10, ServerPrefill: ms(prefillMS), ServerDecode: ms(decodeMS)}
}

// Three answers with the server's times, one without, one failed: the
// figures are over the three. TTFT 100, 200, 600 ms; prefill 40, 50, 100
// ms; so waits 60, 150, 500 ms (mean 236.67 ms; p99 by numpy's linear
// rule 150 + 0.98 × 350 = 493 ms); prefill mean 63.33 ms, p99 50 + 0.98 ×
// 50 = 99 ms; TTFT mean 300 ms = 236.67 + 63.33. Decode from every
// completed answer that has one: 900 and 700 ms, mean 800 ms.
func TestServerTimeOfAnswers(t *testing.T) {
	failed := rec(10, 5, 1)
	failed.Outcome = llmmetrics.OutcomeError
	all := []llmmetrics.Record{rec(100, 40, 900), rec(200, 50, 0), rec(600, 100, 700), rec(300, 0, 0), failed}
	pooled := llmmetrics.Summarize(all, llmmetrics.SummaryOptions{})
	st := serverTimeOfAnswers(all, pooled)
	require.NotNil(t, st)
	assert.Equal(t, "answers", st.Source)
	assert.Equal(t, 3, st.Requests)
	assert.Equal(t, 300*time.Millisecond, st.TTFTMean)
	assert.Equal(t, 3, st.Wait.Count)
	assert.InDelta(t, float64(236666667), float64(st.Wait.Mean), 1)
	assert.Equal(t, 493*time.Millisecond, *st.Wait.P99)
	assert.InDelta(t, float64(63333333), float64(st.Prefill.Mean), 1)
	assert.Equal(t, 99*time.Millisecond, *st.Prefill.P99)
	assert.Equal(t, 2, st.Decode.Count)
	assert.Equal(t, 800*time.Millisecond, st.Decode.Mean)
	assert.Equal(t, "TTFT mean 300 ms = 237 ms waiting before the engine + 63 ms prefill; p99 493 ms waiting, 99 ms prefill (the server's times in 3 of 4 answers)",
		serverTimeLine(st, 4))

	assert.Nil(t, serverTimeOfAnswers([]llmmetrics.Record{rec(300, 0, 0), failed}, pooled), "no completed answer has a prefill time")

	// A server whose prefill outlasts the client's TTFT (the replayed
	// captures, or clocks that disagree): the line says the times do not
	// fit, never a negative or made-up wait.
	odd := serverTimeOfAnswers([]llmmetrics.Record{rec(1, 83.203, 75.55)}, pooled)
	require.NotNil(t, odd)
	assert.Equal(t, time.Duration(0), odd.Wait.Mean, "Record.Wait gives 0, never below")
	assert.Equal(t, "TTFT mean 1.0 ms, shorter than the server's own prefill mean 83 ms: its times do not fit the client's (clocks that disagree, or a prefill counted from an earlier event), so the wait is not known (1 of 1 answers)",
		serverTimeLine(odd, 1))
}

func withReasons(r llmmetrics.Record, reasons ...string) llmmetrics.Record {
	r.FinishReasons = reasons
	return r
}

func TestAnswers(t *testing.T) {
	r := rec(100, 0, 0)
	tests := []struct {
		name      string
		records   []llmmetrics.Record
		ignoreEOS bool
		want      *Answers
	}{
		{
			name:    "every protocol's length reason counts as cut",
			records: []llmmetrics.Record{withReasons(r, "length"), withReasons(r, "max_tokens"), withReasons(r, "MAX_TOKENS"), withReasons(r, "max_output_tokens"), withReasons(r, "stop"), r},
			want: &Answers{FinishReasons: map[string]int{"length": 1, "max_tokens": 1, "MAX_TOKENS": 1, "max_output_tokens": 1, "stop": 1},
				Said: 5, CutByLength: 4},
		},
		{
			name:      "-ignore-eos: answers that stopped early",
			records:   []llmmetrics.Record{withReasons(r, "length"), withReasons(r, "length"), withReasons(r, "stop"), withReasons(r, "end_turn")},
			ignoreEOS: true,
			want:      &Answers{FinishReasons: map[string]int{"length": 2, "stop": 1, "end_turn": 1}, Said: 4, CutByLength: 2, StoppedEarly: intp(2)},
		},
		{
			name:      "-ignore-eos honoured",
			records:   []llmmetrics.Record{withReasons(r, "length"), withReasons(r, "length")},
			ignoreEOS: true,
			want:      &Answers{FinishReasons: map[string]int{"length": 2}, Said: 2, CutByLength: 2, StoppedEarly: intp(0)},
		},
		{
			name:    "a choice cut, another not: the answer is cut",
			records: []llmmetrics.Record{withReasons(r, "stop"), withReasons(r, "stop", "length")},
			want:    &Answers{FinishReasons: map[string]int{"stop": 2, "length": 1}, Said: 2, CutByLength: 1},
		},
		{name: "no answer said", records: []llmmetrics.Record{r, r}, want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, answersOf(tc.records, tc.ignoreEOS))
		})
	}
}

// The answers' findings are one line over the levels, the finish reasons
// summed: where answers were cut at their limit (without -ignore-eos), or
// ended before it (with it); nothing where neither happened.
func TestWriteAnswers(t *testing.T) {
	cutAt := func(load float64, cut, said int, reasons map[string]int) *Level {
		return &Level{Load: load, Answers: &Answers{FinishReasons: reasons, Said: said, CutByLength: cut}}
	}
	var w bytes.Buffer
	writeAnswers(&w, Results{Mode: ModeConcurrency, Levels: []*Level{
		cutAt(1, 8, 16, map[string]int{"length": 8, "stop": 8}),
		{Load: 2},
		cutAt(4, 0, 16, map[string]int{"stop": 16}),
		cutAt(8, 10, 16, map[string]int{"length": 10, "stop": 6}),
	}})
	assert.Equal(t, "Answers cut at their output limit: 8 of 16 at 1, 10 of 16 at 8 concurrent requests (finish reasons stop 30, length 18): those lengths are the limit's, not the model's.\n", w.String())

	w.Reset()
	early := cutAt(16, 150, 160, map[string]int{"length": 150, "stop": 10})
	early.Answers.StoppedEarly = intp(10)
	honoured := cutAt(32, 160, 160, map[string]int{"length": 160})
	honoured.Answers.StoppedEarly = intp(0)
	writeAnswers(&w, Results{Mode: ModeRate, Levels: []*Level{early, honoured}})
	assert.Equal(t, "Answers that ended before their output limit although -ignore-eos asked for exactly it: 10 of 160 at 16 requests/s (finish reasons length 310, stop 10): the server does not honour ignore_eos.\n", w.String())

	w.Reset()
	writeAnswers(&w, Results{Levels: []*Level{honoured, {Load: 1}}})
	assert.Empty(t, w.String())
}

func intp(n int) *int { return &n }

// The findings name the compute-bound and prefill-stall causes at levels
// other than the saturation point (whose reasons are printed above them),
// then the answers cut at their limit.
func TestLevelFindingsOfTheServersAccount(t *testing.T) {
	stall := saturation.Reason{Signal: saturation.SignalPrefillStall, Message: "5 of 5 gaps over 5× the median ITL (10 ms) ended with another request's first token or inside its prefill (0 had one at their middle, by chance): prompts stall decoding — chunked prefill or a prefill token budget"}
	compute := saturation.Reason{Signal: saturation.SignalComputeBound, Message: "decode slowed 30%"}
	r := Results{Mode: ModeConcurrency,
		Levels: []*Level{
			{Load: 2, Answers: &Answers{FinishReasons: map[string]int{"length": 16}, Said: 16, CutByLength: 16}},
			{Load: 4},
		},
		Saturation: saturation.Result{Found: true, Load: 4, Reasons: []saturation.Reason{compute}, Levels: []saturation.LevelReport{
			{Load: 2, Reasons: []saturation.Reason{stall}},
			{Load: 4, Reasons: []saturation.Reason{compute}},
		}},
	}
	var w bytes.Buffer
	writeLevelFindings(&w, r)
	assert.Equal(t, "At 2 concurrent requests: "+stall.Message+".\n"+
		"Answers cut at their output limit: 16 of 16 at 2 concurrent requests (finish reasons length 16): those lengths are the limit's, not the model's.\n", w.String())
}

func TestHuman(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0 ms", 40 * time.Microsecond: "40 µs", 1500 * time.Microsecond: "1.5 ms", 83203 * time.Microsecond: "83 ms",
		1900 * time.Millisecond: "1.90 s", 12345 * time.Millisecond: "12.3 s",
	} {
		assert.Equal(t, want, human(d), "%v", d)
	}
}
