package llmmetricstest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// exact is a configuration with fixed timing: no jitter, no queue overhead,
// 3 output tokens.
var exact = ServerConfig{Jitter: -1, QueueOverhead: -1, OutputMin: 3, OutputMax: 3}

// bubbleStart is the start of fake time in a synctest bubble.
var bubbleStart = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).Unix()

func TestStreamWireFormat(t *testing.T) {
	head := fmt.Sprintf(`"id":"chatcmpl-1","object":"chat.completion.chunk","created":%d,"model":"llmmetricstest-model","system_fingerprint":"fp_llmmetricstest"`, bubbleStart)
	chatChunk := func(delta, finish, usage string) string {
		u := ""
		if usage != "" {
			u = `,"usage":` + usage
		}
		return `{` + head + `,"choices":[{"index":0,"delta":` + delta + `,"logprobs":null,"finish_reason":` + finish + `}]` + u + `}`
	}
	cmplHead := fmt.Sprintf(`"id":"cmpl-1","object":"text_completion","created":%d,"model":"llmmetricstest-model"`, bubbleStart)
	cmplChunk := func(text, finish, usage string) string {
		u := ""
		if usage != "" {
			u = `,"usage":` + usage
		}
		return `{` + cmplHead + `,"choices":[{"index":0,"text":"` + text + `","logprobs":null,"finish_reason":` + finish + `}]` + u + `}`
	}
	usage := func(completion int) string {
		return fmt.Sprintf(`{"prompt_tokens":100,"completion_tokens":%d,"total_tokens":%d}`, completion, 100+completion)
	}
	const prompt400 = "word word word word word word word word word word word word word word word word word word word word " // 100 chars
	chatReq := `{"model":"llmmetricstest-model","messages":[{"role":"system","content":"` + prompt400 + prompt400 + `"},{"role":"user","content":[{"type":"text","text":"` + prompt400 + prompt400 + `"}]}],"stream":true`
	cmplReq := `{"prompt":"` + strings.Repeat(prompt400, 4) + `","stream":true`

	tests := []struct {
		name string
		path string
		body string
		want []string
	}{
		{
			name: "chat without usage",
			path: "/v1/chat/completions",
			body: chatReq + `}`,
			want: []string{
				chatChunk(`{"role":"assistant","content":""}`, "null", ""),
				chatChunk(`{"content":"time"}`, "null", ""),
				chatChunk(`{"content":" while"}`, "null", ""),
				chatChunk(`{"content":" the"}`, "null", ""),
				chatChunk(`{}`, `"stop"`, ""),
				"[DONE]",
			},
		},
		{
			name: "chat include_usage",
			path: "/v1/chat/completions",
			body: chatReq + `,"stream_options":{"include_usage":true}}`,
			want: []string{
				chatChunk(`{"role":"assistant","content":""}`, "null", "null"),
				chatChunk(`{"content":"time"}`, "null", "null"),
				chatChunk(`{"content":" while"}`, "null", "null"),
				chatChunk(`{"content":" the"}`, "null", "null"),
				chatChunk(`{}`, `"stop"`, "null"),
				`{` + head + `,"choices":[],"usage":` + usage(3) + `}`,
				"[DONE]",
			},
		},
		{
			name: "chat continuous_usage_stats",
			path: "/v1/chat/completions",
			body: chatReq + `,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`,
			want: []string{
				chatChunk(`{"role":"assistant","content":""}`, "null", usage(0)),
				chatChunk(`{"content":"time"}`, "null", usage(1)),
				chatChunk(`{"content":" while"}`, "null", usage(2)),
				chatChunk(`{"content":" the"}`, "null", usage(3)),
				chatChunk(`{}`, `"stop"`, usage(3)),
				`{` + head + `,"choices":[],"usage":` + usage(3) + `}`,
				"[DONE]",
			},
		},
		{
			name: "continuous_usage_stats needs include_usage",
			path: "/v1/chat/completions",
			body: chatReq + `,"stream_options":{"continuous_usage_stats":true}}`,
			want: []string{
				chatChunk(`{"role":"assistant","content":""}`, "null", ""),
				chatChunk(`{"content":"time"}`, "null", ""),
				chatChunk(`{"content":" while"}`, "null", ""),
				chatChunk(`{"content":" the"}`, "null", ""),
				chatChunk(`{}`, `"stop"`, ""),
				"[DONE]",
			},
		},
		{
			name: "completions include_usage",
			path: "/v1/completions",
			body: cmplReq + `,"stream_options":{"include_usage":true}}`,
			want: []string{
				cmplChunk("time", "null", "null"),
				cmplChunk(" while", "null", "null"),
				cmplChunk(" the", "null", "null"),
				cmplChunk("", `"stop"`, "null"),
				`{` + cmplHead + `,"choices":[],"usage":` + usage(3) + `}`,
				"[DONE]",
			},
		},
		{
			name: "completions max_tokens",
			path: "/v1/completions",
			body: cmplReq + `,"max_tokens":2}`,
			want: []string{
				cmplChunk("time", "null", ""),
				cmplChunk(" while", "null", ""),
				cmplChunk("", `"length"`, ""),
				"[DONE]",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := NewInMemoryServer(exact)
				defer s.Close()
				r := do(context.Background(), s, tt.path, tt.body)
				require.NoError(t, r.err)
				require.Equal(t, http.StatusOK, r.status)
				require.Len(t, r.events, len(tt.want), "events: %q", r.events)
				for i, w := range tt.want {
					if w == "[DONE]" {
						assert.Equal(t, w, r.events[i])
						continue
					}
					assert.JSONEq(t, w, r.events[i], "event %d", i)
				}
				// Timing: prefill of 100 tokens = 15ms + 100 × 50µs; then 10ms per token.
				assert.Equal(t, 20*time.Millisecond, r.first.Sub(r.start), "TTFT")
				assert.Equal(t, r.first, r.eventTimes[0], "the first event (role chunk or token) comes with the first token")
				assert.Equal(t, time.Duration(r.tokens-1)*10*time.Millisecond, r.last.Sub(r.first), "decode time")
				st := s.Stats()
				assert.Equal(t, Stats{Requests: 1, OK: 1, PromptTokens: 100, CompletionTokens: r.tokens, Steps: r.tokens, MaxRunning: 1}, st)
			})
		})
	}
}

func TestStreamRawFraming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewInMemoryServer(exact)
		defer s.Close()
		req, err := http.NewRequest(http.MethodPost, s.URL+"/v1/chat/completions", strings.NewReader(chatBody(4, true, false, "")))
		require.NoError(t, err)
		resp, err := s.Client().Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
		assert.Equal(t, "no-cache", resp.Header.Get("Cache-Control"))
		var raw strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			raw.Write(buf[:n])
			if err != nil {
				break
			}
		}
		events := strings.Split(strings.TrimSuffix(raw.String(), "\n\n"), "\n\n")
		require.Len(t, events, 6, "role, 3 tokens, finish, [DONE]")
		for _, e := range events {
			assert.True(t, strings.HasPrefix(e, "data: "), "%q", e)
			assert.NotContains(t, e, "\n", "one line per event")
		}
		assert.Equal(t, "data: [DONE]", events[5])
	})
}

func TestNonStreaming(t *testing.T) {
	tests := []struct {
		name string
		path string
		body string
		want string
	}{
		{
			name: "chat",
			path: "/v1/chat/completions",
			body: chatBody(80, false, false, ""),
			want: fmt.Sprintf(`{"id":"chatcmpl-1","object":"chat.completion","created":%d,"model":"llmmetricstest-model","system_fingerprint":"fp_llmmetricstest",
				"choices":[{"index":0,"message":{"role":"assistant","content":"time while the"},"logprobs":null,"finish_reason":"stop"}],
				"usage":{"prompt_tokens":100,"completion_tokens":3,"total_tokens":103}}`, bubbleStart),
		},
		{
			name: "chat max_completion_tokens wins over max_tokens",
			path: "/v1/chat/completions",
			body: chatBody(80, false, false, `,"max_tokens":1,"max_completion_tokens":2`),
			want: fmt.Sprintf(`{"id":"chatcmpl-1","object":"chat.completion","created":%d,"model":"llmmetricstest-model","system_fingerprint":"fp_llmmetricstest",
				"choices":[{"index":0,"message":{"role":"assistant","content":"time while"},"logprobs":null,"finish_reason":"length"}],
				"usage":{"prompt_tokens":100,"completion_tokens":2,"total_tokens":102}}`, bubbleStart),
		},
		{
			name: "completions with token IDs",
			path: "/v1/completions",
			body: `{"prompt":[1,2,3,4,5],"max_tokens":50}`,
			want: fmt.Sprintf(`{"id":"cmpl-1","object":"text_completion","created":%d,"model":"llmmetricstest-model",
				"choices":[{"index":0,"text":"time while the","logprobs":null,"finish_reason":"stop"}],
				"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}`, bubbleStart),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := NewInMemoryServer(exact)
				defer s.Close()
				r := do(context.Background(), s, tt.path, tt.body)
				require.NoError(t, r.err)
				require.Equal(t, http.StatusOK, r.status)
				assert.JSONEq(t, tt.want, string(r.body))
				var resp struct{ Usage usage }
				require.NoError(t, json.Unmarshal(r.body, &resp))
				// The answer comes after prefill (15ms + 50µs per prompt token) and the remaining decode steps.
				prefill := 15*time.Millisecond + time.Duration(resp.Usage.PromptTokens)*50*time.Microsecond
				assert.Equal(t, prefill+time.Duration(resp.Usage.CompletionTokens-1)*10*time.Millisecond, r.end.Sub(r.start))
				assert.Equal(t, resp.Usage.CompletionTokens, s.Stats().CompletionTokens)
			})
		})
	}
}

func TestRejectedRequests(t *testing.T) {
	tests := []struct {
		name    string
		cfg     ServerConfig
		body    string
		status  int
		errType string
		stats   Stats
	}{
		{"injected 500", ServerConfig{FailureRate: 1}, chatBody(8, true, false, ""), 500, "server_error", Stats{Requests: 1, Failed: 1}},
		{"bad JSON", ServerConfig{}, `{"messages":`, 400, "invalid_request_error", Stats{Requests: 1, BadRequests: 1}},
		{"unknown model", ServerConfig{}, `{"model":"gpt-x","messages":[]}`, 404, "invalid_request_error", Stats{Requests: 1, BadRequests: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := NewInMemoryServer(tt.cfg)
				defer s.Close()
				r := do(context.Background(), s, "/v1/chat/completions", tt.body)
				require.NoError(t, r.err)
				assert.Equal(t, tt.status, r.status)
				var e struct {
					Error struct {
						Message, Type string
						Code          int
					}
				}
				require.NoError(t, json.Unmarshal(r.body, &e), "%s", r.body)
				assert.Equal(t, tt.errType, e.Error.Type)
				assert.Equal(t, tt.status, e.Error.Code)
				assert.True(t, strings.HasPrefix(e.Error.Message, "llmmetricstest: "), e.Error.Message)
				assert.Equal(t, tt.stats, s.Stats())
			})
		})
	}
}

func TestAfterClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewInMemoryServer(ServerConfig{})
		s.Close()
		s.Close() // idempotent
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(chatBody(4, true, false, ""))))
		assert.Equal(t, http.StatusServiceUnavailable, w.Code)
		r := do(context.Background(), s, "/v1/chat/completions", chatBody(4, true, false, ""))
		assert.Error(t, r.err, "the in-memory listener is closed")
		assert.Equal(t, Stats{Requests: 1, BadRequests: 1}, s.Stats())
	})
}

func TestInjectedStreamFaults(t *testing.T) {
	tests := []struct {
		name      string
		cfg       ServerConfig
		wantErr   bool
		lastEvent string
		stats     func(Stats) bool
	}{
		{"cut", ServerConfig{CutRate: 1, OutputMin: 20, OutputMax: 20}, true, "", func(s Stats) bool { return s.Cut == 1 && s.OK == 0 }},
		{"error event", ServerConfig{ErrorEventRate: 1, OutputMin: 20, OutputMax: 20}, false, "[DONE]", func(s Stats) bool { return s.ErrorEvents == 1 && s.OK == 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				for seed := range uint64(5) { // several seeds: the fault comes at a random token
					cfg := tt.cfg
					cfg.Seed = seed
					s := NewInMemoryServer(cfg)
					r := do(context.Background(), s, "/v1/chat/completions", chatBody(8, true, true, ""))
					s.Close()
					require.Equal(t, http.StatusOK, r.status)
					assert.Less(t, r.tokens, 20, "stopped before the end")
					assert.Empty(t, r.finish, "no finish chunk")
					assert.Nil(t, r.usage, "no usage chunk")
					st := s.Stats()
					assert.True(t, tt.stats(st), "%+v", st)
					assert.Equal(t, r.tokens, st.CompletionTokens, "the server counts what it sent")
					if tt.wantErr {
						assert.Error(t, r.err, "the connection closed without [DONE]")
						assert.NotContains(t, r.events, "[DONE]")
						continue
					}
					require.NoError(t, r.err)
					require.GreaterOrEqual(t, len(r.events), 2)
					assert.Equal(t, tt.lastEvent, r.events[len(r.events)-1])
					assert.JSONEq(t, `{"error":{"message":"llmmetricstest: injected error event","type":"server_error","param":null,"code":500}}`, r.events[len(r.events)-2])
				}
			})
		})
	}
}

func TestInjectedFaultsNonStreaming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewInMemoryServer(ServerConfig{CutRate: 1})
		r := do(context.Background(), s, "/v1/chat/completions", chatBody(8, false, false, ""))
		s.Close()
		assert.Error(t, r.err, "a cut non-streaming request gets no response")
		assert.Equal(t, 1, s.Stats().Cut)

		s = NewInMemoryServer(ServerConfig{ErrorEventRate: 1})
		r = do(context.Background(), s, "/v1/chat/completions", chatBody(8, false, false, ""))
		s.Close()
		require.NoError(t, r.err)
		assert.Equal(t, http.StatusInternalServerError, r.status)
		assert.Equal(t, 1, s.Stats().ErrorEvents)
	})
}

func TestPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := exact
		cfg.OutputMin, cfg.OutputMax = 10, 10
		cfg.PauseRate, cfg.PauseDuration = 1, 500*time.Millisecond
		s := NewInMemoryServer(cfg)
		defer s.Close()
		r := do(context.Background(), s, "/v1/chat/completions", chatBody(80, true, false, ""))
		require.NoError(t, r.err)
		assert.Equal(t, 10, r.tokens, "a pause loses no token")
		// Without the pause the last token comes at 20ms + 9 × 10ms; the
		// stall delays the tail by 500ms minus the tokens generated meanwhile.
		assert.Greater(t, r.last.Sub(r.start), 110*time.Millisecond+400*time.Millisecond)
	})
}

func TestCancelLeavesBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := exact
		cfg.MaxBatch = 1
		cfg.OutputMin, cfg.OutputMax = 1000, 1000
		s := NewInMemoryServer(cfg)
		defer s.Close()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan result)
		go func() { done <- do(ctx, s, "/v1/chat/completions", chatBody(80, true, false, "")) }()
		time.Sleep(100 * time.Millisecond) // fake time: the long request is decoding
		cancel()
		a := <-done
		assert.Error(t, a.err)
		assert.Less(t, a.tokens, 1000)

		// With a batch of one, a second request only runs if the first left.
		b := do(context.Background(), s, "/v1/chat/completions", chatBody(80, true, false, `,"max_tokens":3`))
		require.NoError(t, b.err)
		assert.Equal(t, 3, b.tokens)
		assert.Less(t, b.first.Sub(b.start), 50*time.Millisecond, "the canceled request no longer holds the batch")
		synctest.Wait()
		st := s.Stats()
		assert.Equal(t, 1, st.Canceled)
		assert.Equal(t, 1, st.OK)
	})
}

func TestCloseStopsEverything(t *testing.T) {
	// synctest.Test fails if any goroutine of the bubble is left: the
	// server's, the HTTP server's or the client transport's.
	synctest.Test(t, func(t *testing.T) {
		s := NewInMemoryServer(ServerConfig{OutputMin: 10000, OutputMax: 10000})
		results := make(chan result, 4)
		for range 4 {
			go func() { results <- do(context.Background(), s, "/v1/chat/completions", chatBody(8, true, false, "")) }()
		}
		time.Sleep(time.Second)
		s.Close()
		for range 4 {
			r := <-results
			assert.Error(t, r.err, "in-flight streams end at Close")
			assert.Positive(t, r.tokens)
		}
	})
}

func TestPreemptionRecomputes(t *testing.T) {
	// run sends 8 concurrent requests of 10 prompt + 50 output tokens and
	// returns the longest decode span (last − first token) and the stats.
	run := func(t *testing.T, kv int) (time.Duration, Stats) {
		cfg := exact
		cfg.OutputMin, cfg.OutputMax = 50, 50
		cfg.MaxBatch = 8
		cfg.KVBudget = kv
		cfg.PromptTokens = 10
		s := NewInMemoryServer(cfg)
		defer s.Close()
		results := make(chan result, 8)
		for range 8 {
			go func() { results <- do(context.Background(), s, "/v1/chat/completions", chatBody(8, true, true, "")) }()
		}
		var span time.Duration
		for range 8 {
			r := <-results
			require.NoError(t, r.err)
			assert.Equal(t, 50, r.tokens, "no token lost or sent twice")
			assert.Equal(t, 50, r.usage.CompletionTokens)
			assert.Equal(t, 10, r.usage.PromptTokens)
			assert.Equal(t, r.text, expectedText(t, r), "tokens arrive in order")
			span = max(span, r.last.Sub(r.first))
		}
		return span, s.Stats()
	}
	synctest.Test(t, func(t *testing.T) {
		free, freeStats := run(t, -1)
		tight, tightStats := run(t, 400) // 8 × (10 + 50) = 480 tokens would be needed
		assert.Zero(t, freeStats.Preemptions)
		assert.Positive(t, tightStats.Preemptions)
		for _, st := range []Stats{freeStats, tightStats} {
			assert.Equal(t, 8*50, st.CompletionTokens)
			assert.Equal(t, 8*10, st.PromptTokens)
			assert.Equal(t, 8, st.OK)
		}
		assert.Greater(t, tight, free, "a preempted request waits, then recomputes")
		assert.Greater(t, tightStats.Steps, freeStats.Steps, "preemption costs steps")
	})
}

// expectedText rebuilds the answer the server sends: the words of
// tokenText for the request's id, which the response's first word reveals.
func expectedText(t *testing.T, r result) string {
	t.Helper()
	first, _, _ := strings.Cut(r.text, " ")
	for id := 1; id <= len(words); id++ {
		if tokenText(id, 0) != first {
			continue
		}
		var b strings.Builder
		for i := range r.tokens {
			b.WriteString(tokenText(id, i))
		}
		if b.String() == r.text {
			return b.String()
		}
	}
	return "(no id gives " + r.text + ")"
}

func TestDeterministicWithSeed(t *testing.T) {
	run := func(seed uint64) (texts []string, times []time.Duration) {
		synctest.Test(t, func(t *testing.T) {
			s := NewInMemoryServer(ServerConfig{Seed: seed, OutputMin: 5, OutputMax: 50, PauseRate: 0.3, PauseDuration: 50 * time.Millisecond})
			defer s.Close()
			start := time.Now()
			for range 10 {
				r := do(context.Background(), s, "/v1/chat/completions", chatBody(20, true, true, ""))
				require.NoError(t, r.err)
				texts = append(texts, r.text)
				times = append(times, r.first.Sub(start), r.last.Sub(start))
			}
		})
		return texts, times
	}
	texts1, times1 := run(7)
	texts2, times2 := run(7)
	texts3, times3 := run(8)
	assert.Equal(t, texts1, texts2, "same seed, same answers")
	assert.Equal(t, times1, times2, "same seed, same timing")
	assert.NotEqual(t, texts1, texts3, "another seed, other answer lengths")
	assert.NotEqual(t, times1, times3, "another seed, other timing")
}

func TestCountText(t *testing.T) {
	tests := []struct {
		name   string
		values []string
		want   int
	}{
		{"chat strings", []string{`[{"role":"user","content":"abcdefgh"},{"content":"abc"}]`}, 3}, // 11 chars
		{"chat parts", []string{`[{"content":[{"type":"text","text":"abcd"},{"type":"image_url","image_url":{"url":"x"}}]}]`}, 1},
		{"empty chat", []string{`[]`}, 1},
		{"absent", []string{``, `null`}, 1},
		{"prompt string", []string{`"abcdefghi"`}, 3},
		{"prompt strings", []string{`["abcd","abcd"]`}, 2},
		{"token IDs", []string{`[5,6,7]`}, 3},
		{"batched token IDs", []string{`[[5,6],[7]]`}, 3},
		{"system and messages add up", []string{`"abcd"`, `[{"content":"abcd"}]`}, 2},
		{"gemini contents", []string{`{"parts":[{"text":"abcd"}]}`, `[{"role":"user","parts":[{"text":"abcdabcd"}]}]`}, 3},
		{"responses input items", []string{`[{"role":"user","content":[{"type":"input_text","text":"abcdabcd"}]}]`}, 2},
		{"booleans are not IDs", []string{`[true,false,null]`}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raws := make([]json.RawMessage, len(tt.values))
			for i, v := range tt.values {
				raws[i] = json.RawMessage(v)
			}
			assert.Equal(t, tt.want, countText(raws...))
		})
	}
}

func TestDefaults(t *testing.T) {
	s := NewServer(ServerConfig{})
	defer s.Close()
	assert.Equal(t, ServerConfig{
		Model: DefaultModel, PrefillBase: DefaultPrefillBase, PrefillPerToken: DefaultPrefillPerToken,
		BaseTPOT: DefaultBaseTPOT, BatchSlowdown: DefaultBatchSlowdown, MaxBatch: DefaultMaxBatch,
		KVBudget: DefaultKVBudget, QueueOverhead: DefaultQueueOverhead, OutputMin: DefaultOutputMin,
		OutputMax: DefaultOutputMax, Jitter: DefaultJitter, PauseDuration: time.Second, Speedup: 1,
	}, s.Config())
	neg := ServerConfig{PrefillBase: -1, PrefillPerToken: -1, BatchSlowdown: -1, QueueOverhead: -1, Jitter: -1, KVBudget: -1}.withDefaults()
	assert.Zero(t, neg.PrefillBase)
	assert.Zero(t, neg.PrefillPerToken)
	assert.Zero(t, neg.BatchSlowdown)
	assert.Zero(t, neg.QueueOverhead)
	assert.Zero(t, neg.Jitter)
	assert.Equal(t, -1, neg.KVBudget, "negative KVBudget: unlimited")
}

// TestLoopbackServer runs the real-socket server on real time with tiny
// durations (no sleep in the test: it waits for the server's answer).
func TestLoopbackServer(t *testing.T) {
	s := NewServer(ServerConfig{BaseTPOT: 100 * time.Microsecond, PrefillBase: -1, PrefillPerToken: -1, OutputMin: 5, OutputMax: 5})
	defer s.Close()
	require.True(t, strings.HasPrefix(s.URL, "http://127.0.0.1:"), s.URL)
	r := do(context.Background(), s, "/v1/chat/completions", chatBody(8, true, true, ""))
	require.NoError(t, r.err)
	assert.Equal(t, 5, r.tokens)
	assert.Equal(t, 5, r.usage.CompletionTokens)
	resp, err := s.Client().Get(s.URL + "/v1/models")
	require.NoError(t, err)
	defer resp.Body.Close()
	var models struct{ Data []struct{ ID string } }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&models))
	require.Len(t, models.Data, 1)
	assert.Equal(t, DefaultModel, models.Data[0].ID)
	assert.Equal(t, 1, s.Stats().OK)
}

func TestSpeedup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := exact
		cfg.Speedup = 4
		cfg.PauseRate, cfg.PauseDuration = 1, 400*time.Millisecond
		s := NewInMemoryServer(cfg)
		defer s.Close()
		r := do(context.Background(), s, "/v1/chat/completions", chatBody(80, true, false, ""))
		require.NoError(t, r.err)
		assert.Equal(t, 5*time.Millisecond, r.first.Sub(r.start), "TTFT 20ms / 4")
		// Tokens are ready at 5, 7.5 and 10ms; with seed 0 the pause (400ms / 4)
		// comes before the third, which is sent at 10 + 100ms.
		assert.Equal(t, 105*time.Millisecond, r.last.Sub(r.first))
	})
}

// TestCloseAbortsInFlightStreams: a stream cut by Close must not look like a
// complete answer to the client (found in review).
func TestCloseAbortsInFlightStreams(t *testing.T) {
	s := NewServer(ServerConfig{BaseTPOT: 20 * time.Millisecond, OutputMin: 200, OutputMax: 200})
	resp, err := s.Client().Post(s.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"`+DefaultModel+`","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	_, err = br.ReadString('\n') // the stream is under way
	require.NoError(t, err)
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		s.Close()
	}()
	rest, err := io.ReadAll(br)
	assert.Error(t, err, "the client sees a broken stream")
	assert.NotContains(t, string(rest), "[DONE]")
	<-closed // no goroutine outlives the test
}
