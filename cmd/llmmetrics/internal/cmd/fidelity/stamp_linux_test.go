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

	// Linux turns receive timestamps on lazily: a first exchange does it.
	for i := range 2 {
		before := time.Now()
		_, err = client.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
		require.NoError(t, err)
		buf := make([]byte, 64)
		n, err := io.ReadAtLeast(c, buf, 18)
		require.NoError(t, err)
		read := time.Now()
		assert.Equal(t, "GET / HTTP/1.1\r\n\r\n", string(buf[:n]))
		got := sc.arrived()
		if i == 0 && got.IsZero() {
			continue // the first packets after the switch may lack one
		}
		require.False(t, got.IsZero(), "a receive timestamp")
		// The kernel stamps CLOCK_REALTIME: compare wall clocks.
		assert.False(t, got.Round(0).Before(before.Round(0)), "arrival %v before the write began %v", got, before)
		assert.False(t, got.Round(0).After(read.Round(0)), "arrival %v after the read returned %v", got, read)
	}
}
