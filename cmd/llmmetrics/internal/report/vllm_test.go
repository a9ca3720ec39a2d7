package report

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// testdata/vllm_detailed.json, by hand: duration 2 s (the file's); request
// 0 sent at 0, TTFT 100 ms, 3 gaps of 100 ms, latency 400 ms, 4 tokens;
// request 1 sent at +200 ms, TTFT 200 ms, 2 gaps of 100 ms, latency 400 ms,
// 3 tokens; request 2 failed (a traceback in errors).
func TestVLLMDetailed(t *testing.T) {
	s := summaryOf(t, "testdata/vllm_detailed.json")
	assert.Equal(t, 3, s.Requests)
	assert.Equal(t, 2, s.Completed)
	assert.Equal(t, 1, s.Failed)
	assert.Equal(t, 2000*ms, s.Duration)
	assert.Equal(t, 30, s.InputTokens)
	assert.Equal(t, 7, s.OutputTokens)
	assert.InDelta(t, 1.0, s.RequestThroughput, 1e-12) // the file's own request_throughput
	assert.InDelta(t, 3.5, s.OutputThroughput, 1e-12)  // the file's output_throughput
	assert.InDelta(t, 18.5, s.TotalTokenThroughput, 1e-12)
	assert.Equal(t, 150*ms, s.TTFT.Mean) // the file's mean_ttft_ms
	assert.Equal(t, 50*ms, s.TTFT.Std)
	assert.Equal(t, 199*ms, p(s.TTFT, 99)) // the file's p99_ttft_ms
	assert.Equal(t, 100*ms, s.TPOT.Mean)
	assert.Equal(t, 5, s.ITL.Count)
	assert.Equal(t, 100*ms, s.ITL.Mean)
	assert.Equal(t, 400*ms, s.E2EL.Mean)
	assert.Equal(t, 2, s.PeakConcurrency) // the file's max_concurrent_requests
}

// testdata/vllm_benchmark_serving_append.json, by hand: two appended results
// of 1 s and 3 s, so a 4 s run; TTFTs 50, 250, 300 ms; TPOTs (350 − 250) /
// 4 = 25 ms and (500 − 300) / 2 = 100 ms (the 1-token request has none);
// gaps 50, 50, 200 ms; E2ELs 50, 350, 500 ms.
func TestVLLMAppendedWithoutStartTimes(t *testing.T) {
	s := summaryOf(t, "testdata/vllm_benchmark_serving_append.json")
	assert.Equal(t, 3, s.Requests)
	assert.Equal(t, 3, s.Completed)
	assert.Equal(t, 4000*ms, s.Duration)
	assert.Equal(t, 40, s.InputTokens)
	assert.Equal(t, 9, s.OutputTokens)
	assert.InDelta(t, 0.75, s.RequestThroughput, 1e-12)
	assert.InDelta(t, 2.25, s.OutputThroughput, 1e-12)
	assert.Equal(t, 200*ms, s.TTFT.Mean)
	assert.Equal(t, 250*ms, s.TTFT.Median)
	assert.Equal(t, 2, s.TPOT.Count)
	assert.Equal(t, 62500*time.Microsecond, s.TPOT.Mean)
	assert.Equal(t, 3, s.ITL.Count)
	assert.Equal(t, 100*ms, s.ITL.Mean)
	assert.Equal(t, 300*ms, s.E2EL.Mean)

	code, out, _ := runReport(t, "testdata/vllm_benchmark_serving_append.json")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, `no "start_times"`)
	assert.Contains(t, out, "several vLLM results")
}

// Two vLLM files are laid end to end: the run lasts the sum of their
// durations.
func TestVLLMFilesAddDurations(t *testing.T) {
	s := summaryOf(t, "testdata/vllm_detailed.json", "testdata/vllm_benchmark_serving_append.json")
	assert.Equal(t, 6, s.Requests)
	assert.Equal(t, 6000*ms, s.Duration)
	assert.Equal(t, 5, s.Completed)
}

func TestMixedClocksAreBadInput(t *testing.T) {
	code, _, errOut := runReport(t, "testdata/records.jsonl", "testdata/vllm_detailed.json")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "cannot be put on one timeline")
}
