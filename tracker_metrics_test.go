package llmmetrics_test

// The tests in this file read what a Tracker emitted through the project's
// own llmmetricstest collector, so they live in the external test package
// (llmmetricstest imports llmmetrics). Tests of the exact instrument output
// (metricdatatest against the whole expected data) and of internals stay
// in tracker_test.go.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/llmmetricstest"
)

var collectT0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// atMS is collectT0 plus ms milliseconds.
func atMS(ms float64) time.Time { return collectT0.Add(time.Duration(ms * float64(time.Millisecond))) }

// newCollectedTracker returns a Tracker on a fresh SDK provider and the
// collector that reads it.
func newCollectedTracker(t *testing.T, opts ...llmmetrics.Option) (*llmmetrics.Tracker, *llmmetricstest.Collector) {
	t.Helper()
	mp, c := llmmetricstest.NewMeterProvider()
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	tr, err := llmmetrics.NewTracker(append([]llmmetrics.Option{llmmetrics.WithMeterProvider(mp)}, opts...)...)
	require.NoError(t, err)
	return tr, c
}

func TestNothingRecordedAfterEnd(t *testing.T) {
	t.Run("End is idempotent", func(t *testing.T) {
		tr, c := newCollectedTracker(t)
		r := tr.StartAt(context.Background(), atMS(0))
		r.ChunkAt(atMS(10), 1)
		first := r.EndAt(atMS(20), nil)
		second := r.EndAt(atMS(99), errors.New("late"))
		assert.Equal(t, first, second)
		m := c.Collect(t)
		assert.Equal(t, 1.0, m.Value(llmmetrics.ServerMetricNames().Requests))
		assert.Equal(t, map[string]float64{"ok": 1}, m.SumBy(llmmetrics.ServerMetricNames().Requests, llmmetrics.OutcomeKey))
	})
	t.Run("calls after End are ignored", func(t *testing.T) {
		tr, c := newCollectedTracker(t)
		r := tr.StartAt(context.Background(), atMS(0))
		r.ChunkAt(atMS(10), 1)
		r.EndAt(atMS(20), nil)
		r.ChunkAt(atMS(30), 5)
		r.SetUsage(100, 100)
		r.SetCachedInputTokens(7, 0)
		rec := r.EndAt(atMS(40), nil)
		assert.Equal(t, 1, rec.OutputTokens)
		assert.Equal(t, 0, rec.InputTokens)
		assert.Equal(t, atMS(20), rec.End)
		m := c.Collect(t)
		assert.Equal(t, 1.0, m.Value(llmmetrics.ServerMetricNames().Tokens), "the one output token")
		assert.Equal(t, uint64(1), m.Count("gen_ai.server.time_to_first_token"))
		assert.Zero(t, m.Count(llmmetrics.ServerMetricNames().ITL), "the chunk after End made no gap")
	})
}

func TestPerRequestAttributesMeasured(t *testing.T) {
	// A cache of one set: "b" and "c" evict each other's sets, and every
	// request is measured under its own attributes all the same.
	tr, c := newCollectedTracker(t, llmmetrics.WithAttributeCacheSize(1), llmmetrics.WithAttributes(semconv.GenAIRequestModel("m1")))
	for i, model := range []string{"a", "b", "a", "c"} {
		r := tr.StartAt(context.Background(), atMS(0), semconv.GenAIResponseModel(model))
		r.ChunkAt(atMS(float64(10*(i+1))), 1)
		r.EndAt(atMS(100), nil)
	}
	m := c.Collect(t)
	assert.Equal(t, map[string]float64{"a": 2, "b": 1, "c": 1}, m.SumBy(llmmetrics.ServerMetricNames().Requests, semconv.GenAIResponseModelKey))
	assert.Equal(t, 4.0, m.Value(llmmetrics.ServerMetricNames().Requests, semconv.GenAIRequestModel("m1")), "the Tracker's attributes stay")
}

// TestPerRequestAttributesAsASet: the attributes given to Start are a set,
// whatever their order, with the last of duplicate keys winning, both for
// the few the cache keys as given and for longer lists; with a cache of
// one entry the requests evict each other's sets and are measured the same.
func TestPerRequestAttributesAsASet(t *testing.T) {
	op, x, y := semconv.GenAIOperationNameChat, semconv.GenAIRequestModel("x"), semconv.GenAIRequestModel("y")
	a, b, c5 := attribute.Int("a", 1), attribute.Int("b", 2), attribute.Int("c", 3)
	starts := [][]attribute.KeyValue{
		{x, op},
		{op, x},
		{y, op, x},        // x wins
		{x, op, y, x},     // four given, x wins
		{op, x, a, b, c5}, // more than the cache keys as given
		{c5, b, a, x, op},
		{y, c5, b, a, x, op}, // x wins
	}
	for _, size := range []int{0, 1, 256} {
		t.Run(fmt.Sprintf("cache %d", size), func(t *testing.T) {
			tr, coll := newCollectedTracker(t, llmmetrics.WithAttributeCacheSize(size))
			for range 2 {
				for _, attrs := range starts {
					r := tr.StartAt(context.Background(), atMS(0), attrs...)
					r.ChunkAt(atMS(10), 1)
					r.EndAt(atMS(20), nil)
				}
			}
			m := coll.Collect(t)
			name := llmmetrics.ServerMetricNames().Requests
			require.Len(t, m.Points(name), 2, "two series: with and without a, b, c")
			assert.Equal(t, 14.0, m.Value(name, op, x))
			assert.Zero(t, m.Value(name, y))
			assert.Equal(t, 6.0, m.Value(name, a, b, c5))
		})
	}
}

func TestErrorTypeBounded(t *testing.T) {
	tr, c := newCollectedTracker(t)
	const n = 100
	for i := range n {
		r := tr.StartAt(context.Background(), atMS(0))
		r.EndAt(atMS(1), typedErr(fmt.Sprintf("e%d", i)))
	}
	byType := c.Collect(t).SumBy(llmmetrics.ServerMetricNames().Requests, semconv.ErrorTypeKey)
	other := byType["_OTHER"]
	assert.Positive(t, other, "distinct error types beyond the bound fold into _OTHER")
	assert.Less(t, len(byType), n/2, "the number of series is bounded")
	total := 0.0
	for typ, v := range byType {
		total += v
		if typ != "_OTHER" {
			assert.Equal(t, 1.0, v, "%s: one request each", typ)
		}
	}
	assert.Equal(t, float64(n), total, "every request is counted")
}

// typedErr is an error whose ErrorType method names its error.type.
type typedErr string

func (e typedErr) Error() string     { return string(e) }
func (e typedErr) ErrorType() string { return string(e) }

// TestConcurrentChunkEnd races Chunk against End on many requests and
// checks that the emitted totals equal what the returned Records say:
// nothing lost, nothing counted twice.
func TestConcurrentChunkEnd(t *testing.T) {
	tr, c := newCollectedTracker(t)
	const workers, perWorker, chunks = 8, 100, 50
	var (
		mu      sync.Mutex
		records []llmmetrics.Record
		wg      sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			for range perWorker {
				r := tr.Start(context.Background())
				r.Chunk(1) // two chunks before the race: every request has a gap
				r.Chunk(1)
				var inner sync.WaitGroup
				inner.Go(func() {
					for range chunks {
						r.Chunk(2)
					}
				})
				inner.Go(func() { r.SetUsage(3, 0) })
				var rec llmmetrics.Record
				inner.Go(func() { rec = r.End(context.Canceled) }) // a cancel watcher
				inner.Wait()
				again := r.End(nil)
				mu.Lock()
				records = append(records, rec)
				mu.Unlock()
				if !assert.Equal(t, rec, again) {
					return
				}
			}
		})
	}
	wg.Wait()
	require.Len(t, records, workers*perWorker)

	var ttfts, gaps, tokens uint64
	for _, rec := range records {
		assert.Equal(t, llmmetrics.OutcomeCanceled, rec.Outcome)
		if !rec.FirstToken.IsZero() {
			ttfts++
		}
		gaps += uint64(len(rec.ITL))
		tokens += uint64(rec.OutputTokens + rec.InputTokens)
		assert.Equal(t, max(rec.Chunks-1, 0), len(rec.ITL))
	}
	m := c.Collect(t)
	assert.Equal(t, float64(workers*perWorker), m.Value(llmmetrics.ServerMetricNames().Requests))
	assert.Equal(t, uint64(workers*perWorker), m.Count("gen_ai.server.request.duration"))
	assert.Equal(t, ttfts, m.Count("gen_ai.server.time_to_first_token"))
	assert.GreaterOrEqual(t, gaps, uint64(workers*perWorker))
	assert.Equal(t, gaps, m.Count(llmmetrics.ServerMetricNames().ITL))
	assert.Equal(t, float64(tokens), m.Value(llmmetrics.ServerMetricNames().Tokens))
	assert.Zero(t, m.Value(llmmetrics.ServerMetricNames().Active))
	assert.Equal(t, map[string]float64{"canceled": workers * perWorker}, m.SumBy(llmmetrics.ServerMetricNames().Requests, llmmetrics.OutcomeKey))
}
