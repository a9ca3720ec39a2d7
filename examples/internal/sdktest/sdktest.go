// Package sdktest runs the same checks against every SDK example in
// examples/sdk: a streamed and a non-streaming call to llmmetricstest's
// fake server, then HTTP 500 and 429 answers, each through the SDK
// instrumented by its llmmetrics one-liner. The Tracker's counts are
// compared with what the server says it sent (Server.Stats).
package sdktest

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/llmmetricstest"
)

// Call sends one request with an SDK client built on tracker (through the
// example's one-liner), to the fake server at serverURL, over base (its own
// transport, never http.DefaultTransport), streaming or not, and reads the
// answer to its end. It returns the answer's text and the SDK's error.
type Call func(ctx context.Context, tracker *llmmetrics.Tracker, serverURL string, base http.RoundTripper, stream bool) (string, error)

// Options describe what an SDK's protocol reports.
type Options struct {
	// StreamWithoutInputTokens is set when a stream carries no prompt
	// token count (OpenAI chat without stream_options.include_usage): the
	// Record's InputTokens is then 0 instead of the server's.
	StreamWithoutInputTokens bool
}

// NewTracker returns a client-role Tracker whose metrics a Collector reads.
func NewTracker(t testing.TB) (*llmmetrics.Tracker, *llmmetricstest.Collector) {
	t.Helper()
	mp, col := llmmetricstest.NewMeterProvider()
	tr, err := llmmetrics.NewTracker(llmmetrics.WithMeterProvider(mp))
	require.NoError(t, err)
	return tr, col
}

// NewServer starts a fake server on a loopback port for this test alone,
// fast (Speedup 10) and with short answers unless cfg says otherwise, and
// returns it with its own transport. Both are closed when the test ends.
func NewServer(t testing.TB, cfg llmmetricstest.ServerConfig) (*llmmetricstest.Server, http.RoundTripper) {
	t.Helper()
	if cfg.OutputMin == 0 && cfg.OutputMax == 0 {
		cfg.OutputMin, cfg.OutputMax = 12, 30
	}
	if cfg.Speedup == 0 {
		cfg.Speedup = 10
	}
	srv := llmmetricstest.NewServer(cfg)
	t.Cleanup(srv.Close)
	base := srv.Client().Transport // an *http.Transport of this server only
	if c, ok := base.(interface{ CloseIdleConnections() }); ok {
		t.Cleanup(c.CloseIdleConnections)
	}
	return srv, base
}

// Run checks call: for a streamed and a non-streaming answer, that the
// request completed and that the Tracker's output tokens equal the
// server's completion tokens (and its input tokens the prompt tokens);
// for an injected HTTP 500 and 429, that the SDK returned an error and
// the request counts as failed with error.type = the status code.
func Run(t *testing.T, call Call, opts Options) {
	for _, stream := range []bool{true, false} {
		name := map[bool]string{true: "stream", false: "unary"}[stream]
		t.Run(name, func(t *testing.T) {
			srv, base := NewServer(t, llmmetricstest.ServerConfig{Seed: 7})
			tr, col := NewTracker(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			text, err := call(ctx, tr, srv.URL, base, stream)
			require.NoError(t, err)
			assert.NotEmpty(t, text)
			st := srv.Stats()
			require.Equal(t, 1, st.OK, "the server answered in full")
			require.Positive(t, st.CompletionTokens)
			AssertCompleted(t, tr, st, stream && opts.StreamWithoutInputTokens)
			m := col.Collect(t)
			assert.Equal(t, 1.0, m.Value(llmmetrics.ServerMetricNames().Requests, llmmetrics.OutcomeKey.String("ok")), m.String())
			ttfts := m.Count(llmmetrics.ClientMetricNames().TTFT)
			if stream {
				assert.Equal(t, uint64(1), ttfts, "a stream has a TTFT")
			} else {
				assert.Zero(t, ttfts, "a JSON answer has no TTFT")
			}
		})
	}
	faults := []struct {
		name   string
		cfg    llmmetricstest.ServerConfig
		status string
	}{
		{"500", llmmetricstest.ServerConfig{FailureRate: 1}, "500"},
		{"429", llmmetricstest.ServerConfig{RateLimitRate: 1}, "429"},
	}
	for _, f := range faults {
		for _, stream := range []bool{true, false} {
			name := f.name + map[bool]string{true: "/stream", false: "/unary"}[stream]
			t.Run(name, func(t *testing.T) {
				srv, base := NewServer(t, f.cfg)
				tr, col := NewTracker(t)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				_, err := call(ctx, tr, srv.URL, base, stream)
				require.Error(t, err, "the SDK reports the HTTP error")
				st := srv.Stats()
				require.Equal(t, 1, st.Requests, "one attempt: the SDK's retries are off")
				require.Equal(t, 1, st.Failed+st.RateLimited)
				AssertFailed(t, tr, col, f.status)
			})
		}
	}
}

// AssertCompleted checks that every request the Tracker saw completed and
// that its token counts are the server's: output tokens = completion
// tokens, input tokens = prompt tokens (0 when noInput).
func AssertCompleted(t testing.TB, tr *llmmetrics.Tracker, st llmmetricstest.Stats, noInput bool) {
	t.Helper()
	s := tr.Snapshot()
	assert.Equal(t, st.OK, s.Requests, "one Record per request")
	assert.Equal(t, st.OK, s.Completed)
	assert.Zero(t, s.Failed)
	assert.Equal(t, st.CompletionTokens, s.OutputTokens, "output tokens = the server's completion tokens")
	if noInput {
		assert.Zero(t, s.InputTokens, "the stream carries no prompt token count")
	} else {
		assert.Equal(t, st.PromptTokens, s.InputTokens, "input tokens = the server's prompt tokens")
	}
}

// AssertFailed checks that the Tracker saw exactly one request, failed,
// and that the requests counter has it with error.type errType.
func AssertFailed(t testing.TB, tr *llmmetrics.Tracker, col *llmmetricstest.Collector, errType string) {
	t.Helper()
	s := tr.Snapshot()
	assert.Equal(t, 1, s.Requests)
	assert.Equal(t, 1, s.Failed, "an HTTP error is a failed request")
	assert.Zero(t, s.Completed)
	m := col.Collect(t)
	assert.Equal(t, 1.0, m.Value(llmmetrics.ServerMetricNames().Requests,
		llmmetrics.OutcomeKey.String("error"), semconv.ErrorTypeKey.String(errType)), m.String())
	assert.Equal(t, map[string]float64{errType: 1}, m.SumBy(llmmetrics.ServerMetricNames().Requests, semconv.ErrorTypeKey))
}
