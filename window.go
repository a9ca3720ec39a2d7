package llmmetrics

import (
	"slices"
	"sync"
	"time"
)

// window keeps the most recently ended requests for Snapshot: a ring of at
// most n records (n > 0), of which those that ended within age of the
// Snapshot (age 0: all) are summarized. Its memory is bounded by n records
// (and the ITL lists they hold).
type window struct {
	age time.Duration

	mu   sync.Mutex
	ring []Record
	next int // index the next record goes to
	full bool
}

func newWindow(n int, age time.Duration) *window {
	return &window{age: age, ring: make([]Record, n)}
}

// add keeps r, with its own copy of the ITL list: the caller's Record is
// the caller's to sort or change.
func (w *window) add(r Record) {
	r.ITL = slices.Clone(r.ITL)
	w.mu.Lock()
	w.ring[w.next] = r
	w.next++
	if w.next == len(w.ring) {
		w.next, w.full = 0, true
	}
	w.mu.Unlock()
}

// appendRecords appends the records that ended at or after now − age to
// dst, oldest first, and returns it.
func (w *window) appendRecords(dst []Record, now time.Time) []Record {
	w.mu.Lock()
	defer w.mu.Unlock()
	keep := func(r Record) bool { return w.age <= 0 || !r.End.Before(now.Add(-w.age)) }
	if w.full {
		for _, r := range w.ring[w.next:] {
			if keep(r) {
				dst = append(dst, r)
			}
		}
	}
	for _, r := range w.ring[:w.next] {
		if keep(r) {
			dst = append(dst, r)
		}
	}
	return dst
}

// Snapshot summarizes the recently ended requests kept by the Tracker's
// window (WithWindow: by default the last 1,000 requests
// that ended within 5 minutes): a live view whose memory does not
// grow with traffic. The Summary uses the Tracker's SLO and Summarize's
// defaults (its Duration spans the window's requests, first Start to last
// End). With the window off it returns an empty Summary. Safe for
// concurrent use with everything else; it copies the window under a short
// lock and summarizes outside it.
func (t *Tracker) Snapshot() Summary { return t.SnapshotAt(t.cfg.now()) }

// SnapshotAt is Snapshot with an explicit "now" for the age bound.
func (t *Tracker) SnapshotAt(now time.Time) Summary {
	var records []Record
	if t.win != nil {
		records = t.win.appendRecords(nil, now)
	}
	return Summarize(records, SummaryOptions{SLO: t.cfg.slo})
}
