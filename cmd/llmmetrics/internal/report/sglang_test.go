package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The SGLang fixtures (testdata/README.md), by hand. Run 1, request_rate
// Infinity with max_concurrency 2 (concurrency 2), duration 2 s: TTFT 250
// ms then gaps 125 ×3 (4 tokens: TPOT 375/3 = 125 ms, E2EL 625 ms); TTFT
// 500 ms then one gap of 250 (2 tokens: TPOT 250 ms, E2EL 750 ms); one
// failed (HTTP 500); inputs 100. Run 2, request_rate 4, no cap (rate 4),
// duration 1 s: TTFT 125 ms then 62.5 ×4 (5 tokens), TTFT 62.5 ms then
// 62.5 ×2 (3 tokens); inputs 50.
func TestSGLangShapes(t *testing.T) {
	sums, raws := jsonLevels(t, "testdata/sglang_bench_serving.jsonl")
	require.Len(t, sums, 2)
	s := sums["concurrency 2"]
	assert.Equal(t, 3, s.Requests)
	assert.Equal(t, 1, s.Failed)
	assert.Equal(t, 2000*ms, s.Duration)
	assert.InDelta(t, 1.0, s.RequestThroughput, 1e-12) // the line's request_throughput
	assert.InDelta(t, 3.0, s.OutputThroughput, 1e-12)  // and its output_throughput
	assert.Equal(t, 200, s.InputTokens)
	assert.Equal(t, 375*ms, s.TTFT.Mean)
	assert.Equal(t, 187500*1000, int(s.TPOT.Mean))
	assert.Equal(t, 4, s.ITL.Count)
	assert.Equal(t, 156250*1000, int(s.ITL.Mean)) // (125·3 + 250)/4
	assert.Equal(t, 687500*1000, int(s.E2EL.Mean))
	assert.InDelta(t, (0.625+0.75)/2, s.MeanConcurrency, 1e-12) // Σ E2EL / duration: the line's "concurrency"
	assert.Equal(t, "null", string(raws["concurrency 2"]["peak_concurrency"]), "no start times: no peak")
	assert.Equal(t, "null", string(raws["concurrency 2"]["cached_input_tokens"]))
	s = sums["rate 4 (Poisson arrivals)"]
	assert.Equal(t, 2, s.Completed)
	assert.Equal(t, 1000*ms, s.Duration)
	assert.Equal(t, 93750*1000, int(s.TTFT.Mean))
	assert.Equal(t, 62500*1000, int(s.TPOT.Mean))
	assert.Equal(t, 8, s.OutputTokens)

	// The nested shape, two runs at one load: one level, durations added.
	s = summaryOf(t, "testdata/sglang_details.jsonl")
	assert.Equal(t, 6, s.Requests)
	assert.Equal(t, 4, s.Completed)
	assert.Equal(t, 4000*ms, s.Duration)
	assert.Equal(t, 375*ms, s.TTFT.Mean)

	// The newest writer: the answer's body after the reason, cached tokens.
	s = summaryOf(t, "testdata/sglang_serving_cache.jsonl")
	assert.Equal(t, 96, s.CachedInputTokens) // 64 + 32 of the completed requests
	assert.InDelta(t, 0.48, s.PrefixCacheHitRate, 1e-12)
	code, out, _ := runReport(t, "testdata/sglang_serving_cache.jsonl")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "failed and canceled by error_type: 500 ×1")
}

// SGLang is named as itself, not read as vLLM's format, and a line saved
// without --output-details is exit 2 saying so.
func TestSGLangDetection(t *testing.T) {
	code, out, _ := runReport(t, "testdata/sglang_bench_serving.jsonl")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "sglang_bench_serving.jsonl: sglang, 5 requests")
	assert.NotContains(t, out, "vLLM")

	dir := t.TempDir()
	name := filepath.Join(dir, "summary.jsonl")
	require.NoError(t, os.WriteFile(name, []byte(`{"backend": "sglang", "dataset_name": "random", "request_rate": Infinity, "max_concurrency": null, "sharegpt_output_len": null, "duration": 1.0, "completed": 1}`+"\n"), 0o600))
	code, _, errOut := runReport(t, name)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, name+":1: run 0: an SGLang result without per-request details: saved without --output-details")
}

// Impossible SGLang numbers are exit 2, named by file, line and run.
func TestSGLangBadInput(t *testing.T) {
	b, err := os.ReadFile("testdata/sglang_bench_serving.jsonl")
	require.NoError(t, err)
	dir := t.TempDir()
	for _, tt := range []struct{ name, from, to, want string }{
		{"ttft", `"ttfts": [0.25`, `"ttfts": [1e300`, "run 0: request 0: ttft 1e+300 s out of range"},
		{"count", `"output_lens": [4`, `"output_lens": [-4`, "output_lens[0]: -4 is not a count"},
		{"columns", `"ttfts": [0.25, 0.5, 0.0]`, `"ttfts": [0.25, 0.5]`, `SGLang result: "itls" has 3 entries, "ttfts" 2`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := string(b)
			require.Contains(t, s, tt.from)
			name := filepath.Join(dir, tt.name+".jsonl")
			require.NoError(t, os.WriteFile(name, []byte(strings.Replace(s, tt.from, tt.to, 1)), 0o600))
			code, _, errOut := runReport(t, name)
			assert.Equal(t, 2, code)
			assert.Contains(t, errOut, name+":1: ")
			assert.Contains(t, errOut, tt.want)
		})
	}
}

func TestSGLangLoad(t *testing.T) {
	for _, tt := range []struct {
		rate, cap string
		want      string
		err       string
	}{
		{`"Infinity"`, "8", "concurrency 8", ""},
		{`"Infinity"`, "null", "burst", ""},
		{"2.5", "null", "rate 2.5 (Poisson arrivals)", ""},
		{"2", "16", "rate 2 (Poisson arrivals, max concurrency 16)", ""},
		{`"trace"`, "null", "trace", ""},
		{"-1", "null", "", "request_rate -1"},
		{"2", "1.5", "", "max_concurrency 1.5"},
		{"", "null", "", `no "request_rate"`},
	} {
		l, err := sglangLoad([]byte(tt.rate), []byte(tt.cap))
		if tt.err != "" {
			assert.ErrorContains(t, err, tt.err)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, tt.want, l.String())
	}
}
