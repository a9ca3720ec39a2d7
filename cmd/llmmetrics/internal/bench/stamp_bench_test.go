//go:build linux

package bench

import (
	"context"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chunkFrame is one OpenAI chat chunk as a model server streams it.
var chunkFrame = []byte(`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"tok "},"finish_reason":null}]}` + "\n\n")

// loopbackPair returns both ends of a loopback TCP connection, the
// client's dialed with dial.
func loopbackPair(tb testing.TB, dial func(ctx context.Context, network, addr string) (net.Conn, error)) (client, server net.Conn) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(tb, err)
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err = dial(context.Background(), "tcp", ln.Addr().String())
	require.NoError(tb, err)
	server = <-accepted
	require.NotNil(tb, server)
	tb.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// BenchmarkChunkRead reads one chunk per operation from a loopback
// connection (the server end writes it first, on the same goroutine):
// baseline is a plain connection read as net/http reads it; kernel is
// bench's read path with receive timestamps (recvmsg, the answer's body
// counting frames, ArrivalTime). Both report 0 allocations per chunk.
func BenchmarkChunkRead(b *testing.B) {
	plain := func(ctx context.Context, network, addr string) (net.Conn, error) {
		return dialer.DialContext(ctx, network, addr)
	}
	b.Run("baseline", func(b *testing.B) {
		c, s := loopbackPair(b, plain)
		buf := make([]byte, 4096)
		b.ReportAllocs()
		b.SetBytes(int64(len(chunkFrame)))
		for b.Loop() {
			if _, err := s.Write(chunkFrame); err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(c, buf[:len(chunkFrame)]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("kernel", func(b *testing.B) {
		b.Setenv("LLMMETRICS_TIMING", "")
		c, s := loopbackPair(b, stampedDialer)
		sc, ok := c.(*stampConn)
		require.True(b, ok, "a stamped connection (%T)", c)
		rt := &reqTiming{}
		body := &arrivalBody{ReadCloser: io.NopCloser(sc), conn: sc, rt: rt}
		buf := make([]byte, 4096)
		b.ReportAllocs()
		b.SetBytes(int64(len(chunkFrame)))
		for b.Loop() {
			if _, err := s.Write(chunkFrame); err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(body, buf[:len(chunkFrame)]); err != nil {
				b.Fatal(err)
			}
			body.ArrivalTime()
			rt.lags = rt.lags[:0] // a request keeps one per Read: its own slice, grown once
		}
	})
}

// TestChunkReadAllocs: reading a chunk through bench's kernel-timed path
// (recvmsg, the control message's timestamp, the answer's body) allocates
// nothing, so 10,000 streams add no garbage per chunk.
func TestChunkReadAllocs(t *testing.T) {
	t.Setenv("LLMMETRICS_TIMING", "")
	c, s := loopbackPair(t, stampedDialer)
	sc, ok := c.(*stampConn)
	require.True(t, ok, "a stamped connection (%T)", c)
	rt := &reqTiming{lags: make([]time.Duration, 0, 1)}
	body := &arrivalBody{ReadCloser: io.NopCloser(sc), conn: sc, rt: rt}
	buf := make([]byte, 4096)
	exchange := func() {
		_, werr := s.Write(chunkFrame)
		_, rerr := io.ReadFull(body, buf[:len(chunkFrame)])
		if werr != nil || rerr != nil {
			t.Fatal(werr, rerr)
		}
		body.ArrivalTime()
		rt.lags = rt.lags[:0]
	}
	// Linux turns receive timestamps on lazily, for the whole system, from
	// a work queue: on a busy machine the first exchanges may lack one, so
	// exchange until one has it (up to about a second).
	for i := 0; i < 100; i++ {
		exchange()
		if last, _ := sc.lastArrival(); last != 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	_, before := sc.lastArrival()
	allocs := testing.AllocsPerRun(100, exchange)
	assert.Zero(t, allocs)
	last, seq := sc.lastArrival()
	assert.Greater(t, seq, before+100, "the reads went through recvmsg")
	assert.NotZero(t, last, "with the kernel's receive time")
}

func FuzzParseTimestampNS(f *testing.F) {
	f.Add(cmsg(syscall.SOL_SOCKET, syscall.SCM_TIMESTAMPNS, timespec(1_700_000_000, 5)))
	f.Add(append(cmsg(syscall.SOL_SOCKET, syscall.SCM_RIGHTS, []byte{1, 0, 0, 0}), cmsg(syscall.SOL_SOCKET, syscall.SCM_TIMESTAMPNS, timespec(1, 2))...))
	f.Add([]byte{})
	// A message too short for a timespec, then the real one: both parsers
	// skip the first.
	f.Add(append(cmsg(syscall.SOL_SOCKET, syscall.SCM_TIMESTAMPNS, []byte{1, 0, 0, 0, 2, 0, 0, 0}), cmsg(syscall.SOL_SOCKET, syscall.SCM_TIMESTAMPNS, timespec(3, 4))...))
	f.Fuzz(func(t *testing.T, oob []byte) {
		got, err := parseTimestampNS(oob)
		want, werr := parseTimestampNSStd(oob)
		if werr != nil {
			return // the standard parser rejects what ours may skip
		}
		if err == nil && !got.Equal(want) {
			t.Fatalf("got %v, the standard parser %v", got, want)
		}
	})
}

// parseTimestampNSStd is parseTimestampNS through
// syscall.ParseSocketControlMessage, the reference.
func parseTimestampNSStd(oob []byte) (time.Time, error) {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return time.Time{}, err
	}
	for _, m := range msgs {
		if m.Header.Level == syscall.SOL_SOCKET && m.Header.Type == syscall.SCM_TIMESTAMPNS && len(m.Data) == timespecSize {
			return decodeTimespec(m.Data), nil
		}
	}
	return time.Time{}, errNoStamp
}
