package llmmetrics

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// benchBody is a chat request as openai-go sends it (the model after the
// messages).
const benchBody = `{"messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Tell me a story about a fox."}],"model":"gpt-4o-mini","stream":true}`

// streamServer serves chatStream(n) as an SSE answer to every request.
func streamServer(b testing.TB, n int) string {
	stream := chatStream(n)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(stream)
	}))
	b.Cleanup(srv.Close)
	return srv.URL + "/v1/chat/completions"
}

// doStream sends one chat request through c and reads the whole answer.
func doStream(b testing.TB, c *http.Client, url string, buf []byte) {
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(benchBody))
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	for {
		if _, err := resp.Body.Read(buf); err != nil {
			if err != io.EOF {
				b.Fatal(err)
			}
			break
		}
	}
	_ = resp.Body.Close()
}

// floorStream is the floor of measuring a stream: the decoder and the
// Request calls (Start, Chunk per token-carrying event, SetUsage, End) over
// the same bytes in 4 KiB pieces, with no HTTP.
func floorStream(tr *Tracker, stream []byte) Record {
	req := tr.Start(context.Background())
	dec := NewOpenAIDecoder()
	emit := func(f Frame) {
		if f.Tokens != 0 {
			req.Chunk(f.Tokens)
		}
		if f.HasUsage {
			req.SetUsage(f.InputTokens, f.OutputTokens)
		}
	}
	for p := stream; len(p) > 0; p = p[min(len(p), 4096):] {
		dec.Decode(p[:min(len(p), 4096)], emit)
	}
	dec.Flush(emit)
	return req.End(nil)
}

// BenchmarkTransport streams a chat answer of n events over loopback, with
// a dedicated http.Transport, bare and through NewTransport; floor is the
// in-memory floor of the measurement (decoder + Request calls). ns/event
// is each sub-benchmark's time per event of the stream.
func BenchmarkTransport(b *testing.B) {
	for _, n := range []int{100, 1000} {
		url := streamServer(b, n)
		stream := chatStream(n)
		perEvent := func(b *testing.B) {
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
		}
		b.Run("events="+itoa(n)+"/bare", func(b *testing.B) {
			base := &http.Transport{}
			defer base.CloseIdleConnections()
			c := &http.Client{Transport: base}
			buf := make([]byte, 32<<10)
			b.ReportAllocs()
			for b.Loop() {
				doStream(b, c, url, buf)
			}
			perEvent(b)
		})
		b.Run("events="+itoa(n)+"/transport", func(b *testing.B) {
			base := &http.Transport{}
			defer base.CloseIdleConnections()
			tr, _ := NewTracker(WithMeterProvider(benchProvider(b)), WithRole(RoleClient), WithWindow(0, 0))
			c := &http.Client{Transport: NewTransport(tr, base)}
			buf := make([]byte, 32<<10)
			b.ReportAllocs()
			for b.Loop() {
				doStream(b, c, url, buf)
			}
			perEvent(b)
		})
		b.Run("events="+itoa(n)+"/floor", func(b *testing.B) {
			tr, _ := NewTracker(WithMeterProvider(benchProvider(b)), WithRole(RoleClient), WithWindow(0, 0), WithAttributes(staticAttrs...))
			b.ReportAllocs()
			for b.Loop() {
				floorStream(tr, stream)
			}
			perEvent(b)
		})
	}
}

// BenchmarkTransportOverhead runs, interleaved in each iteration so that
// the machine's drift hits them alike, a 1,000-event stream over loopback:
//
//   - bare: through the bare transport, read to the end;
//   - by hand: the same, with the floor of measuring done by hand on each
//     Read's bytes (decoder + Start, Chunk per token-carrying event,
//     SetUsage, End), as a program without NewTransport would;
//   - transport: through NewTransport;
//   - in memory: the floor on the same bytes with no HTTP (floorStream).
//
// It reports per event: the bare time, the two floors (by hand minus bare;
// in memory), the transport's overhead (transport minus bare), and the
// overhead over each floor (target ≤ 1.10).
func BenchmarkTransportOverhead(b *testing.B) {
	const n = 1000
	url := streamServer(b, n)
	stream := chatStream(n)
	bareBase, handBase, measuredBase := &http.Transport{}, &http.Transport{}, &http.Transport{}
	defer bareBase.CloseIdleConnections()
	defer handBase.CloseIdleConnections()
	defer measuredBase.CloseIdleConnections()
	tr, _ := NewTracker(WithMeterProvider(benchProvider(b)), WithRole(RoleClient), WithWindow(0, 0))
	floorTr, _ := NewTracker(WithMeterProvider(benchProvider(b)), WithRole(RoleClient), WithWindow(0, 0), WithAttributes(staticAttrs...))
	bare := &http.Client{Transport: bareBase}
	hand := &http.Client{Transport: handBase}
	measured := &http.Client{Transport: NewTransport(tr, measuredBase)}
	buf := make([]byte, 32<<10)
	var tBare, tHand, tMeasured, tMem time.Duration
	for b.Loop() {
		t0 := time.Now()
		doStream(b, bare, url, buf)
		t1 := time.Now()
		byHand(b, floorTr, hand, url, buf)
		t2 := time.Now()
		doStream(b, measured, url, buf)
		t3 := time.Now()
		floorStream(floorTr, stream)
		t4 := time.Now()
		tBare += t1.Sub(t0)
		tHand += t2.Sub(t1)
		tMeasured += t3.Sub(t2)
		tMem += t4.Sub(t3)
	}
	events := float64(b.N * n)
	perEvent := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / events }
	floorNet, floorMem, overhead := perEvent(tHand-tBare), perEvent(tMem), perEvent(tMeasured-tBare)
	b.ReportMetric(perEvent(tBare), "bare-ns/event")
	b.ReportMetric(floorNet, "floor-ns/event")
	b.ReportMetric(floorMem, "floor-mem-ns/event")
	b.ReportMetric(overhead, "overhead-ns/event")
	b.ReportMetric(overhead/floorNet, "overhead/floor")
	b.ReportMetric(overhead/floorMem, "overhead/floor-mem")
}

// byHand sends one chat request through c and measures its answer by hand:
// the decoder is given each Read's bytes and drives the Request.
func byHand(b testing.TB, tr *Tracker, c *http.Client, url string, buf []byte) {
	r := tr.Start(context.Background())
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(benchBody))
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	dec := NewOpenAIDecoder()
	emit := func(f Frame) {
		if f.Tokens != 0 {
			r.Chunk(f.Tokens)
		}
		if f.HasUsage {
			r.SetUsage(f.InputTokens, f.OutputTokens)
		}
	}
	for {
		k, err := resp.Body.Read(buf)
		dec.Decode(buf[:k], emit)
		if err != nil {
			if err != io.EOF {
				b.Fatal(err)
			}
			break
		}
	}
	dec.Flush(emit)
	_ = resp.Body.Close()
	r.End(nil)
}

// BenchmarkTransportRequest measures the per-request cost of NewTransport
// without a network: a base that answers from memory with a 10-event
// stream, read to the end. by-hand is what a program pays without
// NewTransport (Start, the round trip, NewReader on the body); transport
// adds reading the request's model, the per-request attributes and the
// decoder choice.
func BenchmarkTransportRequest(b *testing.B) {
	stream := chatStream(10)
	body := &rewindBody{}
	resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}}
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		_, _ = io.Copy(io.Discard, r.Body)
		body.Reset(stream)
		resp.Body = body
		return resp, nil
	})
	reqBody := strings.NewReader(benchBody)
	req, _ := http.NewRequest(http.MethodPost, "http://llm/v1/chat/completions", reqBody)
	req.Header.Set("Content-Type", "application/json")
	buf := make([]byte, 4096)
	once := func(rt http.RoundTripper) {
		reqBody.Reset(benchBody)
		resp, _ := rt.RoundTrip(req)
		for {
			if _, err := resp.Body.Read(buf); err != nil {
				break
			}
		}
		_ = resp.Body.Close()
	}
	newTracker := func(b *testing.B, opts ...Option) *Tracker {
		tr, _ := NewTracker(append([]Option{WithMeterProvider(benchProvider(b)), WithRole(RoleClient), WithWindow(0, 0)}, opts...)...)
		return tr
	}
	byHand := func(tr *Tracker) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			req := tr.Start(r.Context())
			resp, err := base.RoundTrip(r)
			if err != nil {
				req.End(err)
				return nil, err
			}
			resp.Body = NewReader(req, resp.Body, NewOpenAIDecoder())
			return resp, nil
		})
	}
	for _, sub := range []struct {
		name string
		rt   func(b *testing.B) http.RoundTripper
	}{
		{"bare", func(*testing.B) http.RoundTripper { return base }},
		{"by-hand", func(b *testing.B) http.RoundTripper { return byHand(newTracker(b, WithAttributes(staticAttrs...))) }},
		{"transport", func(b *testing.B) http.RoundTripper { return NewTransport(newTracker(b), base) }},
	} {
		b.Run(sub.name, func(b *testing.B) {
			rt := sub.rt(b)
			b.ReportAllocs()
			for b.Loop() {
				once(rt)
			}
		})
	}
	// Both measured paths, interleaved, for their difference.
	b.Run("interleaved", func(b *testing.B) {
		hand, measured := byHand(newTracker(b, WithAttributes(staticAttrs...))), NewTransport(newTracker(b), base)
		var tHand, tMeasured time.Duration
		for b.Loop() {
			t0 := time.Now()
			once(hand)
			t1 := time.Now()
			once(measured)
			tHand += t1.Sub(t0)
			tMeasured += time.Since(t1)
		}
		b.ReportMetric(float64(tHand.Nanoseconds())/float64(b.N), "by-hand-ns/request")
		b.ReportMetric(float64(tMeasured.Nanoseconds())/float64(b.N), "transport-ns/request")
		b.ReportMetric(float64((tMeasured-tHand).Nanoseconds())/float64(b.N), "overhead-ns/request")
	})
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

// rewindBody is a response body that can be read again (Reset), so an
// allocation count sees only what the transport allocates.
type rewindBody struct{ bytes.Reader }

func (*rewindBody) Close() error { return nil }

// TestTransportAllocations counts the allocations of one measured round
// trip (with an in-memory base): the same for 100 and 1,000 events, so 0
// per content event, and a bounded count per request.
func TestTransportAllocations(t *testing.T) {
	if testing.Short() || summaryRaceEnabled { // sync.Pool drops items under -race
		t.Skip("allocation counts are for a normal build")
	}
	perRequest := func(n int) float64 {
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		defer func() { _ = mp.Shutdown(context.Background()) }()
		// WithKeepITL(false): the default gap list grows by doubling
		// (O(log n) allocations), which is the Tracker's, not the transport's.
		tr, err := NewTracker(WithMeterProvider(mp), WithRole(RoleClient), WithWindow(0, 0), WithKeepITL(false))
		require.NoError(t, err)
		stream := chatStream(n)
		body := &rewindBody{}
		resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}}
		rt := NewTransport(tr, roundTripFunc(func(r *http.Request) (*http.Response, error) {
			_, _ = io.Copy(io.Discard, r.Body)
			body.Reset(stream)
			resp.Body = body
			return resp, nil
		}))
		reqBody := strings.NewReader(benchBody)
		req, err := http.NewRequest(http.MethodPost, "http://llm/v1/chat/completions", reqBody)
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		buf := make([]byte, 4096)
		return testing.AllocsPerRun(50, func() {
			reqBody.Reset(benchBody)
			resp, _ := rt.RoundTrip(req)
			for {
				if _, err := resp.Body.Read(buf); err != nil {
					break
				}
			}
			_ = resp.Body.Close()
		})
	}
	small, large := perRequest(100), perRequest(1000)
	assert.Equal(t, small, large, "allocations do not grow with the number of events")
	assert.LessOrEqual(t, large, 40.0, "allocations per request")
	t.Logf("allocations per request: %v", large)
}
