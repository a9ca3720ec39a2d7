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
	dec := newOpenAIDecoder()
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

// BenchmarkTransportOverhead runs, interleaved in each iteration so that
// the machine's drift hits them alike, a 1,000-event stream over loopback:
//
//   - bare: through the bare transport, read to the end;
//   - by hand: the same, with the floor of measuring done by hand on each
//     Read's bytes (decoder + Start, Chunk per token-carrying event,
//     SetUsage, End), as a program without NewTransport would;
//   - transport: through NewTransport (by hand and transport alternate
//     which goes first);
//   - in memory: the floor on the same bytes with no HTTP (floorStream).
//
// It reports per event, from the medians of the per-iteration differences:
// the bare time, the floor (by hand minus bare), the transport's overhead
// (transport minus bare) and overhead/floor (target ≤ 1.10); the in-memory
// floor (a mean) and the overhead over it; and per request what the
// transport adds to measuring by hand.
func BenchmarkTransportOverhead(b *testing.B) {
	const n = 1000
	url := streamServer(b, n)
	stream := chatStream(n)
	bareBase, handBase, measuredBase := &http.Transport{}, &http.Transport{}, &http.Transport{}
	defer bareBase.CloseIdleConnections()
	defer handBase.CloseIdleConnections()
	defer measuredBase.CloseIdleConnections()
	tr, _ := NewTracker(WithMeterProvider(benchProvider(b)), WithoutWindow())
	floorTr, _ := NewTracker(WithMeterProvider(benchProvider(b)), WithoutWindow(), WithAttributes(staticAttrs...))
	bare := &http.Client{Transport: bareBase}
	hand := &http.Client{Transport: handBase}
	measured := &http.Client{Transport: NewTransport(tr, measuredBase)}
	buf := make([]byte, 32<<10)
	var s samples
	var tMem time.Duration
	i := 0
	for b.Loop() {
		t0 := time.Now()
		doStream(b, bare, url, buf)
		t1 := time.Now()
		// Alternate which of the two measured paths goes first, so that
		// neither always runs in the other's wake.
		var dHand, dMeasured time.Duration
		if i++; i%2 == 0 {
			byHand(b, floorTr, hand, url, buf)
			t2 := time.Now()
			doStream(b, measured, url, buf)
			dHand, dMeasured = t2.Sub(t1), time.Since(t2)
		} else {
			doStream(b, measured, url, buf)
			t2 := time.Now()
			byHand(b, floorTr, hand, url, buf)
			dMeasured, dHand = t2.Sub(t1), time.Since(t2)
		}
		s.add(t1.Sub(t0), dHand, dMeasured)
		t3 := time.Now()
		floorStream(floorTr, stream)
		tMem += time.Since(t3)
	}
	floorMem := float64(tMem.Nanoseconds()) / float64(b.N*n)
	overhead := s.report(b, n)
	b.ReportMetric(floorMem, "floor-mem-ns/event")
	b.ReportMetric(overhead/floorMem, "overhead/floor-mem")
}

// samples keeps the times of each iteration of an interleaved benchmark:
// bare, by hand, through the transport.
type samples struct{ bare, hand, measured []time.Duration }

func (s *samples) add(bare, hand, measured time.Duration) {
	s.bare = append(s.bare, bare)
	s.hand = append(s.hand, hand)
	s.measured = append(s.measured, measured)
}

// report reports, from the medians of the per-iteration differences (a
// preempted iteration moves a median little, a sum a lot), per event of n:
// the floor (by hand minus bare), the transport's overhead (transport minus
// bare) and their ratio; per request, what the transport adds to by hand.
// It returns the overhead per event.
func (s *samples) report(b *testing.B, n int) float64 {
	median := func(a, c []time.Duration) float64 { // of a[i] − c[i]
		d := make([]float64, len(a))
		for i := range a {
			d[i] = float64(a[i])
			if c != nil {
				d[i] -= float64(c[i])
			}
		}
		m, _ := Percentile(d, 50)
		return m
	}
	floor := median(s.hand, s.bare) / float64(n)
	overhead := median(s.measured, s.bare) / float64(n)
	b.ReportMetric(median(s.bare, nil)/float64(n), "bare-ns/event")
	b.ReportMetric(floor, "floor-ns/event")
	b.ReportMetric(overhead, "overhead-ns/event")
	b.ReportMetric(overhead/floor, "overhead/floor")
	b.ReportMetric(median(s.measured, s.hand), "added-ns/request")
	return overhead
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
	dec := newOpenAIDecoder()
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

// BenchmarkTransportInMemory measures what NewTransport costs without a
// network, where the machine's noise is smallest: a base that answers from
// memory with a stream of n events, read to the end in 4 KiB Reads.
// by-hand is what a program pays without NewTransport (Start, the round
// trip, NewReader on the body with the OpenAI decoder); transport adds
// reading the request's model, the per-request attributes and the decoder
// choice. The bare, by-hand and transport sub-benchmarks give the
// allocations; interleaved runs the three in each iteration and reports,
// per event, the floor (by-hand minus bare) and the transport's overhead
// (transport minus bare) and their ratio (target ≤ 1.10), and, per
// request, what the transport adds to by-hand.
func BenchmarkTransportInMemory(b *testing.B) {
	for _, n := range []int{10, 1000} {
		stream := chatStream(n)
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
			tr, _ := NewTracker(append([]Option{WithMeterProvider(benchProvider(b)), WithoutWindow()}, opts...)...)
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
				resp.Body = NewReader(req, resp.Body, newOpenAIDecoder())
				return resp, nil
			})
		}
		prefix := "events=" + itoa(n) + "/"
		for _, sub := range []struct {
			name string
			rt   func(b *testing.B) http.RoundTripper
		}{
			{"bare", func(*testing.B) http.RoundTripper { return base }},
			{"by-hand", func(b *testing.B) http.RoundTripper { return byHand(newTracker(b, WithAttributes(staticAttrs...))) }},
			{"transport", func(b *testing.B) http.RoundTripper { return NewTransport(newTracker(b), base) }},
		} {
			b.Run(prefix+sub.name, func(b *testing.B) {
				rt := sub.rt(b)
				b.ReportAllocs()
				for b.Loop() {
					once(rt)
				}
			})
		}
		b.Run(prefix+"interleaved", func(b *testing.B) {
			hand, measured := byHand(newTracker(b, WithAttributes(staticAttrs...))), NewTransport(newTracker(b), base)
			var s samples
			i := 0
			for b.Loop() {
				t0 := time.Now()
				once(base)
				t1 := time.Now()
				first, second := hand, measured
				if i++; i%2 == 0 {
					first, second = measured, hand
				}
				once(first)
				t2 := time.Now()
				once(second)
				t3 := time.Now()
				dHand, dMeasured := t2.Sub(t1), t3.Sub(t2)
				if i%2 == 0 {
					dHand, dMeasured = dMeasured, dHand
				}
				s.add(t1.Sub(t0), dHand, dMeasured)
			}
			s.report(b, n)
		})
	}
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
	if testing.Short() || raceEnabled { // sync.Pool drops items under -race
		t.Skip("allocation counts are for a normal build")
	}
	perRequest := func(n int) float64 {
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		defer func() { _ = mp.Shutdown(context.Background()) }()
		// WithoutITL(): the default gap list grows by doubling
		// (O(log n) allocations), which is the Tracker's, not the transport's.
		tr, err := NewTracker(WithMeterProvider(mp), WithoutWindow(), WithoutITL())
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
