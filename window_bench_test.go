package llmmetrics

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// heldRequests fills a Tracker's window (WithWindow(n, 0)) with n ended
// requests of gaps ITL gaps each, all with the same list (the caller's:
// the window must keep no reference to it).
func heldRequests(tb testing.TB, n, gaps int) *Tracker {
	tb.Helper()
	tr, err := NewTracker(WithWindow(n, 0))
	require.NoError(tb, err)
	itl := make([]time.Duration, gaps)
	for i := range itl {
		itl[i] = time.Millisecond + time.Duration(i*7919%20_000)*time.Microsecond
	}
	start := time.Unix(1_700_000_000, 0)
	for i := range n {
		s := start.Add(time.Duration(i) * time.Second)
		tr.win.add(Record{
			Start: s, End: s.Add(time.Minute), FirstToken: s.Add(time.Second), LastToken: s.Add(time.Minute),
			OutputTokens: gaps + 1, Chunks: gaps + 1, ITL: itl, Outcome: OutcomeOK,
		})
	}
	return tr
}

// BenchmarkSnapshot summarizes a full window of 1,000 held requests: the
// baseline "1000x1000" holds whole ITL lists of 1,000 gaps (under the cap:
// exact, Summarize's path); "1000x100000" holds requests of 100,000 gaps,
// each as a 1,024-point sketch (the window took 800 MB and Snapshot
// seconds when it kept the lists).
func BenchmarkSnapshot(b *testing.B) {
	for _, bc := range []struct {
		name string
		gaps int
	}{
		{"1000x1000", 1000},
		{"1000x100000", 100_000},
	} {
		b.Run(bc.name, func(b *testing.B) {
			tr := heldRequests(b, 1000, bc.gaps)
			b.ReportAllocs()
			for b.Loop() {
				if s := tr.Snapshot(); s.ITL.Count != 1000*bc.gaps {
					b.Fatalf("ITL count %d", s.ITL.Count)
				}
			}
		})
	}
}
