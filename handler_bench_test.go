package llmmetrics

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// memWriter is an in-memory ResponseWriter with Flush that discards the
// body: the bare cost of writing and flushing an event.
type memWriter struct {
	h       http.Header
	n       int
	flushes int
}

func (w *memWriter) Header() http.Header { return w.h }
func (w *memWriter) WriteHeader(int)     {}
func (w *memWriter) Write(p []byte) (int, error) {
	w.n += len(p)
	return len(p), nil
}
func (w *memWriter) Flush() { w.flushes++ }

// splitEvents returns the SSE events of stream, each with its blank line.
func splitEvents(stream []byte) [][]byte {
	var evs [][]byte
	for len(stream) > 0 {
		i := bytes.Index(stream, []byte("\n\n"))
		evs = append(evs, stream[:i+2])
		stream = stream[i+2:]
	}
	return evs
}

// handlerBench is one request's setup for the handler benchmarks: a
// handler that writes and flushes each event of a chat stream, a reusable
// request, and an in-memory writer.
type handlerBench struct {
	events  [][]byte
	stream  http.HandlerFunc
	req     *http.Request
	reqBody *strings.Reader
	w       *memWriter
}

func newHandlerBench(n int) *handlerBench {
	hb := &handlerBench{events: splitEvents(chatStream(n)), w: &memWriter{h: http.Header{}}}
	hb.stream = func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		for _, ev := range hb.events {
			_, _ = w.Write(ev)
			f.Flush()
		}
	}
	hb.reqBody = strings.NewReader(benchBody)
	hb.req, _ = http.NewRequest(http.MethodPost, "/v1/chat/completions", io.NopCloser(hb.reqBody))
	hb.req.Header.Set("Content-Type", "application/json")
	hb.req.ContentLength = int64(len(benchBody))
	return hb
}

// serve runs h once.
func (hb *handlerBench) serve(h http.Handler) {
	hb.reqBody.Reset(benchBody)
	clear(hb.w.h)
	h.ServeHTTP(hb.w, hb.req)
}

// byHandHandler is the floor of measuring on the server side without
// NewHandler: Start, the decoder on each event written, Chunk per
// token-carrying frame after its flush, SetUsage, End.
func (hb *handlerBench) byHandHandler(tr *Tracker) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := tr.Start(r.Context())
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		dec := newOpenAIDecoder()
		tokens := 0
		emit := func(f Frame) {
			tokens += f.Tokens
			if f.HasUsage {
				req.SetUsage(f.InputTokens, f.OutputTokens)
			}
		}
		fl := w.(http.Flusher)
		for _, ev := range hb.events {
			_, _ = w.Write(ev)
			dec.Decode(ev, emit)
			fl.Flush()
			if tokens > 0 {
				req.Chunk(tokens)
				tokens = 0
			}
		}
		dec.Flush(emit)
		req.End(nil)
	})
}

// BenchmarkHandler writes and flushes each event of a chat stream through
// NewHandler, against the bare handler on the same in-memory writer and
// the floor of measuring by hand; "interleaved" runs the three in each
// iteration and reports the medians of the per-iteration differences per
// event (overhead/floor: target ≤ 1.10).
func BenchmarkHandler(b *testing.B) {
	for _, n := range []int{10, 1000} {
		hb := newHandlerBench(n)
		newTracker := func(b *testing.B, opts ...Option) *Tracker {
			tr, _ := NewTracker(append([]Option{WithMeterProvider(benchProvider(b)), WithoutWindow()}, opts...)...)
			return tr
		}
		measured := func(b *testing.B) http.Handler {
			return NewHandler(newTracker(b), hb.stream, WithModels("gpt-4o-mini"))
		}
		hand := func(b *testing.B) http.Handler {
			return hb.byHandHandler(newTracker(b, WithAttributes(staticAttrs...)))
		}
		prefix := "events=" + itoa(n) + "/"
		for _, sub := range []struct {
			name string
			h    func(b *testing.B) http.Handler
		}{
			{"bare", func(*testing.B) http.Handler { return hb.stream }},
			{"by-hand", hand},
			{"handler", measured},
		} {
			b.Run(prefix+sub.name, func(b *testing.B) {
				h := sub.h(b)
				b.ReportAllocs()
				for b.Loop() {
					hb.serve(h)
				}
			})
		}
		b.Run(prefix+"interleaved", func(b *testing.B) {
			bare, byHand, handler := http.Handler(hb.stream), hand(b), measured(b)
			var s samples
			i := 0
			for b.Loop() {
				t0 := time.Now()
				hb.serve(bare)
				t1 := time.Now()
				first, second := byHand, handler
				if i++; i%2 == 0 {
					first, second = handler, byHand
				}
				hb.serve(first)
				t2 := time.Now()
				hb.serve(second)
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

// TestHandlerAllocations counts the allocations of one measured request
// through NewHandler on an in-memory writer: the same for 100 and 1,000
// events written and flushed one by one (0 per event), and a bounded count
// per request.
func TestHandlerAllocations(t *testing.T) {
	if testing.Short() || raceEnabled { // sync.Pool drops items under -race
		t.Skip("allocation counts are for a normal build")
	}
	perRequest := func(n int) float64 {
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		defer func() { _ = mp.Shutdown(context.Background()) }()
		// WithoutITL(): the default gap list grows by doubling
		// (O(log n) allocations), which is the Tracker's, not the handler's.
		tr, err := NewTracker(WithMeterProvider(mp), WithoutWindow(), WithoutITL())
		require.NoError(t, err)
		hb := newHandlerBench(n)
		h := NewHandler(tr, hb.stream, WithModels("gpt-4o-mini"))
		hb.serve(h)
		require.Equal(t, n, hb.w.flushes, "one flush per event")
		return testing.AllocsPerRun(50, func() { hb.serve(h) })
	}
	small, large := perRequest(100), perRequest(1000)
	assert.Equal(t, small, large, "allocations do not grow with the number of events")
	assert.LessOrEqual(t, large, 40.0, "allocations per request")
	t.Logf("allocations per request: %v", large)
}
