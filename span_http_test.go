package llmmetrics

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/llmmetrics/llmmetrics/internal/jsonstream"
	"github.com/llmmetrics/llmmetrics/llmmetricstest"
)

// The spans of the HTTP one-liners, per protocol. Each answer below is a
// short stream written from the provider's API reference (OpenAI "The chat
// completion chunk object" and "Streaming events" of the Responses API,
// Anthropic "Streaming Messages", Gemini "streamGenerateContent" with
// alt=sse, Ollama "Generate a chat completion"): two answer tokens, then
// the usage. Each event arrives 10 ms after the previous one on a manual
// clock, so every time is exact.

// spanProtocol is one protocol's request and streamed answer.
type spanProtocol struct {
	name        string
	url         string // the request's URL (the client side sends it; the server side gets its path)
	body        string
	contentType string
	events      []string
	// What the span must say.
	spanName              string
	attrs                 []attribute.KeyValue // request attributes, usage and server.* (client side)
	ttft, ttfo, tpot, e2e float64
	end                   time.Duration // End − Start
}

var spanProtocols = []spanProtocol{
	{
		name: "openai chat",
		url:  "https://api.openai.com/v1/chat/completions",
		body: `{"messages":[{"role":"user","content":"hi"}],"model":"gpt-4o","max_completion_tokens":64,"stream":true,` +
			`"stream_options":{"include_usage":true}}`,
		contentType: "text/event-stream",
		events: []string{
			`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n",
			`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}` + "\n\n",
			`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":null}]}` + "\n\n",
			`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n",
			`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-2024-08-06","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}` + "\n\n",
			"data: [DONE]\n\n",
		},
		spanName: "chat gpt-4o",
		attrs: []attribute.KeyValue{
			semconv.GenAIOperationNameChat, semconv.GenAIProviderNameOpenAI, semconv.GenAIRequestModel("gpt-4o"),
			semconv.GenAIRequestStream(true), semconv.GenAIRequestMaxTokens(64),
			semconv.GenAIUsageInputTokens(9), semconv.GenAIUsageOutputTokens(2),
			semconv.ServerAddress("api.openai.com"), semconv.ServerPort(443),
		},
		ttft: 0.02, ttfo: 0.02, tpot: 0.01, e2e: 0.03, end: 60 * time.Millisecond,
	},
	{
		name:        "openai responses",
		url:         "https://api.openai.com/v1/responses",
		body:        `{"model":"gpt-4o","input":"hi","max_output_tokens":100,"stream":true}`,
		contentType: "text/event-stream",
		events: []string{
			"event: response.created\n" + `data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","model":"gpt-4o-2024-08-06","output":[],"usage":null}}` + "\n\n",
			"event: response.output_text.delta\n" + `data: {"type":"response.output_text.delta","sequence_number":1,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hel"}` + "\n\n",
			"event: response.output_text.delta\n" + `data: {"type":"response.output_text.delta","sequence_number":2,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"lo"}` + "\n\n",
			"event: response.completed\n" + `data: {"type":"response.completed","sequence_number":3,"response":{"id":"resp_1","object":"response","status":"completed","model":"gpt-4o-2024-08-06","output":[],"usage":{"input_tokens":9,"output_tokens":2,"total_tokens":11}}}` + "\n\n",
		},
		spanName: "chat gpt-4o",
		attrs: []attribute.KeyValue{
			semconv.GenAIOperationNameChat, semconv.GenAIProviderNameOpenAI, semconv.GenAIRequestModel("gpt-4o"),
			semconv.GenAIRequestStream(true), semconv.GenAIRequestMaxTokens(100),
			semconv.GenAIUsageInputTokens(9), semconv.GenAIUsageOutputTokens(2),
			semconv.ServerAddress("api.openai.com"), semconv.ServerPort(443),
		},
		ttft: 0.02, ttfo: 0.02, tpot: 0.01, e2e: 0.03, end: 40 * time.Millisecond,
	},
	{
		name:        "anthropic messages",
		url:         "https://api.anthropic.com/v1/messages",
		body:        `{"model":"claude-sonnet-4-5","max_tokens":1024,"messages":[{"role":"user","content":"hi"}],"stream":true}`,
		contentType: "text/event-stream",
		events: []string{
			"event: message_start\n" + `data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"usage":{"input_tokens":12,"output_tokens":1}}}` + "\n\n",
			"event: content_block_start\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n\n",
			"event: content_block_delta\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}` + "\n\n",
			"event: content_block_delta\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"lo"}}` + "\n\n",
			"event: content_block_stop\n" + `data: {"type":"content_block_stop","index":0}` + "\n\n",
			"event: message_delta\n" + `data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":2}}` + "\n\n",
			"event: message_stop\n" + `data: {"type":"message_stop"}` + "\n\n",
		},
		spanName: "chat claude-sonnet-4-5",
		attrs: []attribute.KeyValue{
			semconv.GenAIOperationNameChat, semconv.GenAIProviderNameAnthropic, semconv.GenAIRequestModel("claude-sonnet-4-5"),
			semconv.GenAIRequestStream(true), semconv.GenAIRequestMaxTokens(1024),
			semconv.GenAIUsageInputTokens(12), semconv.GenAIUsageOutputTokens(2),
			semconv.ServerAddress("api.anthropic.com"), semconv.ServerPort(443),
		},
		ttft: 0.03, ttfo: 0.03, tpot: 0.01, e2e: 0.04, end: 70 * time.Millisecond,
	},
	{
		name:        "gemini",
		url:         "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
		body:        `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":256}}`,
		contentType: "text/event-stream",
		events: []string{
			`data: {"candidates":[{"content":{"parts":[{"text":"Hel"}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":8,"candidatesTokenCount":1,"totalTokenCount":9},"modelVersion":"gemini-2.5-flash","responseId":"r-1"}` + "\r\n\r\n",
			`data: {"candidates":[{"content":{"parts":[{"text":"lo"}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":8,"candidatesTokenCount":2,"totalTokenCount":10},"modelVersion":"gemini-2.5-flash","responseId":"r-1"}` + "\r\n\r\n",
		},
		spanName: "generate_content gemini-2.5-flash",
		attrs: []attribute.KeyValue{
			semconv.GenAIOperationNameGenerateContent, semconv.GenAIProviderNameGCPGemini, semconv.GenAIRequestModel("gemini-2.5-flash"),
			semconv.GenAIRequestStream(true), semconv.GenAIRequestMaxTokens(256),
			semconv.GenAIUsageInputTokens(8), semconv.GenAIUsageOutputTokens(2),
			semconv.ServerAddress("generativelanguage.googleapis.com"), semconv.ServerPort(443),
		},
		ttft: 0.01, ttfo: 0.01, tpot: 0.01, e2e: 0.02, end: 20 * time.Millisecond,
	},
	{
		name:        "ollama chat",
		url:         "http://localhost:11434/api/chat",
		body:        `{"model":"llama3.2","messages":[{"role":"user","content":"hi"}],"options":{"num_predict":128}}`,
		contentType: "application/x-ndjson",
		events: []string{
			`{"model":"llama3.2","created_at":"2025-01-01T00:00:00.1Z","message":{"role":"assistant","content":"Hel"},"done":false}` + "\n",
			`{"model":"llama3.2","created_at":"2025-01-01T00:00:00.2Z","message":{"role":"assistant","content":"lo"},"done":false}` + "\n",
			`{"model":"llama3.2","created_at":"2025-01-01T00:00:00.3Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","total_duration":300000000,"prompt_eval_count":6,"eval_count":2}` + "\n",
		},
		spanName: "chat llama3.2",
		attrs: []attribute.KeyValue{
			semconv.GenAIOperationNameChat, semconv.GenAIProviderNameKey.String("ollama"), semconv.GenAIRequestModel("llama3.2"),
			semconv.GenAIRequestStream(true), // Ollama streams unless told not to
			semconv.GenAIRequestMaxTokens(128),
			semconv.GenAIUsageInputTokens(6), semconv.GenAIUsageOutputTokens(2),
			semconv.ServerAddress("localhost"), semconv.ServerPort(11434),
		},
		ttft: 0.01, ttfo: 0.01, tpot: 0.01, e2e: 0.02, end: 30 * time.Millisecond,
	},
}

// steppedBody returns one piece per Read, each after advancing the clock by
// 10 ms; it owns pieces (newSteppedBody copies them).
type steppedBody struct {
	pieces []string
	clock  *llmmetricstest.Clock
}

func newSteppedBody(pieces []string, clock *llmmetricstest.Clock) *steppedBody {
	return &steppedBody{pieces: append([]string(nil), pieces...), clock: clock}
}

func (b *steppedBody) Read(p []byte) (int, error) {
	if len(b.pieces) == 0 {
		return 0, io.EOF
	}
	b.clock.Advance(10 * time.Millisecond)
	n := copy(p, b.pieces[0])
	if b.pieces[0] = b.pieces[0][n:]; b.pieces[0] == "" {
		b.pieces = b.pieces[1:]
	}
	return n, nil
}

func (b *steppedBody) Close() error { return nil }

// wantSpanAttrs is what a span of p's request says: p's attributes (on the
// server side, server.* from the Host header), the times, the outcome, and
// what the Record says of the answer (the decoders tell it; their own
// tests check its values).
func wantSpanAttrs(p spanProtocol, rec Record, server bool) map[attribute.Key]attribute.Value {
	want := attrMap(p.attrs)
	want[semconv.GenAIResponseTimeToFirstChunkKey] = attribute.Float64Value(p.ttft)
	want[attrTTFO] = attribute.Float64Value(p.ttfo)
	want[attrTPOT] = attribute.Float64Value(p.tpot)
	want[attrE2EL] = attribute.Float64Value(p.e2e)
	want[OutcomeKey] = attribute.StringValue("ok")
	if server {
		want[semconv.ServerAddressKey] = attribute.StringValue("example.com")
		want[semconv.ServerPortKey] = attribute.IntValue(80)
		if strings.HasPrefix(p.url, "https:") { // httptest.NewRequest sets TLS
			want[semconv.ServerPortKey] = attribute.IntValue(443)
		}
	}
	if rec.ResponseModel != "" {
		want[semconv.GenAIResponseModelKey] = attribute.StringValue(rec.ResponseModel)
	}
	if rec.ResponseID != "" {
		want[semconv.GenAIResponseIDKey] = attribute.StringValue(rec.ResponseID)
	}
	if len(rec.FinishReasons) > 0 {
		want[semconv.GenAIResponseFinishReasonsKey] = attribute.StringSliceValue(rec.FinishReasons)
	}
	return want
}

// TestSpanPerProtocolClient: NewTransport and Middleware make one client
// span per request of each protocol, from the call to the end of the
// body, with the request's attributes, its usage and its times.
func TestSpanPerProtocolClient(t *testing.T) {
	oneLiners := map[string]func(tr *Tracker, base http.RoundTripper) http.RoundTripper{
		"NewTransport": func(tr *Tracker, base http.RoundTripper) http.RoundTripper { return NewTransport(tr, base) },
		"Middleware": func(tr *Tracker, base http.RoundTripper) http.RoundTripper {
			mw := Middleware(tr)
			return roundTripFunc(func(req *http.Request) (*http.Response, error) { return mw(req, base.RoundTrip) })
		},
	}
	for oneLiner, wrap := range oneLiners {
		for _, p := range spanProtocols {
			t.Run(oneLiner+"/"+p.name, func(t *testing.T) {
				tr, rec, clock, ended := spanTracker(t)
				base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
					_, _ = io.Copy(io.Discard, req.Body)
					h := http.Header{"Content-Type": {p.contentType}}
					return &http.Response{StatusCode: 200, Header: h, Body: newSteppedBody(p.events, clock), Request: req}, nil
				})
				req, err := http.NewRequest(http.MethodPost, p.url, strings.NewReader(p.body))
				require.NoError(t, err)
				req.Header.Set("Content-Type", "application/json")
				resp, err := wrap(tr, base).RoundTrip(req)
				require.NoError(t, err)
				_, err = io.Copy(io.Discard, resp.Body)
				require.NoError(t, err)
				require.NoError(t, resp.Body.Close())

				require.Len(t, *ended, 1)
				r := (*ended)[0]
				s := onlySpan(t, rec)
				assert.Equal(t, p.spanName, s.Name())
				assert.Equal(t, trace.SpanKindClient, s.SpanKind())
				assert.Equal(t, spanT0, s.StartTime())
				assert.Equal(t, spanT0.Add(p.end), s.EndTime())
				assert.Equal(t, r.Start, s.StartTime())
				assert.Equal(t, r.End, s.EndTime())
				assert.Equal(t, codes.Unset, s.Status().Code)
				assert.Equal(t, wantSpanAttrs(p, r, false), attrMap(s.Attributes()))
			})
		}
	}
}

// TestSpanPerProtocolServer: NewHandler makes one server span per request
// of each protocol, from ServeHTTP's entry to its return, with the
// request's attributes (the model allowlisted), its usage and its times,
// each frame timed at the flush that sends it.
func TestSpanPerProtocolServer(t *testing.T) {
	for _, p := range spanProtocols {
		t.Run(p.name, func(t *testing.T) {
			tr, rec, clock, ended := spanTracker(t)
			next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", p.contentType)
				for _, ev := range p.events {
					clock.Advance(10 * time.Millisecond)
					_, _ = io.WriteString(w, ev)
					w.(http.Flusher).Flush()
				}
			})
			model := attrMap(p.attrs)[semconv.GenAIRequestModelKey].AsString()
			h := NewHandler(tr, next, WithModels(model))
			req := httptest.NewRequest(http.MethodPost, p.url, strings.NewReader(p.body))
			req.Host = "example.com" // as the client sent it
			req.Header.Set("Content-Type", "application/json")
			h.ServeHTTP(httptest.NewRecorder(), req)

			require.Len(t, *ended, 1)
			r := (*ended)[0]
			s := onlySpan(t, rec)
			assert.Equal(t, p.spanName, s.Name())
			assert.Equal(t, trace.SpanKindServer, s.SpanKind())
			assert.Equal(t, spanT0, s.StartTime())
			assert.Equal(t, spanT0.Add(time.Duration(len(p.events))*10*time.Millisecond), s.EndTime())
			assert.Equal(t, r.Start, s.StartTime())
			assert.Equal(t, r.End, s.EndTime())
			assert.Equal(t, codes.Unset, s.Status().Code)
			// example.com is no provider's host: the provider is the
			// protocol's, as for the hosts of the client side.
			assert.Equal(t, wantSpanAttrs(p, r, true), attrMap(s.Attributes()))
		})
	}
}

// TestSpanOfAFailedHTTPRequest: the one-liners' failed requests give error
// spans with error.type, by otelhttp's rule: any error on a client, a 5xx
// (not a 4xx) on a server.
func TestSpanOfAFailedHTTPRequest(t *testing.T) {
	const url = "https://api.openai.com/v1/chat/completions"
	errRefused := errors.New("dial tcp: connection refused")
	for _, tc := range []struct {
		name      string
		status    int   // the answer's status; 0: base fails with err
		err       error // base's error
		errorType string
	}{
		{"429", 429, nil, "429"},
		{"503", 503, nil, "503"},
		{"transport error", 0, errRefused, "*errors.errorString"},
	} {
		t.Run("client/"+tc.name, func(t *testing.T) {
			tr, rec, _, _ := spanTracker(t)
			base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
				if tc.err != nil {
					return nil, tc.err
				}
				return &http.Response{StatusCode: tc.status, Body: io.NopCloser(strings.NewReader(`{"error":{}}`)), Request: req}, nil
			})
			req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"model":"gpt-4o"}`))
			require.NoError(t, err)
			resp, err := NewTransport(tr, base).RoundTrip(req)
			if err == nil {
				require.NoError(t, resp.Body.Close())
			}
			s := onlySpan(t, rec)
			assert.Equal(t, "chat gpt-4o", s.Name())
			assert.Equal(t, codes.Error, s.Status().Code)
			assert.Equal(t, attribute.StringValue(tc.errorType), attrMap(s.Attributes())[semconv.ErrorTypeKey])
		})
	}
	for _, tc := range []struct {
		name      string
		next      http.HandlerFunc
		errorType string // "": not an error span
	}{
		{"500", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(500) }, "500"},
		{"400", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(400) }, ""},
		{"stream error", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, `data: {"error":{"type":"server_error","message":"boom"}}`+"\n\n")
		}, "server_error"},
	} {
		t.Run("server/"+tc.name, func(t *testing.T) {
			tr, rec, _, _ := spanTracker(t)
			serve(NewHandler(tr, tc.next), "/v1/chat/completions", `{"model":"gpt-4o"}`)
			s := onlySpan(t, rec)
			attrs := attrMap(s.Attributes())
			if tc.errorType == "" {
				assert.Equal(t, codes.Unset, s.Status().Code)
				assert.NotContains(t, attrs, semconv.ErrorTypeKey)
				assert.Equal(t, attribute.StringValue("error"), attrs[OutcomeKey])
				return
			}
			assert.Equal(t, codes.Error, s.Status().Code)
			assert.Equal(t, attribute.StringValue(tc.errorType), attrs[semconv.ErrorTypeKey])
		})
	}
	t.Run("server/panic", func(t *testing.T) {
		tr, rec, _, _ := spanTracker(t)
		h := NewHandler(tr, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }))
		assert.Panics(t, func() { serve(h, "/v1/chat/completions", `{"model":"gpt-4o"}`) })
		s := onlySpan(t, rec)
		assert.Equal(t, codes.Error, s.Status().Code)
		assert.Equal(t, attribute.StringValue("panic"), attrMap(s.Attributes())[semconv.ErrorTypeKey])
	})
}

// TestSpanOfARedirectedCall: a redirect hop has a span of its own, ended
// at the redirect with its status; the call that follows has the
// request's span, from the first hop's start, like its Record.
func TestSpanOfARedirectedCall(t *testing.T) {
	tr, rec, clock, ended := spanTracker(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/old/v1/chat/completions" {
			http.Redirect(w, r, "/v1/chat/completions", http.StatusPermanentRedirect)
			return
		}
		clock.Advance(50 * time.Millisecond)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, sseChunk("Hi")+"data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	inner := srv.Client().Transport.(*http.Transport).Clone()
	t.Cleanup(inner.CloseIdleConnections)
	hc := &http.Client{Transport: NewTransport(tr, inner)}
	resp, err := hc.Post(srv.URL+"/old/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m"}`))
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	require.NoError(t, resp.Body.Close())

	require.Len(t, *ended, 1)
	spans := rec.Ended()
	require.Len(t, spans, 2)
	hop, call := spans[0], spans[1]
	hopAttrs := attrMap(hop.Attributes())
	assert.Equal(t, attribute.IntValue(308), hopAttrs[semconv.HTTPResponseStatusCodeKey])
	assert.Equal(t, attribute.StringValue("m"), hopAttrs[semconv.GenAIRequestModelKey])
	assert.NotContains(t, hopAttrs, OutcomeKey, "a hop is not a request")
	assert.Equal(t, "chat m", hop.Name())
	assert.Equal(t, spanT0, hop.StartTime())
	assert.Equal(t, "chat m", call.Name())
	assert.Equal(t, (*ended)[0].Start, call.StartTime(), "from the first hop's start")
	assert.Equal(t, (*ended)[0].End, call.EndTime())
	assert.Equal(t, attribute.StringValue("ok"), attrMap(call.Attributes())[OutcomeKey])
}

// TestRequestFacts: gen_ai.request.stream and gen_ai.request.max_tokens as
// each API's request body says them, and its default when the body has
// ended without "stream".
func TestRequestFacts(t *testing.T) {
	const absent = -1
	for _, tc := range []struct {
		name, path, body string
		stream           int // 0 false, 1 true, absent
		maxTokens        int // absent: none
	}{
		{"chat max_tokens", "/v1/chat/completions", `{"model":"m","max_tokens":50,"stream":true}`, 1, 50},
		{"chat both: max_completion_tokens wins", "/v1/chat/completions", `{"max_tokens":50,"max_completion_tokens":70}`, 0, 70},
		{"chat without stream", "/v1/chat/completions", `{"model":"m"}`, 0, absent},
		{"chat cut before its end", "/v1/chat/completions", `{"model":"m","max_tokens":5,`, absent, 5},
		{"completions", "/v1/completions", `{"prompt":"x","stream":false,"max_tokens":16}`, 0, 16},
		{"responses", "/v1/responses", `{"input":"x","max_output_tokens":300}`, 0, 300},
		{"anthropic", "/v1/messages", `{"max_tokens":1024,"stream":true}`, 1, 1024},
		{"gemini stream", "/v1beta/models/g:streamGenerateContent", `{"generationConfig":{"maxOutputTokens":256}}`, 1, 256},
		{"gemini snake case", "/v1beta/models/g:generateContent", `{"generation_config":{"max_output_tokens":8}}`, 0, 8},
		{"gemini ignores a stream member", "/v1beta/models/g:generateContent", `{"stream":true}`, 0, absent},
		{"ollama default", "/api/generate", `{"prompt":"x","options":{"num_predict":128}}`, 1, 128},
		{"ollama no bound", "/api/chat", `{"stream":false,"options":{"num_predict":-1}}`, 0, absent},
		{"embeddings: no stream", "/v1/embeddings", `{"input":"x"}`, absent, absent},
		{"unknown path", "/generate", `{"stream":true,"max_tokens":3}`, 1, 3},
		{"unknown path without", "/generate", `{}`, absent, absent},
		{"a string is no number", "/v1/chat/completions", `{"max_tokens":"5"}`, 0, absent},
		{"a fraction is no count", "/v1/chat/completions", `{"max_tokens":5.5}`, 0, absent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := jsonstream.NewScanner(requestSchema)
			s.Feed([]byte(tc.body))
			want := map[attribute.Key]attribute.Value{}
			if tc.stream != absent {
				want[semconv.GenAIRequestStreamKey] = attribute.BoolValue(tc.stream == 1)
			}
			if tc.maxTokens != absent {
				want[semconv.GenAIRequestMaxTokensKey] = attribute.IntValue(tc.maxTokens)
			}
			assert.Equal(t, want, attrMap(requestFacts(s, classifyPath(tc.path), nil)))
		})
	}
}

// TestSpanServerAddress: server.address and server.port of a request's
// host, the port as written, else the scheme's default.
func TestSpanServerAddress(t *testing.T) {
	for _, tc := range []struct {
		host string
		tls  bool
		want []attribute.KeyValue
	}{
		{"api.openai.com", true, []attribute.KeyValue{semconv.ServerAddress("api.openai.com"), semconv.ServerPort(443)}},
		{"localhost:8000", false, []attribute.KeyValue{semconv.ServerAddress("localhost"), semconv.ServerPort(8000)}},
		{"example.com", false, []attribute.KeyValue{semconv.ServerAddress("example.com"), semconv.ServerPort(80)}},
		{"[::1]:11434", false, []attribute.KeyValue{semconv.ServerAddress("::1"), semconv.ServerPort(11434)}},
		{"[::1]", true, []attribute.KeyValue{semconv.ServerAddress("::1"), semconv.ServerPort(443)}},
		{"host:notaport", false, []attribute.KeyValue{semconv.ServerAddress("host")}},
		{"", false, nil},
	} {
		t.Run(tc.host, func(t *testing.T) {
			assert.Equal(t, tc.want, serverAttrs(tc.host, tc.tls, nil))
		})
	}
}

// TestSpanHTTPNotSampled: a request whose span is not sampled is measured
// as before, and what the transport sends carries the unsampled span
// context (so otelhttp's span below it is not sampled either).
func TestSpanHTTPNotSampled(t *testing.T) {
	tp, rec := newSpanProvider(t, sdktrace.NeverSample())
	tr, _ := sdkTracker(t, WithTracerProvider(tp))
	var sent trace.SpanContext
	base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		sent = trace.SpanContextFromContext(req.Context())
		return &http.Response{StatusCode: 204, Body: http.NoBody, Request: req}, nil
	})
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://h/v1/chat/completions", strings.NewReader(`{"model":"m"}`))
	require.NoError(t, err)
	resp, err := NewTransport(tr, base).RoundTrip(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.True(t, sent.IsValid())
	assert.False(t, sent.IsSampled())
	assert.Empty(t, rec.Ended())
}

// smallReads gives at most 16 bytes per Read and counts what it gave.
type smallReads struct {
	r *strings.Reader
	n int
}

func (b *smallReads) Read(p []byte) (int, error) {
	n, err := b.r.Read(p[:min(len(p), 16)])
	b.n += n
	return n, err
}

// TestSpanReadsAheadOnlyWhatItNeeds: for a recording span, NewTransport
// reads the request body ahead until it has the model, "stream" and a
// length bound, not further; without "stream" only the body's end tells
// its default, so it reads it all (and sends it all, replayed).
func TestSpanReadsAheadOnlyWhatItNeeds(t *testing.T) {
	rest := `,"messages":[{"role":"user","content":"` + strings.Repeat("x", 4096) + `"}]}`
	for _, tc := range []struct {
		name, head string
		stream     attribute.Value
		readAll    bool
	}{
		{"all told first", `{"model":"m","stream":true,"max_tokens":5`, attribute.BoolValue(true), false},
		{"no stream member", `{"model":"m","max_tokens":5`, attribute.BoolValue(false), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, rec, _, _ := spanTracker(t)
			body := &smallReads{r: strings.NewReader(tc.head + rest)}
			var readFirst, sent int
			base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
				readFirst = body.n
				b, err := io.ReadAll(req.Body)
				sent = len(b)
				return &http.Response{StatusCode: 204, Body: http.NoBody, Request: req}, err
			})
			req, err := http.NewRequest(http.MethodPost, "http://h/v1/chat/completions", io.NopCloser(body))
			require.NoError(t, err)
			resp, err := NewTransport(tr, base).RoundTrip(req)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			assert.Equal(t, len(tc.head)+len(rest), sent, "the whole body is sent")
			if tc.readAll {
				assert.Equal(t, sent, readFirst)
			} else {
				assert.Less(t, readFirst, len(tc.head)+16, "read up to the length bound, not further")
			}
			attrs := attrMap(onlySpan(t, rec).Attributes())
			assert.Equal(t, tc.stream, attrs[semconv.GenAIRequestStreamKey])
			assert.Equal(t, attribute.IntValue(5), attrs[semconv.GenAIRequestMaxTokensKey])
		})
	}
}
