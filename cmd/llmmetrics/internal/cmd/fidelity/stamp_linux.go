//go:build linux

package main

import (
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// stampListener accepts connections read with recvmsg and SO_TIMESTAMPNS:
// each knows when the kernel received the bytes of its latest read, so
// the server learns when a request's bytes arrived, not when its handler
// got to them.
type stampListener struct{ net.Listener }

func (l stampListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c, nil
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return c, nil
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	}); err != nil || serr != nil {
		return c, nil
	}
	sc := &serverConn{TCPConn: tc, rc: rc, oob: make([]byte, syscall.CmsgSpace(16))}
	sc.recv = sc.recvmsg
	return sc, nil
}

// serverConn keeps the kernel's receive time of its latest read.
type serverConn struct {
	*net.TCPConn
	rc   syscall.RawConn
	oob  []byte
	last atomic.Int64 // Unix ns, 0: unknown

	p       []byte
	n, oobn int
	rerr    error
	recv    func(fd uintptr) bool
}

// arrived is the kernel's receive time of the latest read's bytes (zero:
// unknown).
func (c *serverConn) arrived() time.Time {
	if ns := c.last.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

func (c *serverConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.p = p
	err := c.rc.Read(c.recv)
	c.p = nil
	if err == nil && c.rerr != nil {
		err = os.NewSyscallError("recvmsg", c.rerr)
	}
	if err != nil {
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
	}
	if c.n == 0 {
		return 0, io.EOF
	}
	c.last.Store(timestampNS(c.oob[:c.oobn])) // 0 when the read had none: not a stale time
	return c.n, nil
}

func (c *serverConn) recvmsg(fd uintptr) bool {
	for {
		c.n, c.oobn, _, _, c.rerr = syscall.Recvmsg(int(fd), c.p, c.oob, 0)
		if c.rerr != syscall.EINTR {
			return c.rerr != syscall.EAGAIN
		}
	}
}

// WriteTo hides *net.TCPConn's, which would read past Read.
func (c *serverConn) WriteTo(w io.Writer) (int64, error) {
	return io.Copy(w, struct{ io.Reader }{c})
}

// timestampNS is the Unix ns of the SCM_TIMESTAMPNS in oob, 0 if none.
func timestampNS(oob []byte) int64 {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return 0
	}
	for _, m := range msgs {
		if m.Header.Level == syscall.SOL_SOCKET && m.Header.Type == syscall.SCM_TIMESTAMPNS && len(m.Data) == int(unsafe.Sizeof(syscall.Timespec{})) {
			ts := (*syscall.Timespec)(unsafe.Pointer(&m.Data[0]))
			return ts.Nano()
		}
	}
	return 0
}
