package llmmetrics

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// endAt runs a request from start to start+e2el with one token at ttft.
func endAt(tr *Tracker, start time.Time, ttft, e2el time.Duration) {
	r := tr.StartAt(context.Background(), start)
	r.ChunkAt(start.Add(ttft), 1)
	r.EndAt(start.Add(e2el), nil)
}

func TestSnapshotWindow(t *testing.T) {
	t.Run("keeps the last n requests", func(t *testing.T) {
		tr, _ := newTestTracker(t, WithWindow(3, 0))
		for i := range 5 {
			endAt(tr, at(float64(1000*i)), time.Duration(i+1)*10*time.Millisecond, time.Second)
		}
		s := tr.SnapshotAt(at(10_000))
		require.Equal(t, 3, s.Requests)
		// The last three requests had TTFT 30, 40 and 50 ms.
		assert.Equal(t, 30*time.Millisecond, s.TTFT.Min)
		assert.Equal(t, 50*time.Millisecond, s.TTFT.Max)
		assert.Equal(t, 40*time.Millisecond, s.TTFT.Median)
		// Duration spans first Start (2 s) to last End (5 s).
		assert.Equal(t, 3*time.Second, s.Duration)
		assert.InDelta(t, 1.0, s.RequestThroughput, 1e-12)
	})
	t.Run("drops requests older than age", func(t *testing.T) {
		tr, _ := newTestTracker(t, WithWindow(100, time.Minute))
		endAt(tr, at(0), 10*time.Millisecond, time.Second)       // ends at 1 s
		endAt(tr, at(60_000), 20*time.Millisecond, time.Second)  // ends at 61 s
		endAt(tr, at(100_000), 30*time.Millisecond, time.Second) // ends at 101 s
		s := tr.SnapshotAt(at(121_000))                          // window: ended at or after 61 s
		assert.Equal(t, 2, s.Requests)
		assert.Equal(t, 20*time.Millisecond, s.TTFT.Min)
	})
	t.Run("uses the Tracker's SLO", func(t *testing.T) {
		tr, _ := newTestTracker(t, WithSLO(SLO{TTFT: 15 * time.Millisecond}))
		endAt(tr, at(0), 10*time.Millisecond, time.Second)
		endAt(tr, at(0), 20*time.Millisecond, time.Second)
		s := tr.SnapshotAt(at(2000))
		assert.Equal(t, 1, s.Goodput.Good)
		assert.InDelta(t, 0.5, s.Goodput.Attainment, 1e-12)
	})
	t.Run("window off gives an empty Summary", func(t *testing.T) {
		tr, _ := newTestTracker(t, WithoutWindow())
		endAt(tr, at(0), 10*time.Millisecond, time.Second)
		s := tr.Snapshot()
		assert.Zero(t, s.Requests)
		assert.Zero(t, s.TTFT.Count)
	})
	t.Run("memory is bounded by n", func(t *testing.T) {
		tr, _ := newTestTracker(t, WithWindow(10, 0))
		for i := range 1000 {
			endAt(tr, at(float64(i)), time.Millisecond, 2*time.Millisecond)
		}
		assert.Len(t, tr.win.ring, 10)
		assert.Equal(t, 10, tr.SnapshotAt(at(5000)).Requests)
	})
}

// TestSnapshotOwnsItsRecords: a caller that edits the ITL of the Record End
// returned must not change the live view (found in review).
func TestSnapshotOwnsItsRecords(t *testing.T) {
	tr, _ := newTestTracker(t)
	r := tr.StartAt(context.Background(), at(0))
	for _, ms := range []float64{10, 20, 40} {
		r.ChunkAt(at(ms), 1)
	}
	rec := r.EndAt(at(50), nil)
	rec.ITL[0] = time.Hour
	s := tr.SnapshotAt(at(60))
	assert.Equal(t, 20*time.Millisecond, s.ITL.Max)
}
