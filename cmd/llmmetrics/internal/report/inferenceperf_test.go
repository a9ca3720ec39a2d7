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
