package otelsdk

import (
	"context"
	"github.com/llmmetrics/llmmetrics"
	"math"
	"math/rand/v2"
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
	for _, role := range []string{"server", "client"} {
		t.Run(role, func(t *testing.T) {
			r1, r2 := sdkmetric.NewManualReader(), sdkmetric.NewManualReader()
			userView := sdkmetric.NewView(sdkmetric.Instrument{Name: "app.queue.wait"},
				sdkmetric.Stream{Aggregation: sdkmetric.AggregationExplicitBucketHistogram{Boundaries: []float64{1, 2, 3}}})
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r1), sdkmetric.WithReader(r2),
				sdkmetric.WithView(userView), ExponentialHistograms())
			t.Cleanup(func() { _ = mp.Shutdown(ctx) })
			tr, err := llmmetrics.NewTracker(llmmetrics.WithMeterProvider(mp), llmmetrics.WithAttributes(baseAttrs...))
			require.NoError(t, err)
			client := role == "client"
			names := llmmetrics.ServerMetricNames()
			if client {
				names = llmmetrics.ClientMetricNames()
			}

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
			start := tr.StartAt
			if client {
				start = tr.StartClientAt
			}
			req := start(ctx, t0)
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
			if client {
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
					m, ok := got[llmmetrics.ScopeName][w.Name]
					if assert.True(t, ok, "reader %d: %s missing", i, w.Name) {
						m.Description = ""
						metricdatatest.AssertEqual(t, w, m, metricdatatest.IgnoreTimestamp())
					}
				}
				for _, name := range []string{names.Requests, names.Tokens, names.Active} {
					assert.IsType(t, metricdata.Sum[int64]{}, got[llmmetrics.ScopeName][name].Data, "reader %d: %s", i, name)
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

// latencyMix is a known latency distribution: a mixture of lognormal and
// Pareto components, in seconds.
type latencyMix []latencyPart

type latencyPart struct {
	weight float64 // share of the samples; the weights of a mix sum to 1
	// lognormal: median and sigma (of the log); pareto: scale xm and shape
	// alpha when alpha > 0.
	median, sigma float64
	xm, alpha     float64
}

func (m latencyMix) sample(rng *rand.Rand) float64 {
	u := rng.Float64()
	p := m[len(m)-1]
	for _, q := range m {
		if u < q.weight {
			p = q
			break
		}
		u -= q.weight
	}
	if p.alpha > 0 {
		return p.xm / math.Pow(1-rng.Float64(), 1/p.alpha) // 1−U is in (0, 1]
	}
	return p.median * math.Exp(p.sigma*rng.NormFloat64())
}

func lognormal(median, sigma float64) latencyMix {
	return latencyMix{{weight: 1, median: median, sigma: sigma}}
}

// accuracyCases are the TTFT and E2EL distributions of the accuracy test
// (E2EL = TTFT + a decode time drawn from decode).
var accuracyCases = []struct {
	name         string
	ttft, decode latencyMix
}{
	{"lognormal", lognormal(0.25, 0.6), lognormal(4, 0.5)},
	{"bimodal, prefix-cache hits", latencyMix{
		{weight: 0.6, median: 0.06, sigma: 0.3},
		{weight: 0.4, median: 0.7, sigma: 0.35},
	}, lognormal(2, 0.6)},
	{"Pareto tail", latencyMix{
		{weight: 0.9, median: 0.15, sigma: 0.4},
		{weight: 0.1, xm: 0.3, alpha: 1.8},
	}, latencyMix{
		{weight: 0.85, median: 3, sigma: 0.4},
		{weight: 0.15, xm: 4, alpha: 2},
	}},
	{"queueing tail beyond 10 s", latencyMix{
		{weight: 0.96, median: 0.5, sigma: 0.5},
		{weight: 0.04, median: 14, sigma: 0.35},
	}, lognormal(6, 0.5)},
}

// TestExponentialAccuracy feeds 20,000 requests with known heavy-tailed
// TTFT and E2EL distributions through two server-role Trackers, one with
// ExponentialHistograms and one with the default explicit buckets, reads
// p50/p90/p99 back from the exported histograms the way Prometheus'
// histogram_quantile does, and compares them with Summarize's exact values
// over the same Records. The exponential estimate must be within 2%; the
// explicit-bucket error is logged beside it (go test -run
// TestExponentialAccuracy -v prints the tables of BENCHMARKS.md).
func TestExponentialAccuracy(t *testing.T) {
	const requests = 20000
	ctx := context.Background()
	for i, c := range accuracyCases {
		t.Run(c.name, func(t *testing.T) {
			expoReader, explicitReader := sdkmetric.NewManualReader(), sdkmetric.NewManualReader()
			expoMP := sdkmetric.NewMeterProvider(sdkmetric.WithReader(expoReader), ExponentialHistograms())
			explicitMP := sdkmetric.NewMeterProvider(sdkmetric.WithReader(explicitReader))
			t.Cleanup(func() { _ = expoMP.Shutdown(ctx); _ = explicitMP.Shutdown(ctx) })
			expoTr, err := llmmetrics.NewTracker(llmmetrics.WithMeterProvider(expoMP), llmmetrics.WithoutWindow(), llmmetrics.WithoutITL())
			require.NoError(t, err)
			explicitTr, err := llmmetrics.NewTracker(llmmetrics.WithMeterProvider(explicitMP), llmmetrics.WithoutWindow(), llmmetrics.WithoutITL())
			require.NoError(t, err)

			rng := rand.New(rand.NewPCG(uint64(i)+1, 14))
			t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			records := make([]llmmetrics.Record, requests)
			for n := range records {
				start := t0.Add(time.Duration(n) * 100 * time.Millisecond)
				first := start.Add(seconds(c.ttft.sample(rng)))
				last := first.Add(seconds(c.decode.sample(rng)))
				for j, tr := range []*llmmetrics.Tracker{expoTr, explicitTr} {
					r := tr.StartAt(ctx, start)
					r.ChunkAt(first, 1)
					r.ChunkAt(last, 255)
					rec := r.EndAt(last, nil)
					if j == 0 {
						records[n] = rec
					}
				}
			}
			sum := llmmetrics.Summarize(records, llmmetrics.SummaryOptions{})
			require.Equal(t, requests, sum.Completed)

			expo, explicit := collect(t, expoReader), collect(t, explicitReader)
			names := llmmetrics.ServerMetricNames()
			var maxExpo, maxExplicit float64
			t.Logf("%s (%d requests)", c.name, requests)
			t.Logf("| metric | exact (Summarize) | exponential | error | explicit buckets | error |")
			t.Logf("|---|---:|---:|---:|---:|---:|")
			for _, m := range []struct {
				label string
				name  string
				dist  llmmetrics.Distribution
			}{{"TTFT", names.TTFT, sum.TTFT}, {"E2EL", names.E2EL, sum.E2EL}} {
				eh, ok := expo[m.name].Data.(metricdata.ExponentialHistogram[float64])
				require.True(t, ok, "%s: want an exponential histogram, got %T", m.name, expo[m.name].Data)
				require.Len(t, eh.DataPoints, 1)
				ep := eh.DataPoints[0]
				require.EqualValues(t, requests, ep.Count)
				bh, ok := explicit[m.name].Data.(metricdata.Histogram[float64])
				require.True(t, ok, "%s: want an explicit-bucket histogram, got %T", m.name, explicit[m.name].Data)
				require.Len(t, bh.DataPoints, 1)
				bp := bh.DataPoints[0]
				t.Logf("| %s (scale %d: buckets %.1f%% wide) | | | | | |", m.label, ep.Scale, 100*(math.Exp2(math.Exp2(-float64(ep.Scale)))-1))
				for _, p := range []float64{50, 90, 99} {
					exactD, ok := m.dist.Percentile(p)
					require.True(t, ok)
					exact := exactD.Seconds()
					e := nativeQuantile(p/100, ep)
					x := classicQuantile(p/100, bp.Bounds, bp.BucketCounts)
					errE, errX := e/exact-1, x/exact-1
					maxExpo, maxExplicit = max(maxExpo, math.Abs(errE)), max(maxExplicit, math.Abs(errX))
					t.Logf("| p%g | %.4f s | %.4f s | %+.2f%% | %.4f s | %+.1f%% |", p, exact, e, 100*errE, x, 100*errX)
					assert.InEpsilon(t, exact, e, 0.02, "%s p%g from the exponential histogram", m.label, p)
				}
			}
			assert.Greater(t, maxExplicit, maxExpo, "the explicit buckets are expected to be worse on this data")
			if c.name == "queueing tail beyond 10 s" {
				// Prometheus answers the last finite bound for a quantile
				// in the +Inf bucket: the semconv TTFT buckets end at 10 s.
				p99, _ := sum.TTFT.Percentile(99)
				require.Greater(t, p99.Seconds(), 10.0)
				bp := explicit[names.TTFT].Data.(metricdata.Histogram[float64]).DataPoints[0]
				assert.Equal(t, 10.0, classicQuantile(0.99, bp.Bounds, bp.BucketCounts), "p99 TTFT clamped to the last bound")
			}
		})
	}
}

// nativeQuantile estimates the q-quantile (0 ≤ q ≤ 1) of an OpenTelemetry
// exponential histogram point as Prometheus' histogram_quantile does for a
// native histogram (prometheus/prometheus promql/quantile.go,
// HistogramQuantile, since prometheus/prometheus#14677, merged August 2024, in 3.x): rank = q·count; the bucket where
// the cumulative count reaches the rank; and within it exponential
// interpolation, lower·(upper/lower)^fraction, which assumes the
// observations would spread evenly over the buckets of a finer histogram.
// (Before that change, as in the 2.42 of Debian, Prometheus interpolated
// linearly within the bucket; for buckets a few percent wide the two differ
// by less than a tenth of a percent of the value.) The zero
// bucket, [0, ZeroThreshold], is interpolated linearly, as Prometheus does.
// Only positive buckets are read: latencies are never negative.
//
// OpenTelemetry indexes buckets by their lower bound: index i of scale s
// holds (2^(i·2^-s), 2^((i+1)·2^-s)]. (Prometheus indexes by the upper
// bound, hence the exporter's +1.)
func nativeQuantile(q float64, dp metricdata.ExponentialHistogramDataPoint[float64]) float64 {
	if dp.Count == 0 {
		return math.NaN()
	}
	rank := q * float64(dp.Count)
	if rank <= float64(dp.ZeroCount) {
		return dp.ZeroThreshold * rank / float64(dp.ZeroCount)
	}
	cum := float64(dp.ZeroCount)
	width := math.Exp2(-float64(dp.Scale)) // bucket width in log2 units
	for i, c := range dp.PositiveBucket.Counts {
		if c == 0 {
			continue
		}
		cum += float64(c)
		if cum >= rank {
			idx := float64(dp.PositiveBucket.Offset) + float64(i)
			fraction := (rank - (cum - float64(c))) / float64(c)
			return math.Exp2(width * (idx + fraction))
		}
	}
	last := float64(dp.PositiveBucket.Offset) + float64(len(dp.PositiveBucket.Counts))
	return math.Exp2(width * last)
}

// classicQuantile estimates the q-quantile (0 ≤ q ≤ 1) of an explicit-bucket
// histogram (upper bounds and per-bucket counts, the last bucket +Inf) as
// Prometheus' histogram_quantile does for a classic histogram
// (prometheus/prometheus promql/quantile.go, bucketQuantile): rank = q·count,
// the first bucket whose cumulative count reaches it, linear interpolation
// from its lower bound (0 for the first bucket); a quantile in the +Inf
// bucket is the last finite bound.
func classicQuantile(q float64, bounds []float64, counts []uint64) float64 {
	var total uint64
	for _, c := range counts {
		total += c
	}
	if total == 0 {
		return math.NaN()
	}
	rank := q * float64(total)
	var cum float64
	for b, c := range counts {
		if cum+float64(c) < rank {
			cum += float64(c)
			continue
		}
		if b == len(bounds) { // the +Inf bucket
			return bounds[len(bounds)-1]
		}
		lo := 0.0
		if b > 0 {
			lo = bounds[b-1]
		}
		return lo + (bounds[b]-lo)*(rank-cum)/float64(c)
	}
	return bounds[len(bounds)-1]
}

// TestQuantileEstimators checks the test's two histogram_quantile
// estimators on hand-computed points.
func TestQuantileEstimators(t *testing.T) {
	// Scale 0: bucket i is (2^i, 2^(i+1)].
	expo := func(zero uint64, offset int32, counts ...uint64) metricdata.ExponentialHistogramDataPoint[float64] {
		dp := metricdata.ExponentialHistogramDataPoint[float64]{ZeroCount: zero, ZeroThreshold: 0.5,
			PositiveBucket: metricdata.ExponentialBucket{Offset: offset, Counts: counts}}
		dp.Count = zero
		for _, c := range counts {
			dp.Count += c
		}
		return dp
	}
	for _, tc := range []struct {
		name string
		q    float64
		dp   metricdata.ExponentialHistogramDataPoint[float64]
		want float64
	}{
		// Prometheus' own example: the middle of (1,2] is 2^0.5.
		{"middle of (1,2]", 0.5, expo(0, 0, 4), math.Sqrt2},
		{"top of (1,2]", 1, expo(0, 0, 4), 2},
		// rank 3 of 4: one into the second bucket (2,4] of two: 2·2^0.5.
		{"second bucket", 0.75, expo(0, 0, 2, 2), 2 * math.Sqrt2},
		{"empty buckets skipped", 0.75, expo(0, -1, 2, 0, 2), 2 * math.Sqrt2},
		// rank 1 of 4 in a zero bucket of 2: linear, half of 0.5.
		{"zero bucket", 0.25, expo(2, 0, 2), 0.25},
	} {
		t.Run("native/"+tc.name, func(t *testing.T) {
			assert.InDelta(t, tc.want, nativeQuantile(tc.q, tc.dp), 1e-12)
		})
	}
	bounds := []float64{1, 2, 4}
	for _, tc := range []struct {
		name   string
		q      float64
		counts []uint64
		want   float64
	}{
		{"first bucket from 0", 0.25, []uint64{4, 4, 0, 0}, 0.5},   // rank 2 of 4 in [0,1]
		{"second bucket", 0.75, []uint64{10, 10, 0, 0}, 1.5},       // rank 15: 5 of 10 into (1,2]
		{"+Inf bucket: last bound", 0.99, []uint64{1, 0, 0, 9}, 4}, // clamped
		{"rank at a bucket's top", 0.5, []uint64{2, 0, 2, 0}, 1},   // rank 2: all of [0,1]
		{"empty bucket skipped", 0.75, []uint64{2, 0, 2, 0}, 3},    // rank 3: 1 of 2 into (2,4]
	} {
		t.Run("classic/"+tc.name, func(t *testing.T) {
			assert.InDelta(t, tc.want, classicQuantile(tc.q, bounds, tc.counts), 1e-12)
		})
	}
}

// TestChunkExponentialDoesNotAllocate: once the histogram has seen the
// range of the gaps, an exponential Record allocates nothing either.
func TestChunkExponentialDoesNotAllocate(t *testing.T) {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()), ExponentialHistograms())
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	tr, err := llmmetrics.NewTracker(llmmetrics.WithMeterProvider(mp), llmmetrics.WithoutITL())
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(3, 4))
	gaps := make([]time.Duration, 1024)
	for i := range gaps {
		gaps[i] = seconds(0.02 * math.Exp(0.5*rng.NormFloat64()))
	}
	at := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	r := tr.StartAt(context.Background(), at)
	i := 0
	chunk := func() {
		at = at.Add(gaps[i%len(gaps)])
		r.ChunkAt(at, 1)
		i++
	}
	for range len(gaps) { // the first pass sets the scale and the bucket array
		chunk()
	}
	assert.Zero(t, testing.AllocsPerRun(len(gaps), chunk))
}
