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
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// wire counts the bytes of the OTLP/HTTP requests it receives, as sent
// (gzip) and decompressed.
type wire struct {
	mu             sync.Mutex
	requests       int
	sent, unzipped int
}

func (w *wire) serve(t testing.TB) string {
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		n := len(body)
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				http.Error(rw, err.Error(), http.StatusBadRequest)
				return
			}
			plain, err := io.ReadAll(zr)
			if err != nil {
				http.Error(rw, err.Error(), http.StatusBadRequest)
				return
			}
			n = len(plain)
		}
		w.mu.Lock()
		w.requests++
		w.sent += len(body)
		w.unzipped += n
		w.mu.Unlock()
		rw.Header().Set("Content-Type", "application/x-protobuf")
	}))
	t.Cleanup(srv.Close)
	return srv.URL
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
		w.mu.Lock()
		before, beforeU := w.sent, w.unzipped
		w.mu.Unlock()
		require.NoError(t, exp.Export(ctx, &rm))
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.sent - before, w.unzipped - beforeU
	}
	feed(0, 100)
	s100, u100 := export()
	feed(100, 1000)
	s1000, u1000 := export()
	t.Logf("one export, server and client roles, one model: after 100 requests %d B gzip (%d B protobuf); after 1,000: %d B (%d B)", s100, u100, s1000, u1000)
	require.Less(t, s1000, 2*s100, "an export's size follows the series, not the requests")
}

// BenchmarkGenAISpan measures what one span per request costs with the
// OpenTelemetry SDK: a span with the attributes of a GenAI request (14,
// the convention's names where it has them), sampled, batched and exported
// over OTLP/HTTP with gzip to a server in the process (WithBlocking: no
// span dropped, so the export's work is in the figure), against the same
// code with the no-op TracerProvider (what a program without a
// TracerProvider pays). It reports the bytes a span takes on the wire,
// gzip and protobuf.
func BenchmarkGenAISpan(b *testing.B) {
	fixed := []attribute.KeyValue{
		semconv.GenAIOperationNameChat, semconv.GenAIProviderNameOpenAI,
		semconv.GenAIRequestModel("llama-3.1-8b-instruct"), semconv.GenAIResponseModel("llama-3.1-8b-instruct"),
		semconv.GenAIResponseFinishReasons("stop"), semconv.GenAIRequestMaxTokens(256),
		semconv.ServerAddress("vllm.internal"), semconv.ServerPort(8000),
	}
	run := func(b *testing.B, tp trace.TracerProvider) {
		tracer := tp.Tracer("bench")
		ctx := context.Background()
		t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			// Values that differ from request to request, as real ones do
			// (identical spans would compress to nothing).
			i++
			start := t0.Add(time.Duration(i) * 37 * time.Millisecond)
			_, s := tracer.Start(ctx, "chat llama-3.1-8b-instruct", trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(start))
			s.SetAttributes(fixed...)
			s.SetAttributes(
				semconv.GenAIResponseID("chatcmpl-"+strconv.Itoa(1_000_000+i)),
				semconv.GenAIUsageInputTokens(500+i%700), semconv.GenAIUsageOutputTokens(100+i%156),
				attribute.Float64("gen_ai.response.time_to_first_chunk", 0.1+float64(i%997)/1000),
				attribute.Float64("llmmetrics.time_per_output_token", 0.02+float64(i%89)/10000),
				attribute.Float64("llmmetrics.request.duration", 2+float64(i%4001)/1000),
			)
			s.End(trace.WithTimestamp(start.Add(time.Duration(2000+i%4001) * time.Millisecond)))
		}
	}
	b.Run("noop", func(b *testing.B) { run(b, noop.NewTracerProvider()) })
	b.Run("sdk", func(b *testing.B) {
		var w wire
		url := w.serve(b)
		exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(url+"/v1/traces"), otlptracehttp.WithCompression(otlptracehttp.GzipCompression))
		require.NoError(b, err)
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp, sdktrace.WithBlocking()), sdktrace.WithSampler(sdktrace.AlwaysSample()))
		run(b, tp)
		b.StopTimer()
		require.NoError(b, tp.Shutdown(context.Background()))
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.requests > 0 {
			b.ReportMetric(float64(w.sent)/float64(b.N), "B-gzip/span")
			b.ReportMetric(float64(w.unzipped)/float64(b.N), "B-proto/span")
		}
	})
}

