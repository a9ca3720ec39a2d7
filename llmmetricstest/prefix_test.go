package llmmetricstest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// findInt returns the last value of key anywhere in a JSON document (-1:
// absent).
func findInt(v any, key string) int {
	found := -1
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if n, ok := e.(float64); ok && k == key {
				found = int(n)
			} else if f := findInt(e, key); f >= 0 {
				found = f
			}
		}
	case []any:
		for _, e := range x {
			if f := findInt(e, key); f >= 0 {
				found = f
			}
		}
	}
	return found
}

// cachedIn returns the cached count key's value in a response: the body,
// or the last SSE event that carries it.
func cachedIn(t *testing.T, r result, key string) int {
	t.Helper()
	docs := [][]byte{r.body}
	if len(r.events) > 0 {
		docs = docs[:0]
		for _, e := range r.events {
			docs = append(docs, []byte(e))
		}
	}
	found := -1
	for _, d := range docs {
		var v any
		if json.Unmarshal(d, &v) != nil {
			continue
		}
		if f := findInt(v, key); f >= 0 {
			found = f
		}
	}
	return found
}

// TestPrefixCache: with a shared prefix, the second request of a group hits
// the cache; every protocol reports the cached tokens, streamed and not,
// equal to Stats; the hit shortens the prefill.
func TestPrefixCache(t *testing.T) {
	cfg := exact
	cfg.PromptTokens = 100
	cfg.SharedPrefixTokens = 60
	prompt := `"hello"`
	tests := []struct {
		name, path, body, key string
	}{
		{"chat", "/v1/chat/completions", `{"messages":[{"role":"user","content":` + prompt + `}]}`, "cached_tokens"},
		{"chat stream", "/v1/chat/completions", `{"messages":[{"role":"user","content":` + prompt + `}],"stream":true,"stream_options":{"include_usage":true}}`, "cached_tokens"},
		{"completions stream", "/v1/completions", `{"prompt":` + prompt + `,"stream":true,"stream_options":{"include_usage":true}}`, "cached_tokens"},
		{"responses", "/v1/responses", `{"input":` + prompt + `}`, "cached_tokens"},
		{"responses stream", "/v1/responses", `{"input":` + prompt + `,"stream":true}`, "cached_tokens"},
		{"anthropic", "/v1/messages", `{"max_tokens":10,"messages":[{"role":"user","content":` + prompt + `}]}`, "cache_read_input_tokens"},
		{"anthropic stream", "/v1/messages", `{"max_tokens":10,"stream":true,"messages":[{"role":"user","content":` + prompt + `}]}`, "cache_read_input_tokens"},
		{"gemini", "/v1beta/models/" + DefaultModel + ":generateContent", `{"contents":[{"parts":[{"text":` + prompt + `}]}]}`, "cachedContentTokenCount"},
		{"gemini stream", "/v1beta/models/" + DefaultModel + ":streamGenerateContent?alt=sse", `{"contents":[{"parts":[{"text":` + prompt + `}]}]}`, "cachedContentTokenCount"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := NewInMemoryServer(cfg)
				defer s.Close()
				// do reports a stream without data: [DONE] (all but OpenAI's)
				// as cut; the status and the usage are what matter here.
				first := do(context.Background(), s, tt.path, tt.body)
				require.Equal(t, http.StatusOK, first.status, string(first.body))
				second := do(context.Background(), s, tt.path, tt.body)
				require.Equal(t, http.StatusOK, second.status, string(second.body))
				st := s.Stats()
				assert.Equal(t, 60, st.CachedPromptTokens, "the second request hit the 60-token prefix")
				miss, hit := cachedIn(t, first, tt.key), cachedIn(t, second, tt.key)
				if strings.HasPrefix(tt.name, "gemini") {
					assert.Equal(t, -1, miss, "Gemini omits a zero cachedContentTokenCount")
				} else {
					assert.Equal(t, 0, miss)
				}
				assert.Equal(t, st.CachedPromptTokens, hit)
				if strings.HasPrefix(tt.name, "anthropic") {
					assert.Equal(t, 100-60, cachedIn(t, second, "input_tokens"), "input_tokens excludes the cached tokens")
				}
			})
		})
	}
}

// TestPrefixCacheTiming: a hit prefills only the uncached tokens.
func TestPrefixCacheTiming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := exact
		cfg.PromptTokens = 100
		cfg.SharedPrefixTokens = 60
		s := NewInMemoryServer(cfg)
		defer s.Close()
		body := chatBody(1, true, false, "")
		miss := do(context.Background(), s, "/v1/chat/completions", body)
		hit := do(context.Background(), s, "/v1/chat/completions", body)
		// 15ms + 50µs per prefilled token: 100 tokens, then 40.
		assert.Equal(t, 20*time.Millisecond, miss.first.Sub(miss.start))
		assert.Equal(t, 17*time.Millisecond, hit.first.Sub(hit.start))
	})
}

// TestPrefixCacheBounded: three prefixes in a cache of two, used
// round-robin, always miss (LRU); with room for three, the second round
// hits.
func TestPrefixCacheBounded(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entries int
		want    int
	}{
		{"too small: every request misses", 2, 0},
		{"room for all: the second round hits", 3, 3 * 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := exact
				cfg.PromptTokens = 50
				cfg.SharedPrefixTokens = 10
				cfg.PrefixGroups = 3
				cfg.PrefixCacheEntries = tc.entries
				s := NewInMemoryServer(cfg)
				defer s.Close()
				for range 6 {
					r := do(context.Background(), s, "/v1/chat/completions", chatBody(1, false, false, ""))
					require.NoError(t, r.err)
				}
				assert.Equal(t, tc.want, s.Stats().CachedPromptTokens)
			})
		})
	}
}

// TestMetricsEndpoint: /metrics serves the scheduler's state in vLLM's
// names, equal to Stats.
func TestMetricsEndpoint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := exact
		cfg.PromptTokens = 1000
		cfg.KVBudget = 2500
		cfg.SharedPrefixTokens = 100
		s := NewInMemoryServer(cfg)
		defer s.Close()
		get := func() string {
			resp, err := s.Client().Get(s.URL + "/metrics")
			require.NoError(t, err)
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			return string(b)
		}
		// Three requests of 1,000 prompt tokens in a 2,500-token budget:
		// the first to arrive is admitted alone (its prefill step starts at
		// once), the two others wait for that step to end.
		done := make(chan struct{})
		for range 3 {
			go func() {
				do(context.Background(), s, "/v1/chat/completions", chatBody(1, true, false, ""))
				done <- struct{}{}
			}()
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		m := get()
		const l = `{engine="0",model_name="llmmetricstest-model"}`
		assert.Contains(t, m, "vllm:num_requests_running"+l+" 1\n")
		assert.Contains(t, m, "vllm:num_requests_waiting"+l+" 2\n")
		assert.Contains(t, m, "vllm:kv_cache_usage_perc"+l+" 0.4\n") // 1,000 of 2,500
		assert.Contains(t, m, "# TYPE vllm:num_preemptions_total counter\n")
		for range 3 {
			<-done
		}
		// A handler ends once its last token is out; the scheduler ends
		// the step and publishes its gauges after that: wait for it.
		synctest.Wait()
		m = get()
		st := s.Stats()
		assert.Equal(t, 200, st.CachedPromptTokens, "the 2nd and 3rd requests hit")
		assert.Contains(t, m, "vllm:num_requests_running"+l+" 0\n")
		assert.Contains(t, m, "vllm:prefix_cache_queries_total"+l+" 3000\n")
		assert.Contains(t, m, "vllm:prefix_cache_hits_total"+l+" 200\n")
		assert.Contains(t, m, "vllm:generation_tokens_total"+l+" 9\n")
	})
}
