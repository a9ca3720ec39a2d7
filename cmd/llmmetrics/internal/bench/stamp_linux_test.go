//go:build linux

package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/llmmetrics/llmmetrics"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric"
)

// cmsg builds one control message as the kernel lays it out.
func cmsg(level, typ int32, data []byte) []byte {
	b := make([]byte, syscall.CmsgSpace(len(data)))
	h := (*syscall.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level, h.Type = level, typ
	h.SetLen(syscall.CmsgLen(len(data)))
	copy(b[syscall.CmsgLen(0):], data)
	return b
}

func timespec(sec, nsec int64) []byte {
	ts := syscall.NsecToTimespec(sec*1e9 + nsec) // its fields are 32-bit on a 32-bit system
	return unsafe.Slice((*byte)(unsafe.Pointer(&ts)), unsafe.Sizeof(ts))
}

func TestParseTimestampNS(t *testing.T) {
	stamp := cmsg(syscall.SOL_SOCKET, syscall.SCM_TIMESTAMPNS, timespec(1_700_000_000, 123_456_789))
	other := cmsg(syscall.SOL_SOCKET, syscall.SCM_RIGHTS, []byte{1, 0, 0, 0})
	for _, tc := range []struct {
		name string
		oob  []byte
		want time.Time // zero: an error
	}{
		{"a timestamp", stamp, time.Unix(1_700_000_000, 123_456_789)},
		{"after another message", append(other, stamp...), time.Unix(1_700_000_000, 123_456_789)},
		{"no control data", nil, time.Time{}},
		{"another message only", other, time.Time{}},
		{"truncated", stamp[:len(stamp)-9], time.Time{}},
		{"too short for a timespec", cmsg(syscall.SOL_SOCKET, syscall.SCM_TIMESTAMPNS, make([]byte, timespecSize/2)), time.Time{}},
		{"too short, then a timestamp", append(cmsg(syscall.SOL_SOCKET, syscall.SCM_TIMESTAMPNS, make([]byte, timespecSize/2)), stamp...), time.Unix(1_700_000_000, 123_456_789)},
		{"too long, then a timestamp", append(cmsg(syscall.SOL_SOCKET, syscall.SCM_TIMESTAMPNS, make([]byte, timespecSize+8)), stamp...), time.Unix(1_700_000_000, 123_456_789)},
		{"wrong level", cmsg(syscall.SOL_IP, syscall.SCM_TIMESTAMPNS, timespec(1, 2)), time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseTimestampNS(tc.oob)
			if tc.want.IsZero() {
				assert.Error(t, err)
				assert.Zero(t, receiveTime(tc.oob))
				return
			}
			require.NoError(t, err)
			assert.True(t, tc.want.Equal(got), "got %v", got)
			assert.Equal(t, tc.want.UnixNano(), receiveTime(tc.oob))
		})
	}
}

// TestKernelStampsOnLoopback streams an answer over a real loopback TCP
// connection: its chunks are timed by the kernel (method kernel), never
// after the moment user space got their bytes.
func TestKernelStampsOnLoopback(t *testing.T) {
	const chunks = 4
	stream, rec := loopbackStreams(t, chunks)
	// Linux turns receive timestamps on for the system lazily, after the
	// first timestamped socket opens: the first packets may lack one. A
	// first answer gets it on (its idle connection keeps it on).
	stream()
	rt, firstRead := stream()

	require.Equal(t, chunks, rec.OutputTokens, "every chunk counted")
	assert.Zero(t, rt.userReads, "no chunk timed by the clock (note: %s)", rt.note)
	require.NotEmpty(t, rt.lags)
	for _, l := range rt.lags {
		assert.GreaterOrEqual(t, l, time.Duration(0))
	}
	assert.False(t, rec.FirstToken.After(firstRead), "the kernel's arrival %v is not after the read %v", rec.FirstToken, firstRead)
	assert.False(t, rec.FirstToken.Before(rec.Start), "arrival after the request's start")
	assert.GreaterOrEqual(t, rt.reads, 1)

	var s timingSamples
	s.add(*rec, &rt)
	assert.Equal(t, "kernel", s.summary().Method)
}

// TestStampsRefused: on a system that refuses SO_TIMESTAMPNS (a sandbox,
// an emulator) bench still connects, times the chunks when read, and says
// so; no request fails for it.
func TestStampsRefused(t *testing.T) {
	refuse := func(int) error { return syscall.ENOPROTOOPT }
	prev := enableStamps
	enableStamps = refuse
	t.Cleanup(func() { enableStamps = prev })

	const chunks = 3
	stream, rec := loopbackStreams(t, chunks)
	rt, _ := stream()
	require.Equal(t, chunks, rec.OutputTokens, "every chunk counted")
	assert.Equal(t, chunks, rt.userReads, "each chunk timed when read")
	assert.Empty(t, rt.lags)
	assert.Contains(t, rt.note, "refuses them")

	var s timingSamples
	s.add(*rec, &rt)
	assert.Equal(t, "user", s.summary().Method)
}

// loopbackStreams serves chunks streamed chat chunks, 2 ms apart, over a
// real loopback TCP connection, and returns a function that streams one
// answer through arrivalTransport on bench's dialer (its timing, and when
// user space first read its bytes) and the Record of the latest answer.
func loopbackStreams(t *testing.T, chunks int) (func() (reqTiming, time.Time), *llmmetrics.Record) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range chunks {
			fmt.Fprintf(w, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"t%d\"}}]}\n\n", i)
			w.(http.Flusher).Flush()
			time.Sleep(2 * time.Millisecond) // the server's pace: separate segments
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)

	rec := new(llmmetrics.Record)
	tracker, err := llmmetrics.NewTracker(llmmetrics.WithMeterProvider(metric.NewMeterProvider()), llmmetrics.WithoutWindow(),
		llmmetrics.WithOnEnd(func(_ context.Context, r llmmetrics.Record) { *rec = r }))
	require.NoError(t, err)
	base := newHTTPTransport()
	t.Cleanup(base.CloseIdleConnections)
	hc := &http.Client{Transport: llmmetrics.NewTransport(tracker, arrivalTransport{base})}

	return func() (rt reqTiming, firstRead time.Time) {
		ctx := context.WithValue(context.Background(), timingKey{}, &rt)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/chat/completions", nil)
		require.NoError(t, err)
		resp, err := hc.Do(req)
		require.NoError(t, err)
		buf := make([]byte, 64<<10)
		for {
			n, err := resp.Body.Read(buf)
			if n > 0 && firstRead.IsZero() {
				firstRead = time.Now()
			}
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
		}
		require.NoError(t, resp.Body.Close())
		return rt, firstRead
	}, rec
}

// TestSentOnLoopback sends a request over a real loopback connection with
// either timing method: its sent time is that of the connection's write,
// after the round trip began and before the server's answer was read.
func TestSentOnLoopback(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"t\"}}]}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	for _, method := range []string{"kernel", "user"} {
		t.Run(method, func(t *testing.T) {
			t.Setenv("LLMMETRICS_TIMING", method)
			var rec llmmetrics.Record
			tracker, err := llmmetrics.NewTracker(llmmetrics.WithMeterProvider(metric.NewMeterProvider()), llmmetrics.WithoutWindow(),
				llmmetrics.WithOnEnd(func(ctx context.Context, r llmmetrics.Record) {
					rec = sentStart(r, ctx.Value(timingKey{}).(*reqTiming))
				}))
			require.NoError(t, err)
			base := newHTTPTransport()
			defer base.CloseIdleConnections()
			var conn net.Conn
			trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { conn = i.Conn }}
			hc := &http.Client{Transport: llmmetrics.NewTransport(tracker, arrivalTransport{base})}
			var rt reqTiming
			ctx := httptrace.WithClientTrace(context.WithValue(context.Background(), timingKey{}, &rt), trace)
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(`{"model":"m","stream":true}`))
			require.NoError(t, err)
			began := time.Now()
			resp, err := hc.Do(req)
			require.NoError(t, err)
			_, err = io.Copy(io.Discard, resp.Body)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())

			w, ok := conn.(writeStamped)
			require.True(t, ok, "bench's dialer keeps the writes' time (%T)", conn)
			require.False(t, rt.sent.IsZero())
			assert.True(t, rt.sent.Equal(w.lastWrite()), "sent %v is the connection's latest write %v", rt.sent, w.lastWrite())
			assert.True(t, rt.sent.After(began), "sent %v after the round trip began %v", rt.sent, began)
			assert.True(t, rec.Start.Equal(rt.sent), "the Record starts when the request was written")
			assert.False(t, rec.FirstToken.Before(rec.Start))
		})
	}
}
