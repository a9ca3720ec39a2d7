package llmmetrics

import (
	"slices"
	"sync"
	"time"

	"github.com/llmmetrics/llmmetrics/internal/stats"
)

// window keeps the most recently ended requests for Snapshot: a ring of at
// most n records (n > 0), of which those that ended within age of the
// Snapshot (age 0: all) are summarized. Its memory is bounded by n held
// requests of about 8.5 KiB at most each, whatever their length: a
// request's ITL list is kept whole up to stats.SketchPoints (1,024) gaps;
// a longer one is kept as a stats.GapSketch of 1,024 points (its ITL field
// is then nil in the window).
type window struct {
	age time.Duration

	mu   sync.Mutex
	ring []held
	next int // index the next record goes to
	full bool
}

// held is one request of the window: its Record, and the sketch of its
// gaps when they were too many to keep (r.ITL is then nil).
type held struct {
	r  Record
	sk *stats.GapSketch
}

func newWindow(n int, age time.Duration) *window {
	return &window{age: age, ring: make([]held, n)}
}

// add keeps r, with its own copy of the ITL list (the caller's Record is
// the caller's to sort or change), or a sketch of it when it is longer
// than stats.SketchPoints; the sketch is built before the lock is taken.
func (w *window) add(r Record) {
	h := held{r: r}
	if len(r.ITL) > stats.SketchPoints {
		h.sk, h.r.ITL = stats.NewGapSketch(r.ITL), nil
	} else {
		h.r.ITL = slices.Clone(r.ITL)
	}
	w.mu.Lock()
	w.ring[w.next] = h
	w.next++
	if w.next == len(w.ring) {
		w.next, w.full = 0, true
	}
	w.mu.Unlock()
}

// appendRecords appends the records that ended at or after now − age to
// dst, oldest first, and the sketches of the completed ones among them to
// sks, and returns both.
func (w *window) appendRecords(dst []Record, sks []*stats.GapSketch, now time.Time) ([]Record, []*stats.GapSketch) {
	w.mu.Lock()
	defer w.mu.Unlock()
	keep := func(h *held) {
		if w.age <= 0 || !h.r.End.Before(now.Add(-w.age)) {
			dst = append(dst, h.r)
			if h.sk != nil && h.r.Outcome == OutcomeOK {
				sks = append(sks, h.sk)
			}
		}
	}
	if w.full {
		for i := range w.ring[w.next:] {
			keep(&w.ring[w.next+i])
		}
	}
	for i := range w.ring[:w.next] {
		keep(&w.ring[i])
	}
	return dst, sks
}

// Snapshot summarizes the recently ended requests of the Tracker's window
// (WithWindow), with the Tracker's SLO: a live view whose memory does not
// grow with traffic (a request of more than 1,024 ITL gaps is held as a
// sketch of them; docs/definitions.md states its accuracy). With the window
// off it returns an empty Summary.
func (t *Tracker) Snapshot() Summary { return t.SnapshotAt(t.cfg.now()) }

// SnapshotAt is Snapshot with an explicit "now" for the age bound.
func (t *Tracker) SnapshotAt(now time.Time) Summary {
	var records []Record
	var sks []*stats.GapSketch
	if t.win != nil {
		records, sks = t.win.appendRecords(nil, nil, now)
	}
	opts := SummaryOptions{SLO: t.cfg.slo}
	s := Summarize(records, opts)
	if len(sks) > 0 {
		// Some requests' gaps are held as sketches: the ITL distribution
		// combines the whole lists and the sketches.
		itl := stats.Mixed(len(records), func(i int) []time.Duration {
			if records[i].Outcome != OutcomeOK {
				return nil
			}
			return records[i].ITL
		}, sks, cleanPercentiles(opts.Percentiles))
		s.ITL = distribution(&itl, cleanPercentiles(opts.Percentiles))
	}
	return s
}
