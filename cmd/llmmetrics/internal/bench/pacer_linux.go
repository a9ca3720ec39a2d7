//go:build linux

package bench

import (
	"errors"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// timerfdPacer waits on a Linux timerfd read through Go's network poller,
// then yields the processor for the last few microseconds.
//
// Go's own timers cannot wake an idle program within 100 µs: with nothing
// to run, the runtime sleeps in epoll_wait, whose timeout is in whole
// milliseconds, so a timer due in 50 µs fires up to ~1 ms late (Go 1.26,
// runtime/netpoll_epoll.go rounds any delay under 1 ms up to 1 ms). A
// timerfd is a kernel high-resolution timer whose expiry is an event on
// the poller's epoll set, so it ends that epoll_wait when due. While the
// program is busy the runtime polls the network only between goroutines,
// but it checks its timers at every scheduling point; the read's deadline
// (a runtime timer at the same instant) covers that case. Whichever comes
// first wakes the waiting goroutine.
//
// A sleeping core still takes time to wake: on the virtual machine this
// was measured on, a timerfd wait returned 55–90 µs late at the median
// (fidelity -rates 1000). So the timerfd is set spin before the time, and
// the pacer yields the processor (runtime.Gosched) until the time comes:
// the core does not sleep. spin follows the 90th percentile of how late
// the timerfd wakes the pacer (a stochastic quantile estimate, within
// [0, maxSpin]): a machine that wakes fast spins little. While the pacer
// yields, the runtime runs the goroutines ready to run but does not poll
// the network (it looks for ready goroutines, the pacer among them,
// first), so a chunk that arrives then is read when the spin ends; once
// two yields in a row have run other goroutines, the core is busy anyway,
// and the pacer waits on the timerfd again for the rest.
type timerfdPacer struct {
	f     *os.File
	fd    int
	base  time.Time // a reading of time.Now ...
	mono0 int64     // ... and of CLOCK_MONOTONIC (ns) at the same moment
	spin  time.Duration
	limit time.Duration // spin's bound: maxSpin, or 0 (see noSpin)
}

// maxSpin bounds the pacer's yielding wait before each time: at 1,000
// arrivals a second it costs up to a fifth of the core's idle time.
const maxSpin = 200 * time.Microsecond

// newPacer returns a timerfd pacer, or the runtime's timers where a
// timerfd cannot be made.
func newPacer() pacer {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return timerPacer{}
	}
	// time.Now's monotonic reading is CLOCK_MONOTONIC from an offset the
	// runtime keeps to itself: one reading of each puts a time on the
	// timerfd's clock with no system call per wait.
	var now unix.Timespec
	base := time.Now()
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &now) != nil {
		unix.Close(fd)
		return timerPacer{}
	}
	// A non-blocking descriptor is registered with the network poller.
	return &timerfdPacer{f: os.NewFile(uintptr(fd), "timerfd"), fd: fd, base: base, mono0: now.Nano(), spin: maxSpin / 4, limit: maxSpin}
}

func (p *timerfdPacer) waitUntil(at time.Time) {
	if wake := at.Add(-p.spin); time.Until(wake) > 0 {
		p.sleepUntil(wake)
		late := time.Since(wake)
		// The estimate moves up 9 steps when the wake-up was later than
		// spin and down 1 when it was not: it settles where 1 in 10 is.
		if late > p.spin {
			p.spin = min(p.spin+9*spinStep, p.limit)
		} else {
			p.spin = max(p.spin-spinStep, 0)
		}
	}
	for long := 0; ; {
		now := time.Now()
		if !now.Before(at) {
			return
		}
		runtime.Gosched()
		if time.Since(now) <= busyYield {
			long = 0
		} else if long++; long == 2 {
			// Other goroutines ran at each of two yields: the core is
			// busy and will not sleep, and the runtime, which does not
			// poll the network while the pacer yields, polls it again
			// while the pacer waits on the timerfd (its deadline, a
			// runtime timer, is on time at the next scheduling point of a
			// busy program).
			p.sleepUntil(at)
			return
		}
	}
}

// busyYield: a yield that took longer than this ran other goroutines, or
// was interrupted (runtime.Gosched alone takes under a microsecond; a
// timer interrupt or the host can stretch one yield, rarely two in a row).
const busyYield = 5 * time.Microsecond

// noSpin makes the pacer wait on the timerfd alone. While the pacer
// yields, the runtime runs the goroutines ready to run but does not poll
// the network, so a read waits until the spin ends; a chunk timed by the
// kernel keeps its arrival time, one timed when read (no receive
// timestamps) would carry the wait.
func (p *timerfdPacer) noSpin() { p.spin, p.limit = 0, 0 }

// spinStep is the spin estimate's step.
const spinStep = time.Microsecond

// sleepUntil sleeps on the timerfd until at.
func (p *timerfdPacer) sleepUntil(at time.Time) {
	due := unix.NsecToTimespec(p.mono0 + int64(at.Sub(p.base)))
	if unix.TimerfdSettime(p.fd, unix.TFD_TIMER_ABSTIME, &unix.ItimerSpec{Value: due}, nil) != nil {
		time.Sleep(time.Until(at))
		return
	}
	// Re-arming resets the expiry count, so an expiry left unread by an
	// earlier wait (its deadline came first) cannot end this one early.
	_ = p.f.SetReadDeadline(at)
	var buf [8]byte
	if _, err := p.f.Read(buf[:]); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		time.Sleep(time.Until(at))
	}
}

func (p *timerfdPacer) close() { p.f.Close() }
