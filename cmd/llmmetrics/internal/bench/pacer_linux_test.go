//go:build linux

package bench

import (
	"context"
	"math/rand/v2"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTimerfdPacer: the timerfd pacer never returns before its time, over
// waits of several lengths on one descriptor (an expiry left unread by an
// earlier wait must not end a later one early), and returns at once for a
// time already past; its spin stays within [0, maxSpin], and at 0 when
// told not to spin. How soon after its time it returns is measured by
// the fidelity tool's -rates mode, not here.
func TestTimerfdPacer(t *testing.T) {
	p := newPacer()
	defer p.close()
	_, ok := p.(*timerfdPacer)
	require.True(t, ok, "Linux has timerfd")
	for _, d := range []time.Duration{0, -time.Millisecond, 50 * time.Microsecond, 300 * time.Microsecond, time.Microsecond, 2 * time.Millisecond, 10 * time.Microsecond} {
		at := time.Now().Add(d)
		p.waitUntil(at)
		assert.False(t, time.Now().Before(at), "a wait of %v returned early", d)
	}
	tp := p.(*timerfdPacer)
	assert.GreaterOrEqual(t, tp.spin, time.Duration(0))
	assert.LessOrEqual(t, tp.spin, maxSpin)
	t.Run("no spin", func(t *testing.T) {
		q := newPacer().(*timerfdPacer)
		defer q.close()
		q.noSpin()
		for _, d := range []time.Duration{300 * time.Microsecond, 50 * time.Microsecond, time.Millisecond} {
			at := time.Now().Add(d)
			q.waitUntil(at)
			assert.False(t, time.Now().Before(at), "a wait of %v returned early", d)
			assert.Zero(t, q.spin, "the estimate stays at 0 however late the timerfd wakes")
		}
	})
	t.Run("a busy core", func(t *testing.T) {
		// Another goroutine runs 50 µs at a time on the one processor:
		// the pacer's yields run it, and it waits on the timerfd for the
		// rest of its spin; never early.
		prev := runtime.GOMAXPROCS(1)
		defer runtime.GOMAXPROCS(prev)
		done := make(chan struct{})
		stopped := make(chan struct{})
		go func() {
			defer close(stopped)
			for {
				select {
				case <-done:
					return
				default:
				}
				for start := time.Now(); time.Since(start) < 50*time.Microsecond; {
				}
				runtime.Gosched()
			}
		}()
		for range 50 {
			at := time.Now().Add(300 * time.Microsecond)
			p.waitUntil(at)
			assert.False(t, time.Now().Before(at), "returned early")
		}
		close(done)
		<-stopped
	})
	t.Run("sleepUntil: a timer first, the pacer for the last stretch", func(t *testing.T) {
		at := time.Now().Add(3 * preciseWindow / 2)
		require.NoError(t, sleepUntil(context.Background(), p, at))
		assert.False(t, time.Now().Before(at))
	})
	t.Run("sleepUntil: a canceled context ends the wait", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		assert.ErrorIs(t, sleepUntil(ctx, p, time.Now().Add(time.Hour)), context.Canceled)
	})
}

// BenchmarkPacer waits for Poisson arrivals at 5,000 per second, on the
// runtime's timers (the baseline), on a timer to 2 ms before then a
// yielding spin (runtime.Gosched; while it spins the runtime does not
// poll the network, and a core shared with other programs serves a
// spinning thread later than a sleeping one), and on the timerfd pacer,
// and reports how late each wait returned (p50, p99, µs) and the share of
// a core the waiting used. Run it pinned to one core:
//
//	taskset -c 0 go test -run '^$' -bench Pacer -benchtime 10000x ./internal/bench
func BenchmarkPacer(b *testing.B) {
	for _, bc := range []struct {
		name string
		p    func() pacer
	}{
		{"runtime-timer", func() pacer { return timerPacer{} }},
		{"timer-then-yield", func() pacer { return yieldPacer{} }},
		{"timerfd", newPacer},
	} {
		b.Run(bc.name, func(b *testing.B) {
			p := bc.p()
			defer p.close()
			rng := rand.New(rand.NewPCG(1, 2))
			lags := make([]float64, 0, b.N)
			cpu0, t0 := processCPU(), time.Now()
			next := time.Now()
			b.ResetTimer()
			for range b.N {
				next = next.Add(time.Duration(rng.ExpFloat64() / 5000 * float64(time.Second)))
				p.waitUntil(next)
				lags = append(lags, float64(time.Since(next)))
			}
			b.StopTimer()
			b.ReportMetric(100*(processCPU()-cpu0).Seconds()/time.Since(t0).Seconds(), "%cpu")
			b.ReportMetric(float64(pct(lags, 50))/1e3, "lag-p50-µs")
			b.ReportMetric(float64(pct(lags, 99))/1e3, "lag-p99-µs")
		})
	}
}

// processCPU is the CPU time (user and system) the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// yieldPacer sleeps on a runtime timer until preciseWindow before, then
// yields the processor until the time comes (BenchmarkPacer's comparison).
type yieldPacer struct{}

func (yieldPacer) waitUntil(at time.Time) {
	if d := time.Until(at) - preciseWindow; d > 0 {
		time.Sleep(d)
	}
	for time.Now().Before(at) {
		runtime.Gosched()
	}
}
func (yieldPacer) close() {}
