package llmmetrics

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// lineDecoder is a toy protocol for testing the adapters: one frame per
// '\n'-terminated line; "t N" carries N tokens, "u I O" reports usage,
// "e MSG" is a stream error, "d" is the end marker; other lines carry nothing.
type lineDecoder struct{ buf []byte }

func (d *lineDecoder) Decode(p []byte, emit func(Frame)) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			d.buf = append(d.buf, p...)
			return
		}
		d.buf = append(d.buf, p[:i]...)
		p = p[i+1:]
		emit(parseLine(string(d.buf)))
		d.buf = d.buf[:0]
	}
}

func (d *lineDecoder) Flush(emit func(Frame)) {
	if len(d.buf) > 0 {
		emit(parseLine(string(d.buf)))
		d.buf = d.buf[:0]
	}
}

func (d *lineDecoder) Err() error { return nil }

func parseLine(l string) Frame {
	f := strings.Fields(l)
	num := func(i int) int {
		if i >= len(f) {
			return 0
		}
		n, _ := strconv.Atoi(f[i])
		return n
	}
	switch {
	case len(f) == 0:
		return Frame{}
	case f[0] == "t":
		return Frame{Tokens: num(1)}
	case f[0] == "r":
		return Frame{Tokens: num(1), Reasoning: true}
	case f[0] == "u":
		return Frame{HasUsage: true, InputTokens: num(1), OutputTokens: num(2)}
	case f[0] == "e":
		return Frame{Err: errors.New(strings.Join(f[1:], " "))}
	case f[0] == "d":
		return Frame{Done: true}
	}
	return Frame{}
}

// timedBody returns each piece after sleeping its delay: inside a synctest
// bubble the pieces arrive at exact instants.
type timedBody struct {
	pieces []piece
	err    error // returned after the last piece (io.EOF when nil)
	closed bool
}

type piece struct {
	after time.Duration
	data  string
}

func (b *timedBody) Read(p []byte) (int, error) {
	if len(b.pieces) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		return 0, io.EOF
	}
	time.Sleep(b.pieces[0].after)
	n := copy(p, b.pieces[0].data)
	b.pieces[0].data = b.pieces[0].data[n:]
	if b.pieces[0].data == "" {
		b.pieces = b.pieces[1:]
	}
	return n, nil
}

func (b *timedBody) Close() error { b.closed = true; return nil }

func TestReaderMeasuresAndPassesBytesThrough(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, _ := newTestTracker(t)
		start := time.Now()
		body := &timedBody{pieces: []piece{
			{100 * time.Millisecond, "role\n"},    // carries nothing
			{50 * time.Millisecond, "t 1\nt 2\n"}, // two frames in one Read, at 150 ms
			{30 * time.Millisecond, "t "},         // a frame split across Reads...
			{20 * time.Millisecond, "1\nu 7 5\n"}, // ...completes at 200 ms; usage
			{10 * time.Millisecond, "d\n"},
		}}
		req := tr.Start(context.Background())
		rc := NewReader(req, body, &lineDecoder{})
		got, err := io.ReadAll(rc)
		require.NoError(t, err)
		assert.Equal(t, "role\nt 1\nt 2\nt 1\nu 7 5\nd\n", string(got), "bytes out == bytes in")
		rec := req.End(errors.New("already ended at EOF: ignored"))
		assert.Equal(t, Record{
			Start: start, FirstToken: start.Add(150 * time.Millisecond), FirstOutput: start.Add(150 * time.Millisecond), LastToken: start.Add(200 * time.Millisecond),
			End: start.Add(210 * time.Millisecond), InputTokens: 7, OutputTokens: 5, Chunks: 3,
			ITL: []time.Duration{0, 50 * time.Millisecond}, MaxITL: 50 * time.Millisecond, Outcome: OutcomeOK,
		}, rec)
		require.NoError(t, rc.Close())
		assert.True(t, body.closed, "Close closes the body")
		assert.Equal(t, OutcomeOK, req.End(nil).Outcome, "Close after EOF changes nothing")
	})
}

func TestReaderOutcomes(t *testing.T) {
	readErr := errors.New("connection reset")
	tests := []struct {
		name    string
		body    func() io.Reader
		drive   func(rc io.ReadCloser) error // returns the error the caller saw
		outcome Outcome
		errIs   error
	}{
		{
			name:    "EOF is OK",
			body:    func() io.Reader { return strings.NewReader("t 1\n") },
			drive:   func(rc io.ReadCloser) error { _, err := io.ReadAll(rc); return err },
			outcome: OutcomeOK,
		},
		{
			name:    "final frame without a terminator is flushed at EOF",
			body:    func() io.Reader { return strings.NewReader("t 1\nt 4") },
			drive:   func(rc io.ReadCloser) error { _, err := io.ReadAll(rc); return err },
			outcome: OutcomeOK,
		},
		{
			name:    "read error is Error, passed through unchanged",
			body:    func() io.Reader { return iotest.DataErrReader(&timedBody{pieces: []piece{{0, "t 1\n"}}, err: readErr}) },
			drive:   func(rc io.ReadCloser) error { _, err := io.ReadAll(rc); return err },
			outcome: OutcomeError,
			errIs:   readErr,
		},
		{
			name:    "error frame in the stream ends as Error at EOF",
			body:    func() io.Reader { return strings.NewReader("t 1\ne overloaded\n") },
			drive:   func(rc io.ReadCloser) error { _, err := io.ReadAll(rc); return err },
			outcome: OutcomeError,
		},
		{
			name: "Close before EOF is Canceled",
			body: func() io.Reader { return strings.NewReader("t 1\nt 1\n") },
			drive: func(rc io.ReadCloser) error {
				_, err := rc.Read(make([]byte, 4))
				if err != nil {
					return err
				}
				return rc.Close()
			},
			outcome: OutcomeCanceled,
		},
		{
			name:    "nil body is an Error",
			body:    func() io.Reader { return nil },
			drive:   func(rc io.ReadCloser) error { _, err := io.ReadAll(rc); return err },
			outcome: OutcomeError,
			errIs:   errNoBody,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, reader := newTestTracker(t)
			req := tr.Start(context.Background())
			err := tt.drive(NewReader(req, tt.body(), &lineDecoder{}))
			if tt.errIs != nil {
				assert.ErrorIs(t, err, tt.errIs, "the caller sees the body's error")
			} else {
				assert.NoError(t, err)
			}
			rec := req.End(nil)
			assert.Equal(t, tt.outcome, rec.Outcome)
			assert.Equal(t, int64(1), counterTotal(t, collect(t, reader), metricRequests), "ended exactly once")
		})
	}
}

func TestReaderTokensMatchFixture(t *testing.T) {
	stream := "role\nt 1\n: keep-alive\nt 3\nt 1\nu 9 6\nd\n"
	for _, r := range []struct {
		name string
		wrap func(io.Reader) io.Reader
	}{
		{"whole", func(r io.Reader) io.Reader { return r }},
		{"one byte at a time", iotest.OneByteReader},
		{"half", iotest.HalfReader},
	} {
		t.Run(r.name, func(t *testing.T) {
			tr, _ := newTestTracker(t)
			req := tr.Start(context.Background())
			rc := NewReader(req, r.wrap(strings.NewReader(stream)), &lineDecoder{})
			require.NoError(t, iotest.TestReader(rc, []byte(stream)))
			rec := req.End(nil)
			assert.Equal(t, 6, rec.OutputTokens)
			assert.Equal(t, 9, rec.InputTokens)
			assert.Equal(t, 3, rec.Chunks)
		})
	}
}

func TestReaderContextCancelWhileBlocked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, reader := newTestTracker(t)
		ctx, cancel := context.WithCancel(context.Background())
		pr, pw := io.Pipe()
		req := tr.Start(ctx)
		rc := NewReader(req, pr, &lineDecoder{})
		readDone := make(chan error)
		go func() {
			_, err := io.ReadAll(rc)
			readDone <- err
		}()
		_, _ = pw.Write([]byte("t 1\n"))
		time.Sleep(time.Second) // the reader now blocks waiting for more
		cancel()
		synctest.Wait()
		// The request ended on the cancel, while Read is still blocked.
		assert.Equal(t, int64(1), counterTotal(t, collect(t, reader), metricRequests))
		rec := req.End(nil)
		assert.Equal(t, OutcomeCanceled, rec.Outcome)
		assert.Equal(t, time.Second, rec.End.Sub(rec.Start))
		// The caller's stream is untouched: closing the body still ends its Read.
		_ = pw.CloseWithError(errors.New("gone"))
		assert.EqualError(t, <-readDone, "gone")
		assert.Equal(t, int64(1), counterTotal(t, collect(t, reader), metricRequests), "still exactly once")
	})
}

type countingDecoder struct{}

func (d *countingDecoder) Decode(p []byte, emit func(Frame)) {
	for range bytes.Count(p, []byte{'\n'}) {
		emit(Frame{Tokens: 1})
	}
}
func (d *countingDecoder) Flush(func(Frame)) {}
func (d *countingDecoder) Err() error        { return nil }

func TestReaderReadDoesNotAllocate(t *testing.T) {
	tr, _ := newTestTracker(t, WithoutITL())
	line := []byte("token\n")
	src := &repeatReader{line: line}
	rc := NewReader(tr.Start(context.Background()), src, &countingDecoder{})
	buf := make([]byte, 64)
	allocs := testing.AllocsPerRun(1000, func() { _, _ = rc.Read(buf) })
	assert.Zero(t, allocs)
}

type repeatReader struct{ line []byte }

func (r *repeatReader) Read(p []byte) (int, error) { return copy(p, r.line), nil }

func TestWrapChan(t *testing.T) {
	t.Run("forwards every item and ends OK when the input closes", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			tr, _ := newTestTracker(t)
			in := make(chan string)
			req := tr.Start(context.Background())
			out := WrapChan(req, in, func(s string) int { return len(s) })
			go func() {
				for _, s := range []string{"", "ab", "c"} { // "" is a role-only item
					time.Sleep(10 * time.Millisecond)
					in <- s
				}
				close(in)
			}()
			var got []string
			for s := range out {
				got = append(got, s)
			}
			assert.Equal(t, []string{"", "ab", "c"}, got)
			rec := req.End(errors.New("ignored"))
			assert.Equal(t, OutcomeOK, rec.Outcome)
			assert.Equal(t, 3, rec.OutputTokens)
			assert.Equal(t, []time.Duration{10 * time.Millisecond}, rec.ITL)
			ttft, _ := rec.TTFT()
			assert.Equal(t, 20*time.Millisecond, ttft)
		})
	})
	t.Run("a canceled context ends it even when nobody reads", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			tr, _ := newTestTracker(t)
			ctx, cancel := context.WithCancel(context.Background())
			in := make(chan int, 1)
			in <- 5
			req := tr.Start(ctx)
			out := WrapChan(req, in, nil)
			time.Sleep(time.Second) // the forwarder blocks sending to out
			cancel()
			synctest.Wait() // the forwarder has exited: synctest fails the test if it leaks
			_, open := <-out
			assert.False(t, open, "out is closed")
			rec := req.End(nil)
			assert.Equal(t, OutcomeCanceled, rec.Outcome)
			assert.Equal(t, 1, rec.OutputTokens, "the item was received")
		})
	})
	t.Run("the producer's own error wins over the close", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			tr, _ := newTestTracker(t)
			in := make(chan int)
			req := tr.Start(context.Background())
			out := WrapChan(req, in, nil)
			go func() {
				in <- 1
				req.End(errors.New("upstream failed"))
				close(in)
			}()
			for range out {
			}
			assert.Equal(t, OutcomeError, req.End(nil).Outcome)
		})
	})
}

func seqOf[T any](vs ...T) iter.Seq[T] {
	return func(yield func(T) bool) {
		for _, v := range vs {
			if !yield(v) {
				return
			}
		}
	}
}

func TestWrapSeq(t *testing.T) {
	tr, _ := newTestTracker(t)
	t.Run("exhausted is OK", func(t *testing.T) {
		req := tr.Start(context.Background())
		var got []int
		for v := range WrapSeq(req, seqOf(0, 2, 3), func(v int) int { return v }) {
			got = append(got, v)
		}
		assert.Equal(t, []int{0, 2, 3}, got)
		rec := req.End(nil)
		assert.Equal(t, OutcomeOK, rec.Outcome)
		assert.Equal(t, 5, rec.OutputTokens)
		assert.Equal(t, 2, rec.Chunks)
	})
	t.Run("break is Canceled", func(t *testing.T) {
		req := tr.Start(context.Background())
		for v := range WrapSeq(req, seqOf(1, 1, 1), nil) {
			if v == 1 {
				break
			}
		}
		rec := req.End(nil)
		assert.Equal(t, OutcomeCanceled, rec.Outcome)
		assert.Equal(t, 1, rec.OutputTokens)
	})
	t.Run("canceled context stops the iteration", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req := tr.Start(ctx)
		n := 0
		for range WrapSeq(req, seqOf(1, 1, 1), nil) {
			n++
			cancel()
		}
		assert.Equal(t, 1, n)
		assert.Equal(t, OutcomeCanceled, req.End(nil).Outcome)
	})
	t.Run("a panicking consumer still ends the request", func(t *testing.T) {
		req := tr.Start(context.Background())
		assert.Panics(t, func() {
			for range WrapSeq(req, seqOf(1), nil) {
				panic("consumer bug")
			}
		})
		assert.Equal(t, OutcomeCanceled, req.End(nil).Outcome)
	})
	t.Run("Seq2 error is Error, yielded to the consumer", func(t *testing.T) {
		boom := errors.New("boom")
		seq := func(yield func(string, error) bool) {
			if yield("a", nil) {
				yield("", boom)
			}
		}
		req := tr.Start(context.Background())
		var errs []error
		for _, err := range WrapSeq2(req, seq, func(s string) int { return len(s) }) {
			errs = append(errs, err)
		}
		assert.Equal(t, []error{nil, boom}, errs)
		rec := req.End(nil)
		assert.Equal(t, OutcomeError, rec.Outcome)
		assert.Equal(t, 1, rec.OutputTokens)
	})
	t.Run("Seq2 exhausted is OK", func(t *testing.T) {
		req := tr.Start(context.Background())
		seq := func(yield func(string, error) bool) { yield("ab", nil) }
		for range WrapSeq2(req, seq, nil) {
		}
		assert.Equal(t, OutcomeOK, req.End(nil).Outcome)
	})
}

// eventEnds returns, for each SSE event that has a data field, the offset
// just past the blank line that ends it (len(b) for a final event without
// one). Line ends are \r\n, \n or \r, as the SSE specification says.
func eventEnds(b []byte) []int {
	var ends []int
	hasData := false
	for i := 0; i < len(b); {
		j := i
		for j < len(b) && b[j] != '\n' && b[j] != '\r' {
			j++
		}
		line, next := b[i:j], j
		if next < len(b) {
			next++
			if b[j] == '\r' && next < len(b) && b[next] == '\n' {
				next++
			}
		}
		switch {
		case len(line) == 0 && next > i:
			if hasData {
				ends = append(ends, next)
			}
			hasData = false
		case bytes.HasPrefix(line, []byte("data")):
			hasData = true
		}
		i = next
	}
	if hasData {
		ends = append(ends, len(b))
	}
	return ends
}

// byteClock is a body whose reads advance a clock by 1 ns per byte, so a
// Chunk's time says at which byte of the stream its frame completed.
type byteClock struct {
	r   io.Reader
	pos int
}

func (c *byteClock) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.pos += n
	return n, err
}

func (c *byteClock) now() time.Time { return t0.Add(time.Duration(c.pos)) }

// TestReaderFixtures feeds every realistic fixture through the reader
// wrapper whole, split at every byte and one byte at a time: the caller
// reads exactly the fixture; the Record holds the hand-counted N (never
// below the token-carrying chunks), chunks, input and reasoning tokens and
// outcome; the stream's error is the request's error.type; TTFT falls on
// the first token-carrying frame and TTFO on the first answer frame, not
// before them (not at a role chunk, not at reasoning).
func TestReaderFixtures(t *testing.T) {
	for _, fx := range fixtures {
		t.Run(fx.file, func(t *testing.T) {
			errs := otelErrors(t)
			data := readFixture(t, fx.file)
			ends := eventEnds(data)
			require.Len(t, ends, fx.want.Frames, "the fixture's events")
			body := &byteClock{}
			tr, metrics := newTestTracker(t, WithClock(body.now))
			wantOutcome := OutcomeOK
			if fx.want.Errs > 0 {
				wantOutcome = OutcomeError
			}
			reads := 0
			read := func(t *testing.T, r io.Reader) Record {
				*body = byteClock{r: r}
				req := tr.Start(context.Background())
				got, err := io.ReadAll(NewReader(req, body, fx.dec()))
				require.NoError(t, err)
				require.Equal(t, data, got, "bytes out == bytes in")
				rec := req.End(nil)
				reads++
				assert.Equal(t, fx.n, rec.OutputTokens, "N")
				assert.Equal(t, fx.want.TokenFrames, rec.Chunks, "token-carrying chunks")
				assert.Equal(t, fx.want.In, rec.InputTokens, "input tokens")
				assert.Equal(t, fx.want.Reasoning, rec.ReasoningTokens, "reasoning tokens")
				assert.Equal(t, fx.want.Cached, rec.CachedInputTokens, "cached input tokens")
				assert.Equal(t, fx.want.CacheWrite, rec.CacheWriteInputTokens, "cache-write input tokens")
				assert.Equal(t, wantOutcome, rec.Outcome)
				return rec
			}
			for cut := 0; cut <= len(data); cut++ {
				read(t, io.MultiReader(bytes.NewReader(data[:cut]), bytes.NewReader(data[cut:])))
				if t.Failed() {
					t.Fatalf("split at byte %d", cut)
				}
			}
			rec := read(t, iotest.OneByteReader(bytes.NewReader(data)))
			// between returns the byte span of frame i: after the frame
			// before it, up to its own end.
			between := func(i int) (lo, hi int) {
				if i > 0 {
					lo = ends[i-1]
				}
				return lo, ends[i]
			}
			ttft, ok := rec.TTFT()
			require.True(t, ok)
			lo, hi := between(fx.want.FirstToken)
			assert.Greater(t, int(ttft), lo, "TTFT after the frames that carry no token")
			assert.LessOrEqual(t, int(ttft), hi, "TTFT when the first token-carrying frame completes")
			ttfo, ok := rec.TTFO()
			if fx.want.FirstAnswer < 0 {
				assert.False(t, ok, "no answer token, no TTFO")
			} else if assert.True(t, ok) {
				lo, hi := between(fx.want.FirstAnswer)
				assert.Greater(t, int(ttfo), lo, "TTFO after the reasoning frames")
				assert.LessOrEqual(t, int(ttfo), hi, "TTFO when the first answer frame completes")
			}

			reported := errs()
			if fx.lowUsage {
				require.Len(t, reported, reads, "one report per request")
				assert.ErrorIs(t, reported[0], errUsageBelowChunks)
				assert.Equal(t, fmt.Sprintf("llmmetrics: reported output tokens below the token-carrying chunks: usage says %d, %d chunks arrived; N is %d",
					fx.want.Out, fx.want.TokenFrames, fx.n), reported[0].Error())
			} else {
				assert.Empty(t, reported)
			}
			errTypes := map[string]int64{}
			if m, ok := collect(t, metrics)[metricRequests]; assert.True(t, ok) {
				for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
					if v, ok := p.Attributes.Value(semconv.ErrorTypeKey); ok {
						errTypes[v.AsString()] += p.Value
					}
				}
			}
			if fx.want.Errs > 0 {
				assert.Equal(t, map[string]int64{fx.want.ErrType: int64(reads)}, errTypes, "error.type")
			} else {
				assert.Empty(t, errTypes)
			}
		})
	}
}

// TestReaderContextAlreadyDone: the context watcher fires at once on
// another goroutine, racing NewReader itself (found by the soak test).
func TestReaderContextAlreadyDone(t *testing.T) {
	for range 200 {
		tr, _ := newTestTracker(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		req := tr.Start(ctx)
		rc := NewReader(req, strings.NewReader("t 1\n"), &lineDecoder{})
		b, err := io.ReadAll(rc)
		require.NoError(t, err)
		assert.Equal(t, "t 1\n", string(b), "the caller's bytes still flow")
		require.NoError(t, rc.Close())
		assert.Equal(t, OutcomeCanceled, req.End(nil).Outcome)
	}
}

// TestReaderCloseAfterDone: clients commonly stop at [DONE] and close
// without reading to EOF; the request is complete, not canceled (found in
// review).
func TestReaderCloseAfterDone(t *testing.T) {
	tests := []struct {
		name    string
		stream  string
		outcome Outcome
	}{
		{"close after the end marker is OK", "t 1\nt 1\nd\n", OutcomeOK},
		{"close after an error frame and the end marker is Error", "t 1\ne overloaded\nd\n", OutcomeError},
		{"an error frame after the end marker does not count at Close", "t 1\nd\ne late\n", OutcomeOK},
		{"close before the end marker is Canceled", "t 1\nt 1\n", OutcomeCanceled},
		{"close after an error frame without the end marker is Error", "t 1\ne overloaded\n", OutcomeError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, _ := newTestTracker(t)
			pr, pw := io.Pipe()
			go func() { _, _ = io.WriteString(pw, tt.stream) }() // the server keeps the connection open
			req := tr.Start(context.Background())
			rc := NewReader(req, pr, &lineDecoder{})
			lines := strings.Count(tt.stream, "\n")
			br := bufio.NewReader(rc)
			for range lines {
				_, err := br.ReadString('\n')
				require.NoError(t, err)
			}
			require.NoError(t, rc.Close())
			assert.Equal(t, tt.outcome, req.End(nil).Outcome)
		})
	}
}

// lateErrorBody sends a token and the end marker, then, once release is
// closed, an error frame; after that its Read blocks until Close, like a
// connection the server keeps open.
type lateErrorBody struct {
	reads    int
	waiting  chan struct{} // closed when the second Read waits for release
	release  chan struct{}
	closed   chan struct{}
	closeOne sync.Once
}

func (b *lateErrorBody) Read(p []byte) (int, error) {
	b.reads++
	switch b.reads {
	case 1:
		return copy(p, "t 1\nd\n"), nil
	case 2:
		close(b.waiting)
		<-b.release
		return copy(p, "e late\n"), nil
	}
	<-b.closed
	return 0, errors.New("read on closed body")
}

func (b *lateErrorBody) Close() error {
	b.closeOne.Do(func() { close(b.closed) })
	return nil
}

// TestReaderCloseWhileAnErrorFrameArrivesAfterDone: Close may be called
// from another goroutine (http.Response.Body allows it) just as Read
// applies an error frame that follows the end marker. Close reports the
// stream as it was at the end marker, whichever comes first, and without a
// data race (run with -race -count=200).
func TestReaderCloseWhileAnErrorFrameArrivesAfterDone(t *testing.T) {
	tr, reader := newTestTracker(t)
	req := tr.Start(context.Background())
	body := &lateErrorBody{waiting: make(chan struct{}), release: make(chan struct{}), closed: make(chan struct{})}
	rc := NewReader(req, body, &lineDecoder{})
	readDone := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(rc)
		readDone <- err
	}()
	<-body.waiting // the end marker has been applied
	closeDone := make(chan error, 1)
	close(body.release)
	go func() { closeDone <- rc.Close() }()
	require.NoError(t, <-closeDone)
	assert.EqualError(t, <-readDone, "read on closed body")
	assert.Equal(t, OutcomeOK, req.End(nil).Outcome, "the stream was complete at [DONE]")
	assert.Equal(t, int64(1), counterTotal(t, collect(t, reader), metricRequests), "ended once")
}

// TestReaderAnthropicCutBeforeMessageDelta: message_start's output_tokens is
// a placeholder; a stream cut before message_delta keeps its chunk count as
// N and still knows its prompt size (found in review).
func TestReaderAnthropicCutBeforeMessageDelta(t *testing.T) {
	var b strings.Builder
	b.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}\n\n")
	for range 20 {
		b.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"word \"}}\n\n")
	}
	cut := errors.New("connection reset")
	tr, _ := newTestTracker(t)
	req := tr.Start(context.Background())
	_, err := io.ReadAll(NewReader(req, io.MultiReader(strings.NewReader(b.String()), errReader{cut}), newAnthropicDecoder()))
	require.ErrorIs(t, err, cut)
	rec := req.End(nil)
	assert.Equal(t, OutcomeError, rec.Outcome)
	assert.Equal(t, 20, rec.OutputTokens, "the chunk count, not message_start's placeholder")
	assert.Equal(t, 25, rec.InputTokens)
}

// TestReaderCloseWaitsForTheWatcher: when the context watcher is ending
// the request (cancel), a Close (or Read) that loses the race returns
// only once the request has ended, so a caller who closed the body finds
// its Record summarized and its metrics recorded.
func TestReaderCloseWaitsForTheWatcher(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var block atomic.Bool
		entered, release := make(chan struct{}), make(chan struct{})
		now := func() time.Time {
			if block.Load() {
				entered <- struct{}{}
				<-release
			}
			return time.Now()
		}
		tr, reader := newTestTracker(t, WithClock(now))
		ctx, cancel := context.WithCancel(context.Background())
		pr, pw := io.Pipe()
		rc := NewReader(tr.Start(ctx), pr, &lineDecoder{})
		block.Store(true)
		cancel()
		<-entered // the watcher is inside End, reading the clock
		block.Store(false)
		var closed atomic.Bool
		closeDone := make(chan error)
		go func() {
			err := rc.Close()
			closed.Store(true)
			closeDone <- err
		}()
		synctest.Wait()
		assert.False(t, closed.Load(), "Close returned while the request was still ending")
		close(release)
		require.NoError(t, <-closeDone)
		assert.Equal(t, 1, tr.Snapshot().Canceled, "the Record is summarized once Close returns")
		assert.Equal(t, int64(1), counterTotal(t, collect(t, reader), metricRequests))
		_ = pw.Close()
	})
}

func TestReaderReadsTheClockOncePerRead(t *testing.T) {
	var reads int
	clock := func() time.Time { reads++; return t0.Add(time.Duration(reads) * time.Millisecond) }
	tr, _ := newTestTracker(t, WithClock(clock))
	req := tr.StartAt(context.Background(), t0)
	body := &timedBody{pieces: []piece{
		{0, "role\n"},          // no token-carrying frame: no clock read
		{0, "t 1\nt 1\nr 1\n"}, // three frames in one Read: one clock read
		{0, "t 1\n"},           // one more Read: one more
	}}
	rc := NewReader(req, body, &lineDecoder{})
	_, err := io.ReadAll(rc)
	require.NoError(t, err)
	assert.Equal(t, 3, reads, "one read per Read that completes token frames, one at EOF's End")
	rec := req.End(nil)
	assert.Equal(t, []time.Duration{0, 0, time.Millisecond}, rec.ITL, "frames of one Read arrived together")
	assert.Equal(t, t0.Add(time.Millisecond), rec.FirstToken)
}

// TestReaderContextEndsAfterTheEndMarker: a caller that cancels its context
// once it has read [DONE], before Close, got a complete answer: OK, not
// Canceled. synctest.Wait lets the context watcher run
// before Close, the order that lost the answer; run with -race.
func TestReaderContextEndsAfterTheEndMarker(t *testing.T) {
	tests := []struct {
		name    string
		stream  string
		outcome Outcome
	}{
		{"after the end marker: OK", "t 1\nt 1\nd\n", OutcomeOK},
		{"after an error frame and the end marker: Error", "t 1\ne overloaded\nd\n", OutcomeError},
		{"after an error frame: Error", "t 1\ne overloaded\n", OutcomeError},
		{"before the end marker: Canceled", "t 1\nt 1\n", OutcomeCanceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr, _ := newTestTracker(t)
				ctx, cancel := context.WithCancel(context.Background())
				pr, pw := io.Pipe()
				go func() { _, _ = io.WriteString(pw, tt.stream) }() // the connection stays open
				rc := NewReader(tr.Start(ctx), pr, &lineDecoder{})
				br := bufio.NewReader(rc)
				for range strings.Count(tt.stream, "\n") {
					_, err := br.ReadString('\n')
					require.NoError(t, err)
				}
				cancel()
				synctest.Wait() // the watcher has ended the request
				s := tr.Snapshot()
				assert.Equal(t, 1, s.Completed+s.Failed+s.Canceled, "ended by the watcher, before Close")
				require.NoError(t, rc.Close())
				_ = pw.Close()
				switch tt.outcome {
				case OutcomeOK:
					assert.Equal(t, 1, tr.Snapshot().Completed)
				case OutcomeError:
					assert.Equal(t, 1, tr.Snapshot().Failed)
				case OutcomeCanceled:
					assert.Equal(t, 1, tr.Snapshot().Canceled)
				}
			})
		})
	}
}
