package bench

import (
	"bytes"
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmmetrics/llmmetrics/llmmetricstest"
	"github.com/llmmetrics/llmmetrics/saturation"
)

// fakeEnv is testEnv with the fake server's configuration changed by
// change (after bench's own settings).
func fakeEnv(stdout, stderr *bytes.Buffer, change func(*llmmetricstest.ServerConfig)) env {
	return env{stdout: stdout, stderr: stderr, inMemory: true, newFake: func(cfg llmmetricstest.ServerConfig) *llmmetricstest.Server {
		change(&cfg)
		return llmmetricstest.NewInMemoryServer(cfg)
	}}
}

// signalsAt returns the signals that fired at each load of a run.
func signalsAt(res Results) map[float64]saturation.Signal {
	out := map[float64]saturation.Signal{}
	for _, l := range res.Saturation.Levels {
		for _, r := range l.Reasons {
			out[l.Load] |= r.Signal
		}
	}
	return out
}

// The fake server configured three ways, swept at 1, 2, 4 and 8 clients
// on a batch of 4 (its slots), 64-token answers:
//
//   - compute-bound: each request in the batch slows a decode step by
//     30 % (a batch of 4 steps in 1.9 × 10 ms), prompts prefilled in
//     chunks: from 2 to 4 clients throughput gains about a third of linear
//     scaling (a knee at 4), the median ITL nearly doubled since load 1,
//     the engine runs ~3.8 of its 4 slots, nothing queues, the KV cache is
//     unlimited: compute_bound explains the knee;
//   - prefill stall: 2,000-token prompts prefilled whole (115 ms) in the
//     steps of the running requests, whose gap then lasts 125 ms against a
//     10 ms median: from 2 clients on, every long gap ends with another
//     request's first token;
//   - neither: decode steps that do not slow with the batch and prompts in
//     chunks of 16 tokens with no fixed cost: throughput scales to the 4
//     slots, then the queue explains the knee at 8;
//   - long gaps with another cause: the same, with half the streams
//     pausing 300 ms once (ServerConfig.PauseRate): long gaps, none
//     because of a prefill.
//
// Each run is on fake time (testing/synctest): the verdicts are those of
// the simulation, whatever the machine's load.
func TestCausesOnTheFakeServer(t *testing.T) {
	neither := func(c *llmmetricstest.ServerConfig) {
		c.BatchSlowdown, c.MaxBatch, c.KVBudget, c.PrefillChunk, c.PrefillBase = -1, 4, -1, 16, -1
	}
	tests := []struct {
		name   string
		change func(*llmmetricstest.ServerConfig)
		input  string
		check  func(t *testing.T, res Results, sig map[float64]saturation.Signal)
	}{
		{
			name: "compute-bound",
			change: func(c *llmmetricstest.ServerConfig) {
				c.BatchSlowdown, c.MaxBatch, c.KVBudget, c.PrefillChunk = 0.3, 4, -1, 64
			},
			input: "100",
			check: func(t *testing.T, res Results, sig map[float64]saturation.Signal) {
				require.True(t, res.Saturation.Found)
				assert.Equal(t, 4.0, res.Saturation.Load)
				var msg string
				for _, r := range res.Saturation.Reasons {
					if r.Signal == saturation.SignalComputeBound {
						msg = r.Message
						assert.Greater(t, r.Value, 0.5, "the step nearly doubled")
					}
				}
				assert.Contains(t, msg, "of its 4 slots at once")
				assert.Contains(t, msg, "the engine is compute-bound at this batch")
				for load, s := range sig {
					assert.Zero(t, s&saturation.SignalPrefillStall, "no stall at %g", load)
				}
				assert.Zero(t, sig[8]&saturation.SignalComputeBound, "at 8 the queue explains the knee")
				assert.NotZero(t, sig[8]&saturation.SignalQueue)
			},
		},
		{
			name: "prefill stall",
			change: func(c *llmmetricstest.ServerConfig) {
				c.BatchSlowdown, c.MaxBatch, c.KVBudget = -1, 4, -1
			},
			input: "2000",
			check: func(t *testing.T, res Results, sig map[float64]saturation.Signal) {
				for _, load := range []float64{2, 4, 8} {
					assert.NotZero(t, sig[load]&saturation.SignalPrefillStall, "a stall at %g", load)
				}
				assert.Zero(t, sig[1]&saturation.SignalPrefillStall, "one client: no other prefill")
				require.NotNil(t, res.Levels[1].PrefillStalls)
				st := res.Levels[1].PrefillStalls
				assert.Positive(t, st.LongGaps)
				assert.Equal(t, st.LongGaps, st.Overlapping, "every long gap at 2 ends with the other's first token")
				assert.Zero(t, st.AtRandom)
				for load, s := range sig {
					assert.Zero(t, s&saturation.SignalComputeBound, "not compute-bound at %g", load)
				}
			},
		},
		{
			name:   "neither",
			change: neither,
			input:  "100",
			check: func(t *testing.T, res Results, sig map[float64]saturation.Signal) {
				require.True(t, res.Saturation.Found)
				assert.Equal(t, 8.0, res.Saturation.Load)
				assert.NotZero(t, sig[8]&saturation.SignalQueue, "the queue explains the knee")
				for load, s := range sig {
					assert.Zero(t, s&(saturation.SignalComputeBound|saturation.SignalPrefillStall), "neither at %g", load)
				}
			},
		},
		{
			name: "long gaps with another cause",
			change: func(c *llmmetricstest.ServerConfig) {
				neither(c)
				c.PauseRate, c.PauseDuration = 0.5, 300*time.Millisecond
			},
			input: "100",
			check: func(t *testing.T, res Results, sig map[float64]saturation.Signal) {
				long := 0
				for _, l := range res.Levels {
					require.NotNil(t, l.PrefillStalls)
					long += l.PrefillStalls.LongGaps
				}
				assert.Positive(t, long, "the pauses make long gaps")
				for load, s := range sig {
					assert.Zero(t, s&(saturation.SignalComputeBound|saturation.SignalPrefillStall), "neither at %g", load)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				dir := t.TempDir()
				var stdout, stderr bytes.Buffer
				code := run(context.Background(), []string{"-concurrency", "1,2,4,8", "-output-tokens", "64", "-input-tokens", tc.input,
					"-speedup", "1", "-out", dir}, fakeEnv(&stdout, &stderr, tc.change))
				require.Equal(t, 0, code, "stderr: %s", stderr.String())
				res := readResults(t, dir)
				require.Len(t, res.Levels, 4)
				for _, l := range res.Levels {
					require.NotNil(t, l.Server)
					require.NotNil(t, l.Server.Slots, "the fake server's batch is its slots")
					assert.Equal(t, 4, *l.Server.Slots)
				}
				tc.check(t, res, signalsAt(res))
			})
		})
	}
}

// Where TTFT goes on the fake server, from its vLLM histograms: at 8
// clients on 4 slots, most of TTFT is waiting, most of the wait in the
// engine's queue; the means add up (TTFT = wait + prefill), and the table
// is followed by one line per level.
func TestServerTimeFromTheFakeServersHistograms(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"-concurrency", "1,8", "-output-tokens", "64", "-input-tokens", "100", "-speedup", "1", "-out", dir},
			fakeEnv(&stdout, &stderr, func(c *llmmetricstest.ServerConfig) { c.MaxBatch, c.KVBudget = 4, -1 }))
		require.Equal(t, 0, code, "stderr: %s", stderr.String())
		res := readResults(t, dir)
		require.Len(t, res.Levels, 2)
		for _, l := range res.Levels {
			st := l.ServerTime
			require.NotNil(t, st, "load %g", l.Load)
			assert.Equal(t, "vLLM histograms", st.Source)
			require.NotNil(t, st.Prefill)
			require.NotNil(t, st.Queue)
			require.NotNil(t, st.Wait)
			assert.Equal(t, l.Summary.TTFT.Mean, st.TTFTMean)
			assert.Equal(t, st.TTFTMean, st.Wait.Mean+st.Prefill.Mean, "the means add up")
			assert.Equal(t, st.Prefill.Count, st.Requests)
			assert.GreaterOrEqual(t, st.Requests, l.Summary.Completed, "the histograms also saw the warm-up")
			require.NotNil(t, st.Decode)
		}
		at8 := res.Levels[1].ServerTime
		assert.Greater(t, at8.Wait.Mean, at8.TTFTMean/2, "at 8 clients on 4 slots the wait dominates")
		assert.Greater(t, at8.Queue.Mean, at8.Prefill.Mean, "in the engine's queue")
		assert.Contains(t, stdout.String(), "Where TTFT goes, in the server's own words:\n  at 1: TTFT mean ")
		assert.Contains(t, stdout.String(), "\n  at 8: TTFT mean "+human(at8.TTFTMean)+" = "+human(at8.Wait.Mean)+" waiting before the engine + "+human(at8.Prefill.Mean)+" prefill")
	})
}

// Ollama's answers carry the server's prefill and decode times: with
// -api ollama against the fake server (its prompt_eval_duration is the
// prefill, the queue not in it), where TTFT goes comes from the answers,
// per request: every record has both times and a wait of at least 0.
func TestServerTimeFromAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"-api", "ollama", "-concurrency", "1,8", "-output-tokens", "32", "-input-tokens", "100", "-speedup", "1", "-out", dir},
			fakeEnv(&stdout, &stderr, func(c *llmmetricstest.ServerConfig) { c.MaxBatch, c.KVBudget = 4, -1 }))
		require.Equal(t, 0, code, "stderr: %s", stderr.String())
		for _, line := range readRecords(t, dir) {
			r := line.Record
			assert.Positive(t, r.ServerPrefill)
			assert.Positive(t, r.ServerDecode)
			w, ok := r.Wait()
			require.True(t, ok)
			assert.GreaterOrEqual(t, w, time.Duration(0))
		}
		res := readResults(t, dir)
		for _, l := range res.Levels {
			st := l.ServerTime
			require.NotNil(t, st)
			assert.Equal(t, "answers", st.Source)
			assert.Equal(t, l.Summary.Completed, st.Requests)
			require.NotNil(t, st.Wait.P99)
			assert.Equal(t, l.Summary.Wait.Mean, st.Wait.Mean)
			assert.Equal(t, l.Summary.ServerPrefill.Mean, st.Prefill.Mean)
			assert.InDelta(t, float64(st.TTFTMean), float64(st.Wait.Mean+st.Prefill.Mean), 1, "TTFT = wait + prefill, mean for mean")
		}
		assert.Greater(t, res.Levels[1].ServerTime.Wait.Mean, res.Levels[1].ServerTime.Prefill.Mean, "at 8 on 4 slots, requests wait for a slot")
		assert.Contains(t, stdout.String(), "(the server's times in 32 of 32 answers)")
	})
}
