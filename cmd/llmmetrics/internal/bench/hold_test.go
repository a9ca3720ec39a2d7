package bench

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmmetrics/llmmetrics/llmmetricstest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// closed reports whether ch is closed.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestHold: a writer that comes before the release waits for it, and the
// release returns only once that writer has run again; a writer that
// comes after it, a second writer (a retried request) and a nil hold do
// not wait.
func TestHold(t *testing.T) {
	t.Run("the writer first", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := newHold()
			var wrote time.Time
			go func() {
				h.wait()
				wrote = time.Now()
			}()
			synctest.Wait()
			require.Equal(t, int32(holdWaiting), h.state.Load(), "the writer waits")
			time.Sleep(3 * time.Millisecond)
			at := time.Now()
			h.release()
			assert.True(t, closed(h.woke), "release returned before the writer ran")
			synctest.Wait()
			assert.Equal(t, at, wrote, "the writer went on at the release")
			h.wait() // the retried request's second attempt
		})
	})
	t.Run("the release first", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := newHold()
			h.release() // returns: no writer to wait for
			assert.Equal(t, int32(holdReleased), h.state.Load())
			assert.False(t, closed(h.woke), "no writer waited")
			h.wait() // at once
			var none *hold
			none.wait()
		})
	})
}

// TestWriteHeld: an armed connection's next write waits for the hold and is
// timed at the release; the write after it does not wait, and arming nil
// takes back a hold that a request left without writing.
func TestWriteHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client, server := net.Pipe()
		defer server.Close()
		c := &writeConn{Conn: client}
		defer c.Close()
		var got bytes.Buffer
		readDone := make(chan struct{})
		go func() {
			defer close(readDone)
			_, _ = io.Copy(&got, server)
		}()

		h := newHold()
		c.arm(h)
		wrote := make(chan struct{})
		go func() {
			defer close(wrote)
			_, err := c.Write([]byte("POST / HTTP/1.1\r\n"))
			assert.NoError(t, err)
		}()
		synctest.Wait()
		assert.Zero(t, got.Len(), "nothing left before the release")
		assert.True(t, c.lastWrite().IsZero(), "no write timed yet")
		time.Sleep(time.Millisecond)
		at := time.Now()
		h.release()
		<-wrote
		assert.Equal(t, at, c.lastWrite(), "the write is timed at the release")

		time.Sleep(time.Millisecond)
		_, err := c.Write([]byte("x")) // the request's next write: no hold
		require.NoError(t, err)
		assert.Equal(t, time.Now(), c.lastWrite())

		c.arm(newHold()) // a request that never wrote
		c.arm(nil)       // the next request on the connection, with no hold
		_, err = c.Write([]byte("y"))
		require.NoError(t, err)
		client.Close()
		<-readDone
		assert.Equal(t, "POST / HTTP/1.1\r\nxy", got.String())
	})
}

// TestPaced: with a lead, each request starts lead before its time, or
// earlier when that comes before the next release (b: at a's start), and
// its hold is released at its time, in time order (a release due before
// the next start comes first); with no lead each starts at its time, with
// no hold. The times are exact in a bubble.
func TestPaced(t *testing.T) {
	for _, lead := range []time.Duration{2 * time.Millisecond, 0} {
		t.Run(lead.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				t0 := time.Now()
				offsets := []time.Duration{10 * time.Millisecond, 10*time.Millisecond + 500*time.Microsecond, 13 * time.Millisecond, 13 * time.Millisecond, 30 * time.Millisecond}
				var mu sync.Mutex
				type event struct {
					at   time.Duration
					what string
				}
				var events []event
				note := func(what string, i int) {
					mu.Lock()
					events = append(events, event{time.Since(t0), what + " " + string(rune('a'+i))})
					mu.Unlock()
				}
				var wg sync.WaitGroup
				w := newWorkers(&wg)
				k := 0
				paced(context.Background(), timerPacer{}, w, lead, func() (time.Time, func(*hold), bool) {
					if k == len(offsets) {
						return time.Time{}, nil, false
					}
					i := k
					k++
					return t0.Add(offsets[i]), func(h *hold) {
						note("start", i)
						if lead == 0 {
							assert.Nil(t, h)
							return
						}
						require.NotNil(t, h)
						h.wait()
						note("leave", i)
					}, true
				})
				w.close()
				wg.Wait()
				// Events of one instant run on several goroutines: in any order.
				slices.SortStableFunc(events, func(a, b event) int {
					if a.at != b.at {
						return int(a.at - b.at)
					}
					return strings.Compare(a.what, b.what)
				})
				var log []string
				for _, e := range events {
					log = append(log, e.what+" "+e.at.String())
				}
				var want []string
				if lead == 0 {
					want = []string{"start a 10ms", "start b 10.5ms", "start c 13ms", "start d 13ms", "start e 30ms"}
				} else {
					want = []string{"start a 8ms", "start b 8ms", "leave a 10ms", "leave b 10.5ms", "start c 11ms", "start d 11ms",
						"leave c 13ms", "leave d 13ms", "start e 28ms", "leave e 30ms"}
				}
				assert.Equal(t, want, log)
			})
		})
	}
	t.Run("canceled: every hold released", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			t0 := time.Now()
			var wg sync.WaitGroup
			w := newWorkers(&wg)
			var left []time.Duration
			var mu sync.Mutex
			k := 0
			time.AfterFunc(16*time.Millisecond, cancel)
			paced(ctx, timerPacer{}, w, 5*time.Millisecond, func() (time.Time, func(*hold), bool) {
				k++
				return t0.Add(20 * time.Millisecond), func(h *hold) {
					h.wait()
					mu.Lock()
					left = append(left, time.Since(t0))
					mu.Unlock()
				}, k <= 3
			})
			w.close()
			wg.Wait()
			assert.Equal(t, []time.Duration{16 * time.Millisecond, 16 * time.Millisecond, 16 * time.Millisecond}, left,
				"the three held writers go when the run ends, before their time")
		})
	})
}

// TestRateRequestsStartEarly: in a bubble, an open-loop request enters
// the transport sendLead before its scheduled time (earlier when the one
// before it is due less than sendLead before it) and its bytes leave at
// that time (the Record's Start, the write's).
func TestRateRequestsStartEarly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		var stdout, stderr bytes.Buffer
		e := testEnv(&stdout, &stderr, nil)
		var mu sync.Mutex
		entered := map[int64]time.Time{} // scheduled (Unix ns) → entered the transport
		e.wrap = func(base http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(r *http.Request) (*http.Response, error) {
				if rt, ok := r.Context().Value(timingKey{}).(*reqTiming); ok && !rt.scheduled.IsZero() {
					mu.Lock()
					entered[rt.scheduled.UnixNano()] = time.Now()
					mu.Unlock()
				}
				return base.RoundTrip(r)
			})
		}
		code := run(context.Background(), []string{
			"-rates", "50", "-requests", "12", "-repeats", "1", "-warmup", "0", "-speedup", "20", "-max-tokens", "8", "-out", dir,
		}, e)
		require.Equal(t, 0, code, "stderr: %s", stderr.String())
		lines := readRecords(t, dir)
		require.Len(t, lines, 12)
		exact := 0
		var prevAt time.Time
		for i, l := range lines {
			assert.Equal(t, l.Scheduled, l.Record.Start, "line %d leaves at its time", i+1)
			at, ok := entered[l.Scheduled.UnixNano()]
			require.True(t, ok, "line %d entered the transport", i+1)
			early := l.Scheduled.Sub(at)
			assert.GreaterOrEqual(t, early, sendLead, "line %d started at least sendLead early", i+1)
			if i == 0 || l.Scheduled.Sub(lines[i-1].Scheduled) > sendLead {
				// No hold was pending when its start came.
				assert.Equal(t, sendLead, early, "line %d started sendLead early", i+1)
				exact++
			} else {
				assert.False(t, at.Before(prevAt), "line %d started before the one due before it", i+1)
			}
			prevAt = at
		}
		assert.Greater(t, exact, 6, "most of the gaps at 50/s are above 2 ms")
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestHeldRequestsNeverEarly: on loopback with the real pacer, no request
// reaches the server before its scheduled time, though each is started
// sendLead before it. The k-th measured arrival at the server is compared
// with the k-th scheduled time: requests sent early would arrive before
// the schedule from the first one on.
func TestHeldRequestsNeverEarly(t *testing.T) {
	if testing.Short() {
		t.Skip("a real run of about a second")
	}
	fake := llmmetricstest.NewInMemoryServer(llmmetricstest.ServerConfig{Speedup: 50})
	defer fake.Close()
	var mu sync.Mutex
	var arrived []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		mu.Lock()
		arrived = append(arrived, now)
		mu.Unlock()
		fake.Handler().ServeHTTP(w, r)
	}))
	defer srv.Close()
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	e := realEnv(t, &stdout, &stderr)
	e.newPacer = newPacer
	code := run(context.Background(), []string{"-url", srv.URL + "/v1", "-model", fake.Config().Model,
		"-rates", "400", "-requests", "200", "-repeats", "1", "-warmup", "0", "-max-tokens", "4", "-out", dir}, e)
	require.Equal(t, exitOK, code, "stderr: %s", stderr.String())
	lines := readRecords(t, dir)
	require.Len(t, lines, 200)
	var scheduled []time.Time
	for i, l := range lines {
		assert.False(t, l.Record.Start.Before(l.Scheduled), "line %d: its write started before its time", i+1)
		scheduled = append(scheduled, l.Scheduled)
	}
	slices.SortFunc(scheduled, time.Time.Compare)
	mu.Lock()
	measured := arrived[len(arrived)-len(scheduled):] // the preflight and the probes came first
	mu.Unlock()
	for k, at := range measured {
		assert.False(t, at.Before(scheduled[k]), "arrival %d at the server %v before its time", k+1, scheduled[k].Sub(at))
	}
}
