package report

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testdata/vllm_serve_start_times.json (vllm/benchmarks/serve.py with
// start_times and without latencies), by hand: duration 2.5 s; request 0
// sent at 0, TTFT 200 ms, gaps 100, 100, 100 ms, so E2EL = 200 + 300 =
// 500 ms, 4 tokens, TPOT 300/3 = 100 ms; request 1 sent at +400 ms, TTFT
// 300 ms, one gap of 200 ms, E2EL 500 ms, 2 tokens, TPOT 200 ms; request 2
// failed with "Internal Server Error" (HTTP 500).
func TestVLLMServeWithoutLatencies(t *testing.T) {
	s := summaryOf(t, "testdata/vllm_serve_start_times.json")
	assert.Equal(t, 3, s.Requests)
	assert.Equal(t, 2, s.Completed)
	assert.Equal(t, 1, s.Failed)
	assert.Equal(t, 2500*ms, s.Duration)
	assert.Equal(t, 30, s.InputTokens)
	assert.Equal(t, 6, s.OutputTokens)
	assert.InDelta(t, 0.8, s.RequestThroughput, 1e-12) // the file's request_throughput
	assert.InDelta(t, 2.4, s.OutputThroughput, 1e-12)  // the file's output_throughput
	assert.Equal(t, 250*ms, s.TTFT.Mean)               // the file's mean_ttft_ms
	assert.Equal(t, 150*ms, s.TPOT.Mean)               // the file's mean_tpot_ms
	assert.Equal(t, 4, s.ITL.Count)
	assert.Equal(t, 125*ms, s.ITL.Mean) // the file's mean_itl_ms
	assert.Equal(t, 500*ms, s.E2EL.Mean)
	assert.Equal(t, 500*ms, s.E2EL.Max) // the file's mean and p99_e2el_ms
	assert.Equal(t, 2, s.PeakConcurrency)

	code, out, _ := runReport(t, "testdata/vllm_serve_start_times.json")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, `no "latencies"`)
	assert.Contains(t, out, "failed and canceled by error_type: 500 ×1")
}

// testdata/aiperf_01.jsonl (aiperf 0.1: timestamp_ns, credit_phase, "ttft"),
// by hand: a warm-up record (left out); request 1 at 0, TTFT 100 ms,
// latency 400 ms, gaps 100 ×3, 4 tokens of which 2 reasoning; request 2 at
// +200 ms, TTFT 200 ms, latency 400 ms, gaps 100 ×2, 3 tokens; a
// cancellation (RequestCancellationError) at +300 ms and an HTTP 500 at
// +350 ms. aiperf 0.1 saves no end: a success ends at its last response.
func TestAIPerf01(t *testing.T) {
	s := summaryOf(t, "testdata/aiperf_01.jsonl")
	assert.Equal(t, 4, s.Requests)
	assert.Equal(t, 2, s.Completed)
	assert.Equal(t, 1, s.Failed)
	assert.Equal(t, 1, s.Canceled)
	assert.Equal(t, 600*ms, s.Duration)
	assert.Equal(t, 30, s.InputTokens)
	assert.Equal(t, 7, s.OutputTokens)
	assert.Equal(t, 150*ms, s.TTFT.Mean)
	assert.Equal(t, 100*ms, s.TPOT.Mean)
	assert.Equal(t, 5, s.ITL.Count)
	assert.Equal(t, 100*ms, s.ITL.Mean)
	assert.Equal(t, 400*ms, s.E2EL.Mean)

	code, out, _ := runReport(t, "testdata/aiperf_01.jsonl")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "1 warm-up records")
	assert.Contains(t, out, "failed and canceled by error_type: 500 ×1, canceled ×1")
}

// testdata/aiperf_20251009.jsonl (aiperf of 2025-10-09: request_start_ns
// and request_end_ns, but TTFT still tagged "ttft") holds the requests of
// testdata/records.jsonl: the same figures, and the error is a 503.
func TestAIPerf20251009(t *testing.T) {
	checkRecordsFixture(t, summaryOf(t, "testdata/aiperf_20251009.jsonl"))
	_, out, _ := runReport(t, "testdata/aiperf_20251009.jsonl")
	assert.Contains(t, out, "by error_type: 503 ×1")
}

func TestVLLMErrorType(t *testing.T) {
	for _, tt := range []struct{ text, want string }{
		{"Internal Server Error", "500"},
		{"Too Many Requests", "429"},
		{"Traceback (most recent call last):\n  File \"x.py\", line 1, in f\naiohttp.client_exceptions.ClientConnectorError: Cannot connect to host\n", "ClientConnectorError"},
		{"Traceback (most recent call last):\nasyncio.exceptions.TimeoutError\n", "TimeoutError"},
		{"something odd happened", "_OTHER"},
	} {
		t.Run(tt.want, func(t *testing.T) {
			assert.Equal(t, tt.want, vllmErrorType(tt.text))
		})
	}
}

func TestReadRecordsAIPerf(t *testing.T) {
	rs, err := ReadRecords(context.Background(), []string{"testdata/aiperf_01.jsonl"}, "auto", nil)
	require.NoError(t, err)
	assert.Len(t, rs.Records, 4)
	assert.Equal(t, []string{"aiperf"}, rs.Formats)
	assert.Contains(t, rs.Cannot, "ttfo")

	_, err = ReadRecords(context.Background(), []string{"testdata/records.jsonl"}, "genai-perf", nil)
	assert.ErrorContains(t, err, "records.jsonl:1:")
}

// The gaps of a vLLM document are held in blocks: a request's gaps read
// back the same within a block and across block boundaries, and blocks
// before the one in use are let go.
func TestGapBlocks(t *testing.T) {
	var bs blocks
	n := 3*blockSize + 5
	for i := range n {
		bs.add(time.Duration(i))
	}
	var scratch []time.Duration
	for _, r := range [][2]int{{0, 0}, {0, 3}, {blockSize - 2, blockSize + 3}, {blockSize, blockSize + 1}, {blockSize - 1, 3*blockSize + 1}, {n - 4, n}} {
		got := bs.slice(r[0], r[1], &scratch)
		require.Len(t, got, r[1]-r[0])
		for j, g := range got {
			assert.Equal(t, time.Duration(r[0]+j), g)
		}
	}
	bs.release(2*blockSize + 1)
	assert.Nil(t, bs.b[0])
	assert.Nil(t, bs.b[1])
	assert.NotNil(t, bs.b[2])
	assert.Equal(t, []time.Duration{2 * blockSize, 2*blockSize + 1}, bs.slice(2*blockSize, 2*blockSize+2, &scratch))
}
