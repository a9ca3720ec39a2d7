//go:build !race

package llmmetrics

import (
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// liveHeap returns the bytes of heap objects that a full garbage
// collection found live. Unlike MemStats.HeapAlloc read after runtime.GC, it
// counts nothing allocated after the collection finished (by the SDK, the
// test framework or the runtime), so it does not depend on what else ran
// between the collection and the reading. The second cycle empties what
// sync.Pool's victim caches still held after the first.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// drive runs n requests of three chunks each, with model(i) as a per-request
// attribute when model is not nil.
func drive(tr *Tracker, from, n int, model func(int) string) {
	ctx := context.Background()
	for i := from; i < from+n; i++ {
		var r *Request
		if model != nil {
			r = tr.Start(ctx, semconv.GenAIResponseModel(model(i)))
		} else {
			r = tr.Start(ctx)
		}
		r.Chunk(1)
		r.Chunk(2)
		r.Chunk(1)
		r.End(nil)
	}
}

// TestHeapDoesNotGrow sends 1,000,000 requests through one Tracker (with
// the default Snapshot window and ITL lists): after the first 100,000 the
// heap stays where it was.
func TestHeapDoesNotGrow(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000,000 requests: skipped with -short")
	}
	tr, _ := newTestTracker(t)
	drive(tr, 0, 100_000, nil)
	before := liveHeap()
	drive(tr, 100_000, 900_000, nil)
	after := liveHeap()
	t.Logf("live heap after 100k requests: %d B; after 1M: %d B", before, after)
	assert.Less(t, int64(after)-int64(before), int64(1<<20), "heap grew by more than 1 MiB")
}

// TestCardinalityBounded sends 100,000 distinct model names: the Tracker's
// cache stays at its bound and the heap (the SDK's 2000-series limit
// included) stops growing.
func TestCardinalityBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000 attribute sets: skipped with -short")
	}
	tr, _ := newTestTracker(t)
	model := func(i int) string { return fmt.Sprintf("model-%06d", i) }
	drive(tr, 0, 20_000, model)
	before := liveHeap()
	drive(tr, 20_000, 80_000, model)
	after := liveHeap()
	t.Logf("live heap after 20k distinct sets: %d B; after 100k: %d B", before, after)
	require.Len(t, tr.cache, defaultAttributeCacheSize)
	assert.Less(t, int64(after)-int64(before), int64(2<<20), "heap grew by more than 2 MiB")
}

// heldRequestBytes bounds the memory of one request held by the window:
// its Record and at most stats.SketchPoints gaps (a whole list or a
// sketch's points) of 8 bytes, with room for headers.
const heldRequestBytes = 9 << 10

// TestWindowMemoryBounded: 1,000 held requests of 100,000 gaps each take
// at most 1,000 × 9 KiB (about 9 MB), where keeping the lists took 800 MB.
func TestWindowMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000,000 gaps to sketch: skipped with -short")
	}
	const n, gaps = 1000, 100_000
	before := liveHeap()
	tr := heldRequests(t, n, gaps)
	after := liveHeap()
	held := int64(after) - int64(before)
	t.Logf("window of %d requests of %d gaps: %d B live (%d B per request)", n, gaps, held, held/n)
	assert.Less(t, held, int64(n*heldRequestBytes))
	s := tr.Snapshot()
	assert.Equal(t, n*gaps, s.ITL.Count)
	runtime.KeepAlive(tr)
}
