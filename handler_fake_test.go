package llmmetrics_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/llmmetricstest"
)

// TestHandlerMeasuresTheFakeServer mounts the fake server's handler behind
// NewHandler in the server role: for every protocol, streamed and not, the
// output tokens measured equal what the server says it sent, and an
// injected 500 counts as failed.
func TestHandlerMeasuresTheFakeServer(t *testing.T) {
	const model = "fake-model"
	msgs := `"messages":[{"role":"user","content":"one two three"}]`
	gemini := `{"contents":[{"parts":[{"text":"one two three"}]}]}`
	for _, tc := range []struct {
		name, path, body string
		streamed         bool // a token stream: TTFT is measured
	}{
		{"openai chat streamed", "/v1/chat/completions", `{"model":"` + model + `","stream":true,` + msgs + `}`, true},
		{"openai chat streamed with usage", "/v1/chat/completions", `{"model":"` + model + `","stream":true,"stream_options":{"include_usage":true},` + msgs + `}`, true},
		{"openai chat", "/v1/chat/completions", `{"model":"` + model + `",` + msgs + `}`, false},
		{"openai completions streamed", "/v1/completions", `{"model":"` + model + `","stream":true,"prompt":"one two"}`, true},
		{"openai completions", "/v1/completions", `{"model":"` + model + `","prompt":"one two"}`, false},
		{"openai responses streamed", "/v1/responses", `{"model":"` + model + `","stream":true,"input":"one two"}`, true},
		{"openai responses", "/v1/responses", `{"model":"` + model + `","input":"one two"}`, false},
		{"anthropic streamed", "/v1/messages", `{"model":"` + model + `","max_tokens":100,"stream":true,` + msgs + `}`, true},
		{"anthropic", "/v1/messages", `{"model":"` + model + `","max_tokens":100,` + msgs + `}`, false},
		{"gemini sse", "/v1beta/models/" + model + ":streamGenerateContent?alt=sse", gemini, true},
		{"gemini array", "/v1beta/models/" + model + ":streamGenerateContent", gemini, true},
		{"gemini", "/v1beta/models/" + model + ":generateContent", gemini, false},
		{"ollama chat streamed", "/api/chat", `{"model":"` + model + `",` + msgs + `}`, true},
		{"ollama chat", "/api/chat", `{"model":"` + model + `","stream":false,` + msgs + `}`, false},
		{"ollama generate streamed", "/api/generate", `{"model":"` + model + `","prompt":"one two"}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := llmmetricstest.NewServer(llmmetricstest.ServerConfig{
				Model: model, OutputMin: 6, OutputMax: 6, BaseTPOT: time.Millisecond, PrefillBase: time.Millisecond,
			})
			t.Cleanup(fake.Close)
			srv, col, done := serveMeasured(t, fake.Handler(), llmmetrics.WithModels(model))
			resp := postTo(t, srv, tc.path, tc.body)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			<-done

			st := fake.Stats()
			require.Equal(t, 1, st.OK, "%+v", st)
			m := col.Collect(t)
			names := llmmetrics.ServerMetricNames()
			assert.Equal(t, float64(st.CompletionTokens), m.Value(names.Tokens, semconv.GenAITokenTypeOutput), "output tokens\n%s", m)
			assert.Equal(t, float64(1), m.Value(names.Requests, llmmetrics.OutcomeKey.String("ok"), semconv.GenAIRequestModel(model)))
			want := uint64(0)
			if tc.streamed {
				want = 1
			}
			assert.Equal(t, want, m.Count(names.TTFT), "TTFT only for a stream")
		})
	}
}

func TestHandlerFakeServerFailureCounts(t *testing.T) {
	fake := llmmetricstest.NewServer(llmmetricstest.ServerConfig{FailureRate: 1})
	t.Cleanup(fake.Close)
	srv, col, done := serveMeasured(t, fake.Handler())
	resp := postTo(t, srv, "/v1/chat/completions", `{"model":"`+fake.Config().Model+`","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	<-done
	require.Equal(t, 1, fake.Stats().Failed)
	m := col.Collect(t)
	assert.Equal(t, float64(1), m.Value(llmmetrics.ServerMetricNames().Requests, llmmetrics.OutcomeKey.String("error"), semconv.ErrorTypeKey.String("500")), "%s", m)
	assert.Equal(t, float64(0), m.Value(llmmetrics.ServerMetricNames().Requests, llmmetrics.OutcomeKey.String("ok")))
}

// serveMeasured serves next behind NewHandler on its own server; done
// receives once each measured request has ended (NewHandler returned).
func serveMeasured(t *testing.T, next http.Handler, opts ...llmmetrics.HTTPOption) (*httptest.Server, *llmmetricstest.Collector, <-chan struct{}) {
	t.Helper()
	mp, col := llmmetricstest.NewMeterProvider()
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	tracker, err := llmmetrics.NewTracker(llmmetrics.WithMeterProvider(mp))
	require.NoError(t, err)
	h := llmmetrics.NewHandler(tracker, next, opts...)
	done := make(chan struct{}, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() { done <- struct{}{} }()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, col, done
}

// postTo posts body to srv with srv's own client and reads the whole
// answer.
func postTo(t *testing.T, srv *httptest.Server, path, body string) *http.Response {
	t.Helper()
	resp, err := srv.Client().Post(srv.URL+path, "application/json", strings.NewReader(body))
	require.NoError(t, err)
	_, err = io.Copy(io.Discard, resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	return resp
}
