package llmmetrics

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

var baseAttrs = []attribute.KeyValue{
	semconv.GenAIOperationNameChat,
	semconv.GenAIProviderNameOpenAI,
	semconv.GenAIRequestModel("m1"),
}

// collect returns the metrics of the Tracker's scope by name.
func collect(t *testing.T, r *sdkmetric.ManualReader) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.Collect(context.Background(), &rm))
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		require.Equal(t, ScopeName, sm.Scope.Name)
		require.Equal(t, version, sm.Scope.Version)
		require.Equal(t, semconv.SchemaURL, sm.Scope.SchemaURL)
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// hist builds the expected histogram point of values over bounds. Buckets
// are upper-inclusive: bucket i counts bounds[i-1] < v ≤ bounds[i].
func hist(attrs attribute.Set, bounds []float64, values ...float64) metricdata.HistogramDataPoint[float64] {
	p := metricdata.HistogramDataPoint[float64]{Attributes: attrs, Bounds: bounds, BucketCounts: make([]uint64, len(bounds)+1)}
	lo, hi := values[0], values[0]
	for _, v := range values {
		p.Count++
		p.Sum += v
		lo, hi = min(lo, v), max(hi, v)
		b := 0
		for b < len(bounds) && v > bounds[b] {
			b++
		}
		p.BucketCounts[b]++
	}
	p.Min, p.Max = metricdata.NewExtrema(lo), metricdata.NewExtrema(hi)
	return p
}

func set(kvs ...attribute.KeyValue) attribute.Set {
	return attribute.NewSet(append(append([]attribute.KeyValue{}, baseAttrs...), kvs...)...)
}

func histogram(name, unit string, points ...metricdata.HistogramDataPoint[float64]) metricdata.Metrics {
	return metricdata.Metrics{Name: name, Unit: unit, Data: metricdata.Histogram[float64]{
		Temporality: metricdata.CumulativeTemporality, DataPoints: points}}
}

func intSum(name, unit string, monotonic bool, points ...metricdata.DataPoint[int64]) metricdata.Metrics {
	return metricdata.Metrics{Name: name, Unit: unit, Data: metricdata.Sum[int64]{
		Temporality: metricdata.CumulativeTemporality, IsMonotonic: monotonic, DataPoints: points}}
}

// oneStream plays the timeline used by the instrument tests:
// role chunk at 50 ms (0 tokens), tokens at 100 ms (1), 130 ms (2) and
// 190 ms (1), usage 10 in / 5 out, End at 200 ms.
// TTFT 100 ms; N = 5 (usage overrides the chunk sum 4); TPOT = 90 ms / 4 =
// 22.5 ms; ITL = [30 ms, 60 ms]; E2EL = 190 ms (the last token).
func oneStream(tr *Tracker, err error) Record {
	return oneStreamAs(tr, sideServer, err)
}

// oneStreamAs is oneStream measured in role.
func oneStreamAs(tr *Tracker, role side, err error) Record {
	r := tr.startAs(context.Background(), role, at(0), nil)
	r.ChunkAt(at(50), 0)
	r.ChunkAt(at(100), 1)
	r.ChunkAt(at(130), 2)
	r.ChunkAt(at(190), 1)
	r.SetUsage(10, 5)
	return r.EndAt(at(200), err)
}

func TestTrackerInstrumentsServer(t *testing.T) {
	tr, reader := newTestTracker(t, WithSLO(SLO{TTFT: 100 * time.Millisecond}))
	rec := oneStream(tr, nil)

	assert.Equal(t, Record{
		Start: at(0), FirstToken: at(100), FirstOutput: at(100), LastToken: at(190), End: at(200),
		InputTokens: 10, OutputTokens: 5, Chunks: 3,
		ITL:    []time.Duration{30 * time.Millisecond, 60 * time.Millisecond},
		MaxITL: 60 * time.Millisecond, Outcome: OutcomeOK,
	}, rec)
	tpot, _ := rec.TPOT()
	assert.Equal(t, 22500*time.Microsecond, tpot)

	got := collect(t, reader)
	base := set()
	// The instruments both roles share by name carry llmmetrics.role.
	shared := set(RoleKey.String("server"))
	okMet := []attribute.KeyValue{RoleKey.String("server"), OutcomeKey.String("ok"), SLOMetKey.Bool(true)}
	want := []metricdata.Metrics{
		histogram("gen_ai.server.time_to_first_token", "s", hist(base, serverTTFTBuckets, 0.1)),
		histogram("llmmetrics.time_to_first_output_token", "s", hist(shared, serverTTFTBuckets, 0.1)),
		histogram("gen_ai.server.time_per_output_token", "s", hist(base, tpotBuckets, 0.0225)),
		histogram("llmmetrics.inter_token_latency", "s", hist(base, itlBuckets, 0.03, 0.06)),
		histogram("gen_ai.server.request.duration", "s", hist(base, durationBuckets, 0.19)),
		intSum("llmmetrics.tokens", "{token}", true,
			metricdata.DataPoint[int64]{Attributes: set(append(okMet, semconv.GenAITokenTypeInput)...), Value: 10},
			metricdata.DataPoint[int64]{Attributes: set(append(okMet, semconv.GenAITokenTypeOutput)...), Value: 5}),
		intSum("llmmetrics.requests", "{request}", true,
			metricdata.DataPoint[int64]{Attributes: set(okMet...), Value: 1}),
		intSum("llmmetrics.requests.active", "{request}", false,
			metricdata.DataPoint[int64]{Attributes: shared, Value: 0}),
	}
	assert.Len(t, got, len(want), "no other instrument")
	for _, w := range want {
		g, ok := got[w.Name]
		if assert.True(t, ok, "missing %s", w.Name) {
			g.Description = "" // checked below for two of them
			metricdatatest.AssertEqual(t, w, g, metricdatatest.IgnoreTimestamp(), metricdatatest.IgnoreExemplars())
		}
	}
	assert.Equal(t, "Time to generate first token for successful responses.", got["gen_ai.server.time_to_first_token"].Description)
	assert.NotEmpty(t, got["llmmetrics.inter_token_latency"].Description)
}

func TestTrackerInstrumentsClient(t *testing.T) {
	tr, reader := newTestTracker(t)
	oneStreamAs(tr, sideClient, nil)
	got := collect(t, reader)
	base := set()
	role := RoleKey.String("client")
	shared := set(role)
	ok := OutcomeKey.String("ok") // no SLO: no slo_met attribute
	want := []metricdata.Metrics{
		histogram("gen_ai.client.operation.time_to_first_chunk", "s", hist(base, durationBuckets, 0.1)),
		histogram("llmmetrics.time_to_first_output_token", "s", hist(shared, serverTTFTBuckets, 0.1)),
		histogram("llmmetrics.time_per_output_token", "s", hist(base, tpotBuckets, 0.0225)),
		histogram("gen_ai.client.operation.time_per_output_chunk", "s", hist(base, itlBuckets, 0.03, 0.06)),
		histogram("gen_ai.client.operation.duration", "s", hist(base, durationBuckets, 0.19)),
		{Name: "gen_ai.client.token.usage", Unit: "{token}", Data: metricdata.Histogram[int64]{
			Temporality: metricdata.CumulativeTemporality,
			DataPoints: []metricdata.HistogramDataPoint[int64]{
				{Attributes: set(semconv.GenAITokenTypeInput), Count: 1, Sum: 10, Bounds: tokenBuckets,
					BucketCounts: []uint64{0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
					Min:          metricdata.NewExtrema[int64](10), Max: metricdata.NewExtrema[int64](10)},
				{Attributes: set(semconv.GenAITokenTypeOutput), Count: 1, Sum: 5, Bounds: tokenBuckets,
					BucketCounts: []uint64{0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
					Min:          metricdata.NewExtrema[int64](5), Max: metricdata.NewExtrema[int64](5)},
			}}},
		intSum("llmmetrics.tokens", "{token}", true,
			metricdata.DataPoint[int64]{Attributes: set(role, ok, semconv.GenAITokenTypeInput), Value: 10},
			metricdata.DataPoint[int64]{Attributes: set(role, ok, semconv.GenAITokenTypeOutput), Value: 5}),
		intSum("llmmetrics.requests", "{request}", true, metricdata.DataPoint[int64]{Attributes: set(role, ok), Value: 1}),
		intSum("llmmetrics.requests.active", "{request}", false, metricdata.DataPoint[int64]{Attributes: shared, Value: 0}),
	}
	assert.Len(t, got, len(want), "no other instrument")
	for _, w := range want {
		g := got[w.Name]
		g.Description = ""
		metricdatatest.AssertEqual(t, w, g, metricdatatest.IgnoreTimestamp(), metricdatatest.IgnoreExemplars())
	}
}

func TestTrackerOutcomes(t *testing.T) {
	streamErr := errors.New("upstream reset")
	tests := []struct {
		name    string
		err     error
		outcome Outcome
		errType string // "" when the error.type attribute is absent
	}{
		{"nil error is OK", nil, OutcomeOK, ""},
		{"context.Canceled is Canceled", context.Canceled, OutcomeCanceled, "canceled"},
		{"wrapped DeadlineExceeded is Canceled", fmt.Errorf("read: %w", context.DeadlineExceeded), OutcomeCanceled, "timeout"},
		{"any other error is Error", streamErr, OutcomeError, "*errors.errorString"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, reader := newTestTracker(t, WithSLO(SLO{E2EL: time.Second}))
			rec := oneStream(tr, tt.err)
			assert.Equal(t, tt.outcome, rec.Outcome)
			got := collect(t, reader)

			var reqAttrs []attribute.KeyValue
			var durAttrs []attribute.KeyValue
			if tt.errType != "" {
				reqAttrs = append(reqAttrs, semconv.ErrorTypeKey.String(tt.errType))
				durAttrs = append(durAttrs, semconv.ErrorTypeKey.String(tt.errType))
			}
			// Only an OK request can meet the SLO.
			reqAttrs = append(reqAttrs, RoleKey.String("server"), OutcomeKey.String(tt.outcome.String()), SLOMetKey.Bool(tt.outcome == OutcomeOK))
			metricdatatest.AssertEqual(t,
				intSum("llmmetrics.requests", "{request}", true, metricdata.DataPoint[int64]{Attributes: set(reqAttrs...), Value: 1}),
				withoutDescription(got["llmmetrics.requests"]), metricdatatest.IgnoreTimestamp())
			metricdatatest.AssertEqual(t,
				histogram("gen_ai.server.request.duration", "s", hist(set(durAttrs...), durationBuckets, 0.19)),
				withoutDescription(got["gen_ai.server.request.duration"]), metricdatatest.IgnoreTimestamp(), metricdatatest.IgnoreExemplars())
			// TPOT exists for successful responses only; TTFT was recorded when the first token came.
			_, hasTPOT := got["gen_ai.server.time_per_output_token"]
			tpotPoints := 0
			if hasTPOT {
				tpotPoints = len(got["gen_ai.server.time_per_output_token"].Data.(metricdata.Histogram[float64]).DataPoints)
			}
			assert.Equal(t, tt.outcome == OutcomeOK, tpotPoints == 1, "TPOT recorded only for OK")
			assert.Len(t, got["gen_ai.server.time_to_first_token"].Data.(metricdata.Histogram[float64]).DataPoints, 1)
		})
	}
}

func withoutDescription(m metricdata.Metrics) metricdata.Metrics {
	m.Description = ""
	return m
}

func TestRequestCachedInputTokens(t *testing.T) {
	errs := otelErrors(t)
	tr, reader := newTestTracker(t, WithSLO(SLO{E2EL: time.Second}))
	r := tr.StartAt(context.Background(), at(0))
	r.SetUsage(2000, 1)
	r.SetCachedInputTokens(1152, 64)
	r.SetCachedInputTokens(-1, 3)    // ignored and reported
	r.SetCachedInputTokens(1500, 40) // the last report wins
	r.ChunkAt(at(10), 1)
	rec := r.EndAt(at(20), nil)
	r.SetCachedInputTokens(7, 7) // after End: ignored
	assert.Equal(t, 2000, rec.InputTokens, "input stays the whole prompt")
	assert.Equal(t, 1500, rec.CachedInputTokens)
	assert.Equal(t, 40, rec.CacheWriteInputTokens)
	require.Len(t, errs(), 1)
	assert.ErrorContains(t, errs()[0], "negative usage")

	// A second request that reports no cache adds nothing to the counters.
	r2 := tr.StartAt(context.Background(), at(0))
	r2.SetUsage(500, 1)
	r2.ChunkAt(at(10), 1)
	r2.EndAt(at(20), nil)

	// The counters carry the attributes of the input tokens series, so
	// rate(cached) / rate(tokens{input}) = 1500 / 2500 = 0.6.
	got := collect(t, reader)
	inAttrs := set(RoleKey.String("server"), OutcomeKey.String("ok"), SLOMetKey.Bool(true), semconv.GenAITokenTypeInput)
	metricdatatest.AssertEqual(t,
		intSum(metricCachedInputTokens, "{token}", true, metricdata.DataPoint[int64]{Attributes: inAttrs, Value: 1500}),
		withoutDescription(got[metricCachedInputTokens]), metricdatatest.IgnoreTimestamp())
	metricdatatest.AssertEqual(t,
		intSum(metricCacheWriteInputTokens, "{token}", true, metricdata.DataPoint[int64]{Attributes: inAttrs, Value: 40}),
		withoutDescription(got[metricCacheWriteInputTokens]), metricdatatest.IgnoreTimestamp())
	var input int64
	for _, p := range got[metricTokens].Data.(metricdata.Sum[int64]).DataPoints {
		if v, _ := p.Attributes.Value(semconv.GenAITokenTypeKey); v.AsString() == "input" {
			input += p.Value
		}
	}
	assert.Equal(t, int64(2500), input)
	assert.InDelta(t, 0.6, float64(counterTotal(t, got, metricCachedInputTokens))/float64(input), 1e-15)
}

func TestRequestEdgeCases(t *testing.T) {
	t.Run("zero-token chunks move nothing", func(t *testing.T) {
		tr, _ := newTestTracker(t)
		r := tr.StartAt(context.Background(), at(0))
		r.ChunkAt(at(5), 0) // role-only delta
		r.ChunkAt(at(10), 1)
		r.ChunkAt(at(15), 0) // keep-alive
		r.ChunkAt(at(30), 1)
		rec := r.EndAt(at(40), nil)
		assert.Equal(t, at(10), rec.FirstToken)
		assert.Equal(t, at(30), rec.LastToken)
		assert.Equal(t, []time.Duration{20 * time.Millisecond}, rec.ITL)
		assert.Equal(t, 2, rec.Chunks)
	})
	t.Run("negative counts are ignored and reported", func(t *testing.T) {
		errs := otelErrors(t)
		tr, _ := newTestTracker(t)
		r := tr.StartAt(context.Background(), at(0))
		r.ChunkAt(at(10), -3)
		r.SetUsage(-1, 4)
		r.setInputTokens(-2)
		r.ChunkAt(at(20), 2)
		rec := r.EndAt(at(30), nil)
		assert.Equal(t, 2, rec.OutputTokens)
		assert.Equal(t, 0, rec.InputTokens)
		assert.Equal(t, at(20), rec.FirstToken, "the negative chunk carried no token")
		reported := errs()
		require.Len(t, reported, 3)
		for _, err := range reported {
			assert.ErrorContains(t, err, "llmmetrics: negative")
		}
	})
	t.Run("clock going backwards never gives a negative gap", func(t *testing.T) {
		tr, _ := newTestTracker(t)
		r := tr.StartAt(context.Background(), at(100))
		r.ChunkAt(at(50), 1)  // before Start: taken as Start
		r.ChunkAt(at(150), 1) // +50 ms
		r.ChunkAt(at(120), 1) // before the previous chunk: taken as 150
		rec := r.EndAt(at(0), nil)
		assert.Equal(t, at(100), rec.FirstToken)
		assert.Equal(t, at(150), rec.LastToken)
		assert.Equal(t, at(150), rec.End, "End is never before the last token")
		assert.Equal(t, []time.Duration{50 * time.Millisecond, 0}, rec.ITL)
		ttft, _ := rec.TTFT()
		assert.Zero(t, ttft)
	})
	t.Run("usage overrides the chunk sum, input known early", func(t *testing.T) {
		tr, _ := newTestTracker(t)
		r := tr.StartAt(context.Background(), at(0))
		r.setInputTokens(40)
		r.ChunkAt(at(10), 1)
		r.ChunkAt(at(20), 1)
		assert.Equal(t, 40, r.EndAt(at(30), nil).InputTokens)

		r = tr.StartAt(context.Background(), at(0))
		r.ChunkAt(at(10), 1)
		r.SetUsage(12, 9)
		r.SetUsage(12, 11) // cumulative: the last one wins
		rec := r.EndAt(at(30), nil)
		assert.Equal(t, 11, rec.OutputTokens)
		assert.Equal(t, 12, rec.InputTokens)
	})
	t.Run("WithoutITL() keeps MaxITL only", func(t *testing.T) {
		tr, _ := newTestTracker(t, WithoutITL(), WithSLO(SLO{ITL: 40 * time.Millisecond}))
		r := tr.StartAt(context.Background(), at(0))
		for _, ms := range []float64{10, 20, 70, 80} {
			r.ChunkAt(at(ms), 1)
		}
		rec := r.EndAt(at(90), nil)
		assert.Nil(t, rec.ITL)
		assert.Equal(t, 50*time.Millisecond, rec.MaxITL)
		assert.False(t, SLO{ITL: 40 * time.Millisecond}.Met(rec), "the 50 ms stutter breaks the 40 ms ITL limit")
	})
	t.Run("nil context is accepted", func(t *testing.T) {
		tr, _ := newTestTracker(t)
		//lint:ignore SA1012 a nil context must not panic
		r := tr.Start(nil) //nolint:staticcheck
		r.Chunk(1)
		assert.Equal(t, OutcomeOK, r.End(nil).Outcome)
	})
}

func counterTotal(t *testing.T, got map[string]metricdata.Metrics, name string) int64 {
	t.Helper()
	m, ok := got[name]
	require.True(t, ok, "no metric %s", name)
	var total int64
	for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
		total += p.Value
	}
	return total
}

func TestNewTrackerOptions(t *testing.T) {
	tests := []struct {
		name    string
		opts    []Option
		wantIs  error // nil: no error
		wantErr string
	}{
		{"defaults", nil, nil, ""},
		{"nil options and nil arguments are ignored", []Option{nil, WithMeterProvider(nil), WithClock(nil)}, nil, ""},
		{"window off", []Option{WithoutWindow()}, nil, ""},
		{"no age bound", []Option{WithWindow(5, 0)}, nil, ""},
		{"negative SLO limit", []Option{WithSLO(SLO{TTFT: -time.Millisecond})}, ErrInvalid, "llmmetrics: invalid argument: negative SLO ttft limit"},
		{"negative window", []Option{WithWindow(-1, 0)}, ErrInvalid, "llmmetrics: invalid argument: window"},
		{"window of no request", []Option{WithWindow(0, time.Minute)}, ErrInvalid, "want a positive request count"},
		{"WithWindow(0, 0) is no way to turn the window off", []Option{WithWindow(0, 0)}, ErrInvalid, "window (0 requests, 0s)"},
		{"negative cache size", []Option{withAttributeCacheSize(-1)}, ErrInvalid, "llmmetrics: invalid argument: attribute cache size -1"},
		{"errors are joined", []Option{WithWindow(-1, 0), withAttributeCacheSize(-1)}, ErrInvalid, "window (-1 requests, 0s): want a positive request count and an age ≥ 0\nllmmetrics: invalid argument: attribute cache size"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := NewTracker(tt.opts...)
			if tt.wantIs == nil {
				require.NoError(t, err)
				assert.NotNil(t, tr)
				return
			}
			assert.ErrorIs(t, err, tt.wantIs)
			assert.ErrorContains(t, err, tt.wantErr)
			assert.Nil(t, tr)
		})
	}
}

func TestWithClock(t *testing.T) {
	now := at(0)
	tr, _ := newTestTracker(t, WithClock(func() time.Time { return now }))
	r := tr.Start(context.Background())
	now = at(250)
	r.Chunk(0) // does not read the clock
	r.Chunk(3)
	now = at(300)
	r.Chunk(1)
	now = at(400)
	rec := r.End(nil)
	assert.Equal(t, Record{Start: at(0), FirstToken: at(250), FirstOutput: at(250), LastToken: at(300), End: at(400), OutputTokens: 4, Chunks: 2,
		ITL: []time.Duration{50 * time.Millisecond}, MaxITL: 50 * time.Millisecond}, rec)
}

// TestAttributeCacheBounded: the per-request attribute cache stays at its
// bound and a new set replaces an old one (that uncached sets are measured
// correctly is TestPerRequestAttributesMeasured).
func TestAttributeCacheBounded(t *testing.T) {
	tr, _ := newTestTracker(t, withAttributeCacheSize(1))
	for i, model := range []string{"a", "b", "a", "c"} {
		r := tr.StartAt(context.Background(), at(0), semconv.GenAIResponseModel(model))
		r.ChunkAt(at(float64(10*(i+1))), 1)
		r.EndAt(at(100), nil)
	}
	assert.Len(t, tr.cache, 1, "the cache is bounded")
	_, cachedLast := tr.cache[setKey{role: sideServer, n: 1, kvs: [maxKeyAttrs]attribute.KeyValue{semconv.GenAIResponseModel("c")}}]
	assert.True(t, cachedLast, "a new set replaces an old one")
}

func TestChunkDoesNotAllocate(t *testing.T) {
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("keepITL=%v", keep), func(t *testing.T) {
			var opts []Option
			if !keep {
				opts = append(opts, WithoutITL())
			}
			tr, _ := newTestTracker(t, opts...)
			r := tr.Start(context.Background())
			r.Chunk(1)
			// With keepITL the gap list grows by doubling: amortized, under
			// one allocation per thousand chunks.
			allocs := testing.AllocsPerRun(1000, func() { r.Chunk(1) })
			assert.Zero(t, allocs)
		})
	}
}

func TestStartEndAllocations(t *testing.T) {
	tr, _ := newTestTracker(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		attrs []attribute.KeyValue
	}{
		{"no attributes", nil},
		// A cached set is found without building an attribute.Set.
		{"per-request attributes", []attribute.KeyValue{semconv.GenAIOperationNameChat, semconv.GenAIRequestModel("m")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			allocs := testing.AllocsPerRun(1000, func() {
				r := tr.Start(ctx, tc.attrs...)
				r.Chunk(1)
				r.End(nil)
			})
			assert.LessOrEqual(t, allocs, 2.0)
		})
	}
}
