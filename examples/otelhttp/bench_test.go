package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/exemplar"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/llmmetrics/llmmetrics"
)

// What one streamed request costs beside otelhttp: the same handler (32
// SSE chat chunks, then the usage chunk and [DONE], each written and
// flushed) served plainly, through otelhttp.NewHandler and through
// llmmetrics.NewHandler, with metrics only (a no-op TracerProvider) and
// with spans (every request sampled, spans batched to an exporter that
// drops them), on an in-memory ResponseWriter. Each setup has its own SDK
// MeterProvider with a manual reader, as a process with one exporter has.
//
//	go test -run '^$' -bench BenchmarkBesideOtelhttp -count 10 ./examples/otelhttp

// chunks is how many token-carrying chunks the handler streams.
const chunks = 32

var reqBody = `{"messages":[{"role":"user","content":"Say hello."}],"model":"gpt-4o-mini","stream":true,` +
	`"stream_options":{"include_usage":true},"max_tokens":64}`

// events is the stream the handler writes.
var events = func() [][]byte {
	var evs [][]byte
	head := `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{"content":"`
	for i := range chunks {
		evs = append(evs, []byte(head+"tok"+strconv.Itoa(i)+`"},"finish_reason":null}]}`+"\n\n"))
	}
	evs = append(evs,
		[]byte(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini-2024-07-18","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":32,"total_tokens":44}}`+"\n\n"),
		[]byte("data: [DONE]\n\n"))
	return evs
}()

// stream is the handler every setup wraps.
var stream = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "text/event-stream")
	f := w.(http.Flusher)
	for _, ev := range events {
		_, _ = w.Write(ev)
		f.Flush()
	}
})

// memWriter is an in-memory ResponseWriter with Flush.
type memWriter struct {
	h http.Header
	n int
}

func (w *memWriter) Header() http.Header         { return w.h }
func (w *memWriter) WriteHeader(int)             {}
func (w *memWriter) Write(p []byte) (int, error) { w.n += len(p); return len(p), nil }
func (w *memWriter) Flush()                      {}

// server serves one handler on a reusable request and writer.
type server struct {
	h    http.Handler
	body *strings.Reader
	req  *http.Request
	w    *memWriter
}

func newServer(h http.Handler) *server {
	s := &server{h: h, body: strings.NewReader(reqBody), w: &memWriter{h: http.Header{}}}
	s.req, _ = http.NewRequest(http.MethodPost, "http://gateway.internal/v1/chat/completions", io.NopCloser(s.body))
	s.req.Header.Set("Content-Type", "application/json")
	s.req.ContentLength = int64(len(reqBody))
	return s
}

func (s *server) serve() {
	s.body.Reset(reqBody)
	clear(s.w.h)
	s.h.ServeHTTP(s.w, s.req)
}

// meterProvider returns an SDK MeterProvider with a manual reader; with
// exemplars false, its exemplar filter keeps none (the default keeps those
// of sampled spans).
func meterProvider(b *testing.B, exemplars bool) metric.MeterProvider {
	filter := exemplar.TraceBasedFilter
	if !exemplars {
		filter = exemplar.AlwaysOffFilter
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()), sdkmetric.WithExemplarFilter(filter))
	b.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	return mp
}

func tracerProvider(b *testing.B, spans bool) trace.TracerProvider {
	if !spans {
		return noop.NewTracerProvider()
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp
}

// byHand is stream measured by hand with the public API, the floor of what
// NewHandler does: the decoder on each event written, Start, one Chunk per
// token-carrying event after its flush, SetUsage, End. Without a Tracker
// it only decodes.
func byHand(tr *llmmetrics.Tracker) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req *llmmetrics.Request
		if tr != nil {
			req = tr.Start(r.Context(), semconv.GenAIOperationNameChat, semconv.GenAIProviderNameOpenAI,
				semconv.GenAIRequestModel("gpt-4o-mini"))
		}
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		dec := llmmetrics.ProtocolOpenAI.NewDecoder()
		tokens := 0
		emit := func(f llmmetrics.Frame) {
			tokens += f.Tokens
			if f.HasUsage && req != nil {
				req.SetUsage(f.InputTokens, f.OutputTokens)
			}
		}
		fl := w.(http.Flusher)
		for _, ev := range events {
			_, _ = w.Write(ev)
			dec.Decode(ev, emit)
			fl.Flush()
			if tokens > 0 && req != nil {
				req.Chunk(tokens)
			}
			tokens = 0
		}
		dec.Flush(emit)
		if req != nil {
			req.End(nil)
		}
	})
}

// setups are the handlers compared, by name: the first is the floor; with
// more, those that tell where the time goes (decoding, the Tracker's
// measurements, the exemplars).
func setups(b *testing.B, more bool) []struct {
	name string
	h    http.Handler
} {
	otel := func(spans, exemplars bool) http.Handler {
		return otelhttp.NewHandler(stream, "chat",
			otelhttp.WithMeterProvider(meterProvider(b, exemplars)), otelhttp.WithTracerProvider(tracerProvider(b, spans)))
	}
	tracker := func(spans, exemplars bool) *llmmetrics.Tracker {
		tr, err := llmmetrics.NewTracker(llmmetrics.WithMeterProvider(meterProvider(b, exemplars)),
			llmmetrics.WithTracerProvider(tracerProvider(b, spans)))
		if err != nil {
			b.Fatal(err)
		}
		return tr
	}
	llm := func(spans, exemplars bool) http.Handler {
		return llmmetrics.NewHandler(tracker(spans, exemplars), stream, llmmetrics.WithModels("gpt-4o-mini"))
	}
	s := []struct {
		name string
		h    http.Handler
	}{
		{"plain", stream},
		{"otelhttp", otel(false, true)},
		{"llmmetrics", llm(false, true)},
		{"otelhttp+spans", otel(true, true)},
		{"llmmetrics+spans", llm(true, true)},
	}
	if more {
		s = append(s, []struct {
			name string
			h    http.Handler
		}{
			{"decode", byHand(nil)},
			{"by-hand", byHand(tracker(false, true))},
			{"otelhttp+spans-exemplars", otel(true, false)},
			{"llmmetrics+spans-exemplars", llm(true, false)},
		}...)
	}
	return s
}

// BenchmarkBesideOtelhttp runs each setup alone (for its allocations), then
// all of them interleaved: in each round every setup serves one request,
// the first in turn, so all see the same load; it reports the median time
// of each, the medians over rounds of what each adds to its base (metrics:
// to plain; spans: to the same setup without spans), and their ratios.
func BenchmarkBesideOtelhttp(b *testing.B) {
	for _, s := range setups(b, true) {
		b.Run(s.name, func(b *testing.B) {
			srv := newServer(s.h)
			b.ReportAllocs()
			for b.Loop() {
				srv.serve()
			}
		})
	}
	b.Run("interleaved", func(b *testing.B) {
		ss := setups(b, true)
		servers := make([]*server, len(ss))
		for i, s := range ss {
			servers[i] = newServer(s.h)
		}
		times := interleave(b, servers)
		for i, s := range ss {
			b.ReportMetric(us(median(times[i])), s.name+"-µs")
		}
		const (
			plain, otel, llm, otelSpans, llmSpans     = 0, 1, 2, 3, 4
			decode, hand, otelSpansNoEx, llmSpansNoEx = 5, 6, 7, 8
		)
		otelAdded, llmAdded := added(times, otel, plain), added(times, llm, plain)
		otelSpan, llmSpan := added(times, otelSpans, otel), added(times, llmSpans, llm)
		b.ReportMetric(us(otelAdded), "otelhttp-added-µs")
		b.ReportMetric(us(llmAdded), "llmmetrics-added-µs")
		b.ReportMetric(float64(llmAdded)/float64(otelAdded), "llmmetrics/otelhttp")
		b.ReportMetric(us(otelSpan), "otelhttp-span-µs")
		b.ReportMetric(us(llmSpan), "llmmetrics-span-µs")
		b.ReportMetric(float64(llmSpan)/float64(otelSpan), "llmmetrics/otelhttp-span")
		// Where NewHandler's time goes: decoding, then the Tracker's
		// measurements (the floor of measuring by hand), then the wrapper.
		b.ReportMetric(us(added(times, decode, plain)), "of-which-decoding-µs")
		b.ReportMetric(us(added(times, hand, decode)), "of-which-recording-µs")
		b.ReportMetric(us(added(times, llm, hand)), "of-which-wrapper-µs")
		// What a span costs without the exemplars the SDK keeps for a
		// sampled request's measurements.
		b.ReportMetric(us(added(times, otelSpansNoEx, otel)), "otelhttp-span-no-exemplars-µs")
		b.ReportMetric(us(added(times, llmSpansNoEx, llm)), "llmmetrics-span-no-exemplars-µs")
	})
}

// interleave serves one request with each server per round of b.Loop, the
// first in turn, and times each (the loop of the library's
// internal/benchloop.Interleave, which this module cannot import).
func interleave(b *testing.B, servers []*server) [][]time.Duration {
	times := make([][]time.Duration, len(servers))
	round := 0
	for b.Loop() {
		for j := range servers {
			k := (j + round) % len(servers)
			start := time.Now()
			servers[k].serve()
			times[k] = append(times[k], time.Since(start))
		}
		round++
	}
	return times
}

func median(d []time.Duration) time.Duration {
	d = slices.Clone(d)
	slices.Sort(d)
	return d[len(d)/2]
}

// added is the median over rounds of what setup k took beyond setup base
// in the same round.
func added(times [][]time.Duration, k, base int) time.Duration {
	d := make([]time.Duration, len(times[k]))
	for i := range d {
		d[i] = times[k][i] - times[base][i]
	}
	return median(d)
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// BenchmarkBesideOtelhttpLoopback is BenchmarkBesideOtelhttp over a real
// connection: each setup behind its own httptest server on 127.0.0.1, each
// request sent and its answer read to the end by a client of its own, the
// setups interleaved as above. A request then costs ~0.2 ms of network
// system calls, the same for every setup; what each wrapper adds is
// read as above.
func BenchmarkBesideOtelhttpLoopback(b *testing.B) {
	ss := setups(b, false)
	type target struct {
		url    string
		client *http.Client
	}
	targets := make([]target, len(ss))
	for i, s := range ss {
		srv := httptest.NewServer(s.h)
		b.Cleanup(srv.Close)
		tr := srv.Client().Transport.(*http.Transport).Clone()
		b.Cleanup(tr.CloseIdleConnections)
		targets[i] = target{srv.URL + "/v1/chat/completions", &http.Client{Transport: tr}}
	}
	send := func(t target) {
		resp, err := t.client.Post(t.url, "application/json", strings.NewReader(reqBody))
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	times := make([][]time.Duration, len(targets))
	round := 0
	for b.Loop() {
		for j := range targets {
			k := (j + round) % len(targets)
			start := time.Now()
			send(targets[k])
			times[k] = append(times[k], time.Since(start))
		}
		round++
	}
	const plain, otel, llm, otelSpans, llmSpans = 0, 1, 2, 3, 4
	b.ReportMetric(us(median(times[plain])), "plain-µs")
	otelAdded, llmAdded := added(times, otel, plain), added(times, llm, plain)
	otelSpan, llmSpan := added(times, otelSpans, otel), added(times, llmSpans, llm)
	b.ReportMetric(us(otelAdded), "otelhttp-added-µs")
	b.ReportMetric(us(llmAdded), "llmmetrics-added-µs")
	b.ReportMetric(float64(llmAdded)/float64(otelAdded), "llmmetrics/otelhttp")
	b.ReportMetric(us(otelSpan), "otelhttp-span-µs")
	b.ReportMetric(us(llmSpan), "llmmetrics-span-µs")
	b.ReportMetric(float64(llmSpan)/float64(otelSpan), "llmmetrics/otelhttp-span")
}
