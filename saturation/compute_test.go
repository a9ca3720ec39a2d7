package saturation

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmmetrics/llmmetrics"
)

// decodeLevel is a level of one chunk per token (100 gaps of 10 requests:
// 110 chunks, 110 output tokens) with the given median ITL, throughput and
// engine figures.
func decodeLevel(load, tput, itlMS, running, waiting float64, kv *float64) Level {
	return Level{Load: load, InFlight: load, Summary: llmmetrics.Summary{
		OutputThroughput: tput, OutputTokens: 110,
		ITL:  llmmetrics.Distribution{Count: 100, Median: msDur(itlMS)},
		TTFT: llmmetrics.Distribution{Count: 10, Median: msDur(20)},
	}, Server: &Server{RequestsRunning: f64(running), RequestsWaiting: f64(waiting), KVCacheUsage: kv}}
}

func intp(v int) *int { return &v }

// computeLevels is the llama.cpp server of the measurements: 1, 2 and 4
// clients on 4 slots; from 2 to 4 throughput gains (240/190 − 1)·2/2 =
// 26 % of linear scaling (a knee), while the median ITL rose from 10 to
// 13.2 ms (+32 %) as the engine ran 3.5 requests (1 at load 1), the KV
// cache at 10 % and nothing queued.
func computeLevels() []Level {
	ls := []Level{
		decodeLevel(1, 100, 10, 1, 0, f64(0.05)),
		decodeLevel(2, 190, 10.4, 2, 0, f64(0.07)),
		decodeLevel(4, 240, 13.2, 3.5, 0, f64(0.1)),
	}
	ls[2].Server.Slots = intp(4)
	return ls
}

func computeReasonAt(t *testing.T, levels []Level, o Options, load float64) *Reason {
	t.Helper()
	res, err := Find(levels, o)
	require.NoError(t, err)
	for _, l := range res.Levels {
		if l.Load != load {
			continue
		}
		for _, r := range l.Reasons {
			if r.Signal == SignalComputeBound {
				return &r
			}
		}
	}
	return nil
}

func TestComputeBound(t *testing.T) {
	r := computeReasonAt(t, computeLevels(), Options{}, 4)
	require.NotNil(t, r)
	assert.InDelta(t, 0.32, r.Value, 1e-9, "13.2 / 10 − 1")
	assert.Equal(t, DefaultComputeSlowdown, r.Threshold)
	assert.Equal(t, "decode slowed 32% (10 ms a token at load 1, 13.2 ms here) as the engine ran 3.5 of its 4 slots at once (1 at load 1); KV cache 10%, no queue: the engine is compute-bound at this batch — more replicas or a faster engine, not more KV cache", r.Message)

	res, err := Find(computeLevels(), Options{})
	require.NoError(t, err)
	require.True(t, res.Found)
	assert.Equal(t, 4.0, res.Load)
	assert.Equal(t, SignalKnee|SignalComputeBound, firedSignals(res.Reasons), "the knee decides, compute_bound explains it")
	assert.Equal(t, SignalKnee, res.Reasons[0].Signal, "client-side first")
}

func TestComputeBoundNot(t *testing.T) {
	tests := []struct {
		name   string
		change func(ls []Level)
		opts   Options
	}{
		{"a queue explains the knee", func(ls []Level) { ls[2].Server.RequestsWaiting = f64(2) }, Options{}},
		{"the queue is not reported", func(ls []Level) { ls[2].Server.RequestsWaiting = nil }, Options{}},
		{"the running requests are not reported", func(ls []Level) { ls[2].Server.RequestsRunning = nil }, Options{}},
		{"no server figures", func(ls []Level) { ls[2].Server = nil }, Options{}},
		{"the KV cache is full", func(ls []Level) { ls[2].Server.KVCacheUsage = f64(0.93) }, Options{}},
		{"the KV cache was full at one scrape", func(ls []Level) { ls[2].Server.KVCacheUsageMax = f64(0.96) }, Options{}},
		{"preemptions", func(ls []Level) { ls[2].Server.Preemptions = f64(3) }, Options{}},
		{"requests wait in front of the engine", func(ls []Level) { ls[2].InFlight = 5 }, Options{}},
		{"no knee", func(ls []Level) { ls[2].Summary.OutputThroughput = 380 }, Options{}},
		{"decode slowed less than 20 %", func(ls []Level) { ls[2].Summary.ITL.Median = msDur(11.9) }, Options{}},
		{"a higher threshold", func([]Level) {}, Options{ComputeSlowdown: 0.5}},
		{"the batch did not grow by one request", func(ls []Level) { ls[2].Server.RequestsRunning = f64(1.9) }, Options{}},
		{"no time per token", func(ls []Level) {
			ls[2].Summary.ITL, ls[2].Summary.TPOT = llmmetrics.Distribution{}, llmmetrics.Distribution{}
		}, Options{}},
		{"skipped", func([]Level) {}, Options{Skip: SignalComputeBound}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ls := computeLevels()
			tc.change(ls)
			assert.Nil(t, computeReasonAt(t, ls, tc.opts, 4))
		})
	}
}

func TestComputeBoundVariants(t *testing.T) {
	t.Run("KV cache not reported, a small queue, no slots", func(t *testing.T) {
		ls := computeLevels()
		ls[2].Server.KVCacheUsage, ls[2].Server.Slots, ls[2].Server.RequestsWaiting = nil, nil, f64(0.4)
		r := computeReasonAt(t, ls, Options{}, 4)
		require.NotNil(t, r)
		assert.Equal(t, "decode slowed 32% (10 ms a token at load 1, 13.2 ms here) as the engine ran 3.5 requests at once (1 at load 1); KV cache not reported, 0.4 waiting on average: the engine is compute-bound at this batch — more replicas or a faster engine, not more KV cache", r.Message)
	})
	t.Run("two tokens a chunk", func(t *testing.T) {
		// 110 chunks of 220 tokens: a median ITL of 26.4 ms is 13.2 ms a
		// token against 10 ms at load 1 (one token a chunk).
		ls := computeLevels()
		ls[2].Summary.ITL.Median, ls[2].Summary.OutputTokens = msDur(26.4), 220
		r := computeReasonAt(t, ls, Options{}, 4)
		require.NotNil(t, r)
		assert.InDelta(t, 0.32, r.Value, 1e-9)
	})
	t.Run("TPOT where no gap was kept", func(t *testing.T) {
		ls := computeLevels()
		for i, tpot := range []float64{10, 10.4, 12.5} {
			ls[i].Summary.ITL = llmmetrics.Distribution{}
			ls[i].Summary.TPOT = llmmetrics.Distribution{Count: 10, Median: msDur(tpot)}
		}
		r := computeReasonAt(t, ls, Options{}, 4)
		require.NotNil(t, r)
		assert.InDelta(t, 0.25, r.Value, 1e-9)
	})
	t.Run("the lowest load without engine figures is not the base", func(t *testing.T) {
		// Load 1 has no server figures: load 2 is the base, 13.2 / 10.4 −
		// 1 = 26.9 %, 3.5 − 2 = 1.5 more requests.
		ls := computeLevels()
		ls[0].Server = nil
		r := computeReasonAt(t, ls, Options{}, 4)
		require.NotNil(t, r)
		assert.InDelta(t, 13.2/10.4-1, r.Value, 1e-9)
		assert.Contains(t, r.Message, "(10.4 ms a token at load 2, 13.2 ms here)")
	})
	t.Run("past the peak", func(t *testing.T) {
		// Throughput fell (a drop and a knee) with 4 requests in flight,
		// 3.6 of them running: 36 % slower than at load 1.
		l := decodeLevel(8, 200, 13.6, 3.6, 0, f64(0.1))
		l.InFlight = 4
		r := computeReasonAt(t, append(computeLevels(), l), Options{}, 8)
		require.NotNil(t, r)
		assert.InDelta(t, 0.36, r.Value, 1e-9)
	})
}

func TestComputeSlowdownOption(t *testing.T) {
	assert.ErrorIs(t, Options{ComputeSlowdown: -0.1}.Validate(), ErrInvalidOptions)
	assert.NoError(t, Options{ComputeSlowdown: 2}.Validate())
}
