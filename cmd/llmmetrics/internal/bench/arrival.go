package bench

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"
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
// chunks by their arrival (see llmmetrics.NewReader). It also records each
// request's arrival lags in its *reqTiming (the context's timingKey).
type arrivalTransport struct{ base http.RoundTripper }

func (t arrivalTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	rt, _ := req.Context().Value(timingKey{}).(*reqTiming)
	if rt == nil {
		return t.base.RoundTrip(req)
	}
	var conn atomic.Pointer[stamped]
	ctx := httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
		if c, ok := i.Conn.(stamped); ok {
			conn.Store(&c)
		}
	}})
	resp, err := t.base.RoundTrip(req.WithContext(ctx))
	if err != nil || resp == nil || resp.Body == nil || resp.Body == http.NoBody {
		return resp, err
	}
	b := &arrivalBody{ReadCloser: resp.Body, rt: rt}
	if c := conn.Load(); c != nil {
		b.conn = *c
	} else {
		rt.note = "chunks were timed when read: the connection has no kernel receive timestamps (TLS, a proxy, or not Linux)"
	}
	resp.Body = b
	return resp, nil
}

// arrivalBody is an answer's body that reports its bytes' arrival.
type arrivalBody struct {
	io.ReadCloser
	conn   stamped // nil: no kernel timestamps
	rt     *reqTiming
	seq    uint64 // the socket read the frames counted in frames came from
	frames int    // frames read since that socket read
}

func (b *arrivalBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.conn != nil && n > 0 {
		if _, seq := b.conn.lastArrival(); seq != b.seq {
			b.countRead()
			b.seq = seq
		}
		b.frames += countFrames(p[:n])
	}
	return n, err
}

// countRead adds the frames of the socket read that has ended to the
// request's read counts.
func (b *arrivalBody) countRead() {
	if b.frames > 0 {
		b.rt.reads++
		if b.frames > 1 {
			b.rt.multi++
		}
	}
	b.frames = 0
}

func (b *arrivalBody) Close() error {
	b.countRead()
	return b.ReadCloser.Close()
}

// ArrivalTime puts the kernel's receive time of the latest read on the
// clock of the request's Start: now (wall and monotonic) minus the lag
// wall(now) − kernel. Only the lag is read from the wall clock, over the
// microseconds to milliseconds the bytes waited, so a wall-clock step
// shifts only the chunks whose bytes were waiting when it happened (a lag
// that comes out negative, the clock stepped back, counts as 0).
func (b *arrivalBody) ArrivalTime() time.Time {
	if b.conn == nil {
		b.rt.userReads++
		return time.Time{}
	}
	k, _ := b.conn.lastArrival()
	if k == 0 {
		b.rt.userReads++
		if b.rt.note == "" {
			b.rt.note = "chunks were timed when read: the kernel gave no receive timestamp for a read"
		}
		return time.Time{}
	}
	now := time.Now()
	lag := max(time.Duration(now.UnixNano()-k), 0)
	b.rt.lags = append(b.rt.lags, lag)
	return now.Add(-lag)
}

// countFrames counts the server-sent events that end in p (a blank line;
// LF or CRLF): the frames a read carried, less the end marker ([DONE])
// and the usage chunk ("choices":[]), which follow the last chunk at once
// by design, not because the client fell behind.
func countFrames(p []byte) int {
	n := bytes.Count(p, []byte("\n\n")) + bytes.Count(p, []byte("\n\r\n"))
	n -= bytes.Count(p, []byte("data: [DONE]")) + bytes.Count(p, []byte(`"choices":[]`))
	return max(n, 0)
}

// dialer is http.DefaultTransport's: 30 s to connect, TCP keep-alive.
var dialer = &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}

// stampedDialer dials the measured connections: with kernel receive
// timestamps where the system gives them (stamp_linux.go).
func stampedDialer(ctx context.Context, network, addr string) (net.Conn, error) {
	return dialStamped(ctx, dialer, network, addr)
}
