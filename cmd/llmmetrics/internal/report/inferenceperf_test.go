package report

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// testdata/inference_perf_shape.json, by hand: requests [0, 0.5), [1,
// 1.49), [2, 2.48) s with chunks at +30, 30, 40 ms, …, the last at 0.5,
// 1.49, 2.48 s; 60, 64, 36 tokens; 200, 205, 196 input tokens.
func TestInferencePerfShape(t *testing.T) {
	s := summaryOf(t, "testdata/inference_perf_shape.json")
	assert.Equal(t, 3, s.Requests)
	assert.Equal(t, 3, s.Completed)
	assert.Equal(t, 2480*ms, s.Duration)
	assert.Equal(t, 601, s.InputTokens)
	assert.Equal(t, 160, s.OutputTokens)
	assert.Equal(t, 33333333*time.Nanosecond, s.TTFT.Mean) // (30 + 30 + 40) / 3 ms
	assert.Equal(t, 490*ms, s.E2EL.Mean)                   // (500 + 490 + 480) / 3
	// (470/59 + 460/63 + 440/35) / 3 ms
	assert.Equal(t, 9279706*time.Nanosecond, s.TPOT.Mean) // 9.279705856 ms, rounded
	assert.Equal(t, 9, s.ITL.Count)
	assert.Equal(t, 152222222*time.Nanosecond, s.ITL.Mean) // (470 + 460 + 440) / 9 ms
	assert.Equal(t, 200*ms, s.ITL.Max)
	assert.Equal(t, 1, s.PeakConcurrency)
}

// testdata/inference_perf_errors.json, by hand: the run spans 8123.25 to
// 8124.4 s; request 0 TTFT 50 ms, gaps 100 and 300 ms, 6 server tokens
// (the client counted 5), 50 prompt tokens of which 32 cached; request 1
// failed; request 2 non-streaming: 400 ms, 10 tokens in one chunk.
func TestInferencePerfErrors(t *testing.T) {
	s := summaryOf(t, "testdata/inference_perf_errors.json")
	assert.Equal(t, 3, s.Requests)
	assert.Equal(t, 2, s.Completed)
	assert.Equal(t, 1, s.Failed)
	assert.Equal(t, 1150*ms, s.Duration)
	assert.Equal(t, 80, s.InputTokens)
	assert.Equal(t, 32, s.CachedInputTokens)
	assert.Equal(t, 16, s.OutputTokens)
	assert.Equal(t, 225*ms, s.TTFT.Mean)
	assert.Equal(t, 425*ms, s.E2EL.Mean)
	assert.Equal(t, 40*ms, s.TPOT.Mean) // (400/5 + 0) / 2
	assert.Equal(t, 2, s.ITL.Count)
	assert.Equal(t, 200*ms, s.ITL.Mean)

	code, out, _ := runReport(t, "testdata/inference_perf_errors.json")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "without chunk times (non-streaming)")
	assert.Contains(t, out, "server's usage.completion_tokens")
}

// testdata/inference_perf_v04.json (v0.1.1 to v0.4.0: the response's
// figures in info itself, no server usage) holds the requests of
// inference_perf_errors.json: request 0 has inference-perf's own count of
// 5 tokens and 48 input tokens, so TPOT (400/4 + 0) / 2 = 50 ms.
func TestInferencePerfV04(t *testing.T) {
	s := summaryOf(t, "testdata/inference_perf_v04.json")
	assert.Equal(t, 3, s.Requests)
	assert.Equal(t, 2, s.Completed)
	assert.Equal(t, 1, s.Failed)
	assert.Equal(t, 1150*ms, s.Duration)
	assert.Equal(t, 77, s.InputTokens) // 48 + 29
	assert.Equal(t, 0, s.CachedInputTokens)
	assert.Equal(t, 15, s.OutputTokens)
	assert.Equal(t, 225*ms, s.TTFT.Mean)
	assert.Equal(t, 425*ms, s.E2EL.Mean)
	assert.Equal(t, 50*ms, s.TPOT.Mean)
	assert.Equal(t, 2, s.ITL.Count)
	assert.Equal(t, 200*ms, s.ITL.Mean)
	_, out, _ := runReport(t, "testdata/inference_perf_v04.json")
	assert.Contains(t, out, "by error_type: ClientResponseError ×1")
}

// testdata/inference_perf_v05.json (v0.5.0: info.response_info; a unary
// response has no server usage): request 0 as in inference_perf_errors.json
// (6 server tokens, 50 prompt tokens of which 32 cached), request 2 its 10
// tokens and inference-perf's 29 input tokens.
func TestInferencePerfV05(t *testing.T) {
	s := summaryOf(t, "testdata/inference_perf_v05.json")
	assert.Equal(t, 3, s.Requests)
	assert.Equal(t, 2, s.Completed)
	assert.Equal(t, 79, s.InputTokens) // 50 + 29
	assert.Equal(t, 32, s.CachedInputTokens)
	assert.Equal(t, 16, s.OutputTokens)
	assert.Equal(t, 225*ms, s.TTFT.Mean)
	assert.Equal(t, 425*ms, s.E2EL.Mean)
	assert.Equal(t, 40*ms, s.TPOT.Mean) // (400/5 + 0) / 2
	assert.Equal(t, 2, s.ITL.Count)
}

// inference-perf v0.1.0 saves no "info": nothing but the request's span,
// which cannot be reported without a silent wrong number.
func TestInferencePerfV010IsRefused(t *testing.T) {
	code, _, errOut := runReport(t, "testdata/inference_perf_v010.json")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "inference-perf v0.1.0 saves none")
}

// testdata/inference_perf_v060.json (v0.6.0: response_metrics and
// request_metrics, but a non-streaming answer's UnaryResponseMetrics
// without server_usage, which v0.6.1 added) holds the requests of
// inference_perf_errors.json: the non-streaming request's tokens are then
// inference-perf's own count, 9, and its input its client-side 29, not the
// server's 10 and 30; the streaming one keeps its server usage.
func TestInferencePerfV060(t *testing.T) {
	s := summaryOf(t, "testdata/inference_perf_v060.json")
	assert.Equal(t, 3, s.Requests)
	assert.Equal(t, 2, s.Completed)
	assert.Equal(t, 1150*ms, s.Duration)
	assert.Equal(t, 6+9, s.OutputTokens)
	assert.Equal(t, 50+29, s.InputTokens)
	assert.Equal(t, 32, s.CachedInputTokens)
	assert.Equal(t, 40*ms, s.TPOT.Mean) // (400/5 + 0) / 2: the one-chunk answer's TPOT is 0
}
