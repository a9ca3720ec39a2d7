package llmmetrics

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// serverSeen is the server's account of a stream as its frames tell it:
// the last prefill and decode times, and the last cached count.
type serverSeen struct {
	prefill, decode time.Duration
	cached          int
}

func serverOf(frames []frameView) serverSeen {
	var s serverSeen
	for _, f := range frames {
		if f.Prefill != 0 {
			s.prefill = f.Prefill
		}
		if f.Decode != 0 {
			s.decode = f.Decode
		}
		if f.HasUsage {
			s.cached = f.Cached
		}
	}
	return s
}

// TestFixtureServerTimes: the server's own account in the fixtures that
// carry one, read by hand from the files: llama.cpp's timings (prompt_ms,
// predicted_ms) and Groq's usage times (prompt_time, completion_time, in
// seconds). Every other fixture tells none.
func TestFixtureServerTimes(t *testing.T) {
	want := map[string]serverSeen{
		"llamacpp_chat_usage_timings.sse": {83203 * time.Microsecond, 75550 * time.Microsecond, 0},
		"llamacpp_completions.sse":        {10694 * time.Microsecond, 48682 * time.Microsecond, 0},
		"llamacpp_prefix_first.sse":       {639708 * time.Microsecond, 46081 * time.Microsecond, 0},
		"llamacpp_prefix_reused.sse":      {24531 * time.Microsecond, 44714 * time.Microsecond, 1039 - 22},
		"groq_x_groq_usage.sse":           {4142 * time.Microsecond, 29091 * time.Microsecond, 0},
		"groq_reasoning.sse":              {2817 * time.Microsecond, 61364 * time.Microsecond, 0},
	}
	for _, fx := range fixtures {
		t.Run(fx.file, func(t *testing.T) {
			got := serverOf(decodePieces(fx.dec(), readFixture(t, fx.file)))
			w, ok := want[fx.file]
			if !ok {
				w = serverSeen{cached: fx.want.Cached}
			}
			assert.Equal(t, w, got)
		})
	}
}

// TestLlamaTimingsCache: the cached input tokens llama.cpp's timings tell,
// by hand.
func TestLlamaTimingsCache(t *testing.T) {
	chunk := func(s string) string { return "data: " + s + "\n\n" }
	const content = `{"choices":[{"index":0,"delta":{"content":"a"}}]}`
	for _, tc := range []struct {
		name string
		in   string
		want []frameView // usage, cached and server times only
	}{
		{"cache_n where sent", chunk(`{"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":2},"timings":{"cache_n":90,"prompt_n":10,"prompt_ms":5.5,"predicted_ms":20}}`),
			[]frameView{{HasUsage: true, In: 100, Out: 2, Cached: 90, Prefill: 5500 * time.Microsecond, Decode: 20 * time.Millisecond}}},
		{"prompt_tokens − prompt_n", chunk(`{"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":2},"timings":{"prompt_n":1}}`),
			[]frameView{{HasUsage: true, In: 100, Out: 2, Cached: 99}}},
		{"the usage's own count keeps precedence, 0 included", chunk(`{"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":0}},"timings":{"cache_n":90}}`),
			[]frameView{{HasUsage: true, In: 100, Out: 2}}},
		{"a prompt_n above the prompt tells nothing", chunk(`{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":2},"timings":{"prompt_n":11}}`),
			[]frameView{{HasUsage: true, In: 10, Out: 2}}},
		{"timings before the usage", chunk(`{"choices":[{"delta":{"content":"a"}}],"timings":{"prompt_n":4,"prompt_ms":1}}`) + chunk(`{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":1}}`),
			[]frameView{{Prefill: time.Millisecond}, {HasUsage: true, In: 10, Out: 1, Cached: 6}}},
		{"timings after the usage repeat it with the cached count", chunk(`{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":1}}`) + chunk(`{"choices":[],"timings":{"prompt_n":4}}`),
			[]frameView{{HasUsage: true, In: 10, Out: 1}, {HasUsage: true, In: 10, Out: 1, Cached: 6}}},
		{"times that are not numbers, or negative, are not read", chunk(`{"choices":[],"timings":{"prompt_ms":"5","predicted_ms":-1}}`),
			[]frameView{{}}},
		{"groq's times in seconds", chunk(content) + chunk(`{"choices":[],"x_groq":{"usage":{"prompt_tokens":3,"completion_tokens":4,"prompt_time":0.0125,"completion_time":1.5e-2}}}`),
			[]frameView{{}, {HasUsage: true, In: 3, Out: 4, Prefill: 12500 * time.Microsecond, Decode: 15 * time.Millisecond}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []frameView
			for _, f := range decodePieces(newOpenAIDecoder(), []byte(tc.in)) {
				got = append(got, frameView{HasUsage: f.HasUsage, In: f.In, Out: f.Out, Cached: f.Cached, Prefill: f.Prefill, Decode: f.Decode})
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestDurationOf: a time in a unit, to the nanosecond, by hand.
func TestDurationOf(t *testing.T) {
	for _, tc := range []struct {
		text string
		unit time.Duration
		want time.Duration
		ok   bool
	}{
		{"83.203", time.Millisecond, 83203 * time.Microsecond, true},
		{"0.0000005", time.Millisecond, 1, true}, // 0.5 ns rounds half away from zero
		{"2", time.Second, 2 * time.Second, true},
		{"1e-3", time.Second, time.Millisecond, true},
		{"0", time.Millisecond, 0, true},
		{"-1", time.Millisecond, 0, false},
		{"1e300", time.Second, 0, false},
		{"NaN", time.Second, 0, false},
	} {
		got, ok := durationOf([]byte(tc.text), tc.unit)
		assert.Equal(t, tc.ok, ok, tc.text)
		assert.Equal(t, tc.want, got, tc.text)
	}
}

// TestReasoningWithinOutput: every fixture of every protocol ends with
// ReasoningTokens ≤ OutputTokens (N is every output token, reasoning
// included).
func TestReasoningWithinOutput(t *testing.T) {
	for _, fx := range fixtures {
		s := summarize(decodePieces(fx.dec(), readFixture(t, fx.file)))
		assert.LessOrEqual(t, s.Reasoning, s.Out, fx.file)
	}
	for _, file := range []string{"openai_chat_completion.json", "openai_response.json", "anthropic_message.json", "gemini_generate_content.json"} {
		for _, f := range jsonFrames([]byte(testdataFile(t, "json", file))) {
			assert.LessOrEqual(t, f.ReasoningTokens, f.OutputTokens, file)
		}
	}
}

// TestSummarizeServerAccount: the server's prefill and decode times and the
// wait, over completed requests that carry them, by hand; a Summarizer
// agrees.
func TestSummarizeServerAccount(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	ms := time.Millisecond
	rec := func(ttft, prefill, decode time.Duration, outcome Outcome) Record {
		r := Record{Start: t0, End: t0.Add(time.Second), Outcome: outcome, ServerPrefill: prefill, ServerDecode: decode, OutputTokens: 1, Chunks: 1}
		if ttft > 0 {
			r.FirstToken, r.LastToken = t0.Add(ttft), t0.Add(ttft)
		}
		return r
	}
	records := []Record{
		rec(100*ms, 30*ms, 200*ms, OutcomeOK), // wait 70 ms
		rec(50*ms, 80*ms, 0, OutcomeOK),       // a prefill longer than the TTFT: wait 0
		rec(60*ms, 0, 0, OutcomeOK),           // no server account
		rec(90*ms, 10*ms, 10*ms, OutcomeError),
		rec(0, 40*ms, 0, OutcomeOK), // no token: a prefill, no wait
	}
	s := Summarize(records, SummaryOptions{Percentiles: []float64{}})
	// Prefill 30, 80, 40 ms: mean 50, median 40; population std
	// √((20² + 30² + 10²) / 3) = 21.602468994… ms.
	assert.Equal(t, Distribution{Count: 3, Mean: 50 * ms, Median: 40 * ms, Std: 21602469, Min: 30 * ms, Max: 80 * ms}, s.ServerPrefill)
	assert.Equal(t, Distribution{Count: 1, Mean: 200 * ms, Median: 200 * ms, Min: 200 * ms, Max: 200 * ms}, s.ServerDecode)
	assert.Equal(t, Distribution{Count: 2, Mean: 35 * ms, Median: 35 * ms, Std: 35 * ms, Min: 0, Max: 70 * ms}, s.Wait)

	w, ok := records[0].Wait()
	assert.True(t, ok)
	assert.Equal(t, 70*ms, w)
	_, ok = records[2].Wait()
	assert.False(t, ok, "no server prefill")
	_, ok = records[4].Wait()
	assert.False(t, ok, "no token")

	z, err := NewSummarizer(SummaryOptions{Percentiles: []float64{}})
	require.NoError(t, err)
	for _, r := range records {
		z.Add(r)
	}
	assert.Equal(t, s, z.Summary())

	b, err := json.Marshal(Summarize(records[2:3], SummaryOptions{}))
	require.NoError(t, err)
	assert.NotContains(t, string(b), "server_prefill", "a run without the server's account says nothing of it")
	assert.NotContains(t, string(b), `"wait"`)
}

// TestServerAccountReachesTheRecord: a llama.cpp stream read through
// NewReader ends with the server's times and the cached count its timings
// tell, and a Record's Wait from them.
func TestServerAccountReachesTheRecord(t *testing.T) {
	tr, _ := httpTracker(t)
	req := tr.StartClient(context.Background())
	body := NewReader(req, strings.NewReader(readFixtureString(t, "llamacpp_prefix_reused.sse")), ProtocolOpenAI.NewDecoder())
	_, err := io.Copy(io.Discard, body)
	require.NoError(t, err)
	require.NoError(t, body.Close())
	recs := ended(tr)
	require.Len(t, recs, 1)
	r := recs[0]
	assert.Equal(t, 24531*time.Microsecond, r.ServerPrefill)
	assert.Equal(t, 44714*time.Microsecond, r.ServerDecode)
	assert.Equal(t, 1039, r.InputTokens)
	assert.Equal(t, 1017, r.CachedInputTokens)
	ttft, ok := r.TTFT()
	require.True(t, ok)
	w, ok := r.Wait()
	require.True(t, ok)
	assert.Equal(t, max(ttft-r.ServerPrefill, 0), w)
}

func readFixtureString(t testing.TB, name string) string { return string(readFixture(t, name)) }
