// Package sdkcompat checks that llmmetrics.Middleware goes unchanged into
// the option.WithMiddleware of openai-go (v3) and anthropic-sdk-go, and
// that each retry of those SDKs is measured as its own request.
package sdkcompat

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	anthropic "github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/llmmetricstest"
)

// The SDKs' Middleware types are aliases of llmmetrics.Middleware's
// function type: these lines compile only while that holds.
var (
	_ option.Middleware  = llmmetrics.Middleware(nil)
	_ aoption.Middleware = llmmetrics.Middleware(nil)
)

func newTracker(t *testing.T) (*llmmetrics.Tracker, *llmmetricstest.Collector) {
	t.Helper()
	mp, col := llmmetricstest.NewMeterProvider()
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	tr, err := llmmetrics.NewTracker(llmmetrics.WithMeterProvider(mp))
	require.NoError(t, err)
	return tr, col
}

// flaky answers 503 to the first request and ok to the others; it keeps
// the request bodies.
func flaky(t *testing.T, ok http.HandlerFunc) (*httptest.Server, func() []string) {
	var calls atomic.Int32
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After-Ms", "1") // both SDKs honor it: no backoff wait
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, `{"error":{"message":"overloaded","type":"server_error"}}`)
			return
		}
		ok(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), bodies...)
	}
}

func TestOpenAIGoMiddlewareStreamWithRetry(t *testing.T) {
	tr, col := newTracker(t)
	srv, sent := flaky(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range []string{
			`{"id":"c","object":"chat.completion.chunk","model":"gpt-4o-mini","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`,
			`{"id":"c","object":"chat.completion.chunk","model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":"Hello"}}]}`,
			`{"id":"c","object":"chat.completion.chunk","model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":" there"}}]}`,
			`{"id":"c","object":"chat.completion.chunk","model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}}`,
			`[DONE]`,
		} {
			_, _ = io.WriteString(w, "data: "+ev+"\n\n")
		}
	})
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	client := openai.NewClient(
		option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("test"),
		option.WithHTTPClient(&http.Client{Transport: base}), option.WithMaxRetries(1),
		option.WithMiddleware(llmmetrics.Middleware(tr, llmmetrics.WithIncludeUsage())),
	)
	stream := client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:    "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Say hello")},
	})
	var text strings.Builder
	for stream.Next() {
		for _, c := range stream.Current().Choices {
			text.WriteString(c.Delta.Content)
		}
	}
	require.NoError(t, stream.Err())
	require.NoError(t, stream.Close())
	assert.Equal(t, "Hello there", text.String())

	bodies := sent()
	require.Len(t, bodies, 2, "one failed attempt, one retry")
	for _, b := range bodies {
		assert.Contains(t, b, `"stream_options":{"include_usage":true}`, "each attempt asks for the usage")
	}
	snap := tr.Snapshot()
	assert.Equal(t, 2, snap.Requests, "each SDK attempt is a request")
	assert.Equal(t, 1, snap.Failed)
	assert.Equal(t, 1, snap.Completed)
	assert.Equal(t, 3, snap.OutputTokens, "N from the usage chunk")
	assert.Equal(t, 9, snap.InputTokens)
	m := col.Collect(t)
	assert.Equal(t, map[string]float64{"503": 1}, m.SumBy(llmmetrics.ServerMetricNames().Requests, "error.type"))
	assert.Equal(t, map[string]float64{"gpt-4o-mini": 2}, m.SumBy(llmmetrics.ServerMetricNames().Requests, "gen_ai.request.model"))
}

func TestAnthropicMiddlewareWithRetry(t *testing.T) {
	tr, col := newTracker(t)
	srv, sent := flaky(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5",`+
			`"content":[{"type":"text","text":"Hi!"}],"stop_reason":"end_turn","stop_sequence":null,`+
			`"usage":{"input_tokens":12,"cache_creation_input_tokens":0,"cache_read_input_tokens":4,"output_tokens":6}}`)
	})
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	client := anthropic.NewClient(
		aoption.WithBaseURL(srv.URL), aoption.WithAPIKey("test"),
		aoption.WithHTTPClient(&http.Client{Transport: base}), aoption.WithMaxRetries(1),
		aoption.WithMiddleware(llmmetrics.Middleware(tr)),
	)
	msg, err := client.Messages.New(context.Background(), anthropic.MessageNewParams{
		Model:     "claude-sonnet-4-5",
		MaxTokens: 64,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))},
	})
	require.NoError(t, err)
	assert.Equal(t, int64(6), msg.Usage.OutputTokens)
	bodies := sent()
	require.Len(t, bodies, 2)
	assert.Equal(t, bodies[0], bodies[1], "the retry sends the same body")

	snap := tr.Snapshot()
	assert.Equal(t, 2, snap.Requests)
	assert.Equal(t, 1, snap.Failed)
	assert.Equal(t, 6, snap.OutputTokens, "tokens of a non-streaming answer")
	assert.Equal(t, 16, snap.InputTokens, "input + cache read")
	assert.Equal(t, 0, snap.TTFT.Count, "no TTFT without a stream")
	m := col.Collect(t)
	assert.Equal(t, map[string]float64{"503": 1}, m.SumBy(llmmetrics.ServerMetricNames().Requests, "error.type"))
	assert.Equal(t, map[string]float64{"anthropic": 2}, m.SumBy(llmmetrics.ServerMetricNames().Requests, "gen_ai.provider.name"))
}
