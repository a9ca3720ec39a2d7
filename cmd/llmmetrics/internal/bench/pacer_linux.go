//go:build linux

package bench

import (
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// timerfdPacer waits on a Linux timerfd read through Go's network poller.
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
// first wakes the waiting goroutine; no processor spins.
type timerfdPacer struct {
	f  *os.File
	fd int
}

// newPacer returns a timerfd pacer, or the runtime's timers where a
// timerfd cannot be made.
func newPacer() pacer {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return timerPacer{}
	}
	// A non-blocking descriptor is registered with the network poller.
	return &timerfdPacer{f: os.NewFile(uintptr(fd), "timerfd"), fd: fd}
}

func (p *timerfdPacer) waitUntil(at time.Time) {
	d := time.Until(at)
	if d <= 0 {
		return
	}
	var now unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &now) != nil {
		time.Sleep(d)
		return
	}
	due := unix.NsecToTimespec(now.Nano() + int64(d))
	if unix.TimerfdSettime(p.fd, unix.TFD_TIMER_ABSTIME, &unix.ItimerSpec{Value: due}, nil) != nil {
		time.Sleep(d)
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
