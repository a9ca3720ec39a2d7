package llmmetricstest

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// userBody is a chat request whose system and user texts are given.
func userBody(system, user string) string {
	return `{"messages":[{"role":"system","content":"` + system + `"},{"role":"user","content":"` + user + `"}],"stream":true,"stream_options":{"include_usage":true}}`
}

// TestContentPrefixCache: the content cache hits the leading whole blocks
// two prompts share byte for byte, whichever message holds them, and
// prefills only the rest.
func TestContentPrefixCache(t *testing.T) {
	sys := strings.Repeat("abcd", 100) // 400 characters: 100 tokens, 6 whole blocks (96 tokens)
	for _, tc := range []struct {
		name         string
		first, next  string
		cached       int
		prefill2, ms time.Duration
	}{
		{"same system prompt", userBody(sys, strings.Repeat("x", 80)), userBody(sys, strings.Repeat("y", 80)), 96, 0, 0},
		{"no shared bytes", userBody(strings.Repeat("q", 400), "x"), userBody(sys, "x"), 0, 0, 0},
		{"a turn carries the last one's blocks", userBody(sys, strings.Repeat("x", 200)), userBody(sys, strings.Repeat("x", 200)+strings.Repeat("z", 100)), 144, 0, 0},
		{"a differing first byte shares nothing", userBody("Z"+sys[1:], "x"), userBody(sys, "x"), 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := exact
				cfg.PrefixCacheBlocks = 1000
				s := NewInMemoryServer(cfg)
				defer s.Close()
				first := do(context.Background(), s, "/v1/chat/completions", tc.first)
				require.NoError(t, first.err)
				next := do(context.Background(), s, "/v1/chat/completions", tc.next)
				require.NoError(t, next.err)
				require.NotNil(t, next.usage)
				assert.Equal(t, tc.cached, s.Stats().CachedPromptTokens)
				assert.Equal(t, tc.cached, cachedIn(t, next, "cached_tokens"))
				// 15ms + 50µs per uncached prompt token.
				want := 15*time.Millisecond + time.Duration(next.usage.PromptTokens-tc.cached)*50*time.Microsecond
				assert.Equal(t, want, next.first.Sub(next.start))
			})
		})
	}
}

// TestContentPrefixCacheEvicts: a cache of 6 blocks keeps the most recent
// prompt only.
func TestContentPrefixCacheEvicts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := exact
		cfg.PrefixCacheBlocks = 6
		s := NewInMemoryServer(cfg)
		defer s.Close()
		a, b := strings.Repeat("a", 400), strings.Repeat("b", 400)
		for _, sys := range []string{a, b, a} {
			r := do(context.Background(), s, "/v1/chat/completions", userBody(sys, "x"))
			require.NoError(t, r.err)
		}
		assert.Equal(t, 0, s.Stats().CachedPromptTokens, "b evicted a")
		r := do(context.Background(), s, "/v1/chat/completions", userBody(a, "y"))
		require.NoError(t, r.err)
		assert.Equal(t, 96, s.Stats().CachedPromptTokens)
	})
}

// TestIgnoreEOS: ignore_eos makes the answer exactly max_tokens long, past
// the length the server would have chosen.
func TestIgnoreEOS(t *testing.T) {
	for _, tc := range []struct {
		extra string
		want  int
	}{
		{`,"max_tokens":10,"ignore_eos":true`, 10},
		{`,"max_tokens":10`, 3},
		{`,"ignore_eos":true`, 3}, // no max_tokens: nothing to reach
	} {
		t.Run(tc.extra, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := NewInMemoryServer(exact) // answers 3 tokens
				defer s.Close()
				r := do(context.Background(), s, "/v1/chat/completions", chatBody(4, true, true, tc.extra))
				require.NoError(t, r.err)
				require.NotNil(t, r.usage)
				assert.Equal(t, tc.want, r.usage.CompletionTokens)
			})
		})
	}
}
