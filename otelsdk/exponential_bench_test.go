package otelsdk

import (
	"context"
	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/internal/benchloop"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// BenchmarkChunkExponential compares the per-token cost of the two
// aggregations: explicit buckets (the default) and ExponentialHistograms.
// Compare each exponential sub-benchmark with its explicit twin in the same
// run, never absolute times:
//
//	go test -run '^$' -bench BenchmarkChunkExponential -benchmem -count 6 ./otelsdk
//
// "Chunk" reads the real clock (gaps of tens of nanoseconds); "ChunkAt"
// replays 4096 lognormal gaps around 20 ms, so the exponential histogram
// works at the scale of real inter-token latencies; "Record" is the SDK's
// Record alone with those values. On a shared machine the load changes
// between sub-benchmarks; "interleaved" is the robust figure: it alternates
// blocks of 64 ChunkAt on two Trackers, explicit and exponential (in
// turn first; see benchloop.Interleave), timing each block, and reports the median
// block of each as a cost per chunk, and the median per-round ratio, from
// the same seconds of one run.
func BenchmarkChunkExponential(b *testing.B) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	gaps := make([]time.Duration, 4096)
	for i := range gaps {
		gaps[i] = time.Duration(20e6 * math.Exp(0.5*rng.NormFloat64()))
	}
	aggs := []struct {
		name string
		opts []sdkmetric.Option
	}{
		{"explicit", nil},
		{"exponential", []sdkmetric.Option{ExponentialHistograms()}},
	}
	provider := func(b *testing.B, opts []sdkmetric.Option) *sdkmetric.MeterProvider {
		mp := sdkmetric.NewMeterProvider(append([]sdkmetric.Option{sdkmetric.WithReader(sdkmetric.NewManualReader())}, opts...)...)
		b.Cleanup(func() { _ = mp.Shutdown(ctx) })
		return mp
	}
	// Each exponential sub-benchmark runs right after its explicit twin.
	for _, agg := range aggs {
		b.Run("Chunk/"+agg.name, func(b *testing.B) {
			tr, _ := llmmetrics.NewTracker(llmmetrics.WithMeterProvider(provider(b, agg.opts)), llmmetrics.WithAttributes(staticAttrs...), llmmetrics.WithoutITL())
			r := tr.Start(ctx)
			b.ReportAllocs()
			for b.Loop() {
				r.Chunk(1)
			}
		})
	}
	for _, agg := range aggs {
		b.Run("ChunkAt/"+agg.name, func(b *testing.B) {
			tr, _ := llmmetrics.NewTracker(llmmetrics.WithMeterProvider(provider(b, agg.opts)), llmmetrics.WithAttributes(staticAttrs...), llmmetrics.WithoutITL())
			t := time.Now()
			r := tr.StartAt(ctx, t)
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				t = t.Add(gaps[i&4095])
				r.ChunkAt(t, 1)
				i++
			}
		})
	}
	for _, agg := range aggs {
		b.Run("Record/"+agg.name, func(b *testing.B) {
			// The instrument as the Tracker creates it: the library's scope
			// and the explicit-bucket advice, which the view overrides.
			h, _ := provider(b, agg.opts).Meter(llmmetrics.ScopeName).Float64Histogram("h", metric.WithExplicitBucketBoundaries(itlBuckets...))
			opts := []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(staticAttrs...))}
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				h.Record(ctx, gaps[i&4095].Seconds(), opts...)
				i++
			}
		})
	}
	b.Run("interleaved", func(b *testing.B) {
		const block = 64
		var blocks [2]func()
		for k, agg := range aggs {
			tr, _ := llmmetrics.NewTracker(llmmetrics.WithMeterProvider(provider(b, agg.opts)), llmmetrics.WithAttributes(staticAttrs...), llmmetrics.WithoutITL())
			at := time.Now()
			r, i := tr.StartAt(ctx, at), 0
			blocks[k] = func() {
				for range block {
					at = at.Add(gaps[i&4095])
					r.ChunkAt(at, 1)
					i++
				}
			}
		}
		b.ReportAllocs()
		t := benchloop.Interleave(b, blocks[:]...)
		b.ReportMetric(benchloop.PerUnit(t.Median(0), block), "ns/chunk-explicit")
		b.ReportMetric(benchloop.PerUnit(t.Median(1), block), "ns/chunk-exponential")
		b.ReportMetric(t.Ratio(benchloop.Over(1)), "exponential/explicit")
	})
}

// itlBuckets are the explicit bounds the Tracker gives its ITL histogram.
var itlBuckets = []float64{0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1, 2.5}
