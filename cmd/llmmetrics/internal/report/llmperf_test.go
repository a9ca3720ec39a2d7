package report

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const llmperfFile = "testdata/llmperf_Qwen-Qwen3-0-6B_550_150_individual_responses.json"

// testdata/llmperf_…_individual_responses.json with its summary beside it,
// by hand: 3 successful requests, TTFT 250, 500, 125 ms, stream ends at
// 1250, 1000, 625 ms, number_output_tokens 6, 3, 5 (so N = 5, 2, 4 without
// the beginning-of-sequence token); TPOT (1250 − 250)/4 = 250, (1000 −
// 500)/1 = 500, (625 − 125)/3 = 166.666667 ms; one HTTP 429. The summary's
// 3 completed at 120 per minute give 1.5 s at concurrency 2.
func TestLLMPerf(t *testing.T) {
	sums, raws := jsonLevels(t, llmperfFile) // one level: a JSON object, not levels
	require.Empty(t, sums, "%v", raws)
	s := summaryOf(t, llmperfFile)
	assert.Equal(t, 4, s.Requests)
	assert.Equal(t, 3, s.Completed)
	assert.Equal(t, 1, s.Failed)
	assert.Equal(t, 1500*ms, s.Duration)
	assert.InDelta(t, 2.0, s.RequestThroughput, 1e-12)
	assert.Equal(t, 11, s.OutputTokens)
	assert.InDelta(t, 11/1.5, s.OutputThroughput, 1e-12)
	assert.Equal(t, 1650, s.InputTokens)
	assert.Equal(t, 291666667*time.Nanosecond, s.TTFT.Mean) // 875/3 ms
	assert.Equal(t, 305555556*time.Nanosecond, s.TPOT.Mean) // (250 + 500 + 166.666667)/3
	assert.Equal(t, 958333333*time.Nanosecond, s.E2EL.Mean) // 2875/3 ms
	assert.Equal(t, 0, s.ITL.Count)

	code, out, _ := runReport(t, llmperfFile)
	require.Equal(t, 0, code)
	assert.Contains(t, out, "level: concurrency 2")
	assert.Contains(t, out, "run duration 1.5s and concurrency from testdata/llmperf_Qwen-Qwen3-0-6B_550_150_summary.json")
	assert.Contains(t, out, "N is number_output_tokens less one")
	assert.Contains(t, out, "failed and canceled by error_type: 429 ×1")
}

// Without its summary the file says no duration: no rate is printed, and
// the JSON has null where the Summary holds 0. LLMPerf's last collection
// may add key names instead of a request: they are counted, not read.
func TestLLMPerfAlone(t *testing.T) {
	b, err := os.ReadFile(llmperfFile)
	require.NoError(t, err)
	dir := t.TempDir()
	name := filepath.Join(dir, "x_individual_responses.json")
	withKeys := append(b[:len(b)-2:len(b)-2], []byte(`, "error_code", "error_msg"]`)...)
	require.NoError(t, os.WriteFile(name, withKeys, 0o600))
	code, out, errOut := runReport(t, "-json", name)
	require.Equal(t, 0, code, errOut)
	for _, k := range []string{"duration_ns", "request_throughput", "output_throughput", "total_token_throughput", "mean_concurrency", "peak_concurrency"} {
		assert.Regexp(t, `"`+k+`": null`, out)
	}
	assert.Contains(t, out, `"itl": {`+"\n"+`    "count": 0`+"\n  }")
	assert.Contains(t, errOut, "no run duration")
	assert.Contains(t, errOut, "2 strings where requests are")
	code, out, _ = runReport(t, name)
	require.Equal(t, 0, code)
	assert.Contains(t, out, "over an unknown duration")
	assert.Contains(t, out, "throughput: unknown requests/s, unknown output tokens/s, unknown total tokens/s (1650 input, 11 output tokens)")
}
