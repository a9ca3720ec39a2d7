//go:build linux

package main

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServerConnArrival: a connection accepted by stampListener knows
// when the kernel received the bytes of its latest read: after the
// client's write began, not after the server's read returned.
func TestServerConnArrival(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	sl := stampListener{ln}
	defer sl.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer client.Close()
	c, err := sl.Accept()
	require.NoError(t, err)
	defer c.Close()
	sc, ok := c.(*serverConn)
	require.True(t, ok, "a timestamped connection (%T)", c)
	assert.True(t, sc.arrived().IsZero(), "nothing read yet")

	// Linux turns receive timestamps on lazily, for the whole system, from
	// a work queue: the first exchanges may lack one, more of them on a
	// busy machine, so exchange until one has it (up to a second).
	stamped := 0
	for i := 0; i < 100 && stamped < 2; i++ {
		before := time.Now()
		_, err = client.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
		require.NoError(t, err)
		buf := make([]byte, 64)
		n, err := io.ReadAtLeast(c, buf, 18)
		require.NoError(t, err)
		read := time.Now()
		assert.Equal(t, "GET / HTTP/1.1\r\n\r\n", string(buf[:n]))
		got := sc.arrived()
		if got.IsZero() && stamped == 0 {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		require.False(t, got.IsZero(), "a receive timestamp, once the kernel gives them")
		stamped++
		// The kernel stamps CLOCK_REALTIME: compare wall clocks.
		assert.False(t, got.Round(0).Before(before.Round(0)), "arrival %v before the write began %v", got, before)
		assert.False(t, got.Round(0).After(read.Round(0)), "arrival %v after the read returned %v", got, read)
	}
	require.Equal(t, 2, stamped, "receive timestamps within a second")
}
