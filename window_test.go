package llmmetrics

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/llmmetrics/llmmetrics/internal/stats"

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

// longRequest runs a request of n+1 chunks (n ITL gaps) from start, whose
// gaps follow gap(i), and ends it with err.
func longRequest(tr *Tracker, start time.Time, n int, gap func(i int) time.Duration, err error) Record {
	r := tr.StartAt(context.Background(), start)
	t := start.Add(time.Millisecond)
	r.ChunkAt(t, 1)
	for i := range n {
		t = t.Add(gap(i))
		r.ChunkAt(t, 1)
	}
	return r.EndAt(t, err)
}

// spread returns gaps of 1–40 ms in a fixed pseudo-random order.
func spread(seed int) func(i int) time.Duration {
	return func(i int) time.Duration {
		x := (uint64(i)*2654435761 + uint64(seed)*40503) % 39_000
		return time.Millisecond + time.Duration(x)*time.Microsecond
	}
}

// TestSnapshotITLAroundTheCap: requests of up to stats.SketchPoints gaps
// keep Snapshot's ITL exact (the Summarize of the Records End returned);
// one more gap and the window holds a sketch of them: count, mean, min and
// max stay exact, each percentile lies within the stated rank error of
// the exact one, and the window holds no gap list for that request.
func TestSnapshotITLAroundTheCap(t *testing.T) {
	for _, tc := range []struct {
		name   string
		gaps   []int // ITL gaps of each request
		failed int   // index of a failed request (-1: none)
	}{
		{"at the cap: exact", []int{stats.SketchPoints, 10, stats.SketchPoints, 300}, -1},
		{"one over the cap", []int{stats.SketchPoints + 1, 10, 300}, -1},
		{"long requests", []int{20_000, 10, 5_000, 300, stats.SketchPoints}, -1},
		{"a failed long request adds no gap", []int{20_000, 10, 5_000, 300}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, _ := newTestTracker(t, WithWindow(10, 0))
			var recs []Record
			slack, sketched, okSketched := 0, 0, 0
			for i, n := range tc.gaps {
				var err error
				if i == tc.failed {
					err = errors.New("boom")
				}
				recs = append(recs, longRequest(tr, at(float64(1000*i)), n, spread(i), err))
				if n > stats.SketchPoints {
					sketched++
					if err == nil {
						okSketched++
						slack += (n + stats.SketchPoints - 1) / stats.SketchPoints
					}
				}
			}
			want := Summarize(recs, SummaryOptions{})
			got := tr.SnapshotAt(at(1e9))
			held, sks := tr.win.appendRecords(nil, nil, at(1e9))
			nilLists := 0
			for _, r := range held {
				if r.ITL == nil {
					nilLists++
				}
			}
			assert.Equal(t, sketched, nilLists, "the window holds no list for a sketched request")
			assert.Len(t, sks, okSketched, "a failed request's sketch is left out")
			if sketched == 0 {
				assert.Equal(t, want, got, "below the cap Snapshot is Summarize")
				return
			}
			w, g := want.ITL, got.ITL
			assert.Equal(t, w.Count, g.Count)
			assert.Equal(t, w.Mean, g.Mean)
			assert.Equal(t, w.Min, g.Min)
			assert.Equal(t, w.Max, g.Max)
			assert.InDelta(t, float64(w.Std), float64(g.Std), 1, "std within a nanosecond")
			// Every other figure does not depend on the gaps.
			want.ITL, got.ITL = Distribution{}, Distribution{}
			assert.Equal(t, want, got)

			all := allGaps(recs)
			for _, pv := range g.Percentiles {
				i, _ := stats.VirtualIndex(len(all), pv.P)
				lo, hi := all[max(i-slack, 0)], all[min(i+1+slack, len(all)-1)]
				assert.GreaterOrEqual(t, pv.Value, lo, "p%v", pv.P)
				assert.LessOrEqual(t, pv.Value, hi, "p%v", pv.P)
			}
		})
	}
}

// allGaps returns the sorted ITL gaps of the OK records.
func allGaps(recs []Record) []time.Duration {
	var all []time.Duration
	for _, r := range recs {
		if r.Outcome == OutcomeOK {
			all = append(all, r.ITL...)
		}
	}
	slices.Sort(all)
	return all
}
