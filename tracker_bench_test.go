package llmmetrics

import (
	"context"
	"runtime"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
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
		h, _ := benchProvider(b).Meter("bench").Float64Histogram("h", metric.WithExplicitBucketBoundaries(itlBuckets...))
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
		h, _ := benchProvider(b).Meter("bench").Float64Histogram("h", metric.WithExplicitBucketBoundaries(itlBuckets...))
		opts := []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(staticAttrs...))}
		b.ReportAllocs()
		for b.Loop() {
			h.Record(ctx, 0.02, opts...)
		}
	})
	b.Run("Chunk", func(b *testing.B) {
		tr, _ := NewTracker(WithMeterProvider(benchProvider(b)), WithAttributes(staticAttrs...), WithoutITL())
		r := tr.Start(ctx)
		b.ReportAllocs()
		for b.Loop() {
			r.Chunk(1)
		}
	})
	// The robust figure on a shared machine: blocks of 64 floor chunks and
	// 64 Chunks alternate (see interleave); Chunk/floor is the median of
	// the per-round ratios.
	b.Run("interleaved", func(b *testing.B) {
		const block = 64
		h, _ := benchProvider(b).Meter("bench").Float64Histogram("h", metric.WithExplicitBucketBoundaries(itlBuckets...))
		opts := []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(staticAttrs...))}
		last := time.Now()
		tr, _ := NewTracker(WithMeterProvider(benchProvider(b)), WithAttributes(staticAttrs...), WithoutITL())
		r := tr.Start(ctx)
		b.ReportAllocs()
		t := interleave(b, func() {
			for range block {
				now := time.Now()
				h.Record(ctx, now.Sub(last).Seconds(), opts...)
				last = now
			}
		}, func() {
			for range block {
				r.Chunk(1)
			}
		})
		b.ReportMetric(perUnit(t.median(0), block), "floor-ns/chunk")
		b.ReportMetric(perUnit(t.median(1), block), "Chunk-ns/chunk")
		b.ReportMetric(t.ratio(over(1)), "Chunk/floor")
	})
	b.Run("ReasoningChunk", func(b *testing.B) {
		tr, _ := NewTracker(WithMeterProvider(benchProvider(b)), WithAttributes(staticAttrs...), WithoutITL())
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
// Compare it with BenchmarkChunkParallelFloor, or read BenchmarkChunkScaling.
func BenchmarkChunkParallel(b *testing.B) {
	tr, _ := NewTracker(WithMeterProvider(benchProvider(b)), WithAttributes(staticAttrs...), WithoutITL())
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r := tr.Start(context.Background())
		for pb.Next() {
			r.Chunk(1)
		}
		r.End(nil)
	})
}

// BenchmarkChunkParallelFloor is BenchmarkChunk's floor from all cores: one
// time.Now() and one SDK Record per op, every goroutine on the same
// histogram and the same prebuilt attribute set (as the requests of one
// Tracker share the set of their attributes). How well it scales bounds
// how well Chunk can: the SDK guards the set's aggregator.
func BenchmarkChunkParallelFloor(b *testing.B) {
	ctx := context.Background()
	h, _ := benchProvider(b).Meter("bench").Float64Histogram("h", metric.WithExplicitBucketBoundaries(itlBuckets...))
	opts := []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(staticAttrs...))}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		last := time.Now()
		for pb.Next() {
			now := time.Now()
			h.Record(ctx, now.Sub(last).Seconds(), opts...)
			last = now
		}
	})
}

// BenchmarkChunkScaling compares how Chunk on one Tracker scales across
// GOMAXPROCS goroutines with how its floor scales (see
// BenchmarkChunkParallelFloor), from one interleaved run: each round runs
// four blocks of the same number of ops — the floor serially, the floor on
// GOMAXPROCS goroutines, Chunk serially, Chunk on GOMAXPROCS goroutines
// (each with its own Request) — and a scaling is a serial block's time
// over its parallel twin's. Chunk-scaling/floor-scaling is the median of
// the per-round ratios of the two scalings.
func BenchmarkChunkScaling(b *testing.B) {
	ctx := context.Background()
	p := runtime.GOMAXPROCS(0)
	const perWorker = 512
	h, _ := benchProvider(b).Meter("bench").Float64Histogram("h", metric.WithExplicitBucketBoundaries(itlBuckets...))
	opts := []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(staticAttrs...))}
	tr, _ := NewTracker(WithMeterProvider(benchProvider(b)), WithAttributes(staticAttrs...), WithoutITL())
	last := make([]time.Time, p)
	reqs := make([]*Request, p)
	for w := range p {
		last[w], reqs[w] = time.Now(), tr.Start(ctx)
	}
	floor := func(w, n int) {
		for range n {
			now := time.Now()
			h.Record(ctx, now.Sub(last[w]).Seconds(), opts...)
			last[w] = now
		}
	}
	chunk := func(w, n int) {
		r := reqs[w]
		for range n {
			r.Chunk(1)
		}
	}
	b.ReportAllocs()
	t := interleave(b,
		func() { floor(0, p*perWorker) },
		parallelBlock(b, p, func(w int) { floor(w, perWorker) }),
		func() { chunk(0, p*perWorker) },
		parallelBlock(b, p, func(w int) { chunk(w, perWorker) }),
	)
	ops := p * perWorker
	b.ReportMetric(perUnit(t.median(0), ops), "floor-serial-ns/op")
	b.ReportMetric(perUnit(t.median(1), ops), "floor-parallel-ns/op")
	b.ReportMetric(perUnit(t.median(2), ops), "Chunk-serial-ns/op")
	b.ReportMetric(perUnit(t.median(3), ops), "Chunk-parallel-ns/op")
	b.ReportMetric(t.ratio(func(d []time.Duration) float64 { return float64(d[0]) / float64(d[1]) }), "floor-scaling")
	b.ReportMetric(t.ratio(func(d []time.Duration) float64 { return float64(d[2]) / float64(d[3]) }), "Chunk-scaling")
	b.ReportMetric(t.ratio(func(d []time.Duration) float64 {
		return (float64(d[2]) / float64(d[3])) / (float64(d[0]) / float64(d[1]))
	}), "Chunk-scaling/floor-scaling")
}

// BenchmarkSDKRecord is what the SDK charges per measurement, the floor of
// every Chunk: a Float64Histogram.Record on a prebuilt attribute set
// (metric.WithAttributeSet, as the Tracker passes), with no attribute, with
// the 3 of a request (which the SDK normalizes on every measurement all
// the same: attrnorm.SetDedup walks the set), and with the 3 and the
// context of a sampled span (the SDK's trace-based filter then offers the
// value to its exemplar reservoir, with a clock read). Interleaved blocks
// of 64 measurements.
func BenchmarkSDKRecord(b *testing.B) {
	const block = 64
	h, _ := benchProvider(b).Meter("bench").Float64Histogram("h", metric.WithExplicitBucketBoundaries(itlBuckets...))
	none := []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet())}
	three := []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(staticAttrs...))}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	sampled, span := tp.Tracer("bench").Start(context.Background(), "request")
	defer span.End()
	ctx := context.Background()
	b.ReportAllocs()
	t := interleave(b, func() {
		for range block {
			h.Record(ctx, 0.02, none...)
		}
	}, func() {
		for range block {
			h.Record(ctx, 0.02, three...)
		}
	}, func() {
		for range block {
			h.Record(sampled, 0.02, three...)
		}
	})
	b.ReportMetric(perUnit(t.median(0), block), "no-attributes-ns/record")
	b.ReportMetric(perUnit(t.median(1), block), "3-attributes-ns/record")
	b.ReportMetric(perUnit(t.median(2), block), "3-attributes+exemplar-ns/record")
}
