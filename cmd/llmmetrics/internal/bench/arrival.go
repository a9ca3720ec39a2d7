package bench

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	"github.com/llmmetrics/llmmetrics"
)

// stamped is a connection that knows when the kernel received the bytes
// of its latest read (stampConn on Linux).
type stamped interface {
	// lastArrival is the kernel's receive time (CLOCK_REALTIME, Unix ns)
	// of the latest read's bytes, 0 when unknown; seq counts the reads.
	lastArrival() (unixNano int64, seq uint64)
}

// arrivalTransport sits under llmmetrics.NewTransport: it gives each
// answer a body whose ArrivalTime is the kernel's receive time of the
// bytes last read from the request's connection, so the library times
// chunks by their arrival (see llmmetrics.NewReader). It also records in
// each request's *reqTiming (the context's timingKey) its arrival lags and
// when its last bytes were written (sent: the Record's Start, see
// sentStart).
type arrivalTransport struct{ base http.RoundTripper }

func (t arrivalTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	rt, _ := req.Context().Value(timingKey{}).(*reqTiming)
	if rt == nil {
		return t.base.RoundTrip(req)
	}
	a := rt.attempt
	if a == nil { // not sent by try: a trace of its own
		a = &attempt{hold: rt.hold}
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), a.trace()))
	}
	a.conn.Store(nil)
	a.wrote.Store(0)
	a.began = time.Now() // before the write loop can see the request
	resp, err := t.base.RoundTrip(req)
	var c net.Conn
	if p := a.conn.Load(); p != nil {
		c = *p
	}
	w := a.wrote.Load()
	rt.sent = sentTime(c, a.began, w != 0, time.Duration(w-1))
	if err != nil || resp == nil || resp.Body == nil || resp.Body == http.NoBody {
		return resp, err
	}
	b := &arrivalBody{ReadCloser: resp.Body, rt: rt}
	if s, ok := c.(stamped); ok {
		b.conn = s
	} else {
		rt.note = "chunks were timed when read: the connection has no kernel receive timestamps (TLS, a proxy, not Linux, or a system that refuses them)"
	}
	resp.Body = b
	return resp, nil
}

// attempt is what one attempt's trace saw: one trace serves both try
// (was the connection reused, did an answer begin: may it be retried) and
// arrivalTransport (which connection, when the request was written), as
// two traces on one context would be merged per request by reflection.
type attempt struct {
	reused, answered atomic.Bool
	conn             atomic.Pointer[net.Conn]
	wrote            atomic.Int64 // WroteRequest's time: 1 + ns after began; 0: not yet
	began            time.Time    // set by arrivalTransport before the round trip
	hold             *hold        // the request's hold (nil: none)
}

func (a *attempt) trace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		GotConn: func(i httptrace.GotConnInfo) {
			a.reused.Store(i.Reused)
			a.conn.Store(&i.Conn)
			if c, ok := i.Conn.(interface{ arm(*hold) }); ok {
				c.arm(a.hold) // nil disarms a hold left by a request that never wrote
			} else {
				a.hold.wait() // a connection bench did not dial: wait before net/http's path to the write
			}
		},
		GotFirstResponseByte: func() { a.answered.Store(true) },
		WroteRequest: func(i httptrace.WroteRequestInfo) {
			if i.Err == nil && !a.began.IsZero() {
				a.wrote.Store(1 + int64(time.Since(a.began)))
			}
		},
	}
}

// CloseIdleConnections closes the base transport's idle connections
// (http.Client.CloseIdleConnections reaches it through NewTransport's).
func (t arrivalTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// sentTime is when a request's last bytes were handed to the kernel: the
// start of its connection's latest write when bench dialed the connection
// (a plain TCP connection: HTTP/1.1 carries one request at a time, and
// the answer follows the request), else the moment net/http reported the
// request written (WroteRequest, wrote after began: its last few KB are
// still in its buffer, written right after), else zero.
//
// A write is timed as it starts, not as it returns: on loopback the
// write call delivers the bytes to the server and can return after the
// server has answered and the answer has been read.
func sentTime(c net.Conn, began time.Time, written bool, wrote time.Duration) time.Time {
	if w, ok := c.(writeStamped); ok {
		if t := w.lastWrite(); t.After(began) {
			return t
		}
	}
	if written {
		return began.Add(wrote)
	}
	return time.Time{}
}

// sentStart is r with its Start moved to when the request's last bytes
// were written (rt.sent), so TTFT and E2EL run from the moment the server
// could have the whole request, and the client's own delays before it
// (building the request, waiting for a connection, the write loop's turn,
// the write itself) count as send lag (sent minus scheduled). A sent time
// before Start, or after the first token or the end (clocks read on other
// goroutines), leaves Start as it is.
func sentStart(r llmmetrics.Record, rt *reqTiming) llmmetrics.Record {
	if rt == nil || rt.sent.IsZero() || !rt.sent.After(r.Start) {
		return r
	}
	limit := r.End
	if !r.FirstToken.IsZero() {
		limit = r.FirstToken
	}
	if !limit.IsZero() && rt.sent.After(limit) {
		return r
	}
	r.Start = rt.sent
	return r
}

// writeStamped is a connection that knows when its latest write started.
type writeStamped interface{ lastWrite() time.Time }

// clockBase anchors writeStamp's times: an offset from it keeps the
// monotonic reading of time.Now in one atomic word.
var clockBase = time.Now()

// writeStamp keeps the start of a connection's latest write (safe for
// concurrent use: net/http writes on its write loop, the round trip asks),
// and holds the next write until its request's time (see hold).
type writeStamp struct {
	ns   atomic.Int64 // 1 + ns after clockBase; 0: none
	next atomic.Pointer[hold]
}

// arm makes the connection's next write wait on h (nil: not wait). The
// round trip arms the connection it got, before net/http hands the
// request to the write loop: HTTP/1.1 writes one request at a time, so
// the next write is that request's first.
func (w *writeStamp) arm(h *hold) { w.next.Store(h) }

// begin is called as a write starts: it waits on the armed hold, if any,
// and then notes the time.
func (w *writeStamp) begin() {
	if h := w.next.Swap(nil); h != nil {
		h.wait()
	}
	w.mark()
}

func (w *writeStamp) mark() { w.ns.Store(1 + int64(time.Since(clockBase))) }

// lastWrite is the start of the latest write, as now minus how long ago
// it was (monotonic): its wall clock reading is the current wall clock's,
// as End's and the chunks' are. clockBase.Add(offset) would carry
// clockBase's wall clock, and a step of the wall clock since the process
// started (NTP, the host) would put a record's Start after its End in
// records.jsonl, whose times are wall clock.
func (w *writeStamp) lastWrite() time.Time {
	n := w.ns.Load()
	if n == 0 {
		return time.Time{}
	}
	now := time.Now()
	return now.Add(-(now.Sub(clockBase) - time.Duration(n-1)))
}

// stampWrites returns a copy of rt whose connections keep their writes'
// times and can hold a write (writeConn), and true; rt itself and false
// when it is not an *http.Transport.
func stampWrites(rt http.RoundTripper) (http.RoundTripper, bool) {
	t, ok := rt.(*http.Transport)
	if !ok || t.DialContext == nil {
		return rt, false
	}
	t = t.Clone()
	dial := t.DialContext
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &writeConn{Conn: c}, nil
	}
	return t, true
}

// writeConn is a connection without receive timestamps that keeps the
// start of its latest write (LLMMETRICS_TIMING=user, other systems).
type writeConn struct {
	net.Conn
	writeStamp
}

func (c *writeConn) Write(p []byte) (int, error) {
	c.begin()
	return c.Conn.Write(p)
}

// arrivalBody is an answer's body that reports its bytes' arrival.
type arrivalBody struct {
	io.ReadCloser
	conn   stamped // nil: no kernel timestamps
	rt     *reqTiming
	seq    uint64 // the socket read of the latest chunk timed
	frames int    // chunks timed from that socket read
}

// ArrivalTime puts the kernel's receive time of the latest read on the
// clock of the request's Start: now (wall and monotonic) minus the lag
// wall(now) − kernel. Only the lag is read from the wall clock, over the
// microseconds to milliseconds the bytes waited, so a wall-clock step
// shifts only the chunks whose bytes were waiting when it happened (a lag
// that comes out negative, the clock stepped back, counts as 0).
//
// The library asks it once per chunk that carries tokens, so it also
// counts the socket reads that carried chunks, and those that carried
// several (the frames a server sends without tokens, its end marker and
// usage, are not counted: they follow the last chunk at once by design).
func (b *arrivalBody) ArrivalTime() time.Time {
	if b.conn == nil {
		b.rt.userReads++
		return time.Time{}
	}
	k, seq := b.conn.lastArrival()
	if k == 0 {
		b.rt.userReads++
		if b.rt.note == "" {
			b.rt.note = "chunks were timed when read: the kernel gave no receive timestamp for a read"
		}
		return time.Time{}
	}
	if seq != b.seq || b.frames == 0 {
		b.seq, b.frames = seq, 0
		b.rt.reads++
	}
	if b.frames++; b.frames == 2 {
		b.rt.multi++
	}
	now := time.Now()
	lag := max(time.Duration(now.UnixNano()-k), 0)
	b.rt.lags = append(b.rt.lags, lag)
	return now.Add(-lag)
}

// dialer is http.DefaultTransport's: 30 s to connect, TCP keep-alive.
var dialer = &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}

// stampedDialer dials the measured connections: with kernel receive
// timestamps where the system gives them (stamp_linux.go).
func stampedDialer(ctx context.Context, network, addr string) (net.Conn, error) {
	return dialStamped(ctx, dialer, network, addr)
}
