package llmmetrics

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// expoPoint is the exponential histogram point of one value v = 2^k at
// scale 20. The SDK indexes buckets by their lower bound, bucket i holding
// (2^(i/2^20), 2^((i+1)/2^20)], so 2^k, an upper bound, is in bucket
// k·2^20 − 1.
func expoPoint[N int64 | float64](attrs attribute.Set, v N, k int32) metricdata.ExponentialHistogramDataPoint[N] {
	return metricdata.ExponentialHistogramDataPoint[N]{
		Attributes:     attrs,
		Count:          1,
		Sum:            v,
		Min:            metricdata.NewExtrema(v),
		Max:            metricdata.NewExtrema(v),
		Scale:          ExponentialMaxScale,
		PositiveBucket: metricdata.ExponentialBucket{Offset: k<<20 - 1, Counts: []uint64{1}},
		NegativeBucket: metricdata.ExponentialBucket{Counts: []uint64{}},
	}
}

func expoMetric[N int64 | float64](name, unit string, points ...metricdata.ExponentialHistogramDataPoint[N]) metricdata.Metrics {
	return metricdata.Metrics{Name: name, Unit: unit, Data: metricdata.ExponentialHistogram[N]{
		Temporality: metricdata.CumulativeTemporality, DataPoints: points}}
}

// TestExponentialHistograms checks that the option turns every histogram of
// the Tracker exponential, on every reader, while the user's own view, the
// user's other histograms (one of them with an llmmetrics name in another
// scope) and the Tracker's counters keep their aggregations.
func TestExponentialHistograms(t *testing.T) {
	ctx := context.Background()
	for _, role := range []Role{RoleServer, RoleClient} {
		t.Run(role.String(), func(t *testing.T) {
			r1, r2 := sdkmetric.NewManualReader(), sdkmetric.NewManualReader()
			userView := sdkmetric.NewView(sdkmetric.Instrument{Name: "app.queue.wait"},
				sdkmetric.Stream{Aggregation: sdkmetric.AggregationExplicitBucketHistogram{Boundaries: []float64{1, 2, 3}}})
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r1), sdkmetric.WithReader(r2),
				sdkmetric.WithView(userView), ExponentialHistograms())
			t.Cleanup(func() { _ = mp.Shutdown(ctx) })
			tr, err := NewTracker(WithMeterProvider(mp), WithRole(role), WithAttributes(baseAttrs...))
			require.NoError(t, err)
			names := role.MetricNames()

			app := mp.Meter("example.com/app")
			wait, err := app.Float64Histogram("app.queue.wait", metric.WithUnit("s"))
			require.NoError(t, err)
			sameName, err := app.Float64Histogram(names.TTFT, metric.WithUnit("s"))
			require.NoError(t, err)
			wait.Record(ctx, 2.5)
			sameName.Record(ctx, 0.25)

			// Powers of two, whose buckets are exact: TTFT 2^-2 s, one gap of
			// 2^-2 s, TPOT 2^-2 s (N = 2), E2EL 2^-1 s; usage 2^3 in, 2^1 out.
			t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			req := tr.StartAt(ctx, t0)
			req.ChunkAt(t0.Add(250*time.Millisecond), 1)
			req.ChunkAt(t0.Add(500*time.Millisecond), 1)
			req.SetUsage(8, 2)
			req.EndAt(t0.Add(600*time.Millisecond), nil)

			base := attribute.NewSet(baseAttrs...)
			want := []metricdata.Metrics{
				expoMetric(names.TTFT, "s", expoPoint(base, 0.25, -2)),
				expoMetric(names.ITL, "s", expoPoint(base, 0.25, -2)),
				expoMetric(names.TPOT, "s", expoPoint(base, 0.25, -2)),
				expoMetric(names.E2EL, "s", expoPoint(base, 0.5, -1)),
			}
			if role == RoleClient {
				want = append(want, expoMetric(names.TokenUsage, "{token}",
					expoPoint(set(semconv.GenAITokenTypeInput), int64(8), 3),
					expoPoint(set(semconv.GenAITokenTypeOutput), int64(2), 1)))
			}
			for i, r := range []*sdkmetric.ManualReader{r1, r2} {
				var rm metricdata.ResourceMetrics
				require.NoError(t, r.Collect(ctx, &rm))
				got := map[string]map[string]metricdata.Metrics{}
				for _, sm := range rm.ScopeMetrics {
					got[sm.Scope.Name] = map[string]metricdata.Metrics{}
					for _, m := range sm.Metrics {
						got[sm.Scope.Name][m.Name] = m
					}
				}
				for _, w := range want {
					m, ok := got[ScopeName][w.Name]
					if assert.True(t, ok, "reader %d: %s missing", i, w.Name) {
						m.Description = ""
						metricdatatest.AssertEqual(t, w, m, metricdatatest.IgnoreTimestamp())
					}
				}
				for _, name := range []string{names.Requests, names.Tokens, names.Active} {
					assert.IsType(t, metricdata.Sum[int64]{}, got[ScopeName][name].Data, "reader %d: %s", i, name)
				}
				userWait, ok := got["example.com/app"]["app.queue.wait"].Data.(metricdata.Histogram[float64])
				if assert.True(t, ok, "reader %d: the user's view must still apply", i) {
					assert.Equal(t, []float64{1, 2, 3}, userWait.DataPoints[0].Bounds)
					assert.Equal(t, []uint64{0, 0, 1, 0}, userWait.DataPoints[0].BucketCounts)
				}
				// The same name in another scope is not this library's.
				userTTFT, ok := got["example.com/app"][names.TTFT].Data.(metricdata.Histogram[float64])
				if assert.True(t, ok, "reader %d: another scope's histogram must stay explicit", i) {
					assert.Equal(t, []float64{0, 5, 10, 25, 50, 75, 100, 250, 500, 750, 1000, 2500, 5000, 7500, 10000},
						userTTFT.DataPoints[0].Bounds, "the SDK's default boundaries")
				}
			}
		})
	}
}
