package llmmetricstest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tokenGaps returns the gaps between a result's token-carrying events.
func tokenGaps(r result) []time.Duration {
	var times []time.Time
	for i, e := range r.events {
		if strings.Contains(e, `"content":"`) && !strings.Contains(e, `"content":""`) {
			times = append(times, r.eventTimes[i])
		}
	}
	var gaps []time.Duration
	for i := 1; i < len(times); i++ {
		gaps = append(gaps, times[i].Sub(times[i-1]))
	}
	return gaps
}

// A lone request of 2,000 prompt tokens: prefilled whole, its first token
// comes after 15 ms + 2,000 × 50 µs = 115 ms; in chunks of 500, after 4
// steps of 15 ms + 500 × 50 µs = 40 ms, 160 ms. Its next tokens come
// every 10 ms either way.
func TestPrefillChunk(t *testing.T) {
	for _, tc := range []struct {
		chunk int
		ttft  time.Duration
	}{{0, 115 * time.Millisecond}, {500, 160 * time.Millisecond}, {5000, 115 * time.Millisecond}} {
		t.Run(fmt.Sprint("chunk ", tc.chunk), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := exact
				cfg.PromptTokens, cfg.PrefillChunk = 2000, tc.chunk
				s := NewInMemoryServer(cfg)
				defer s.Close()
				r := do(context.Background(), s, "/v1/chat/completions", chatBody(8, true, false, ""))
				require.NoError(t, r.err)
				assert.Equal(t, tc.ttft, r.first.Sub(r.start))
				assert.Equal(t, []time.Duration{10 * time.Millisecond, 10 * time.Millisecond}, tokenGaps(r))
			})
		})
	}
}

// A request decoding (10 prompt tokens: first token at 15.5 ms, then one
// every 10 ms) meets a 2,000-token prompt that arrives at 50 ms and is
// admitted at the step boundary of 55.5 ms. Prefilled whole, the next step
// lasts 115 ms of prefill + 10 ms of decoding: the running request's gap
// is 125 ms (a prefill stall), and the new request's first token arrives
// with its next token. In chunks of 500, four steps of 40 + 10 ms: no gap
// over 50 ms, and the new request's first token comes with the fourth.
func TestPrefillStall(t *testing.T) {
	for _, tc := range []struct {
		chunk   int
		longest time.Duration
		first   time.Duration // the new request's first token, from the bubble's start
	}{{0, 125 * time.Millisecond, 180500 * time.Microsecond}, {500, 50 * time.Millisecond, 255500 * time.Microsecond}} {
		t.Run(fmt.Sprint("chunk ", tc.chunk), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := exact
				cfg.OutputMin, cfg.OutputMax, cfg.PrefillChunk = 30, 30, tc.chunk
				s := NewInMemoryServer(cfg)
				defer s.Close()
				t0 := time.Now()
				var long result
				var wg sync.WaitGroup
				wg.Go(func() {
					time.Sleep(50 * time.Millisecond)
					long = do(context.Background(), s, "/v1/chat/completions", chatBody(1600, true, false, `,"max_tokens":2`))
				})
				short := do(context.Background(), s, "/v1/chat/completions", chatBody(8, true, false, ""))
				wg.Wait()
				require.NoError(t, short.err)
				require.NoError(t, long.err)
				assert.Equal(t, 15500*time.Microsecond, short.first.Sub(t0))
				assert.Equal(t, tc.longest, slicesMax(tokenGaps(short)))
				assert.Equal(t, tc.first, long.first.Sub(t0))
			})
		})
	}
}

func slicesMax(ds []time.Duration) time.Duration {
	var m time.Duration
	for _, d := range ds {
		m = max(m, d)
	}
	return m
}

// Two requests at once on a batch of one (100 prompt tokens: a 20 ms
// prefill; 3 tokens: 20 ms of decoding). The first is scheduled at once,
// the second when the first ends, 40 ms later: queue times 0 and 40 ms,
// prefill 20 and 20 ms, decode 20 and 20 ms, all in vLLM's first bucket
// (0.3 s). Ollama's prompt_eval_duration is the 20 ms prefill of each,
// the queue not in it; total_duration counts the wait.
func TestPhases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := exact
		cfg.MaxBatch, cfg.PromptTokens = 1, 100
		s := NewInMemoryServer(cfg)
		defer s.Close()
		type answer struct {
			Total  int64 `json:"total_duration"`
			Prompt int64 `json:"prompt_eval_duration"`
			Eval   int64 `json:"eval_duration"`
		}
		answers := make([]answer, 2)
		var wg sync.WaitGroup
		for i := range answers {
			wg.Go(func() {
				r := do(context.Background(), s, "/api/chat", `{"model":"`+DefaultModel+`","messages":[{"role":"user","content":"hi"}],"stream":false,"options":{"num_predict":3}}`)
				if assert.NoError(t, r.err) && assert.Equal(t, http.StatusOK, r.status) {
					assert.NoError(t, json.Unmarshal(r.body, &answers[i]))
				}
			})
		}
		wg.Wait()
		ms := int64(time.Millisecond)
		totals := []int64{answers[0].Total, answers[1].Total}
		assert.ElementsMatch(t, []int64{40 * ms, 80 * ms}, totals)
		for _, a := range answers {
			assert.Equal(t, 20*ms, a.Prompt, "prompt_eval_duration is the prefill, without the queue")
			assert.Equal(t, 20*ms, a.Eval)
		}

		req, err := http.NewRequest(http.MethodGet, s.URL+"/metrics", nil)
		require.NoError(t, err)
		resp, err := s.Client().Do(req)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		text := string(body)
		labels := `engine="0",model_name="llmmetricstest-model"`
		for _, name := range []string{"vllm:request_queue_time_seconds", "vllm:request_prefill_time_seconds", "vllm:request_decode_time_seconds"} {
			assert.Contains(t, text, "# TYPE "+name+" histogram\n")
			assert.Contains(t, text, name+`_bucket{`+labels+`,le="0.3"} 2.0`+"\n")
			assert.Contains(t, text, name+`_bucket{`+labels+`,le="1.0"} 2.0`+"\n")
			assert.Contains(t, text, name+`_bucket{`+labels+`,le="+Inf"} 2.0`+"\n")
			assert.Contains(t, text, name+`_count{`+labels+`} 2.0`+"\n")
			assert.Contains(t, text, name+`_sum{`+labels+`} 0.04`+"\n", "40 ms in all")
		}
	})
}

// Before any request ends the histograms are there, empty.
func TestPhasesEmpty(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewInMemoryServer(exact)
		defer s.Close()
		rec := &strings.Builder{}
		w := &textWriter{Builder: rec}
		s.metrics(w, nil)
		assert.Contains(t, rec.String(), `vllm:request_decode_time_seconds_bucket{engine="0",model_name="llmmetricstest-model",le="7680.0"} 0.0`+"\n")
		assert.Contains(t, rec.String(), `vllm:request_decode_time_seconds_count{engine="0",model_name="llmmetricstest-model"} 0.0`+"\n")
		assert.Contains(t, rec.String(), `vllm:request_decode_time_seconds_sum{engine="0",model_name="llmmetricstest-model"} 0`+"\n")
	})
}

// textWriter is an http.ResponseWriter that keeps the body.
type textWriter struct {
	*strings.Builder
	h http.Header
}

func (w *textWriter) Header() http.Header {
	if w.h == nil {
		w.h = http.Header{}
	}
	return w.h
}
func (w *textWriter) WriteHeader(int) {}
