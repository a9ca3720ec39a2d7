//go:build linux

package main

import (
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// stampedConn reads with recvmsg and keeps the kernel's receive time
// (SO_TIMESTAMPNS, CLOCK_REALTIME) of the latest bytes read: when a
// request reached the server's socket, however late the server's
// goroutines ran.
type stampedConn struct {
	*net.TCPConn
	rc   syscall.RawConn
	last atomic.Int64 // Unix ns of the latest read's bytes (0: none yet)
	oob  []byte
}

// stamped returns c reading with kernel receive times, or c when they
// cannot be had.
func stamped(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	}); err != nil || serr != nil {
		return c
	}
	return &stampedConn{TCPConn: tc, rc: rc, oob: make([]byte, syscall.CmsgSpace(16))}
}

func (c *stampedConn) Read(p []byte) (int, error) {
	var n, oobn int
	var rerr error
	err := c.rc.Read(func(fd uintptr) bool {
		n, oobn, _, _, rerr = syscall.Recvmsg(int(fd), p, c.oob, 0)
		return rerr != syscall.EAGAIN
	})
	if err == nil {
		err = rerr
	}
	if err != nil {
		return 0, err
	}
	if n == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	// A read without a stamp (Linux turns receive timestamps on lazily)
	// leaves none, not the previous request's.
	c.last.Store(0)
	if msgs, perr := syscall.ParseSocketControlMessage(c.oob[:oobn]); perr == nil {
		for _, m := range msgs {
			if m.Header.Level == syscall.SOL_SOCKET && m.Header.Type == syscall.SO_TIMESTAMPNS && len(m.Data) >= 16 {
				ts := (*syscall.Timespec)(unsafe.Pointer(&m.Data[0]))
				c.last.Store(time.Unix(ts.Sec, ts.Nsec).UnixNano())
			}
		}
	}
	return n, nil
}

// kernelArrival is the kernel's receive time of the latest bytes read on
// c (zero when c does not keep it).
func kernelArrival(c net.Conn) time.Time {
	if sc, ok := c.(*stampedConn); ok {
		if ns := sc.last.Load(); ns != 0 {
			return time.Unix(0, ns)
		}
	}
	return time.Time{}
}
