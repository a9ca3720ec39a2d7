//go:build unix

package fleet_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/otelsdk"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// wire receives OTLP/HTTP requests and keeps their bodies, to count their
// bytes as sent (gzip) and decompressed (protobuf) once the sending is
// over: decompressing in the handler would add its work to the sender's
// measured CPU time.
type wire struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (w *wire) serve(t testing.TB) string {
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil || r.Header.Get("Content-Encoding") != "gzip" {
			http.Error(rw, "want a gzip body", http.StatusBadRequest)
			return
		}
		w.mu.Lock()
		w.bodies = append(w.bodies, body)
		w.mu.Unlock()
		rw.Header().Set("Content-Type", "application/x-protobuf")
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// sizes returns the number of requests received since the first from
// (an index into the bodies), and their bytes, gzip and decompressed.
func (w *wire) sizes(t testing.TB, from int) (requests, sent, unzipped int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, b := range w.bodies[from:] {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		require.NoError(t, err)
		plain, err := io.ReadAll(zr)
		require.NoError(t, err)
		requests, sent, unzipped = requests+1, sent+len(b), unzipped+len(plain)
	}
	return requests, sent, unzipped
}

func (w *wire) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.bodies)
}

// TestMetricsOnTheWire measures what one replica's metrics cost on the
// wire: the size of one OTLP export (cumulative, exponential histograms,
// gzip as the exporter sends it) of a Tracker in each role after many
// requests of one model. With cumulative temporality that size depends on
// the number of series (attribute sets), not on the number of requests:
// the export after 1,000 requests is no larger than after 100 beyond the
// histograms' extra buckets. Run with -v to see the figures
// (docs/production.md quotes them).
func TestMetricsOnTheWire(t *testing.T) {
	var w wire
	url := w.serve(t)
	ctx := context.Background()
	exp, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(url+"/v1/metrics"), otlpmetrichttp.WithCompression(otlpmetrichttp.GzipCompression))
	require.NoError(t, err)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), otelsdk.ExponentialHistograms())
	slo, err := llmmetrics.ParseSLO(sloText)
	require.NoError(t, err)
	server, err := llmmetrics.NewTracker(llmmetrics.WithMeterProvider(mp), llmmetrics.WithSLO(slo), llmmetrics.WithoutWindow())
	require.NoError(t, err)
	client, err := llmmetrics.NewTracker(llmmetrics.WithMeterProvider(mp), llmmetrics.WithSLO(slo), llmmetrics.WithoutWindow())
	require.NoError(t, err)

	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	feed := func(from, to int) {
		for i := from; i < to; i++ {
			start := t0.Add(time.Duration(i) * time.Second)
			reqs := []*llmmetrics.Request{server.StartAt(ctx, start), client.StartClientAt(ctx, start)}
			for _, r := range reqs {
				// 20 tokens, TTFT 60–160 ms, gaps 8–12 ms: about the fleet's.
				at := start.Add(time.Duration(60+i%100) * time.Millisecond)
				for c := range 20 {
					r.ChunkAt(at, 1)
					at = at.Add(time.Duration(8+(i+c)%5) * time.Millisecond)
				}
				r.SetUsage(40, 20)
				r.EndAt(at, nil)
			}
		}
	}
	export := func() (sent, unzipped int) {
		var rm metricdata.ResourceMetrics
		require.NoError(t, reader.Collect(ctx, &rm))
		from := w.count()
		require.NoError(t, exp.Export(ctx, &rm))
		n, sent, unzipped := w.sizes(t, from)
		require.Equal(t, 1, n)
		return sent, unzipped
	}
	feed(0, 100)
	s100, u100 := export()
	feed(100, 1000)
	s1000, u1000 := export()
	t.Logf("one export, server and client roles, one model: after 100 requests %d B gzip (%d B protobuf); after 1,000: %d B (%d B)", s100, u100, s1000, u1000)
	require.Less(t, s1000, 2*s100, "an export's size follows the series, not the requests")
}

// genAISpans makes one span per call of next with the attributes of a
// GenAI request (14, the convention's names where it has them), values
// that differ from request to request as real ones do (identical spans
// would compress to nothing), with explicit times.
type genAISpans struct {
	tracer trace.Tracer
	i      int
}

var genAIFixed = []attribute.KeyValue{
	semconv.GenAIOperationNameChat, semconv.GenAIProviderNameOpenAI,
	semconv.GenAIRequestModel("llama-3.1-8b-instruct"), semconv.GenAIResponseModel("llama-3.1-8b-instruct"),
	semconv.GenAIResponseFinishReasons("stop"), semconv.GenAIRequestMaxTokens(256),
	semconv.ServerAddress("vllm.internal"), semconv.ServerPort(8000),
}

var spanT0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func (g *genAISpans) next(ctx context.Context) {
	g.i++
	i := g.i
	start := spanT0.Add(time.Duration(i) * 37 * time.Millisecond)
	_, s := g.tracer.Start(ctx, "chat llama-3.1-8b-instruct", trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(start))
	s.SetAttributes(genAIFixed...)
	s.SetAttributes(
		semconv.GenAIResponseID("chatcmpl-"+strconv.Itoa(1_000_000+i)),
		semconv.GenAIUsageInputTokens(500+i%700), semconv.GenAIUsageOutputTokens(100+i%156),
		attribute.Float64("gen_ai.response.time_to_first_chunk", 0.1+float64(i%997)/1000),
		attribute.Float64("llmmetrics.time_per_output_token", 0.02+float64(i%89)/10000),
		attribute.Float64("llmmetrics.request.duration", 2+float64(i%4001)/1000),
	)
	s.End(trace.WithTimestamp(start.Add(time.Duration(2000+i%4001) * time.Millisecond)))
}

// discard is a span exporter that drops what it is given.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// BenchmarkGenAISpan measures what one span per request costs the request
// with the OpenTelemetry SDK: a GenAI span (genAISpans), sampled, ended and
// queued to the batch processor (whose exporter drops it: exporting is on
// the processor's goroutine, see BenchmarkGenAISpanExport), against the same
// code with the no-op TracerProvider, which is what a program without a
// TracerProvider pays. cpu-ns/op is the process's CPU time per span.
func BenchmarkGenAISpan(b *testing.B) {
	run := func(b *testing.B, tp trace.TracerProvider) {
		g := genAISpans{tracer: tp.Tracer("bench")}
		ctx := context.Background()
		b.ReportAllocs()
		cpu := cpuTime(b)
		for b.Loop() {
			g.next(ctx)
		}
		b.ReportMetric(float64(cpuTime(b)-cpu)/float64(b.N), "cpu-ns/op")
	}
	b.Run("noop", func(b *testing.B) { run(b, noop.NewTracerProvider()) })
	b.Run("sdk", func(b *testing.B) {
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discard{}), sdktrace.WithSampler(sdktrace.AlwaysSample()))
		b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		run(b, tp)
	})
}

// BenchmarkGenAISpanExport measures the other half of a span's cost: its
// export, batches of 512 GenAI spans sent over OTLP/HTTP with gzip to a
// server in the process. It reports the CPU time of the process per span
// (the exporter's protobuf encoding and gzip, and the server's reading of
// the request) and the bytes on the wire per span, gzip and protobuf.
func BenchmarkGenAISpanExport(b *testing.B) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	g := genAISpans{tracer: tp.Tracer("bench")}
	for range 512 {
		g.next(context.Background())
	}
	batch := rec.Ended()
	require.Len(b, batch, 512)
	var w wire
	url := w.serve(b)
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(url+"/v1/traces"), otlptracehttp.WithCompression(otlptracehttp.GzipCompression))
	require.NoError(b, err)
	b.Cleanup(func() { _ = exp.Shutdown(context.Background()) })
	b.ReportAllocs()
	cpu := cpuTime(b)
	for b.Loop() {
		require.NoError(b, exp.ExportSpans(context.Background(), batch))
	}
	spent := cpuTime(b) - cpu
	requests, sent, unzipped := w.sizes(b, 0)
	spans := float64(512 * requests)
	b.ReportMetric(float64(spent)/spans, "cpu-ns/span")
	b.ReportMetric(float64(sent)/spans, "B-gzip/span")
	b.ReportMetric(float64(unzipped)/spans, "B-proto/span")
}

// cpuTime is the CPU time the process has used so far, every thread's
// (user and system). On a machine shared with other work it is what a
// benchmark's own work costs, where the wall-clock time per operation
// also holds the time other processes ran.
func cpuTime(t testing.TB) time.Duration {
	var ru syscall.Rusage
	require.NoError(t, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
