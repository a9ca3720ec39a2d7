package bench

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// progress reports on stderr: on a terminal one line rewritten in place
// while a repeat runs, and one plain line per finished level everywhere.
type progress struct {
	w    io.Writer
	live bool
}

// live1 rewrites the status line every 200 ms while a repeat runs (only on
// a terminal); the returned function stops it and clears the line.
func (p progress) live1(mode Mode, load float64, repeat, n int, done, tokens *atomic.Int64) func() {
	if !p.live || p.w == nil {
		return func() {}
	}
	start := time.Now()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				el := time.Since(start)
				fmt.Fprintf(p.w, "\r\033[K%s %-5g repeat %d: %4d/%d requests  %6.0f output tok/s  %5.1fs",
					mode, load, repeat+1, done.Load(), n, float64(tokens.Load())/el.Seconds(), el.Seconds())
			}
		}
	})
	return func() {
		close(stop)
		wg.Wait()
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// levelDone prints one line when a level has finished.
func (p progress) levelDone(mode Mode, l *Level) {
	if p.w == nil {
		return
	}
	s := l.Summary
	p99, _ := s.TTFT.Percentile(99)
	fmt.Fprintf(p.w, "%s %-5g done: %d repeat(s), %d requests (%d failed), %.0f output tok/s, p99 TTFT %v\n",
		mode, l.Load, len(l.RepeatThroughput), s.Requests, s.Failed+s.Canceled, s.OutputThroughput, p99.Round(time.Millisecond))
}
