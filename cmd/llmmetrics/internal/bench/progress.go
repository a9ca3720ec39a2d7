package bench

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// progress reports on stderr: on a terminal one line rewritten in place
// while a repeat runs, and one plain line per finished level everywhere;
// off a terminal, a line every stallEvery while requests are stalled.
type progress struct {
	w    io.Writer
	live bool
}

// Stalled requests: in flight for longer than stallAfter. Off a terminal a
// line names them every stallEvery (a log shows a stuck run, not silence).
const (
	stallAfter = 30 * time.Second
	stallEvery = 30 * time.Second
)

// inFlight keeps when each request of a repeat was sent (0: not in flight).
type inFlight struct{ since []atomic.Int64 }

func newInFlight(n int) *inFlight { return &inFlight{since: make([]atomic.Int64, n)} }

func (f *inFlight) start(i int) { f.since[i].Store(time.Now().UnixNano()) }
func (f *inFlight) end(i int)   { f.since[i].Store(0) }

// count returns how many requests are in flight at now, how many of them
// for longer than stallAfter, and the age of the oldest.
func (f *inFlight) count(now time.Time) (n, stalled int, oldest time.Duration) {
	for i := range f.since {
		t := f.since[i].Load()
		if t == 0 {
			continue
		}
		n++
		age := now.Sub(time.Unix(0, t))
		oldest = max(oldest, age)
		if age > stallAfter {
			stalled++
		}
	}
	return n, stalled, oldest
}

// status is the text of a progress line: requests done, throughput, in
// flight, stalled.
func status(mode Mode, load float64, repeat, n int, done, tokens *atomic.Int64, flight *inFlight, el time.Duration) (string, int) {
	fl, stalled, oldest := flight.count(time.Now())
	s := fmt.Sprintf("%s %-5g repeat %d: %4d/%d requests  %6.0f output tok/s  %4d in flight",
		mode, load, repeat+1, done.Load(), n, float64(tokens.Load())/el.Seconds(), fl)
	if stalled > 0 {
		s += fmt.Sprintf("  %d stalled (in flight over %v, oldest %v)", stalled, stallAfter, oldest.Round(time.Second))
	}
	return s + fmt.Sprintf("  %5.1fs", el.Seconds()), stalled
}

// watch reports a running repeat: on a terminal its status line every
// 200 ms; elsewhere a status line every stallEvery while requests are
// stalled. The returned function stops it (and clears the live line).
func (p progress) watch(mode Mode, load float64, repeat, n int, done, tokens *atomic.Int64, flight *inFlight) func() {
	if p.w == nil {
		return func() {}
	}
	every := 200 * time.Millisecond
	if !p.live {
		every = stallEvery
	}
	start := time.Now()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				line, stalled := status(mode, load, repeat, n, done, tokens, flight, time.Since(start))
				switch {
				case p.live:
					fmt.Fprintf(p.w, "\r\033[K%s", line)
				case stalled > 0:
					fmt.Fprintln(p.w, line)
				}
			}
		}
	})
	return func() {
		close(stop)
		wg.Wait()
		if p.live {
			fmt.Fprint(p.w, "\r\033[K")
		}
	}
}

// levelDone prints one line when a level has finished.
func (p progress) levelDone(mode Mode, l *Level) {
	if p.w == nil {
		return
	}
	s := l.Summary
	p99, _ := s.TTFT.Percentile(99)
	line := fmt.Sprintf("%s %-5g done: %d repeat(s), %d requests (%d failed", mode, l.Load, len(l.RepeatThroughput), s.Requests, s.Failed+s.Canceled)
	if len(l.Failures) > 0 {
		line += ": " + failureList(l.Failures)
	}
	line += ")"
	if l.Retries > 0 {
		line += fmt.Sprintf(", %d retried on a fresh connection", l.Retries)
	}
	fmt.Fprintf(p.w, "%s, %.0f output tok/s, p99 TTFT %v\n", line, s.OutputThroughput, p99.Round(time.Millisecond))
}
