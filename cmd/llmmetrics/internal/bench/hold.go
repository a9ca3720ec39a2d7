package bench

import (
	"context"
	"sync/atomic"
	"time"
)

// sendLead is how long before its scheduled time an open-loop request is
// started when its write can be held (see hold).
//
// What net/http does before a request's first write (the request, its
// headers, the Tracker's round trip, taking a connection, handing the
// request to the connection's write loop, formatting it into the write
// buffer) took 100–120 µs per request on an idle one-core client here
// (fidelity -rates 1000: send lag p50 124 µs with the request started at
// its time), and waits behind every other runnable goroutine on a busy
// one. At 5,000 requests/s on one core, 2 ms covered it for all but
// 0.2–0.4 % of the requests (fidelity -rates 5000, the writer not yet
// waiting at the release); a request whose preparation takes longer
// leaves when it is ready, and its lateness is in the send lag.
const sendLead = 2 * time.Millisecond

// hold keeps an open-loop request's first write until its scheduled time.
//
// The request is started sendLead early; its connection's Write waits on
// the hold (writeStamp.begin), and the pacer releases the hold at the
// scheduled time. Between the schedule and the bytes leaving there is then
// only the pacer's wake-up, one goroutine switch and the system call. A
// write that arrives after the release does not wait. The pacer releases
// every hold it made, on time or when the run ends, so no write waits
// longer than its schedule or the run.
type hold struct {
	state atomic.Int32  // holdArmed, holdWaiting or holdReleased
	done  chan struct{} // closed by release
	woke  chan struct{} // closed by a waiting writer once it runs again
}

const (
	holdArmed    = iota // the writer has not come yet
	holdWaiting         // the writer waits on done
	holdReleased        // released: a writer goes on at once
)

func newHold() *hold { return &hold{done: make(chan struct{}), woke: make(chan struct{})} }

// wait blocks until h is released (nil: no hold). Only the first writer
// waits: a retried request's second attempt, its hold released, does not.
func (h *hold) wait() {
	if h == nil || !h.state.CompareAndSwap(holdArmed, holdWaiting) {
		return
	}
	<-h.done
	close(h.woke)
}

// release lets h's writer go. When the writer was waiting, release returns
// only once the writer runs: releasing the goroutine puts it next in line
// on the pacer's processor, and the pacer's next release (another request
// due in the same microseconds) would take that place and send the first
// writer behind every other runnable goroutine.
func (h *hold) release() {
	waiting := h.state.Swap(holdReleased) == holdWaiting
	close(h.done)
	if waiting {
		<-h.woke
	}
}

// held is a hold and when to release it.
type held struct {
	at time.Time
	h  *hold
}

// paced runs an open loop. next returns each request in turn: its
// scheduled time and the function that sends it with its hold (ok false:
// no more). With lead 0 each request is started at its time, waited for
// on p, with no hold. With lead > 0 each is started at least lead before
// its time with a hold that the loop releases at that time, waited for on
// p. Only releases are waited for on p: a request whose start comes
// before the next release is started at once, up to one release's gap
// early, and one with no release before it is waited for on a runtime
// timer (up to ~1 ms late when the program is idle, well within lead). A
// wait for a start could otherwise make the release after it late, and p
// spins before each time it waits for. Scheduled times must not
// decrease. paced returns when every request has been started and every
// hold released, or when ctx ends (every hold released).
func paced(ctx context.Context, p pacer, w *workers, lead time.Duration, next func() (due time.Time, send func(*hold), ok bool)) {
	var pending []held // in the order of their times
	defer func() {
		for _, x := range pending {
			x.h.release()
		}
	}()
	due, send, ok := next()
	for ok || len(pending) > 0 {
		if !ok || (len(pending) > 0 && due.Add(-lead).After(pending[0].at)) {
			if sleepUntil(ctx, p, pending[0].at) != nil {
				return
			}
			pending[0].h.release()
			pending = pending[1:]
			continue
		}
		switch {
		case lead == 0:
			if sleepUntil(ctx, p, due) != nil {
				return
			}
		case len(pending) == 0:
			if !sleep(ctx, time.Until(due.Add(-lead))) {
				return
			}
		}
		var h *hold
		if lead > 0 {
			h = newHold()
			pending = append(pending, held{at: due, h: h})
		}
		s := send
		w.run(func() { s(h) })
		due, send, ok = next()
	}
}
