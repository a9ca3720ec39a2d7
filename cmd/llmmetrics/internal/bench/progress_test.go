package bench

import (
	"bytes"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
)

// lockedBuffer is a bytes.Buffer safe for the progress goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestInFlightCount: requests in flight, stalled ones (over stallAfter)
// and the oldest's age, on fake time.
func TestInFlightCount(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newInFlight(4)
		f.start(0)
		time.Sleep(40 * time.Second)
		f.start(1)
		f.start(2)
		time.Sleep(5 * time.Second)
		f.end(2)
		n, stalled, oldest := f.count(time.Now())
		assert.Equal(t, 2, n)
		assert.Equal(t, 1, stalled, "only the one in flight for 45 s")
		assert.Equal(t, 45*time.Second, oldest)
	})
}

// TestStalledProgressLine: off a terminal, a line names the stalled
// requests every stallEvery, and nothing is printed while none is stalled.
func TestStalledProgressLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out lockedBuffer
		p := progress{w: &out}
		f := newInFlight(3)
		var done, tokens atomic.Int64
		stop := p.watch(ModeConcurrency, 3, 0, 3, &done, &tokens, f)
		f.start(0)
		f.start(1)
		time.Sleep(stallEvery + time.Second) // 31 s: both stalled, but the first tick (30 s) saw them at 30 s
		synctest.Wait()
		assert.Empty(t, out.String(), "at the first tick nothing was in flight over 30 s")
		f.end(1)
		time.Sleep(stallEvery)
		synctest.Wait()
		stop()
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		assert.Len(t, lines, 1)
		assert.Contains(t, lines[0], "concurrency 3     repeat 1:    0/3 requests")
		assert.Contains(t, lines[0], "1 in flight  1 stalled (in flight over 30s, oldest 1m0s)")
		assert.NotContains(t, out.String(), "\r", "no live line off a terminal")
	})
}
