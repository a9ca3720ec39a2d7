package llmmetrics

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// sse returns one OpenAI chat completion chunk event with content c ("" for
// a role-only chunk).
func sseChunk(c string) string {
	if c == "" {
		return `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}` + "\n\n"
	}
	return `data: {"choices":[{"index":0,"delta":{"content":"` + c + `"}}]}` + "\n\n"
}

const sseUsage = `data: {"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":5,"total_tokens":12}}` + "\n\n"

// serve runs h on a POST of body to path, with an in-memory recorder.
func serve(h http.Handler, path, body string) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
	return w
}

func TestHandlerTimesFramesAtTheFlushThatSendsThem(t *testing.T) {
	tr, _, now := serverTracker(t)
	ms := time.Millisecond
	h := NewHandler(tr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, sseChunk("")) // no token
		*now = now.Add(10 * ms)
		io.WriteString(w, sseChunk("A")) // written at 10ms …
		*now = now.Add(5 * ms)
		w.(http.Flusher).Flush() // … sent at 15ms: TTFT
		io.WriteString(w, sseChunk("B"))
		io.WriteString(w, sseChunk("C"))
		*now = now.Add(20 * ms)
		require.NoError(t, http.NewResponseController(w).Flush()) // both at 35ms
		io.WriteString(w, sseChunk("D"))
		*now = now.Add(4 * ms)
		io.WriteString(w, sseUsage+"data: [DONE]\n\n")
		*now = now.Add(1 * ms) // D is never flushed: sent at return, 40ms
	}))
	w := serve(h, "/v1/chat/completions", `{"model":"m","stream":true}`)
	require.Equal(t, http.StatusOK, w.Code)
	assert.Equal(t, sseChunk("")+sseChunk("A")+sseChunk("B")+sseChunk("C")+sseChunk("D")+sseUsage+"data: [DONE]\n\n", w.Body.String(), "bytes unchanged")

	recs := ended(tr)
	require.Len(t, recs, 1)
	rec := recs[0]
	assert.Equal(t, OutcomeOK, rec.Outcome)
	ttft, _ := rec.TTFT()
	e2el, _ := rec.E2EL()
	assert.Equal(t, 15*ms, ttft)
	assert.Equal(t, 40*ms, e2el)
	assert.Equal(t, 4, rec.Chunks)
	assert.Equal(t, []time.Duration{20 * ms, 0, 5 * ms}, rec.ITL, "B and C flushed together; D at return")
	assert.Equal(t, 5, rec.OutputTokens, "the usage wins")
	assert.Equal(t, 7, rec.InputTokens)
}

func TestHandlerThatNeverFlushesIsTimedAtReturn(t *testing.T) {
	tr, _, now := serverTracker(t)
	h := NewHandler(tr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range []string{"a", "b", "c"} {
			*now = now.Add(time.Millisecond)
			io.WriteString(w, sseChunk(c))
		}
		io.WriteString(w, "data: [DONE]\n\n")
		*now = now.Add(time.Millisecond)
	}))
	serve(h, "/v1/chat/completions", `{}`)
	rec := ended(tr)[0]
	ttft, _ := rec.TTFT()
	assert.Equal(t, 4*time.Millisecond, ttft, "what net/http buffered is sent at return")
	assert.Equal(t, 3, rec.Chunks)
	assert.Equal(t, 3, rec.OutputTokens)
	assert.Equal(t, []time.Duration{0, 0}, rec.ITL)
}

func TestHandlerOutcomes(t *testing.T) {
	type want struct {
		outcome Outcome
		errType string
		output  int
		input   int
		hasTTFT bool
		repanic any
		chunks  int
	}
	boom := errors.New("boom")
	for _, tc := range []struct {
		name      string
		path      string
		handler   http.HandlerFunc
		cancelCtx bool // the client's context is done when next runs
		want      want
	}{
		{name: "500 is an Error with its code", path: "/v1/chat/completions",
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, `{"error":{"message":"down","type":"server_error"}}`, http.StatusInternalServerError)
			},
			want: want{outcome: OutcomeError, errType: "500"}},
		{name: "429 is an Error with its code", path: "/v1/messages",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusTooManyRequests)
				io.WriteString(w, `{"usage":{"input_tokens":3,"output_tokens":4}}`)
			},
			want: want{outcome: OutcomeError, errType: "429"}},
		{name: "an error object in the stream is an Error", path: "/v1/chat/completions",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, sseChunk("x"))
				io.WriteString(w, `data: {"error":{"message":"oops","type":"server_error"}}`+"\n\n")
			},
			want: want{outcome: OutcomeError, errType: "server_error", output: 1, chunks: 1, hasTTFT: true}},
		{name: "a non-streaming JSON answer: usage, no TTFT", path: "/v1/chat/completions",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":11,"completion_tokens":22}}`)
			},
			want: want{outcome: OutcomeOK, output: 22, input: 11}},
		{name: "a JSON answer without a Content-Type is sniffed", path: "/v1/messages",
			handler: func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, ` {"content":[],"usage":{"input_tokens":3,"output_tokens":4,"cache_read_input_tokens":2}}`)
			},
			want: want{outcome: OutcomeOK, output: 4, input: 5}},
		{name: "WriteHeader without a Content-Type, then JSON: sniffed at the first Write", path: "/v1/chat/completions",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusOK)
				io.WriteString(w, `{"usage":{"prompt_tokens":2,"completion_tokens":6}}`)
			},
			want: want{outcome: OutcomeOK, output: 6, input: 2}},
		{name: "ErrAbortHandler is Canceled and re-panicked", path: "/v1/chat/completions",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, sseChunk("x"))
				panic(http.ErrAbortHandler)
			},
			want: want{outcome: OutcomeCanceled, errType: "canceled", output: 1, chunks: 1, hasTTFT: true, repanic: http.ErrAbortHandler}},
		{name: "another panic is an Error and re-panicked", path: "/v1/chat/completions",
			handler: func(w http.ResponseWriter, r *http.Request) { panic(boom) },
			want:    want{outcome: OutcomeError, errType: "panic", repanic: boom}},
		{name: "the client went away: Canceled", path: "/v1/chat/completions", cancelCtx: true,
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, sseChunk("x"))
			},
			want: want{outcome: OutcomeCanceled, errType: "canceled", output: 1, chunks: 1, hasTTFT: true}},
		{name: "the client went away after [DONE]: OK", path: "/v1/chat/completions", cancelCtx: true,
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, sseChunk("x")+"data: [DONE]\n\n")
			},
			want: want{outcome: OutcomeOK, output: 1, chunks: 1, hasTTFT: true}},
		{name: "a failed write: the client went away", path: "/v1/chat/completions",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, sseChunk("x"))
			},
			want: want{outcome: OutcomeCanceled, errType: "canceled"}},
		{name: "an Anthropic stream", path: "/v1/messages",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\n")
				io.WriteString(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n")
				io.WriteString(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{},\"usage\":{\"output_tokens\":3}}\n\n")
				io.WriteString(w, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
			},
			want: want{outcome: OutcomeOK, output: 3, input: 9, chunks: 1, hasTTFT: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, reader, _ := serverTracker(t)
			h := NewHandler(tr, tc.handler)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancelCtx {
				cancel()
			}
			var w http.ResponseWriter = httptest.NewRecorder()
			if tc.name == "a failed write: the client went away" {
				w = failingWriter{httptest.NewRecorder()}
			}
			r := httptest.NewRequest(http.MethodPost, tc.path, strings.NewReader(`{"model":"m"}`)).WithContext(ctx)
			var got any
			func() {
				defer func() { got = recover() }()
				h.ServeHTTP(w, r)
			}()
			assert.Equal(t, tc.want.repanic, got, "the panic goes on")
			recs := ended(tr)
			require.Len(t, recs, 1, "ended exactly once")
			rec := recs[0]
			assert.Equal(t, tc.want.outcome, rec.Outcome)
			assert.Equal(t, tc.want.output, rec.OutputTokens)
			assert.Equal(t, tc.want.input, rec.InputTokens)
			assert.Equal(t, tc.want.chunks, rec.Chunks)
			_, hasTTFT := rec.TTFT()
			assert.Equal(t, tc.want.hasTTFT, hasTTFT)
			assert.Equal(t, tc.want.errType, requestsErrorType(t, reader))
		})
	}
}

// failingWriter is a ResponseWriter whose writes fail, as they do once the
// client has gone.
type failingWriter struct{ *httptest.ResponseRecorder }

func (failingWriter) Write([]byte) (int, error) {
	return 0, &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)}
}

// requestsErrorType returns the error.type of the one requests data point
// ("" when it has none).
func requestsErrorType(t *testing.T, reader *sdkmetric.ManualReader) string {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != metricRequests {
				continue
			}
			pts := m.Data.(metricdata.Sum[int64]).DataPoints
			require.Len(t, pts, 1)
			v, _ := pts[0].Attributes.Value(semconv.ErrorTypeKey)
			return v.AsString()
		}
	}
	t.Fatal("no requests metric")
	return ""
}

func TestHandlerPassesTheRequestThrough(t *testing.T) {
	body := `{"messages":[{"role":"user","content":"hi"}],"model":"gpt-x","stream":true}`
	for _, tc := range []struct {
		name  string
		opts  []HTTPOption
		model string
		body  string // default: body
	}{
		{name: "no allowlist: _OTHER", model: "_OTHER"},
		{name: "allowlisted", opts: []HTTPOption{WithModels("gpt-x")}, model: "gpt-x"},
		{name: "not allowlisted", opts: []HTTPOption{WithModels("gpt-y")}, model: "_OTHER"},
		{name: "a name over the read-ahead bound", opts: []HTTPOption{WithModels("gpt-x")}, model: "_OTHER",
			body: `{"model":"` + strings.Repeat("m", maxRequestBytes+10) + `"}`},
		{name: "WithRequestAttributes maps the request", opts: []HTTPOption{WithRequestAttributes(func(r *http.Request) []attribute.KeyValue {
			return []attribute.KeyValue{semconv.GenAIRequestModel("tenant-" + r.Header.Get("X-Tier"))}
		})}, model: "tenant-gold"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, reader, _ := serverTracker(t)
			body := cmp.Or(tc.body, body)
			var got string
			h := NewHandler(tr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, err := io.ReadAll(r.Body)
				require.NoError(t, err)
				got = string(b)
				w.WriteHeader(http.StatusNoContent)
			}), tc.opts...)
			r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
			r.Header.Set("X-Tier", "gold")
			h.ServeHTTP(httptest.NewRecorder(), r)
			assert.Equal(t, body, got, "next reads the same bytes")
			var rm metricdata.ResourceMetrics
			require.NoError(t, reader.Collect(context.Background(), &rm))
			attrs := requestAttrs(t, rm)
			assert.Equal(t, tc.model, attrs[string(semconv.GenAIRequestModelKey)])
			assert.Equal(t, "chat", attrs[string(semconv.GenAIOperationNameKey)])
			assert.Equal(t, "openai", attrs[string(semconv.GenAIProviderNameKey)])
		})
	}
}

// requestAttrs returns the attributes of the one requests data point.
func requestAttrs(t *testing.T, rm metricdata.ResourceMetrics) map[string]string {
	t.Helper()
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == metricRequests {
				pts := m.Data.(metricdata.Sum[int64]).DataPoints
				require.Len(t, pts, 1)
				out := map[string]string{}
				for _, kv := range pts[0].Attributes.ToSlice() {
					out[string(kv.Key)] = kv.Value.String()
				}
				return out
			}
		}
	}
	t.Fatal("no requests metric")
	return nil
}

func TestHandlerFilterAndNilTracker(t *testing.T) {
	inner := httptest.NewRecorder()
	var gotW http.ResponseWriter
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { gotW = w })
	tr, _, _ := serverTracker(t)
	NewHandler(tr, next).ServeHTTP(inner, httptest.NewRequest(http.MethodGet, "/v1/models", nil))
	assert.Same(t, inner, gotW, "a GET goes to next untouched")
	assert.Empty(t, ended(tr))
	NewHandler(nil, next).ServeHTTP(inner, httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil))
	assert.Same(t, inner, gotW, "a nil Tracker measures nothing")
}

// TestHandlerCardinalityBounded sends 100,000 distinct model names: the
// number of exported series stays bounded by the allowlist.
func TestHandlerCardinalityBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000 requests")
	}
	for _, tc := range []struct {
		name   string
		opts   []HTTPOption
		models int // distinct gen_ai.request.model values exported
	}{
		{name: "no allowlist", models: 1},
		{name: "allowlist of two", opts: []HTTPOption{WithModels("model-1", "model-2")}, models: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, reader, _ := serverTracker(t)
			h := NewHandler(tr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body) // the model is read as next reads the body
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"usage":{"prompt_tokens":1,"completion_tokens":1}}`)
			}), tc.opts...)
			w := httptest.NewRecorder()
			for i := range 100_000 {
				w.Body.Reset()
				h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/v1/chat/completions",
					strings.NewReader(`{"model":"model-`+strconv.Itoa(i)+`"}`)))
			}
			var rm metricdata.ResourceMetrics
			require.NoError(t, reader.Collect(context.Background(), &rm))
			models := map[string]bool{}
			points := 0
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					var attrs []attribute.Set
					switch d := m.Data.(type) {
					case metricdata.Sum[int64]:
						for _, p := range d.DataPoints {
							attrs = append(attrs, p.Attributes)
						}
					case metricdata.Sum[float64]:
						for _, p := range d.DataPoints {
							attrs = append(attrs, p.Attributes)
						}
					case metricdata.Histogram[float64]:
						for _, p := range d.DataPoints {
							attrs = append(attrs, p.Attributes)
						}
					case metricdata.Histogram[int64]:
						for _, p := range d.DataPoints {
							attrs = append(attrs, p.Attributes)
						}
					}
					for _, a := range attrs {
						points++
						v, _ := a.Value(semconv.GenAIRequestModelKey)
						models[v.AsString()] = true
					}
				}
			}
			assert.Len(t, models, tc.models, "%v", models)
			// Per model: requests, active, E2EL, input and output tokens.
			assert.LessOrEqual(t, points, 5*tc.models)
			assert.Positive(t, points)
		})
	}
}

// TestHandlerResponseController drives http.ResponseController through the
// wrapper on a real server, and checks it exposes exactly the optional
// interfaces of the server's writer.
func TestHandlerResponseController(t *testing.T) {
	tr, _, _ := serverTracker(t)
	type result struct {
		flush, deadline, duplex      error
		hijacker, pusher, readerFrom bool
	}
	results := make(chan result, 1)
	h := NewHandler(tr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		var res result
		res.duplex = rc.EnableFullDuplex()
		// A full-duplex handler that leaves the body unread makes net/http
		// panic when it reads the connection's next request
		// (golang/go#68560): read it, as a full-duplex handler does.
		_, err := io.Copy(io.Discard, r.Body)
		require.NoError(t, err)
		res.deadline = rc.SetWriteDeadline(time.Now().Add(time.Minute))
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, sseChunk("x"))
		res.flush = rc.Flush()
		_, res.hijacker = w.(http.Hijacker)
		_, res.pusher = w.(http.Pusher)
		_, res.readerFrom = w.(io.ReaderFrom)
		// ReadFrom of a decoded answer goes through the decoder.
		_, err = w.(io.ReaderFrom).ReadFrom(strings.NewReader(sseChunk("y") + "data: [DONE]\n\n"))
		require.NoError(t, err)
		results <- res
	}))
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	resp, err := srv.Client().Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{}`))
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, sseChunk("x")+sseChunk("y")+"data: [DONE]\n\n", string(b))
	res := <-results
	assert.NoError(t, res.flush)
	assert.NoError(t, res.deadline)
	assert.NoError(t, res.duplex)
	assert.True(t, res.hijacker, "HTTP/1's writer can hijack")
	assert.False(t, res.pusher, "HTTP/1's writer cannot push")
	assert.True(t, res.readerFrom)
	srv.Close() // waits for the handler, hence for the End
	rec := ended(tr)[0]
	assert.Equal(t, 2, rec.Chunks)
	assert.Equal(t, OutcomeOK, rec.Outcome)

	// An in-memory recorder has Flush only.
	var w http.ResponseWriter
	NewHandler(tr, http.HandlerFunc(func(ww http.ResponseWriter, r *http.Request) { w = ww })).
		ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/", nil))
	_, ok := w.(http.Hijacker)
	assert.False(t, ok)
	_, ok = w.(io.ReaderFrom)
	assert.False(t, ok)
	_, ok = w.(http.Flusher)
	assert.True(t, ok)
	assert.ErrorIs(t, http.NewResponseController(w).SetWriteDeadline(time.Time{}), http.ErrNotSupported)
}

// TestHandlerFlushReachesTheClient checks on a real server that each event
// reaches the client at the flush after it, while the handler waits.
func TestHandlerFlushReachesTheClient(t *testing.T) {
	tr, _, _ := serverTracker(t)
	release := make(chan struct{})
	h := NewHandler(tr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range []string{"a", "b", "c"} {
			io.WriteString(w, sseChunk(c))
			w.(http.Flusher).Flush()
			<-release
		}
	}))
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	resp, err := srv.Client().Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for _, c := range []string{"a", "b", "c"} {
		line, err := br.ReadString('\n')
		require.NoError(t, err)
		blank, err := br.ReadString('\n')
		require.NoError(t, err)
		assert.Equal(t, sseChunk(c), line+blank, "read while the handler still waits")
		release <- struct{}{}
	}
}

// TestHandlerReadsNothingAhead: the request body is read only as next
// reads it (the model on the side), so next reads it exactly as without
// NewHandler, and the model is known once next has read it.
func TestHandlerReadsNothingAhead(t *testing.T) {
	tr, reader, _ := serverTracker(t)
	body := `{"messages":[` + strings.Repeat(`{"role":"user","content":"hi"},`, 500) + `{}],"model":"model-1"}`
	in := &countingBody{Reader: iotest.OneByteReader(strings.NewReader(body))}
	var got string
	h := NewHandler(tr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		assert.Zero(t, in.n, "nothing was read before next")
		b, err := io.ReadAll(r.Body)
		require.NoError(t, err)
		got = string(b)
	}), WithModels("model-1"))
	r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
	r.Body, r.ContentLength = in, 1<<40 // a declared length is not allocated
	h.ServeHTTP(httptest.NewRecorder(), r)
	assert.Equal(t, body, got)
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	assert.Equal(t, "model-1", requestAttrs(t, rm)[string(semconv.GenAIRequestModelKey)])
}

// countingBody counts the bytes read from it.
type countingBody struct {
	io.Reader
	n int
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.Reader.Read(p)
	b.n += n
	return n, err
}

func (b *countingBody) Close() error { return nil }

// status) goes to the server writer's own ReadFrom, and still counts.
func TestHandlerReadFromUndecoded(t *testing.T) {
	tr, _, _ := serverTracker(t)
	h := NewHandler(tr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		rf, ok := w.(io.ReaderFrom)
		require.True(t, ok)
		n, err := rf.ReadFrom(strings.NewReader(`{"error":{"message":"busy"}}`))
		require.NoError(t, err)
		assert.Equal(t, int64(28), n)
	}))
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	resp, err := srv.Client().Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{}`))
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, `{"error":{"message":"busy"}}`, string(b))
	srv.Close() // waits for the handler
	recs := ended(tr)
	require.Len(t, recs, 1)
	assert.Equal(t, OutcomeError, recs[0].Outcome)
}

// TestHandlerReasoningFrames: reasoning and answer frames are held apart,
// so TTFT is at the flush of the first thought and TTFO at the flush of
// the first answer token.
func TestHandlerReasoningFrames(t *testing.T) {
	tr, _, now := serverTracker(t)
	ev := func(name, data string) string { return "event: " + name + "\ndata: " + data + "\n\n" }
	h := NewHandler(tr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		io.WriteString(w, ev("message_start", `{"type":"message_start","message":{"usage":{"input_tokens":4,"output_tokens":1}}}`))
		*now = now.Add(10 * time.Millisecond)
		io.WriteString(w, ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}`))
		io.WriteString(w, ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":" so"}}`))
		f.Flush() // two thoughts at 10ms
		*now = now.Add(30 * time.Millisecond)
		io.WriteString(w, ev("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Yes"}}`))
		f.Flush() // the answer at 40ms
		io.WriteString(w, ev("message_delta", `{"type":"message_delta","delta":{},"usage":{"output_tokens":9}}`))
		io.WriteString(w, ev("message_stop", `{"type":"message_stop"}`))
	}))
	serve(h, "/v1/messages", `{"model":"m"}`)
	rec := ended(tr)[0]
	ttft, _ := rec.TTFT()
	assert.Equal(t, 10*time.Millisecond, ttft, "at the first thought")
	assert.Equal(t, rec.Start.Add(40*time.Millisecond), rec.FirstOutput, "at the first answer token")
	assert.Equal(t, 3, rec.Chunks)
	assert.Equal(t, 9, rec.OutputTokens)
	assert.Equal(t, OutcomeOK, rec.Outcome)
}

// TestHandlerWriterThatCannotFlush: FlushError reports
// http.ErrNotSupported and the frames stay held until the end.
func TestHandlerWriterThatCannotFlush(t *testing.T) {
	tr, _, now := serverTracker(t)
	var flushErr error
	h := NewHandler(tr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		*now = now.Add(time.Millisecond)
		io.WriteString(w, sseChunk("a"))
		flushErr = http.NewResponseController(w).Flush()
		*now = now.Add(time.Millisecond)
	}))
	h.ServeHTTP(struct{ http.ResponseWriter }{httptest.NewRecorder()},
		httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(`{}`)))
	assert.ErrorIs(t, flushErr, http.ErrNotSupported)
	rec := ended(tr)[0]
	ttft, _ := rec.TTFT()
	assert.Equal(t, 2*time.Millisecond, ttft, "held until the end")
	assert.Equal(t, 1, rec.Chunks)
}

// TestHandlerOwnWriteErrors: a Write that fails because of the handler
// itself (more bytes than its Content-Length, a body on a 204, a write
// after Hijack) is the handler's failure, OutcomeError with error.type
// "write", not a client that went away. A real server
// returns these errors; a connection failure stays Canceled (TestHandlerOutcomes).
func TestHandlerOwnWriteErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		want    error
	}{
		{"http.ErrContentLength", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "2")
			_, _ = io.WriteString(w, "{}")
			_, err := io.WriteString(w, "more")
			require.ErrorIs(t, err, http.ErrContentLength)
		}, http.ErrContentLength},
		{"http.ErrBodyNotAllowed", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusNoContent)
			_, err := io.WriteString(w, "{}")
			require.ErrorIs(t, err, http.ErrBodyNotAllowed)
		}, http.ErrBodyNotAllowed},
		{"http.ErrHijacked", func(w http.ResponseWriter, r *http.Request) {
			conn, _, err := w.(http.Hijacker).Hijack()
			require.NoError(t, err)
			_, err = io.WriteString(w, "{}")
			require.ErrorIs(t, err, http.ErrHijacked)
			_ = conn.Close()
		}, http.ErrHijacked},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, reader, _ := serverTracker(t)
			done := make(chan struct{})
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				defer close(done)
				NewHandler(tr, tc.handler).ServeHTTP(w, r)
			}))
			// net/http logs the write after a hijack the ErrHijacked case makes.
			srv.Config.ErrorLog = log.New(io.Discard, "", 0)
			srv.Start()
			defer srv.Close()
			base := &http.Transport{}
			defer base.CloseIdleConnections()
			resp, err := (&http.Client{Transport: base}).Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m"}`))
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
			<-done
			recs := ended(tr)
			require.Len(t, recs, 1)
			assert.Equal(t, OutcomeError, recs[0].Outcome)
			assert.Equal(t, "write", requestsErrorType(t, reader))
		})
	}
}

// optWriter is a ResponseWriter with the optional interfaces its flags say.
type optWriter struct{ *httptest.ResponseRecorder }
type cnWriter struct{ ch chan bool }
type hjWriter struct{}
type psWriter struct{}
type rfWriter struct{}

func (c cnWriter) CloseNotify() <-chan bool { return c.ch }
func (hjWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return nil, nil, errors.New("test: no connection")
}
func (psWriter) Push(string, *http.PushOptions) error { return errTestPush }
func (rfWriter) ReadFrom(r io.Reader) (int64, error)  { return io.Copy(io.Discard, r) }

var errTestPush = errors.New("test: push")

// TestHandlerKeepsEveryOptionalInterface: next sees CloseNotify, Hijack,
// Push and ReadFrom exactly when the server's writer has them, in each of
// the 16 combinations (httpsnoop's Wrap does the same).
func TestHandlerKeepsEveryOptionalInterface(t *testing.T) {
	for mask := range 16 {
		cn, hj, ps, rf := mask&1 != 0, mask&2 != 0, mask&4 != 0, mask&8 != 0
		t.Run(fmt.Sprintf("closenotify=%v hijack=%v push=%v readfrom=%v", cn, hj, ps, rf), func(t *testing.T) {
			var w http.ResponseWriter = optWriter{httptest.NewRecorder()}
			ch := make(chan bool, 1)
			// Build the writer from embedded parts: a struct type per combination.
			w = combine(w, cn, hj, ps, rf, ch)
			tr, _, _ := serverTracker(t)
			NewHandler(tr, http.HandlerFunc(func(got http.ResponseWriter, r *http.Request) {
				c, isCN := got.(http.CloseNotifier) //lint:ignore SA1019 the interface under test
				h, isHJ := got.(http.Hijacker)
				p, isPS := got.(http.Pusher)
				f, isRF := got.(io.ReaderFrom)
				assert.Equal(t, []bool{cn, hj, ps, rf}, []bool{isCN, isHJ, isPS, isRF})
				// Each method reaches the server writer's.
				if isCN {
					ch <- true
					assert.True(t, <-c.CloseNotify(), "the server writer's channel")
				}
				if isHJ {
					_, _, err := h.Hijack()
					assert.EqualError(t, err, "test: no connection")
				}
				if isPS {
					assert.ErrorIs(t, p.Push("/x", nil), errTestPush)
				}
				if isRF {
					n, err := f.ReadFrom(strings.NewReader("abc"))
					assert.NoError(t, err)
					assert.Equal(t, int64(3), n)
				}
				_, isSW := got.(io.StringWriter)
				assert.True(t, isSW)
			})).ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(`{}`)))
		})
	}
}

// combine returns w with the optional interfaces chosen.
func combine(w http.ResponseWriter, cn, hj, ps, rf bool, ch chan bool) http.ResponseWriter {
	type (
		C = cnWriter
		H = hjWriter
		P = psWriter
		R = rfWriter
	)
	rw := w.(optWriter)
	c := C{ch}
	switch [4]bool{cn, hj, ps, rf} {
	case [4]bool{false, false, false, false}:
		return rw
	case [4]bool{true, false, false, false}:
		return struct {
			optWriter
			C
		}{rw, c}
	case [4]bool{false, true, false, false}:
		return struct {
			optWriter
			H
		}{rw, H{}}
	case [4]bool{true, true, false, false}:
		return struct {
			optWriter
			C
			H
		}{rw, c, H{}}
	case [4]bool{false, false, true, false}:
		return struct {
			optWriter
			P
		}{rw, P{}}
	case [4]bool{true, false, true, false}:
		return struct {
			optWriter
			C
			P
		}{rw, c, P{}}
	case [4]bool{false, true, true, false}:
		return struct {
			optWriter
			H
			P
		}{rw, H{}, P{}}
	case [4]bool{true, true, true, false}:
		return struct {
			optWriter
			C
			H
			P
		}{rw, c, H{}, P{}}
	case [4]bool{false, false, false, true}:
		return struct {
			optWriter
			R
		}{rw, R{}}
	case [4]bool{true, false, false, true}:
		return struct {
			optWriter
			C
			R
		}{rw, c, R{}}
	case [4]bool{false, true, false, true}:
		return struct {
			optWriter
			H
			R
		}{rw, H{}, R{}}
	case [4]bool{true, true, false, true}:
		return struct {
			optWriter
			C
			H
			R
		}{rw, c, H{}, R{}}
	case [4]bool{false, false, true, true}:
		return struct {
			optWriter
			P
			R
		}{rw, P{}, R{}}
	case [4]bool{true, false, true, true}:
		return struct {
			optWriter
			C
			P
			R
		}{rw, c, P{}, R{}}
	case [4]bool{false, true, true, true}:
		return struct {
			optWriter
			H
			P
			R
		}{rw, H{}, P{}, R{}}
	}
	return struct {
		optWriter
		C
		H
		P
		R
	}{rw, c, H{}, P{}, R{}}
}

// ginStream does what gin's Context.Stream does (gin v1.10, context.go):
// it asserts http.CloseNotifier on the writer (gin's responseWriter.CloseNotify
// does w.ResponseWriter.(http.CloseNotifier).CloseNotify(), which panics
// when the writer lacks it) and stops when the channel says the client left.
func ginStream(w http.ResponseWriter, step func(w io.Writer) bool) bool {
	clientGone := w.(http.CloseNotifier).CloseNotify() //lint:ignore SA1019 what gin does
	for {
		select {
		case <-clientGone:
			return true
		default:
			keepOpen := step(w)
			w.(http.Flusher).Flush()
			if !keepOpen {
				return false
			}
		}
	}
}

// TestHandlerGinStyleStream: a gin-style handler behind NewHandler on a
// real server streams, learns through CloseNotify that the client left,
// and the request is Canceled.
func TestHandlerGinStyleStream(t *testing.T) {
	tr, _, _ := serverTracker(t)
	type result struct {
		gone  bool
		panic any
	}
	done := make(chan result, 1)
	srv := httptest.NewServer(NewHandler(tr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var res result
		defer func() {
			res.panic = recover()
			done <- res
		}()
		w.Header().Set("Content-Type", "text/event-stream")
		res.gone = ginStream(w, func(w io.Writer) bool {
			_, _ = io.WriteString(w, sseChunk("x"))
			return true // an endless stream: only CloseNotify stops it
		})
	})))
	defer srv.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	resp, err := (&http.Client{Transport: base}).Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","stream":true}`))
	require.NoError(t, err)
	_, err = bufio.NewReader(resp.Body).ReadString('\n')
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close()) // the client leaves mid-stream
	base.CloseIdleConnections()
	res := <-done
	require.Nil(t, res.panic, "gin's assertion of http.CloseNotifier")
	assert.True(t, res.gone, "the handler learned that the client left")
	srv.Close() // waits for the handler to return
	recs := ended(tr)
	require.Len(t, recs, 1)
	assert.Equal(t, OutcomeCanceled, recs[0].Outcome)
}

// secondRead signals when its body is read a second time: after the
// first byte a slow client sent, the read that waits for more.
type secondRead struct {
	io.ReadCloser
	reads   int
	waiting chan<- struct{}
}

func (b *secondRead) Read(p []byte) (int, error) {
	if b.reads++; b.reads == 2 {
		b.waiting <- struct{}{}
	}
	return b.ReadCloser.Read(p)
}

// TestHandlerSlowBodyMemory: 30 connections each declare a 100 MiB body
// and send 1 byte of it. NewHandler allocates nothing from the declared
// length: the heap grows by what the connections cost net/http itself
// (under 64 KiB each; reading the body ahead would cost 4 MiB each).
func TestHandlerSlowBodyMemory(t *testing.T) {
	const conns = 30
	tr, _, _ := serverTracker(t)
	waiting := make(chan struct{}, conns)
	measured := NewHandler(tr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // a handler that wants the whole prompt
	}))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = &secondRead{ReadCloser: r.Body, waiting: waiting}
		measured.ServeHTTP(w, r)
	}))
	defer srv.Close()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var clients []net.Conn
	for range conns {
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		require.NoError(t, err)
		clients = append(clients, c)
		_, err = io.WriteString(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: llm\r\nContent-Type: application/json\r\nContent-Length: 104857600\r\n\r\n{")
		require.NoError(t, err)
	}
	for range conns {
		<-waiting // each handler waits for the second byte
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perConn := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / conns
	t.Logf("heap per slow connection: %d B", perConn)
	assert.Less(t, perConn, int64(64<<10), "heap per connection that sent 1 byte")
	for _, c := range clients {
		_ = c.Close()
	}
}

// TestHandlerHonoursExpectContinue: a handler that answers 401 without
// reading the body makes the client send none of it (Expect:
// 100-continue): NewHandler reads nothing ahead.
func TestHandlerHonoursExpectContinue(t *testing.T) {
	tr, _, _ := serverTracker(t)
	srv := httptest.NewServer(NewHandler(tr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"message":"no key"}}`, http.StatusUnauthorized)
	})))
	defer srv.Close()
	base := &http.Transport{ExpectContinueTimeout: time.Hour} // wait for the server's word, however long
	defer base.CloseIdleConnections()
	body := &countingBody{Reader: strings.NewReader(`{"model":"m","stream":true}`)}
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", body)
	require.NoError(t, err)
	req.ContentLength = int64(len(`{"model":"m","stream":true}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Expect", "100-continue")
	resp, err := (&http.Client{Transport: base}).Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Zero(t, body.n, "the client sent no byte of the body")
	srv.Close()
	recs := ended(tr)
	require.Len(t, recs, 1)
	assert.Equal(t, OutcomeError, recs[0].Outcome)
}

// closedAfter is a request body that fails every Read once its bytes are
// gone, as net/http's HTTP/1 body does once the server has closed it.
type closedAfter struct{ r *strings.Reader }

func (b *closedAfter) Read(p []byte) (int, error) {
	if b.r.Len() == 0 {
		return 0, errors.New("http: invalid Read on closed Body")
	}
	return b.r.Read(p)
}

func (b *closedAfter) Close() error { return nil }

// TestHandlerBodyEndsAtItsDeclaredLength: after the declared Content-Length
// the body next reads answers io.EOF itself, so the extra Read a proxy's
// transport makes after the declared length does not reach an inbound body
// the server closed when the response started (golang/go#40747; the
// gateway example's test runs it through a real ReverseProxy).
func TestHandlerBodyEndsAtItsDeclaredLength(t *testing.T) {
	for _, wantModel := range []bool{true, false} {
		t.Run(fmt.Sprintf("model read from the body: %v", wantModel), func(t *testing.T) {
			var opts []Option
			if !wantModel {
				opts = append(opts, WithAttributes(semconv.GenAIRequestModel("m")))
			}
			tr, _, _ := serverTracker(t, opts...)
			body := `{"model":"m","messages":[]}`
			var got []byte
			var err error
			NewHandler(tr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got, err = io.ReadAll(r.Body)
			})).ServeHTTP(httptest.NewRecorder(), func() *http.Request {
				r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
				r.Body, r.ContentLength = &closedAfter{strings.NewReader(body)}, int64(len(body))
				return r
			}())
			require.NoError(t, err)
			assert.Equal(t, body, string(got))
		})
	}
}
