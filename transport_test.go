package llmmetrics

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// ended returns the Records of the requests the Tracker ended, oldest first.
func ended(tr *Tracker) []Record {
	recs, _ := tr.win.appendRecords(nil, nil, time.Time{})
	return recs
}

// requestSets returns the requests counter by attribute set, each set
// written "k=v k=v" in key order.
func requestSets(t *testing.T, r *sdkmetric.ManualReader) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.Collect(context.Background(), &rm))
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != metricRequests {
				continue
			}
			for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
				var kv []string
				for _, a := range dp.Attributes.ToSlice() {
					kv = append(kv, string(a.Key)+"="+a.Value.String())
				}
				sort.Strings(kv)
				out[strings.Join(kv, " ")] += dp.Value
			}
		}
	}
	return out
}

// newLLMClient starts a test server running h and returns a client that
// measures with tr through its own http.Transport, and the server's URL.
func newLLMClient(t *testing.T, tr *Tracker, h http.HandlerFunc, opts ...TransportOption) (*http.Client, string) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	return &http.Client{Transport: NewTransport(tr, base, opts...)}, srv.URL
}

func testdataFile(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", dir, name))
	require.NoError(t, err)
	return string(b)
}

// answer is a handler that answers with status, Content-Type ct and body,
// flushing after each SSE event.
func answer(status int, ct, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(status)
		for ev := range strings.SplitAfterSeq(body, "\n\n") {
			_, _ = io.WriteString(w, ev)
			w.(http.Flusher).Flush()
		}
	}
}

func post(t *testing.T, ctx context.Context, url, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	return req
}

const chatBody = `{"messages":[{"role":"user","content":"What is the capital of France?"}],"model":"gpt-4o-mini","stream":true}`

func TestTransportOutcomes(t *testing.T) {
	errorBody := `{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}`
	tests := []struct {
		name    string
		path    string
		h       http.HandlerFunc
		want    Record // Outcome, InputTokens, OutputTokens, Chunks are compared
		errType string // the error.type of the requests counter ("" for none)
		body    string // what the caller must read ("" for: not checked)
	}{
		{"openai stream with usage", "/v1/chat/completions",
			answer(200, "text/event-stream", testdataFile(t, "sse", "openai_chat.sse")),
			Record{Outcome: OutcomeOK, InputTokens: 14, OutputTokens: 7, Chunks: 7}, "", testdataFile(t, "sse", "openai_chat.sse")},
		{"anthropic stream", "/v1/messages",
			answer(200, "text/event-stream; charset=utf-8", testdataFile(t, "sse", "anthropic_thinking_tools.sse")),
			Record{Outcome: OutcomeOK, InputTokens: 572, OutputTokens: 89, Chunks: 9}, "", ""},
		{"responses stream behind a prefix", "/openai/v1/responses",
			answer(200, "text/event-stream", testdataFile(t, "sse", "openai_responses.sse")),
			Record{Outcome: OutcomeOK, InputTokens: 25, OutputTokens: 60, Chunks: 11}, "", ""},
		{"stream error event", "/v1/chat/completions",
			answer(200, "text/event-stream", testdataFile(t, "sse", "openai_error.sse")),
			Record{Outcome: OutcomeError, Chunks: 2, OutputTokens: 2}, "server_error", ""},
		{"429 with an error body", "/v1/chat/completions", answer(429, "application/json", errorBody),
			Record{Outcome: OutcomeError}, "429", errorBody},
		{"500 as SSE", "/v1/chat/completions", answer(500, "text/event-stream", "data: {\"error\":{}}\n\n"),
			Record{Outcome: OutcomeError}, "500", ""},
		{"non-streaming chat", "/v1/chat/completions",
			answer(200, "application/json", testdataFile(t, "json", "openai_chat_completion.json")),
			Record{Outcome: OutcomeOK, InputTokens: 1180, OutputTokens: 275}, "", testdataFile(t, "json", "openai_chat_completion.json")},
		{"non-streaming anthropic", "/v1/messages",
			answer(200, "application/json", testdataFile(t, "json", "anthropic_message.json")),
			Record{Outcome: OutcomeOK, InputTokens: 2099, OutputTokens: 58}, "", ""},
		{"non-streaming gemini", "/v1beta/models/gemini-2.5-flash:generateContent",
			answer(200, "application/json; charset=UTF-8", testdataFile(t, "json", "gemini_generate_content.json")),
			Record{Outcome: OutcomeOK, InputTokens: 2071, OutputTokens: 331}, "", ""},
		{"non-streaming ollama", "/api/chat",
			answer(200, "application/json; charset=utf-8", testdataFile(t, "json", "ollama_chat.json")),
			Record{Outcome: OutcomeOK, InputTokens: 19, OutputTokens: 9}, "", ""},
		{"gemini alt=sse stream", "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
			answer(200, "text/event-stream", testdataFile(t, "gemini", "stream_basic.sse")),
			Record{Outcome: OutcomeOK, InputTokens: 7, OutputTokens: 10, Chunks: 3}, "", testdataFile(t, "gemini", "stream_basic.sse")},
		{"gemini JSON array stream (no alt=sse)", "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
			answer(200, "application/json; charset=UTF-8", testdataFile(t, "gemini", "stream_array.json")),
			Record{Outcome: OutcomeOK, InputTokens: 9, OutputTokens: 327, Chunks: 3}, "", testdataFile(t, "gemini", "stream_array.json")},
		{"gemini mid-stream error line", "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
			answer(200, "text/event-stream", testdataFile(t, "gemini", "stream_error.sse")),
			Record{Outcome: OutcomeError, InputTokens: 6, OutputTokens: 2, Chunks: 2}, "UNAVAILABLE", ""},
		{"ollama NDJSON stream", "/api/chat",
			answer(200, "application/x-ndjson", testdataFile(t, "ndjson", "ollama_chat_thinking.ndjson")),
			Record{Outcome: OutcomeOK, InputTokens: 19, OutputTokens: 9, Chunks: 6}, "", testdataFile(t, "ndjson", "ollama_chat_thinking.ndjson")},
		{"unknown path, sniffed openai stream", "/my/gateway",
			answer(200, "text/event-stream", testdataFile(t, "sse", "openai_chat.sse")),
			Record{Outcome: OutcomeOK, InputTokens: 14, OutputTokens: 7, Chunks: 7}, "", ""},
		{"unknown path, sniffed anthropic stream", "/my/gateway",
			answer(200, "text/event-stream", testdataFile(t, "sse", "anthropic_thinking_tools.sse")),
			Record{Outcome: OutcomeOK, InputTokens: 572, OutputTokens: 89, Chunks: 9}, "", ""},
		{"unknown path and type, sniffed JSON", "/my/gateway",
			answer(200, "", testdataFile(t, "json", "openai_chat_completion.json")),
			Record{Outcome: OutcomeOK, InputTokens: 1180, OutputTokens: 275}, "", ""},
		{"no body", "/v1/chat/completions", answer(204, "", ""), Record{Outcome: OutcomeOK}, "", ""},
		{"a body still compressed is not decoded", "/v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Encoding", "br")
			answer(200, "text/event-stream", "data: \x1b\x00\xf8\xff\n\n")(w, r) // decoded, it would be malformed
		}, Record{Outcome: OutcomeOK}, "", "data: \x1b\x00\xf8\xff\n\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs := otelErrors(t)
			tr, reader := httpTracker(t)
			client, url := newLLMClient(t, tr, tc.h)
			resp, err := client.Do(post(t, context.Background(), url+tc.path, chatBody))
			require.NoError(t, err)
			got, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			if tc.body != "" {
				assert.Equal(t, tc.body, string(got), "the caller reads the server's bytes")
			}
			recs := ended(tr)
			require.Len(t, recs, 1)
			rec := recs[0]
			assert.Equal(t, tc.want.Outcome, rec.Outcome)
			assert.Equal(t, tc.want.InputTokens, rec.InputTokens)
			assert.Equal(t, tc.want.OutputTokens, rec.OutputTokens)
			assert.Equal(t, tc.want.Chunks, rec.Chunks)
			assert.Equal(t, tc.want.Chunks == 0, rec.FirstToken.IsZero(), "TTFT only for a token stream")
			assert.Empty(t, errs(), "nothing malformed")
			for set := range requestSets(t, reader) {
				if tc.errType == "" {
					assert.NotContains(t, set, "error.type")
				} else {
					assert.Contains(t, set, "error.type="+tc.errType)
				}
			}
		})
	}
}

func TestTransportCallerStops(t *testing.T) {
	// The server sends two events, then holds the stream open until the
	// client goes away; with done it sends [DONE] first.
	hold := func(done bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body) // so the server notices when the client goes away
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n")
			_, _ = io.WriteString(w, "data: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\n")
			if done {
				_, _ = io.WriteString(w, "data: [DONE]\n\n")
			}
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}
	}
	readUntil := func(t *testing.T, body io.Reader, s string) {
		br := bufio.NewReader(body)
		var seen strings.Builder
		for !strings.Contains(seen.String(), s) {
			line, err := br.ReadString('\n')
			require.NoError(t, err)
			seen.WriteString(line)
		}
	}
	t.Run("close before the end marker", func(t *testing.T) {
		tr, _ := httpTracker(t)
		client, url := newLLMClient(t, tr, hold(false))
		resp, err := client.Do(post(t, context.Background(), url+"/v1/chat/completions", chatBody))
		require.NoError(t, err)
		readUntil(t, resp.Body, `"b"`)
		require.NoError(t, resp.Body.Close())
		recs := ended(tr)
		require.Len(t, recs, 1)
		assert.Equal(t, OutcomeCanceled, recs[0].Outcome)
		assert.Equal(t, 2, recs[0].Chunks)
	})
	t.Run("close after [DONE], before EOF", func(t *testing.T) {
		tr, _ := httpTracker(t)
		client, url := newLLMClient(t, tr, hold(true))
		resp, err := client.Do(post(t, context.Background(), url+"/v1/chat/completions", chatBody))
		require.NoError(t, err)
		readUntil(t, resp.Body, "[DONE]")
		require.NoError(t, resp.Body.Close())
		recs := ended(tr)
		require.Len(t, recs, 1)
		assert.Equal(t, OutcomeOK, recs[0].Outcome)
	})
	t.Run("context canceled mid-stream", func(t *testing.T) {
		// The cancel is seen by a watcher goroutine: a bubble lets the
		// test wait for it to finish.
		synctest.Test(t, func(t *testing.T) {
			tr, reader := httpTracker(t)
			pr, pw := io.Pipe()
			base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				go func() {
					_, _ = io.WriteString(pw, "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n")
					<-r.Context().Done()
					_ = pw.CloseWithError(r.Context().Err())
				}()
				return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: pr}, nil
			})
			ctx, cancel := context.WithCancel(context.Background())
			resp, err := NewTransport(tr, base).RoundTrip(post(t, ctx, "https://api.openai.com/v1/chat/completions", chatBody))
			require.NoError(t, err)
			readUntil(t, resp.Body, `"a"`)
			cancel()
			_, err = io.ReadAll(resp.Body)
			require.ErrorIs(t, err, context.Canceled)
			require.NoError(t, resp.Body.Close())
			synctest.Wait()
			recs := ended(tr)
			require.Len(t, recs, 1)
			assert.Equal(t, OutcomeCanceled, recs[0].Outcome)
			assert.Equal(t, 1, recs[0].Chunks)
			assert.Equal(t, map[string]int64{"error.type=canceled gen_ai.operation.name=chat gen_ai.provider.name=openai gen_ai.request.model=gpt-4o-mini llmmetrics.outcome=canceled llmmetrics.role=client": 1},
				requestSets(t, reader))
		})
	})
}

func TestTransportErrors(t *testing.T) {
	t.Run("transport error", func(t *testing.T) {
		tr, _ := httpTracker(t)
		srv := httptest.NewServer(http.NotFoundHandler())
		url := srv.URL
		srv.Close() // nothing listens any more
		base := &http.Transport{}
		defer base.CloseIdleConnections()
		client := &http.Client{Transport: NewTransport(tr, base)}
		_, err := client.Do(post(t, context.Background(), url+"/v1/chat/completions", chatBody))
		require.Error(t, err)
		recs := ended(tr)
		require.Len(t, recs, 1)
		assert.Equal(t, OutcomeError, recs[0].Outcome)
	})
	t.Run("context canceled before the answer", func(t *testing.T) {
		tr, _ := httpTracker(t)
		ctx, cancel := context.WithCancel(context.Background())
		client, url := newLLMClient(t, tr, func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			cancel()
			<-r.Context().Done()
		})
		_, err := client.Do(post(t, ctx, url+"/v1/chat/completions", chatBody))
		require.ErrorIs(t, err, context.Canceled)
		recs := ended(tr)
		require.Len(t, recs, 1)
		assert.Equal(t, OutcomeCanceled, recs[0].Outcome)
	})
	t.Run("no response and no error", func(t *testing.T) {
		tr, _ := httpTracker(t)
		rt := NewTransport(tr, roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, nil }))
		resp, err := rt.RoundTrip(post(t, context.Background(), "http://x/v1/chat/completions", chatBody))
		assert.Nil(t, resp)
		assert.NoError(t, err)
		recs := ended(tr)
		require.Len(t, recs, 1)
		assert.Equal(t, OutcomeError, recs[0].Outcome)
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestTransportFilter: WithFilter adds to the default (POST only), as
// otelhttp's filters do: a filter written to drop /health keeps GETs out.
func TestTransportFilter(t *testing.T) {
	noHealth := WithFilter(func(r *http.Request) bool { return !strings.HasSuffix(r.URL.Path, "/health") })
	alsoNoModels := WithFilter(func(r *http.Request) bool { return !strings.Contains(r.URL.Path, "/models") })
	for _, tc := range []struct {
		name     string
		opts     []TransportOption
		method   string
		path     string
		measured bool
	}{
		{"default: a POST is measured", nil, http.MethodPost, "/v1/chat/completions", true},
		{"default: a GET is not", nil, http.MethodGet, "/v1/models", false},
		{"a filter drops its paths", []TransportOption{noHealth}, http.MethodPost, "/health", false},
		{"a filter keeps the POST default", []TransportOption{noHealth}, http.MethodGet, "/v1/chat/completions", false},
		{"a filter lets the rest through", []TransportOption{noHealth}, http.MethodPost, "/v1/chat/completions", true},
		{"filters add up: the second drops", []TransportOption{noHealth, alsoNoModels}, http.MethodPost, "/v1/models", false},
		{"filters add up: both pass", []TransportOption{noHealth, alsoNoModels}, http.MethodPost, "/v1/chat/completions", true},
		{"a nil filter is ignored", []TransportOption{WithFilter(nil)}, http.MethodPost, "/v1/chat/completions", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, _ := httpTracker(t)
			client, url := newLLMClient(t, tr, answer(200, "text/event-stream", testdataFile(t, "sse", "openai_chat.sse")), tc.opts...)
			req, err := http.NewRequestWithContext(t.Context(), tc.method, url+tc.path, strings.NewReader(chatBody))
			require.NoError(t, err)
			resp, err := client.Do(req)
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			require.NoError(t, resp.Body.Close())
			if tc.measured {
				assert.Len(t, ended(tr), 1)
			} else {
				assert.Empty(t, ended(tr))
			}
		})
	}
}

// TestIncludeUsageIsClientOnly: WithIncludeUsage is a TransportOption and
// not an HTTPOption, so NewHandler(t, next, WithIncludeUsage()) does not
// compile; every HTTPOption is a TransportOption.
func TestIncludeUsageIsClientOnly(t *testing.T) {
	var o TransportOption = WithIncludeUsage()
	_, isHTTP := o.(HTTPOption)
	assert.False(t, isHTTP, "WithIncludeUsage must not be accepted by NewHandler")
	for _, o := range []HTTPOption{WithProtocol(ProtocolOpenAI), WithDecoder(nil), WithRequestAttributes(nil), WithModels(), WithFilter(nil)} {
		var _ TransportOption = o
	}
}

// TestWithProtocolValidates: every Protocol constant is taken, including
// the last one; a value past the last is ignored (the path decides).
func TestWithProtocolValidates(t *testing.T) {
	for p := range protocolCount {
		c := newTransportConfig([]TransportOption{WithProtocol(p)})
		assert.True(t, c.hasProtocol, "%v", p)
		assert.Equal(t, p, c.protocol)
	}
	c := newTransportConfig([]TransportOption{WithProtocol(protocolCount)})
	assert.False(t, c.hasProtocol)
}

// recordingBase answers every request with a JSON answer and keeps what it
// was sent.
type recordingBase struct {
	mu     sync.Mutex
	reqs   []*http.Request
	bodies []string
}

func (b *recordingBase) RoundTrip(r *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	if err := r.Body.Close(); err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.reqs = append(b.reqs, r)
	b.bodies = append(b.bodies, string(body))
	b.mu.Unlock()
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}, Request: r,
		Body: io.NopCloser(strings.NewReader(`{"usage":{"prompt_tokens":5,"completion_tokens":2}}`))}, nil
}

// reqView is what a test compares of a request before and after a round trip.
type reqView struct {
	Method, URL   string
	Header        http.Header
	ContentLength int64
	Body          io.ReadCloser
	GetBody       []byte
}

func viewOf(t *testing.T, r *http.Request) reqView {
	v := reqView{Method: r.Method, URL: r.URL.String(), Header: r.Header.Clone(), ContentLength: r.ContentLength, Body: r.Body}
	if r.GetBody != nil {
		rc, err := r.GetBody()
		require.NoError(t, err)
		v.GetBody, err = io.ReadAll(rc)
		require.NoError(t, err)
	}
	return v
}

func TestTransportDoesNotModifyTheRequest(t *testing.T) {
	for _, opts := range [][]TransportOption{nil, {WithIncludeUsage()}} {
		tr, _ := httpTracker(t)
		base := &recordingBase{}
		rt := NewTransport(tr, base, opts...)
		req := post(t, context.Background(), "https://api.openai.com/v1/chat/completions", chatBody)
		req.Header.Set("Content-Length", "109") // len(chatBody)
		before := viewOf(t, req)
		resp, err := rt.RoundTrip(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		require.NoError(t, resp.Body.Close())
		assert.Equal(t, before, viewOf(t, req), "the caller's request is unchanged")
		require.Len(t, base.reqs, 1)
		assert.NotSame(t, req, base.reqs[0], "the base got a copy")
		if len(opts) == 0 {
			assert.Equal(t, chatBody, base.bodies[0], "the body is replayed byte for byte")
		} else {
			assert.Equal(t, strings.TrimSuffix(chatBody, "}")+`,"stream_options":{"include_usage":true}}`, base.bodies[0])
			assert.Equal(t, "149", base.reqs[0].Header.Get("Content-Length"), "109 + 40 bytes added")
			assert.Equal(t, int64(149), base.reqs[0].ContentLength)
			assert.Equal(t, "109", req.Header.Get("Content-Length"))
		}
	}
}

func TestTransportRequestAttributes(t *testing.T) {
	tests := []struct {
		name, url, body string
		trackerAttrs    []attribute.KeyValue
		opts            []TransportOption
		want            string // the requests counter's set
	}{
		{"openai: model after the messages (openai-go's order)", "https://api.openai.com/v1/chat/completions", chatBody, nil, nil,
			"gen_ai.operation.name=chat gen_ai.provider.name=openai gen_ai.request.model=gpt-4o-mini llmmetrics.outcome=ok llmmetrics.role=client"},
		{"azure: host and deployment", "https://my.openai.azure.com/openai/deployments/prod-4o/chat/completions?api-version=2024-10-21",
			`{"messages":[],"stream":true}`, nil, nil,
			"gen_ai.operation.name=chat gen_ai.provider.name=azure.ai.openai gen_ai.request.model=prod-4o llmmetrics.outcome=ok llmmetrics.role=client"},
		{"gemini: model in the path", "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
			`{"contents":[]}`, nil, nil,
			"gen_ai.operation.name=generate_content gen_ai.provider.name=gcp.gemini gen_ai.request.model=gemini-2.5-flash llmmetrics.outcome=ok llmmetrics.role=client"},
		{"groq behind /openai/v1", "https://api.groq.com/openai/v1/chat/completions", `{"model":"llama-3.3-70b-versatile"}`, nil, nil,
			"gen_ai.operation.name=chat gen_ai.provider.name=groq gen_ai.request.model=llama-3.3-70b-versatile llmmetrics.outcome=ok llmmetrics.role=client"},
		{"local vLLM: the protocol's provider", "http://127.0.0.1:8000/v1/completions", `{"model":"Qwen/Qwen3-8B","prompt":"x"}`, nil, nil,
			"gen_ai.operation.name=text_completion gen_ai.provider.name=openai gen_ai.request.model=Qwen/Qwen3-8B llmmetrics.outcome=ok llmmetrics.role=client"},
		{"anthropic", "https://api.anthropic.com/v1/messages", `{"max_tokens":10,"messages":[],"model":"claude-sonnet-4-5"}`, nil, nil,
			"gen_ai.operation.name=chat gen_ai.provider.name=anthropic gen_ai.request.model=claude-sonnet-4-5 llmmetrics.outcome=ok llmmetrics.role=client"},
		{"ollama", "http://localhost:11434/api/generate", `{"model":"llama3.2","prompt":"x"}`, nil, nil,
			"gen_ai.operation.name=text_completion gen_ai.provider.name=ollama gen_ai.request.model=llama3.2 llmmetrics.outcome=ok llmmetrics.role=client"},
		{"the Tracker's attributes win", "https://api.openai.com/v1/chat/completions", chatBody,
			[]attribute.KeyValue{semconv.GenAIProviderNameKey.String("vllm"), semconv.GenAIRequestModel("fixed")}, nil,
			"gen_ai.operation.name=chat gen_ai.provider.name=vllm gen_ai.request.model=fixed llmmetrics.outcome=ok llmmetrics.role=client"},
		{"WithRequestAttributes wins over the automatic ones", "https://api.openai.com/v1/chat/completions", chatBody, nil,
			[]TransportOption{WithRequestAttributes(func(r *http.Request) []attribute.KeyValue {
				return []attribute.KeyValue{semconv.GenAIRequestModel("mine"), attribute.String("tenant", r.Header.Get("X-Tenant"))}
			})},
			"gen_ai.operation.name=chat gen_ai.provider.name=openai gen_ai.request.model=mine llmmetrics.outcome=ok llmmetrics.role=client tenant=t1"},
		{"allowlist: a listed model", "https://api.openai.com/v1/chat/completions", chatBody, nil,
			[]TransportOption{WithModels("gpt-4o", "gpt-4o-mini")},
			"gen_ai.operation.name=chat gen_ai.provider.name=openai gen_ai.request.model=gpt-4o-mini llmmetrics.outcome=ok llmmetrics.role=client"},
		{"allowlist: another model", "https://api.openai.com/v1/chat/completions", chatBody, nil,
			[]TransportOption{WithModels("gpt-4o")},
			"gen_ai.operation.name=chat gen_ai.provider.name=openai gen_ai.request.model=_OTHER llmmetrics.outcome=ok llmmetrics.role=client"},
		{"a model name too long", "https://api.openai.com/v1/chat/completions", `{"model":"` + strings.Repeat("m", 300) + `"}`, nil, nil,
			"gen_ai.operation.name=chat gen_ai.provider.name=openai gen_ai.request.model=_OTHER llmmetrics.outcome=ok llmmetrics.role=client"},
		{"a model name over the read-ahead bound", "https://api.openai.com/v1/chat/completions", `{"model":"` + strings.Repeat("m", maxRequestBytes+10) + `"}`, nil, nil,
			"gen_ai.operation.name=chat gen_ai.provider.name=openai gen_ai.request.model=_OTHER llmmetrics.outcome=ok llmmetrics.role=client"},
		{"unknown endpoint: nothing automatic", "https://example.com/generate", `{"model":"m"}`, nil, nil,
			"gen_ai.request.model=m llmmetrics.outcome=ok llmmetrics.role=client"},
		{"body not JSON", "https://api.openai.com/v1/chat/completions", `model=x`, nil, nil,
			"gen_ai.operation.name=chat gen_ai.provider.name=openai llmmetrics.outcome=ok llmmetrics.role=client"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr, reader := httpTracker(t, WithAttributes(tc.trackerAttrs...))
			base := &recordingBase{}
			req := post(t, context.Background(), tc.url, tc.body)
			req.Header.Set("X-Tenant", "t1")
			resp, err := NewTransport(tr, base, tc.opts...).RoundTrip(req)
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			require.NoError(t, resp.Body.Close())
			assert.Equal(t, map[string]int64{tc.want: 1}, requestSets(t, reader))
			assert.Equal(t, tc.body, base.bodies[0], "the body is sent unchanged")
		})
	}
}

func TestTransportTimings(t *testing.T) {
	// Inside a bubble the clock is exact: the base answers after 40 ms
	// (connecting and queueing), the first token arrives 60 ms later.
	synctest.Test(t, func(t *testing.T) {
		tr, _ := httpTracker(t)
		sse := func(s string) string { return "data: {\"choices\":[{\"delta\":{\"content\":\"" + s + "\"}}]}\n\n" }
		base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			time.Sleep(40 * time.Millisecond)
			var body io.ReadCloser
			ct := "text/event-stream"
			switch {
			case strings.HasSuffix(r.URL.Path, "/stream"):
				body = &timedBody{pieces: []piece{{60 * time.Millisecond, sse("a")}, {30 * time.Millisecond, sse("b")},
					{20 * time.Millisecond, "data: [DONE]\n\n"}}}
			case strings.HasSuffix(r.URL.Path, "/json"):
				ct = "application/json"
				body = &timedBody{pieces: []piece{{50 * time.Millisecond, `{"usage":{"prompt_tokens":3,`}, {10 * time.Millisecond, `"completion_tokens":4}}`}}}
			default:
				return &http.Response{StatusCode: 429, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(`{"error":{}}`))}, nil
			}
			return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {ct}}, Body: body}, nil
		})
		rt := NewTransport(tr, base, WithProtocol(ProtocolOpenAI))
		for _, path := range []string{"/stream", "/json", "/limited"} {
			resp, err := rt.RoundTrip(post(t, context.Background(), "http://llm"+path, `{}`))
			require.NoError(t, err)
			_, err = io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
		}
		recs := ended(tr)
		require.Len(t, recs, 3)
		ms := time.Millisecond
		s := recs[0]
		ttft, _ := s.TTFT()
		e2el, _ := s.E2EL()
		assert.Equal(t, 100*ms, ttft, "TTFT includes the wait for the headers")
		assert.Equal(t, []time.Duration{30 * ms}, s.ITL)
		assert.Equal(t, 130*ms, e2el)
		assert.Equal(t, 150*ms, s.End.Sub(s.Start))

		j := recs[1]
		_, hasTTFT := j.TTFT()
		e2el, _ = j.E2EL()
		assert.False(t, hasTTFT, "a JSON answer has no TTFT")
		assert.Equal(t, 100*ms, e2el, "E2EL of a JSON answer: until its end")
		assert.Equal(t, 4, j.OutputTokens)

		l := recs[2]
		e2el, _ = l.E2EL()
		assert.Equal(t, OutcomeError, l.Outcome)
		assert.Equal(t, 40*ms, e2el, "a 429 ends when its headers arrive")
	})
}

func TestTransportEndsOnceUnderConcurrentCloseAndRead(t *testing.T) {
	for range 20 {
		tr, reader := httpTracker(t)
		pr, pw := io.Pipe()
		base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: pr}, nil
		})
		resp, err := NewTransport(tr, base).RoundTrip(post(t, context.Background(), "http://llm/v1/chat/completions", `{}`))
		require.NoError(t, err)
		var wg sync.WaitGroup
		wg.Go(func() {
			for range 100 {
				if _, err := pw.Write([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n")); err != nil {
					return
				}
			}
		})
		wg.Go(func() { _, _ = io.Copy(io.Discard, resp.Body) })
		wg.Go(func() { _ = resp.Body.Close() })
		wg.Go(func() { _ = resp.Body.Close() })
		_ = pr.CloseWithError(errors.New("closed"))
		wg.Wait()
		var total int64
		for _, n := range requestSets(t, reader) {
			total += n
		}
		assert.Equal(t, int64(1), total, "ended exactly once")
	}
}

func TestMiddlewareRetriesAreRequests(t *testing.T) {
	// An SDK-style retry loop (as openai-go's): each attempt clones the
	// request, takes a fresh body from GetBody and goes through the
	// middleware; the first attempt gets a 503.
	tr, reader := httpTracker(t)
	mw := Middleware(tr, WithIncludeUsage())
	var sent []string
	attempts := 0
	next := func(r *http.Request) (*http.Response, error) {
		b, err := io.ReadAll(r.Body)
		require.NoError(t, err)
		sent = append(sent, string(b))
		require.Equal(t, int64(len(b)), r.ContentLength)
		if r.GetBody != nil { // the copy's GetBody replays the same new body
			rc, err := r.GetBody()
			require.NoError(t, err)
			again, _ := io.ReadAll(rc)
			assert.Equal(t, string(b), string(again))
		}
		if attempts++; attempts == 1 {
			return &http.Response{StatusCode: 503, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(`{"error":{}}`))}, nil
		}
		return (&recordingBase{}).RoundTrip(r)
	}
	orig := post(t, context.Background(), "https://api.openai.com/v1/chat/completions", chatBody)
	getBodyCalls := 0
	getBody := orig.GetBody
	orig.GetBody = func() (io.ReadCloser, error) { getBodyCalls++; return getBody() }
	var resp *http.Response
	for range 2 {
		attempt := orig.Clone(orig.Context())
		body, err := orig.GetBody()
		require.NoError(t, err)
		attempt.Body = body
		resp, err = mw(attempt, next)
		require.NoError(t, err)
		if resp.StatusCode < 400 {
			break
		}
		_ = resp.Body.Close()
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, 2, getBodyCalls)
	want := strings.TrimSuffix(chatBody, "}") + `,"stream_options":{"include_usage":true}}`
	assert.Equal(t, []string{want, want}, sent, "each attempt gets include_usage once")
	assert.Equal(t, map[string]int64{
		"error.type=503 gen_ai.operation.name=chat gen_ai.provider.name=openai gen_ai.request.model=gpt-4o-mini llmmetrics.outcome=error llmmetrics.role=client": 1,
		"gen_ai.operation.name=chat gen_ai.provider.name=openai gen_ai.request.model=gpt-4o-mini llmmetrics.outcome=ok llmmetrics.role=client":                   1,
	}, requestSets(t, reader))
}

func TestNewTransportNilArguments(t *testing.T) {
	base := &recordingBase{}
	rt := NewTransport(nil, base)
	req := post(t, context.Background(), "http://llm/v1/chat/completions", chatBody)
	resp, err := rt.RoundTrip(req)
	require.NoError(t, err)
	assert.Same(t, req, base.reqs[0], "a nil Tracker passes requests through")
	_ = resp.Body.Close()
}

// A transport error is returned unchanged: the cause of a context ended
// with context.WithCancelCause (errgroup's) reaches the caller, while the
// outcome is still Canceled.
func TestTransportKeepsTheBaseError(t *testing.T) {
	cause := errors.New("sibling failed")
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		<-r.Context().Done()
		return nil, context.Cause(r.Context())
	})
	for name, mk := range map[string]func(tr *Tracker) http.RoundTripper{
		"NewTransport": func(tr *Tracker) http.RoundTripper { return NewTransport(tr, base) },
		"Middleware": func(tr *Tracker) http.RoundTripper {
			mw := Middleware(tr)
			return roundTripFunc(func(r *http.Request) (*http.Response, error) { return mw(r, base.RoundTrip) })
		},
	} {
		t.Run(name, func(t *testing.T) {
			tr, _ := httpTracker(t)
			ctx, cancel := context.WithCancelCause(context.Background())
			cancel(cause)
			_, err := mk(tr).RoundTrip(post(t, ctx, "http://x/v1/chat/completions", chatBody))
			require.ErrorIs(t, err, cause)
			recs := ended(tr)
			require.Len(t, recs, 1)
			assert.Equal(t, OutcomeCanceled, recs[0].Outcome)
		})
	}
}

// TestBothSidesChooseTheSameDecoder: NewHandler and NewTransport measure
// the same answer alike, whatever Content-Type the handler sets or leaves
// to net/http (a JSON answer without one reaches the client as
// text/plain): one rule on both sides.
func TestBothSidesChooseTheSameDecoder(t *testing.T) {
	jsonAnswer := `{"choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":11,"completion_tokens":22}}`
	for _, tc := range []struct {
		name, path, ct, body string
		output, input        int
	}{
		{"JSON without a Content-Type", "/v1/chat/completions", "", jsonAnswer, 22, 11},
		{"JSON as text/plain", "/v1/chat/completions", "text/plain; charset=utf-8", jsonAnswer, 22, 11},
		{"JSON with leading space as text/plain", "/v1/chat/completions", "text/plain", "\n " + jsonAnswer, 22, 11},
		{"JSON on an unknown path without a Content-Type", "/gateway", "", jsonAnswer, 22, 11},
		{"an SSE stream without a Content-Type", "/v1/chat/completions", "", testdataFile(t, "sse", "openai_chat.sse"), 7, 14},
		{"Ollama NDJSON as text/plain", "/api/chat", "text/plain", testdataFile(t, "ndjson", "ollama_chat_tools.ndjson"), -1, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server, _, _ := serverTracker(t)
			srv := httptest.NewServer(NewHandler(server, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				if tc.ct != "" {
					w.Header().Set("Content-Type", tc.ct)
				}
				_, _ = io.WriteString(w, tc.body)
			})))
			defer srv.Close()
			client, _ := httpTracker(t)
			base := &http.Transport{}
			defer base.CloseIdleConnections()
			resp, err := (&http.Client{Transport: NewTransport(client, base)}).Do(post(t, t.Context(), srv.URL+tc.path, `{"model":"m"}`))
			require.NoError(t, err)
			_, err = io.Copy(io.Discard, resp.Body)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			srv.Close() // the handler has returned
			srvRecs, cliRecs := ended(server), ended(client)
			require.Len(t, srvRecs, 1)
			require.Len(t, cliRecs, 1)
			s, c := srvRecs[0], cliRecs[0]
			if tc.output >= 0 {
				assert.Equal(t, tc.output, c.OutputTokens, "client")
				assert.Equal(t, tc.input, c.InputTokens, "client")
			} else {
				assert.Positive(t, c.OutputTokens)
			}
			assert.Equal(t, [3]int{s.OutputTokens, s.InputTokens, s.Chunks}, [3]int{c.OutputTokens, c.InputTokens, c.Chunks}, "server and client agree")
			assert.Equal(t, OutcomeOK, c.Outcome)
		})
	}
}

// TestTransportRedirectIsOneRequest: a POST answered with a 307 (or 308),
// which http.Client follows, is one request measured from its first hop:
// the hop is not recorded, so one perfect call meets its SLO once, not
// half the time.
func TestTransportRedirectIsOneRequest(t *testing.T) {
	for _, code := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			var mu sync.Mutex
			now := t0
			clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
			advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
			tr, reader := httpTracker(t, WithClock(clock), WithSLO(SLO{TTFT: time.Second}))
			stream := testdataFile(t, "sse", "openai_chat.sse")
			mux := http.NewServeMux()
			mux.HandleFunc("/v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				advance(300 * time.Millisecond) // the hop takes 300 ms
				http.Redirect(w, r, "/v2/chat/completions", code)
			})
			mux.HandleFunc("/v2/chat/completions", func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				assert.JSONEq(t, chatBody, string(b), "the client sends the body again")
				advance(200 * time.Millisecond)
				answer(200, "text/event-stream", stream)(w, r)
			})
			client, url := newLLMClient(t, tr, mux.ServeHTTP)
			resp, err := client.Do(post(t, t.Context(), url+"/v1/chat/completions", chatBody))
			require.NoError(t, err)
			_, err = io.Copy(io.Discard, resp.Body)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())

			recs := ended(tr)
			require.Len(t, recs, 1, "one logical request")
			assert.Equal(t, OutcomeOK, recs[0].Outcome)
			assert.Equal(t, t0, recs[0].Start, "measured from the first hop")
			ttft, ok := recs[0].TTFT()
			require.True(t, ok)
			assert.Equal(t, 500*time.Millisecond, ttft, "the hop's 300 ms and the answer's 200 ms")
			assert.Equal(t, 7, recs[0].OutputTokens)
			s := tr.Snapshot()
			assert.Equal(t, 1, s.Requests)
			assert.Equal(t, 1.0, s.Goodput.Attainment, "one good call of one")
			assert.Equal(t, map[string]int64{"gen_ai.operation.name=chat gen_ai.provider.name=openai gen_ai.request.model=gpt-4o-mini llmmetrics.outcome=ok llmmetrics.role=client llmmetrics.slo_met=true": 1},
				requestSets(t, reader))
			assert.Equal(t, int64(0), activeSum(t, reader), "no request left active")
		})
	}
}

// activeSum returns the sum of the requests.active counter.
func activeSum(t *testing.T, r *sdkmetric.ManualReader) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.Collect(context.Background(), &rm))
	var sum int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == metricActive {
				for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
					sum += dp.Value
				}
			}
		}
	}
	return sum
}

// TestTransportRedirectLoopIsFailedCalls: a server that answers every
// request with a 307 to itself. http.Client sends 10 requests per call and
// gives up with "stopped after 10 redirects": each call is one failed
// Record (error.type too_many_redirects) measured from its first hop, and
// the requests counter counts it; 9 redirects (the most the client
// follows) still end as the answer.
func TestTransportRedirectLoopIsFailedCalls(t *testing.T) {
	tr, reader := httpTracker(t)
	var hits atomic.Int64
	stream := testdataFile(t, "sse", "openai_chat.sse")
	client, url := newLLMClient(t, tr, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		hits.Add(1)
		if r.URL.Path == "/v1/chat/completions" || r.URL.Query().Get("n") == "" {
			http.Redirect(w, r, r.URL.Path, http.StatusTemporaryRedirect) // to itself
			return
		}
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		if n > 0 {
			http.Redirect(w, r, r.URL.Path+"?n="+strconv.Itoa(n-1), http.StatusTemporaryRedirect)
			return
		}
		answer(200, "text/event-stream", stream)(w, r)
	})
	const calls = 20
	for range calls {
		resp, err := client.Do(post(t, t.Context(), url+"/v1/chat/completions", chatBody))
		require.ErrorContains(t, err, "stopped after 10 redirects")
		require.NotNil(t, resp)
	}
	require.Equal(t, int64(calls*10), hits.Load(), "http.Client sends 10 requests per call")
	recs := ended(tr)
	require.Len(t, recs, calls, "one Record per call")
	for _, r := range recs {
		assert.Equal(t, OutcomeError, r.Outcome)
		assert.Equal(t, "too_many_redirects", r.ErrorType)
	}
	assert.Equal(t, map[string]int64{"error.type=too_many_redirects gen_ai.operation.name=chat gen_ai.provider.name=openai gen_ai.request.model=gpt-4o-mini llmmetrics.outcome=error llmmetrics.role=client": calls},
		requestSets(t, reader))
	assert.Equal(t, int64(0), activeSum(t, reader), "no request left active")

	// 9 redirects, then the answer: one OK Record.
	resp, err := client.Do(post(t, t.Context(), url+"/v2/chat/completions?n=9", chatBody))
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	require.NoError(t, resp.Body.Close())
	recs = ended(tr)
	require.Len(t, recs, calls+1)
	assert.Equal(t, OutcomeOK, recs[calls].Outcome)
	assert.Equal(t, 7, recs[calls].OutputTokens)
}

// TestTransportFailureAfterAHop: a redirect to a server that refuses the
// connection: the call is one failed Record, from its first hop.
func TestTransportFailureAfterAHop(t *testing.T) {
	tr, _ := httpTracker(t)
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	client, url := newLLMClient(t, tr, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		http.Redirect(w, r, deadURL+"/v1/chat/completions", http.StatusTemporaryRedirect)
	})
	_, err := client.Do(post(t, t.Context(), url+"/v1/chat/completions", chatBody))
	require.Error(t, err)
	recs := ended(tr)
	require.Len(t, recs, 1)
	assert.Equal(t, OutcomeError, recs[0].Outcome)
	assert.NotEmpty(t, recs[0].ErrorType)
	t.Logf("error.type %q", recs[0].ErrorType)
}
