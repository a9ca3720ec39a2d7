package llmmetricstest

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// record makes a few instruments of each kind and records known values.
func record(t *testing.T, mp metric.MeterProvider) {
	t.Helper()
	ctx := context.Background()
	meter := mp.Meter("test")
	a := metric.WithAttributes(attribute.String("model", "a"), attribute.String("outcome", "ok"))
	b := metric.WithAttributes(attribute.String("model", "b"), attribute.String("outcome", "ok"))
	bErr := metric.WithAttributes(attribute.String("model", "b"), attribute.String("outcome", "error"))

	h, err := meter.Float64Histogram("ttft", metric.WithUnit("s"), metric.WithDescription("time to first token"),
		metric.WithExplicitBucketBoundaries(0.1, 0.5, 1))
	require.NoError(t, err)
	h.Record(ctx, 0.05, a) // bucket 0
	h.Record(ctx, 0.3, a)  // bucket 1
	h.Record(ctx, 2, a)    // bucket 3 (+Inf)
	h.Record(ctx, 0.5, b)  // bucket 1 (bounds are inclusive upper limits)

	ih, err := meter.Int64Histogram("tokens", metric.WithUnit("{token}"), metric.WithExplicitBucketBoundaries(10, 100))
	require.NoError(t, err)
	ih.Record(ctx, 7, a)
	ih.Record(ctx, 70, a)

	c, err := meter.Int64Counter("requests", metric.WithUnit("{request}"))
	require.NoError(t, err)
	c.Add(ctx, 3, a)
	c.Add(ctx, 2, b)
	c.Add(ctx, 1, bErr)

	fc, err := meter.Float64Counter("cost", metric.WithUnit("USD"))
	require.NoError(t, err)
	fc.Add(ctx, 0.25, a)
	fc.Add(ctx, 0.5, a)

	ud, err := meter.Int64UpDownCounter("active")
	require.NoError(t, err)
	ud.Add(ctx, 5)
	ud.Add(ctx, -2)

	g, err := meter.Float64Gauge("temp")
	require.NoError(t, err)
	g.Record(ctx, 1.5)
	g.Record(ctx, 2.5)
}

func TestCollector(t *testing.T) {
	mp, col := NewMeterProvider()
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	record(t, mp)
	m := col.Collect(t)

	model := func(s string) attribute.KeyValue { return attribute.String("model", s) }
	okAttr := attribute.String("outcome", "ok")

	t.Run("kinds units descriptions", func(t *testing.T) {
		want := map[string]Kind{"ttft": KindHistogram, "tokens": KindHistogram, "requests": KindCounter,
			"cost": KindCounter, "active": KindUpDownCounter, "temp": KindGauge}
		for name, k := range want {
			assert.Equal(t, k, m[name].Kind, name)
		}
		assert.Equal(t, "s", m["ttft"].Unit)
		assert.Equal(t, "time to first token", m["ttft"].Description)
		assert.Equal(t, "test", m["ttft"].Scope)
		assert.Equal(t, []string{"active", "cost", "requests", "temp", "tokens", "ttft"}, m.Names())
	})

	t.Run("histogram readers", func(t *testing.T) {
		tests := []struct {
			name    string
			attrs   []attribute.KeyValue
			count   uint64
			sum     float64
			buckets []uint64
		}{
			{"all points", nil, 4, 2.85, []uint64{1, 2, 0, 1}},
			{"model a", []attribute.KeyValue{model("a")}, 3, 2.35, []uint64{1, 1, 0, 1}},
			{"model b and ok", []attribute.KeyValue{model("b"), okAttr}, 1, 0.5, []uint64{0, 1, 0, 0}},
			{"no match", []attribute.KeyValue{model("c")}, 0, 0, nil},
			{"same key other type", []attribute.KeyValue{attribute.Int("model", 1)}, 0, 0, nil},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				assert.Equal(t, tt.count, m.Count("ttft", tt.attrs...))
				assert.InDelta(t, tt.sum, m.Sum("ttft", tt.attrs...), 1e-12)
				assert.Equal(t, tt.buckets, m.Buckets("ttft", tt.attrs...))
			})
		}
		assert.Equal(t, []float64{0.1, 0.5, 1}, m.Bounds("ttft"))
		assert.Nil(t, m.Bounds("requests"), "a counter has no bounds")
	})

	t.Run("int64 histogram", func(t *testing.T) {
		assert.Equal(t, uint64(2), m.Count("tokens"))
		assert.Equal(t, 77.0, m.Sum("tokens"))
		assert.Equal(t, []uint64{1, 1, 0}, m.Buckets("tokens"))
		p := m.Points("tokens")
		require.Len(t, p, 1)
		assert.Equal(t, 7.0, p[0].Min)
		assert.Equal(t, 70.0, p[0].Max)
		assert.Equal(t, map[string]string{"model": "a", "outcome": "ok"}, p[0].Attrs())
	})

	t.Run("counter readers", func(t *testing.T) {
		tests := []struct {
			name  string
			attrs []attribute.KeyValue
			want  float64
		}{
			{"total", nil, 6},
			{"model b", []attribute.KeyValue{model("b")}, 3},
			{"outcome ok", []attribute.KeyValue{okAttr}, 5},
			{"outcome error", []attribute.KeyValue{attribute.String("outcome", "error")}, 1},
			{"no match", []attribute.KeyValue{attribute.String("outcome", "canceled")}, 0},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				assert.Equal(t, tt.want, m.Value("requests", tt.attrs...))
			})
		}
		assert.Equal(t, 0.75, m.Value("cost"))
		assert.Equal(t, 3.0, m.Value("active"))
		assert.Equal(t, 2.5, m.Value("temp"), "a gauge keeps the last value")
		assert.Equal(t, uint64(0), m.Count("requests"), "Count reads histograms only")
	})

	t.Run("split by attribute", func(t *testing.T) {
		assert.Equal(t, map[string]float64{"ok": 5, "error": 1}, m.SumBy("requests", "outcome"))
		assert.Equal(t, map[string]float64{"ok": 2, "error": 1}, m.SumBy("requests", "outcome", model("b")))
		assert.Equal(t, map[string]uint64{"a": 3, "b": 1}, m.CountBy("ttft", "model"))
		assert.InDelta(t, 2.35, m.SumBy("ttft", "model")["a"], 1e-12)
		assert.Empty(t, m.SumBy("active", "model"), "points without the key are left out")
	})

	t.Run("missing metric", func(t *testing.T) {
		assert.False(t, m.Has("nope"))
		assert.True(t, m.Has("ttft"))
		assert.Zero(t, m.Count("nope"))
		assert.Zero(t, m.Value("nope"))
		assert.Nil(t, m.Buckets("nope"))
	})

	t.Run("String", func(t *testing.T) {
		s := m.String()
		assert.Contains(t, s, "ttft (histogram, unit \"s\")\n")
		assert.Contains(t, s, "model=b,outcome=error: value=1\n")
		assert.True(t, strings.HasPrefix(s, "active (updowncounter"), s)
	})
}

func TestCollectorCumulative(t *testing.T) {
	mp, col := NewMeterProvider()
	c, err := mp.Meter("x").Int64Counter("n")
	require.NoError(t, err)
	c.Add(context.Background(), 2)
	assert.Equal(t, 2.0, col.Collect(t).Value("n"))
	c.Add(context.Background(), 3)
	assert.Equal(t, 5.0, col.Collect(t).Value("n"), "a second collection sees the running total")
}

func TestCollectorOwnProvider(t *testing.T) {
	col := NewCollector()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(col.Reader()))
	c, err := mp.Meter("x").Float64Counter("n")
	require.NoError(t, err)
	c.Add(context.Background(), 1.5)
	assert.Equal(t, 1.5, col.Collect(t).Value("n"))
}

func TestCollectorMergesScopes(t *testing.T) {
	mp, col := NewMeterProvider()
	for _, scope := range []string{"one", "two"} {
		c, err := mp.Meter(scope).Int64Counter("n")
		require.NoError(t, err)
		c.Add(context.Background(), 4)
	}
	m := col.Collect(t)
	assert.Len(t, m["n"].Points, 2)
	assert.Equal(t, 8.0, m.Value("n"))
}

func TestCollectorShutdownFails(t *testing.T) {
	mp, col := NewMeterProvider()
	require.NoError(t, mp.Shutdown(context.Background()))
	_, err := col.Read(context.Background())
	assert.Error(t, err, "reading a shut-down provider fails")
}

func TestCollectorExponentialHistogram(t *testing.T) {
	// Scale 0 (MaxScale 0): base 2, positive bucket i holds (2^i, 2^(i+1)].
	mp, col := NewMeterProvider(sdkmetric.WithView(sdkmetric.NewView(
		sdkmetric.Instrument{Name: "exp*"},
		sdkmetric.Stream{Aggregation: sdkmetric.AggregationBase2ExponentialHistogram{MaxSize: 160, MaxScale: 0}},
	)))
	ctx := context.Background()
	meter := mp.Meter("test")
	a := metric.WithAttributes(attribute.String("model", "a"))
	h, err := meter.Float64Histogram("exp.latency", metric.WithUnit("s"))
	require.NoError(t, err)
	// 1 → index −1 (0.5, 1]; 2 → 0 (1, 2]; 3 and 4 → 1 (2, 4]; 0 → the zero
	// bucket; −3 → negative index 1 [−4, −2).
	for _, v := range []float64{1, 2, 3, 4, 0, -3} {
		h.Record(ctx, v, a)
	}
	ih, err := meter.Int64Histogram("exp.tokens")
	require.NoError(t, err)
	ih.Record(ctx, 5) // index 2 (4, 8]
	ih.Record(ctx, 6)

	m := col.Collect(t)
	require.True(t, m.Has("exp.latency"), m.String())
	assert.Equal(t, KindExponentialHistogram, m["exp.latency"].Kind)
	assert.Equal(t, "exponentialhistogram", m["exp.latency"].Kind.String())
	assert.Equal(t, uint64(6), m.Count("exp.latency", attribute.String("model", "a")))
	assert.Equal(t, uint64(0), m.Count("exp.latency", attribute.String("model", "b")))
	assert.Equal(t, 7.0, m.Sum("exp.latency"))
	assert.Nil(t, m.Buckets("exp.latency"), "no explicit buckets")
	require.Len(t, m["exp.latency"].Points, 1)
	p := m["exp.latency"].Points[0]
	assert.Equal(t, -3.0, p.Min)
	assert.Equal(t, 4.0, p.Max)
	assert.Equal(t, &ExponentialBuckets{
		Scale: 0, ZeroCount: 1,
		PositiveOffset: -1, Positive: []uint64{1, 1, 2},
		NegativeOffset: 1, Negative: []uint64{1},
	}, p.Exponential)
	assert.Equal(t, 2.0, p.Exponential.Base())
	lo, hi := p.Exponential.PositiveBounds(0)
	assert.Equal(t, [2]float64{0.5, 1}, [2]float64{lo, hi})
	lo, hi = p.Exponential.PositiveBounds(2)
	assert.Equal(t, [2]float64{2, 4}, [2]float64{lo, hi})
	assert.Contains(t, m.String(), "count=6 sum=7 scale=0 zero=1 positive=-1[1 1 2] negative=1[1]")

	require.Len(t, m["exp.tokens"].Points, 1)
	p = m["exp.tokens"].Points[0]
	assert.Equal(t, KindExponentialHistogram, m["exp.tokens"].Kind)
	assert.Equal(t, [4]float64{2, 11, 5, 6}, [4]float64{float64(p.Count), p.Sum, p.Min, p.Max})
	assert.Equal(t, int32(2), p.Exponential.PositiveOffset)
	assert.Equal(t, []uint64{2}, p.Exponential.Positive)
}
