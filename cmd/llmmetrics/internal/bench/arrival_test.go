package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSentStart(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	ok := llmmetrics.Record{Start: at(0), FirstToken: at(100), End: at(500)}
	failed := llmmetrics.Record{Start: at(0), End: at(50)}
	for _, tc := range []struct {
		name string
		rec  llmmetrics.Record
		sent time.Time
		want time.Time // the Start after
	}{
		{"sent unknown", ok, time.Time{}, at(0)},
		{"sent after the start, before the first token", ok, at(3), at(3)},
		{"sent at the first token", ok, at(100), at(100)},
		{"sent after the first token (another goroutine's clock)", ok, at(101), at(0)},
		{"sent before the start", ok, t0.Add(-time.Millisecond), at(0)},
		{"no token: sent before the end", failed, at(20), at(20)},
		{"no token: sent after the end", failed, at(51), at(0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := sentStart(tc.rec, &reqTiming{sent: tc.sent})
			assert.Equal(t, tc.want, got.Start)
			assert.Equal(t, tc.rec.FirstToken, got.FirstToken, "only Start moves")
			assert.Equal(t, tc.rec.End, got.End, "only Start moves")
		})
	}
	assert.Equal(t, ok, sentStart(ok, nil), "no timing: unchanged")
}

// stubWritten is a connection whose latest write returned at t.
type stubWritten struct {
	net.Conn
	t time.Time
}

func (c stubWritten) lastWrite() time.Time { return c.t }

func TestSentTime(t *testing.T) {
	began := time.Now()
	later := began.Add(2 * time.Millisecond)
	for _, tc := range []struct {
		name  string
		conn  net.Conn
		wrote time.Duration // -1: WroteRequest did not fire
		want  time.Time
	}{
		{"the connection's write", stubWritten{t: later}, time.Millisecond, later},
		{"the connection's write is the previous request's: WroteRequest", stubWritten{t: began.Add(-time.Second)}, time.Millisecond, began.Add(time.Millisecond)},
		{"a connection bench did not dial: WroteRequest", &net.TCPConn{}, 3 * time.Millisecond, began.Add(3 * time.Millisecond)},
		{"WroteRequest at once (a fake clock)", nil, 0, began},
		{"nothing written", nil, -1, time.Time{}},
		{"no write yet on the connection", stubWritten{}, -1, time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := sentTime(tc.conn, began, tc.wrote >= 0, tc.wrote)
			assert.True(t, tc.want.Equal(got), "got %v, want %v", got, tc.want)
		})
	}
}

func TestWriteStamp(t *testing.T) {
	var w writeStamp
	assert.True(t, w.lastWrite().IsZero(), "no write yet")
	before := time.Now()
	w.mark()
	after := time.Now()
	got := w.lastWrite()
	assert.False(t, got.Before(before) || got.After(after), "%v not within [%v, %v]", got, before, after)
	assert.NotEqual(t, got, got.Round(0), "the time keeps its monotonic reading")
	wall := got.Round(0) // as records.jsonl keeps it
	assert.False(t, wall.Before(before.Round(0)) || wall.After(after.Round(0)), "wall clock %v not within [%v, %v]", wall, before.Round(0), after.Round(0))
}

func TestMaxStreams(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"the highest concurrency", []string{"-concurrency", "1,4,16"}, 16},
		{"the automatic sweep", nil, maxAutoConcurrency},
		{"a search: 256 times its start", []string{"-concurrency", "8", "-search"}, 8 * maxAutoConcurrency},
		{"rates: no fixed number", []string{"-rates", "1,2"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parseFlags(tc.args, io.Discard)
			require.NoError(t, err)
			assert.Equal(t, tc.want, o.maxStreams())
		})
	}
}

// TestConnectionsReused: a closed loop holds one connection per client:
// a client's next request waits for its connection to come back rather
// than dialing another (net/http puts it back on another goroutine).
func TestConnectionsReused(t *testing.T) {
	const concurrency = 32
	var mu sync.Mutex
	conns := map[string]bool{} // the client ends of the chat requests' connections
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		conns[r.RemoteAddr] = true
		mu.Unlock()
		_, _ = io.Copy(io.Discard, r.Body)
		streamAnswer(w, 4)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"-url", srv.URL + "/v1", "-model", "m", "-concurrency", fmt.Sprint(concurrency),
		"-requests", fmt.Sprint(8 * concurrency), "-warmup", fmt.Sprint(concurrency), "-repeats", "1", "-out", t.TempDir()}, realEnv(t, &stdout, &stderr))
	require.Equal(t, exitOK, code, "stderr: %s", stderr.String())
	mu.Lock()
	defer mu.Unlock()
	// net/http puts a connection back in its idle pool from its read loop,
	// after the body's EOF reached the caller: a client that sends its next
	// request at once may find the pool empty and dial, more often when
	// both cores are busy. Twice the clients still tells reuse from a
	// connection per request (288 requests here).
	assert.LessOrEqual(t, len(conns), 2*concurrency, "connections that carried a chat request")
}

// closeCounter counts CloseIdleConnections calls.
type closeCounter struct {
	http.RoundTripper
	n int
}

func (c *closeCounter) CloseIdleConnections() { c.n++ }

// TestCloseIdleConnections: closing the measured client's idle
// connections reaches the base transport through NewTransport and
// arrivalTransport (a run in a longer-lived process leaves none open).
func TestCloseIdleConnections(t *testing.T) {
	base := &closeCounter{}
	tracker, err := llmmetrics.NewTracker(llmmetrics.WithoutWindow())
	require.NoError(t, err)
	hc := &http.Client{Transport: llmmetrics.NewTransport(tracker, arrivalTransport{base})}
	hc.CloseIdleConnections()
	assert.Equal(t, 1, base.n)
}
