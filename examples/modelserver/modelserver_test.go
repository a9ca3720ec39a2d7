package main

import (
	"context"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/llmmetricstest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// scriptedModel yields tokens, moving clock forward by step before each
// one (the time the model takes to produce it).
func scriptedModel(clock *llmmetricstest.Clock, step time.Duration, tokens ...string) Generate {
	return func(ctx context.Context, prompt string) iter.Seq[string] {
		return func(yield func(string) bool) {
			for _, tok := range tokens {
				clock.Advance(step)
				if !yield(tok) {
					return
				}
			}
		}
	}
}

// start serves the model server on its own server; done receives once each
// request has ended.
func start(t *testing.T, gen Generate, clock *llmmetricstest.Clock) (*httptest.Server, *llmmetricstest.Collector, chan struct{}) {
	t.Helper()
	mp, col := llmmetricstest.NewMeterProvider()
	tracker, err := llmmetrics.NewTracker(llmmetrics.WithMeterProvider(mp), llmmetrics.WithClock(clock.Now))
	require.NoError(t, err)
	h := NewModelServer(tracker, "toy", gen)
	done := make(chan struct{}, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() { done <- struct{}{} }()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, col, done
}

func post(t *testing.T, srv *httptest.Server, body string) (*http.Response, string) {
	t.Helper()
	resp, err := srv.Client().Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	return resp, string(b)
}

func TestModelServer(t *testing.T) {
	names := llmmetrics.ServerMetricNames()
	t.Run("streamed", func(t *testing.T) {
		clock := llmmetricstest.NewClock(time.Time{})
		srv, col, done := start(t, scriptedModel(clock, 100*time.Millisecond, "Hello", " big", " world"), clock)
		resp, body := post(t, srv, `{"model":"toy","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi there"}]}`)
		<-done
		assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
		assert.Contains(t, body, `"delta":{"content":" big"}`)
		assert.True(t, strings.HasSuffix(body, "data: [DONE]\n\n"))

		m := col.Collect(t)
		assert.Equal(t, float64(1), m.Value(names.Requests, llmmetrics.OutcomeKey.String("ok"), semconv.GenAIRequestModel("toy")), "%s", m)
		assert.Equal(t, float64(3), m.Value(names.Tokens, semconv.GenAITokenTypeOutput))
		assert.Equal(t, float64(2), m.Value(names.Tokens, semconv.GenAITokenTypeInput))
		assert.InDelta(t, 0.1, m.Sum(names.TTFT), 1e-9, "each token is timed at its flush")
		assert.Equal(t, uint64(2), m.Count(names.ITL))
		assert.InDelta(t, 0.2, m.Sum(names.ITL), 1e-9)
		assert.InDelta(t, 0.3, m.Sum(names.E2EL), 1e-9)
	})
	t.Run("not streamed", func(t *testing.T) {
		clock := llmmetricstest.NewClock(time.Time{})
		srv, col, done := start(t, scriptedModel(clock, 100*time.Millisecond, "Hello", " world"), clock)
		resp, body := post(t, srv, `{"model":"toy","messages":[{"role":"user","content":"hi"}]}`)
		<-done
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Contains(t, body, `"content":"Hello world"`)
		m := col.Collect(t)
		assert.Equal(t, float64(2), m.Value(names.Tokens, semconv.GenAITokenTypeOutput))
		assert.Equal(t, uint64(0), m.Count(names.TTFT), "one answer: no token stream")
		assert.InDelta(t, 0.2, m.Sum(names.E2EL), 1e-9)
	})
	t.Run("unknown model is a 404 Error, recorded as _OTHER", func(t *testing.T) {
		clock := llmmetricstest.NewClock(time.Time{})
		srv, col, done := start(t, scriptedModel(clock, 0), clock)
		resp, _ := post(t, srv, `{"model":"attacker-chosen-name","stream":true}`)
		<-done
		assert.Equal(t, http.StatusNotFound, resp.StatusCode)
		m := col.Collect(t)
		assert.Equal(t, float64(1), m.Value(names.Requests, llmmetrics.OutcomeKey.String("error"),
			semconv.ErrorTypeKey.String("404"), semconv.GenAIRequestModel("_OTHER")), "%s", m)
	})
}

func TestWords(t *testing.T) {
	var got []string
	for tok := range Words(time.Microsecond)(context.Background(), "a b  c") {
		got = append(got, tok)
	}
	assert.Equal(t, []string{"a", " b", " c"}, got)
}
