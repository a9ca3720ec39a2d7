package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/llmmetrics/llmmetrics"
)

// ClientTiming is the run's own error budget (results.json client_timing,
// overall and per level): how late requests left against their schedule,
// and how long chunks waited between arriving and being processed.
type ClientTiming struct {
	// Method is "kernel" when chunks were timed by the socket's receive
	// timestamps, "user" when by the time user space read them (Note says
	// why). A kernel run may time a few reads by the clock (UserReads):
	// Linux turns receive timestamps on for the system lazily, so the
	// first packets after the first timestamped socket opens can lack one.
	Method string `json:"method"`
	// UserReads counts the chunks timed by the clock.
	UserReads int `json:"user_timed_reads"`
	// ArrivalLagP50 and ArrivalLagP99: a chunk's processing time minus
	// the kernel's arrival time of its bytes. With kernel timestamps the
	// lag is in no figure (it shows only when the client falls a chunk
	// behind: MultiFrameReads); without them it is not measured, and is
	// in the figures (absent).
	ArrivalLagP50 *time.Duration `json:"arrival_lag_p50_ns,omitempty"`
	ArrivalLagP99 *time.Duration `json:"arrival_lag_p99_ns,omitempty"`
	// SendLagP50 and SendLagP99: a request's send time (the Record's
	// Start) minus its scheduled time.
	SendLagP50 time.Duration `json:"send_lag_p50_ns"`
	SendLagP99 time.Duration `json:"send_lag_p99_ns"`
	// Reads counts the socket reads that carried chunks of a measured
	// answer (frames with tokens); MultiFrameReads those that carried
	// several. The chunks of such a read share its arrival time, the
	// latest of its bytes: an earlier chunk waited in the socket, a lag
	// kernel timestamps cannot remove (the client had fallen behind by a
	// chunk interval, or the server sent the chunks at once).
	Reads           int `json:"reads"`
	MultiFrameReads int `json:"multi_frame_reads"`
	// Note says why Method is "user".
	Note string `json:"note,omitempty"`
	// Warning says that the client, not the server, limited the figures.
	Warning string `json:"warning,omitempty"`
}

// Thresholds of the client-bound warning: a lag above this fraction of
// what it is compared with (see timingWarning).
const clientBoundFraction = 0.05

// reqTiming is what one request's timing gathered, besides its Record.
// Its fields are written by the goroutine that reads the answer.
type reqTiming struct {
	scheduled time.Time       // when the request was meant to leave
	sent      time.Time       // when its last bytes were written (zero: unknown; see sentStart)
	lags      []time.Duration // arrival lag of each chunk (kernel stamps only)
	userReads int             // chunks timed by the clock
	reads     int             // socket reads that carried chunks
	multi     int             // of which carried several
	note      string          // why the clock was used
	attempt   *attempt        // the attempt in flight (its trace), set by try
	hold      *hold           // holds the request's first write until scheduled (nil: none)
}

// timingKey is the context key of a request's *reqTiming.
type timingKey struct{}

// timingSamples pools the reqTimings of a level's measured requests.
type timingSamples struct {
	send, arrival      []float64 // ns
	userReads          int
	reads, multi, reqs int
	note               string
}

func (s *timingSamples) add(rec llmmetrics.Record, rt *reqTiming) {
	s.reqs++
	if !rt.scheduled.IsZero() && !rec.Start.IsZero() {
		s.send = append(s.send, float64(max(rec.Start.Sub(rt.scheduled), 0)))
	}
	for _, l := range rt.lags {
		s.arrival = append(s.arrival, float64(l))
	}
	s.userReads += rt.userReads
	s.reads += rt.reads
	s.multi += rt.multi
	if s.note == "" {
		s.note = rt.note
	}
}

func (s *timingSamples) merge(o *timingSamples) {
	s.send = append(s.send, o.send...)
	s.arrival = append(s.arrival, o.arrival...)
	s.userReads += o.userReads
	s.reads += o.reads
	s.multi += o.multi
	s.reqs += o.reqs
	if s.note == "" {
		s.note = o.note
	}
}

// pct is the p-th percentile (numpy linear) of xs in ns, rounded to the
// ns; 0 for none.
func pct(xs []float64, p float64) time.Duration {
	v, err := llmmetrics.Percentile(xs, p)
	if err != nil {
		return 0
	}
	return time.Duration(math.Round(v))
}

// summary is the ClientTiming of s, without its warning.
func (s *timingSamples) summary() *ClientTiming {
	if s.reqs == 0 {
		return nil
	}
	ct := &ClientTiming{Method: "kernel", SendLagP50: pct(s.send, 50), SendLagP99: pct(s.send, 99),
		Reads: s.reads, MultiFrameReads: s.multi, UserReads: s.userReads}
	if s.userReads > len(s.arrival) || len(s.arrival) == 0 {
		ct.Method, ct.Note = "user", s.note
		if ct.Note == "" {
			ct.Note = "chunks were timed when read: no kernel receive timestamps on this connection"
		}
	}
	if len(s.arrival) > 0 {
		p50, p99 := pct(s.arrival, 50), pct(s.arrival, 99)
		ct.ArrivalLagP50, ct.ArrivalLagP99 = &p50, &p99
	}
	return ct
}

// timingWarning says when the client limited a level's figures: the send
// lag p99 above the mean inter-arrival time (open loop: a request left
// after the next one was due, so the load was not the one asked; a shorter
// lag enters no latency, which starts at the request's write) or above 5 %
// of the mean E2EL (closed loop: the time a client's next request is due
// after), or more than 5 % of the reads carrying several chunks (a
// backlog: the chunks queued in the socket share one arrival, and their
// gaps are lost, so ITL p50 itself can read 0). An arrival lag p99 above
// a quarter of ITL p50 says, in a milder warning of its own, that the
// client is near its limit: a chunk timed by the kernel carries none of
// the lag until it waits a whole gap. "" when none.
func timingWarning(ct *ClientTiming, m Mode, load float64, s llmmetrics.Summary) string {
	var why []string
	if m == ModeRate && load > 0 {
		if gap := time.Duration(float64(time.Second) / load); ct.SendLagP99 > gap {
			why = append(why, fmt.Sprintf("send lag p99 %s is above the mean inter-arrival time (%s): requests left after the next one was due", dur(ct.SendLagP99), dur(gap)))
		}
	} else if e2el := s.E2EL.Mean; e2el > 0 && float64(ct.SendLagP99) > clientBoundFraction*float64(e2el) {
		why = append(why, fmt.Sprintf("send lag p99 %s is above 5 %% of the mean E2EL (%s)", dur(ct.SendLagP99), dur(e2el)))
	}
	if ct.Reads > 0 && float64(ct.MultiFrameReads) > clientBoundFraction*float64(ct.Reads) {
		why = append(why, fmt.Sprintf("%d of %d reads carried several chunks (a backlog in the socket, or a server that sends chunks at once)", ct.MultiFrameReads, ct.Reads))
	}
	var near string
	if itl, ok := s.ITL.Percentile(50); ok && itl > 0 && ct.ArrivalLagP99 != nil &&
		float64(*ct.ArrivalLagP99) > nearLimitFraction*float64(itl) {
		near = fmt.Sprintf("chunks waited in the socket up to %s (arrival lag p99), above a quarter of ITL p50 (%s): kernel timestamps keep the wait out of the figures until a chunk waits a whole gap", dur(*ct.ArrivalLagP99), dur(itl))
	}
	switch {
	case len(why) > 0 && near != "":
		why = append(why, near)
	case near != "":
		return "the client is near its limit (" + near + "): give it fewer streams or more CPU before trusting a heavier load"
	case len(why) == 0:
		return ""
	}
	return "the client limited the figures (" + strings.Join(why, "; ") + "): its timing, not the server, bounds them"
}

// nearLimitFraction: an arrival lag p99 above this fraction of ITL p50
// warns that the client is near its limit. A 5 % rule warned at 2,000
// streams of 50 ms gaps on one core whose ITL p99 equalled the server's
// within 0.01 ms (lag p99 11–24 ms); a starved client (a CPU hog beside
// it, GOMAXPROCS=1) reached 21 ms with 100 streams. A quarter keeps a
// chunk three quarters of a gap from sharing a read with the next.
const nearLimitFraction = 0.25

// dur formats d in µs below 1 ms, else in ms.
func dur(d time.Duration) string {
	if d < time.Millisecond {
		return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
	}
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}

// finishTiming sets a level's client_timing from its samples.
func (b *bench) finishTiming(l *Level) {
	l.ClientTiming = l.timing.summary()
	if l.ClientTiming != nil {
		l.ClientTiming.Warning = timingWarning(l.ClientTiming, b.o.mode, l.Load, l.Summary)
	}
}

// overallTiming pools the levels' samples; its warning names the levels
// whose own check warned.
func overallTiming(ls []*Level, m Mode) *ClientTiming {
	var all timingSamples
	var limited, near []string
	for _, l := range ls {
		all.merge(&l.timing)
		if l.ClientTiming == nil || l.ClientTiming.Warning == "" {
			continue
		}
		at := fmt.Sprintf("%s %g", m, l.Load)
		if strings.HasPrefix(l.ClientTiming.Warning, "the client limited") {
			limited = append(limited, at)
		} else {
			near = append(near, at)
		}
	}
	ct := all.summary()
	if ct == nil {
		return nil
	}
	var w []string
	if len(limited) > 0 {
		w = append(w, "the client limited the figures at "+strings.Join(limited, ", "))
	}
	if len(near) > 0 {
		w = append(w, "the client is near its limit at "+strings.Join(near, ", "))
	}
	if len(w) > 0 {
		ct.Warning = strings.Join(w, "; ") + " (see each level's client_timing)"
	}
	return ct
}

// writeTiming prints the error budget under the table, and its warning.
func writeTiming(w io.Writer, ct *ClientTiming) {
	if ct == nil {
		return
	}
	arrival := "not measured (" + ct.Note + ")"
	if ct.ArrivalLagP99 != nil {
		arrival = fmt.Sprintf("arrival lag p50 %s, p99 %s (%s timestamps; %d of %d reads carried several chunks)",
			dur(*ct.ArrivalLagP50), dur(*ct.ArrivalLagP99), ct.Method, ct.MultiFrameReads, ct.Reads)
	}
	fmt.Fprintf(w, "Client timing error: %s; send lag p50 %s, p99 %s.\n", arrival, dur(ct.SendLagP50), dur(ct.SendLagP99))
	if ct.Warning != "" {
		fmt.Fprintf(w, "Warning: %s.\n", ct.Warning)
	}
}

// pacer waits until an instant, as precisely as the platform allows.
type pacer interface {
	// waitUntil returns at at (or soon after), not before.
	waitUntil(at time.Time)
	close()
}

// timerPacer waits with the runtime's timers: exact in a testing/synctest
// bubble, up to ~1 ms late on an idle Linux program (see timerfdPacer).
type timerPacer struct{}

func (timerPacer) waitUntil(at time.Time) { time.Sleep(time.Until(at)) }
func (timerPacer) close()                 {}

// preciseWindow is how long before its time an open-loop arrival stops
// waiting on a runtime timer (which its context can stop) and waits on
// the pacer: more than the runtime timer's ~1 ms of lateness when idle.
const preciseWindow = 2 * time.Millisecond

// sleepUntil waits until at, or until ctx is done (its error): on a
// runtime timer up to preciseWindow before at, then on p.
func sleepUntil(ctx context.Context, p pacer, at time.Time) error {
	if d := time.Until(at) - preciseWindow; d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	p.waitUntil(at)
	return ctx.Err()
}
