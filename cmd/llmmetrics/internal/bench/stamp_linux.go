//go:build linux

package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// dialStamped dials a TCP connection with SO_TIMESTAMPNS set, whose reads
// (recvmsg) keep the kernel's receive time of their bytes. A system that
// refuses the option (ENOPROTOOPT from qemu-user, or from a kernel built
// without it, as some Raspberry Pi kernels were) gets a plain connection,
// whose chunks are timed when read and say so (the run's client_timing
// note), rather than no connection.
// With LLMMETRICS_TIMING=user in the environment it dials a plain
// connection: chunks are timed when read (to compare the two methods).
func dialStamped(ctx context.Context, d *net.Dialer, network, addr string) (net.Conn, error) {
	if os.Getenv("LLMMETRICS_TIMING") == "user" {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &writeConn{Conn: c}, nil
	}
	dd := *d
	dd.Control = func(_, _ string, c syscall.RawConn) error {
		// Set before the connection exists, so its first bytes are
		// stamped; whether it took is read back from the connection
		// dialed (a dial may try several addresses at once).
		return c.Control(func(fd uintptr) { _ = enableStamps(int(fd)) })
	}
	c, err := dd.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return &writeConn{Conn: c}, nil
	}
	rc, err := tc.SyscallConn()
	if err != nil || !stampsOn(rc) {
		return &writeConn{Conn: c}, nil
	}
	return newStampConn(tc, rc), nil
}

// enableStamps turns SO_TIMESTAMPNS on for the socket fd (a variable: the
// tests play a system that refuses it).
var enableStamps = func(fd int) error {
	return syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
}

// stampsOn reports whether the connection's socket has SO_TIMESTAMPNS on.
func stampsOn(rc syscall.RawConn) bool {
	on := false
	err := rc.Control(func(fd uintptr) {
		v, err := syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS)
		on = err == nil && v != 0
	})
	return err == nil && on
}

// stampConn reads with recvmsg and keeps the SCM_TIMESTAMPNS of its latest
// read. Reads of one connection are not concurrent (net/http reads a
// connection from one goroutine at a time); the atomics let another
// goroutine ask.
type stampConn struct {
	*net.TCPConn
	rc   syscall.RawConn
	oob  []byte
	last atomic.Int64 // Unix ns, 0: unknown
	seq  atomic.Uint64
	writeStamp

	// The read in progress: recvmsg's arguments and results, kept here
	// so that the function given to RawConn.Read (recv, bound once at
	// dial time) captures nothing and a Read allocates nothing.
	p       []byte
	n, oobn int
	rerr    error
	recv    func(fd uintptr) bool
}

func newStampConn(tc *net.TCPConn, rc syscall.RawConn) *stampConn {
	c := &stampConn{TCPConn: tc, rc: rc, oob: make([]byte, syscall.CmsgSpace(16))}
	c.recv = c.recvmsg
	return c
}

func (c *stampConn) Write(p []byte) (int, error) {
	c.begin()
	return c.TCPConn.Write(p)
}

// ReadFrom and WriteTo hide *net.TCPConn's, which read and write the
// socket directly: net/http copies a request's body with ReadFrom (past
// its first few KB), and each write must pass through Write to be timed,
// each read through Read to keep its timestamp.
func (c *stampConn) ReadFrom(r io.Reader) (int64, error) {
	return io.Copy(struct{ io.Writer }{c}, r)
}

func (c *stampConn) WriteTo(w io.Writer) (int64, error) {
	return io.Copy(w, struct{ io.Reader }{c})
}

func (c *stampConn) lastArrival() (int64, uint64) { return c.last.Load(), c.seq.Load() }

func (c *stampConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.p = p
	err := c.rc.Read(c.recv)
	c.p = nil
	n, oobn, rerr := c.n, c.oobn, c.rerr
	if err == nil && rerr != nil {
		err = os.NewSyscallError("recvmsg", rerr)
	}
	if err != nil {
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
	}
	if n == 0 {
		return 0, io.EOF
	}
	c.last.Store(receiveTime(c.oob[:oobn]))
	c.seq.Add(1)
	return n, nil
}

// recvmsg is RawConn.Read's function: true when done, false to wait for
// the socket to be readable.
func (c *stampConn) recvmsg(fd uintptr) bool {
	for {
		c.n, c.oobn, _, _, c.rerr = syscall.Recvmsg(int(fd), c.p, c.oob, 0)
		if c.rerr != syscall.EINTR {
			return c.rerr != syscall.EAGAIN
		}
	}
}

var errNoStamp = errors.New("no SCM_TIMESTAMPNS")

// receiveTime is the Unix ns of the SCM_TIMESTAMPNS in a recvmsg's control
// data, 0 when it has none.
func receiveTime(oob []byte) int64 {
	t, err := parseTimestampNS(oob)
	if err != nil {
		return 0
	}
	return t.UnixNano()
}

// parseTimestampNS returns the time in the SCM_TIMESTAMPNS message of
// oob: the platform's struct timespec, two native-endian words of 8 bytes
// (4 on a 32-bit system). A message of any other size is not the kernel's
// and is skipped. It walks the control messages as
// syscall.ParseSocketControlMessage does, without allocating (that one
// returns a new slice: an allocation per read).
func parseTimestampNS(oob []byte) (time.Time, error) {
	hdr := syscall.CmsgLen(0) // the header, aligned
	for len(oob) >= hdr {
		h := (*syscall.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(h.Len)
		if l < hdr || l > len(oob) {
			return time.Time{}, syscall.EINVAL
		}
		if d := oob[hdr:l]; h.Level == syscall.SOL_SOCKET && h.Type == syscall.SCM_TIMESTAMPNS && len(d) == timespecSize {
			return decodeTimespec(d), nil
		}
		oob = oob[min(cmsgAlign(l), len(oob)):]
	}
	return time.Time{}, errNoStamp
}

// timespecSize is the size of the kernel's struct timespec here.
const timespecSize = int(unsafe.Sizeof(syscall.Timespec{}))

// decodeTimespec reads a struct timespec of timespecSize bytes.
func decodeTimespec(d []byte) time.Time {
	if timespecSize == 8 {
		return time.Unix(int64(int32(binary.NativeEndian.Uint32(d))), int64(int32(binary.NativeEndian.Uint32(d[4:]))))
	}
	return time.Unix(int64(binary.NativeEndian.Uint64(d)), int64(binary.NativeEndian.Uint64(d[8:])))
}

// cmsgAlign rounds a control message's length up to the alignment of the
// next one (a native word on Linux).
func cmsgAlign(l int) int {
	const a = int(unsafe.Sizeof(uintptr(0)))
	return (l + a - 1) &^ (a - 1)
}
