package llmmetrics

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

func benchProvider(b *testing.B) *sdkmetric.MeterProvider {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	return mp
}

var staticAttrs = []attribute.KeyValue{
	semconv.GenAIOperationNameChat, semconv.GenAIProviderNameOpenAI, semconv.GenAIRequestModel("llama-3-8b"),
}

// BenchmarkChunk compares Request.Chunk with its floor: one time.Now() and
// one Float64Histogram.Record with a prebuilt attribute set, on the same SDK.
// Compare the ratio of the sub-benchmarks, never absolute times.
func BenchmarkChunk(b *testing.B) {
	ctx := context.Background()
	b.Run("baseline", func(b *testing.B) {
		h, _ := benchProvider(b).Meter("bench").Float64Histogram("h", metric.WithExplicitBucketBoundaries(ITLBuckets...))
		opts := []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(staticAttrs...))}
		last := time.Now()
		b.ReportAllocs()
		for b.Loop() {
			now := time.Now()
			h.Record(ctx, now.Sub(last).Seconds(), opts...)
			last = now
		}
	})
	// The two halves of the floor, to see where a chunk's time goes.
	b.Run("floor/time.Now", func(b *testing.B) {
		var last time.Time
		for b.Loop() {
			last = time.Now()
		}
		_ = last
	})
	b.Run("floor/Record", func(b *testing.B) {
		h, _ := benchProvider(b).Meter("bench").Float64Histogram("h", metric.WithExplicitBucketBoundaries(ITLBuckets...))
		opts := []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(staticAttrs...))}
		b.ReportAllocs()
		for b.Loop() {
			h.Record(ctx, 0.02, opts...)
		}
	})
	b.Run("Chunk", func(b *testing.B) {
		tr, _ := NewTracker(WithMeterProvider(benchProvider(b)), WithAttributes(staticAttrs...), WithKeepITL(false))
		r := tr.Start(ctx)
		b.ReportAllocs()
		for b.Loop() {
			r.Chunk(1)
		}
	})
	b.Run("ReasoningChunk", func(b *testing.B) {
		tr, _ := NewTracker(WithMeterProvider(benchProvider(b)), WithAttributes(staticAttrs...), WithKeepITL(false))
		r := tr.Start(ctx)
		b.ReportAllocs()
		for b.Loop() {
			r.ReasoningChunk(1)
		}
	})
	b.Run("Chunk/keepITL", func(b *testing.B) {
		// The default keeps every gap; a new request every 4096 chunks
		// bounds the list (its Start and End are amortized in).
		tr, _ := NewTracker(WithMeterProvider(benchProvider(b)), WithAttributes(staticAttrs...))
		r := tr.Start(ctx)
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			r.Chunk(1)
			if i++; i == 4096 {
				r.End(nil)
				r, i = tr.Start(ctx), 0
			}
		}
	})
}

// BenchmarkStartEnd measures a request's fixed cost: Start, one chunk, End.
func BenchmarkStartEnd(b *testing.B) {
	ctx := context.Background()
	b.Run("static attributes", func(b *testing.B) {
		tr, _ := NewTracker(WithMeterProvider(benchProvider(b)), WithAttributes(staticAttrs...))
		b.ReportAllocs()
		for b.Loop() {
			r := tr.Start(ctx)
			r.Chunk(1)
			r.End(nil)
		}
	})
	b.Run("one per-request attribute", func(b *testing.B) {
		tr, _ := NewTracker(WithMeterProvider(benchProvider(b)), WithAttributes(staticAttrs...))
		model := semconv.GenAIResponseModel("llama-3-8b-instruct")
		b.ReportAllocs()
		for b.Loop() {
			r := tr.Start(ctx, model)
			r.Chunk(1)
			r.End(nil)
		}
	})
	b.Run("with SLO", func(b *testing.B) {
		tr, _ := NewTracker(WithMeterProvider(benchProvider(b)), WithAttributes(staticAttrs...),
			WithSLO(SLO{TTFT: time.Second, TPOT: time.Second}))
		b.ReportAllocs()
		for b.Loop() {
			r := tr.Start(ctx)
			r.Chunk(1)
			r.End(nil)
		}
	})
}

// BenchmarkChunkParallel runs Chunk on one shared Tracker from all cores,
// each goroutine with its own request (no global lock on the hot path).
func BenchmarkChunkParallel(b *testing.B) {
	tr, _ := NewTracker(WithMeterProvider(benchProvider(b)), WithAttributes(staticAttrs...), WithKeepITL(false))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r := tr.Start(context.Background())
		for pb.Next() {
			r.Chunk(1)
		}
		r.End(nil)
	})
}
