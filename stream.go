package llmmetrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"sync"
	"sync/atomic"
	"time"
)

// errStopped is the error a stream adapter ends a request with when the
// consumer stopped early: a Close before EOF, or a break out of a range
// loop. It wraps context.Canceled (errors.Is(errStopped, context.Canceled)
// holds), so the outcome is OutcomeCanceled and error.type is "canceled".
var errStopped = fmt.Errorf("llmmetrics: consumer stopped before the end of the stream: %w", context.Canceled)

// NewReader wraps body (typically an HTTP response body) so that reading it
// measures req: the caller reads exactly body's bytes and errors, unbuffered,
// while each byte goes to dec and each frame is applied to req at once.
// The request ends exactly once: at EOF (OK, or an error the stream
// reported), on a read error, or at Close or when req's context is done
// (canceled, unless the protocol's end marker came first). Close then
// closes body. Read and Close may be called from different goroutines.
//
// When body has a method ArrivalTime() time.Time that tells when the bytes
// of its latest Read arrived (the kernel's receive timestamp, say), that
// Read's chunks are timed by it, on the clock of the request's Start,
// rather than when they were read; a zero time means "not known". It is
// asked once for each chunk that carries tokens.
func NewReader(req *Request, body io.Reader, dec Decoder) io.ReadCloser {
	if body == nil {
		body = errReader{errNoBody}
	}
	if dec == nil {
		dec = noFrames{}
	}
	r := &reader{req: req, body: body, dec: dec}
	r.arrival, _ = body.(arrivalTimer)
	r.emit = r.apply
	r.ending.Add(1)
	if err := req.ctx.Err(); err != nil {
		// Already done: end it here, so it has ended when NewReader returns.
		// A watcher would end it on another goroutine, which can claim the
		// reader's end and lose the Request's to a caller's End meanwhile.
		r.endOnce(err)
		r.stopWatch = func() bool { return false }
		return r
	}
	// The watcher may run at once (ctx done meanwhile) on another goroutine,
	// before stopWatch is assigned: it ends the request without touching it.
	r.stopWatch = context.AfterFunc(req.ctx, r.watch)
	return r
}

// watch ends the request when its context is done, as Close would: a
// stream whose end marker has arrived is complete (the caller may cancel
// between [DONE] and Close), and one that reported an error ends with it.
func (r *reader) watch() {
	switch err := r.closeErr.Load(); {
	case r.sawDone.Load():
		r.endOnce(r.doneErr)
	case err != nil:
		r.endOnce(*err)
	default:
		r.endOnce(r.req.ctx.Err())
	}
}

type reader struct {
	req       *Request
	body      io.Reader
	dec       Decoder
	arrival   arrivalTimer          // body's, or nil: then chunks are timed by the clock
	emit      func(Frame)           // r.apply, bound once so Decode calls do not allocate
	streamErr error                 // the first error frame, set and read by Read's goroutine
	closeErr  atomic.Pointer[error] // streamErr, published for Close on another goroutine
	doneErr   error                 // streamErr at the end marker: set once, before sawDone, for Close
	now       time.Time             // the arrival of this Read's frames (zero until one carries tokens)
	sawDone   atomic.Bool           // the protocol's end marker ([DONE], message_stop) arrived
	ended     atomic.Bool
	ending    sync.WaitGroup // done once the request has ended (Add(1) in NewReader)
	stopWatch func() bool
}

func (r *reader) Read(p []byte) (int, error) {
	n, err := r.body.Read(p)
	if r.ended.Load() {
		return n, err
	}
	if n > 0 {
		r.now = time.Time{}
		r.dec.Decode(p[:n], r.emit)
	}
	switch {
	case err == io.EOF:
		r.now = time.Time{}
		r.dec.Flush(r.emit)
		r.end(r.streamErr)
	case err != nil:
		r.end(err)
	}
	return n, err
}

func (r *reader) apply(f Frame) {
	if f.Tokens != 0 {
		// The clock is read once per Read: its frames arrived together.
		// ArrivalTime is asked per frame, so a body can tell how many
		// frames its reads carried.
		if r.now.IsZero() || r.arrival != nil {
			r.now = r.chunkTime()
		}
		if f.Reasoning {
			r.req.ReasoningChunkAt(r.now, f.Tokens)
		} else {
			r.req.ChunkAt(r.now, f.Tokens)
		}
	}
	if noteFrame(r.req, f, &r.streamErr) {
		r.closeErr.Store(&r.streamErr)
	}
	if f.Done && !r.sawDone.Load() {
		// Close may run on another goroutine: it reads doneErr only after
		// seeing sawDone, which publishes it; streamErr may change later.
		r.doneErr = r.streamErr
		r.sawDone.Store(true)
	}
}

// arrivalTimer is implemented by a body that knows when the bytes of its
// latest Read arrived (see NewReader).
type arrivalTimer interface {
	ArrivalTime() time.Time
}

// chunkTime is when the current Read's bytes arrived: the body's
// ArrivalTime, else the Tracker's clock.
func (r *reader) chunkTime() time.Time {
	if r.arrival != nil {
		if t := r.arrival.ArrivalTime(); !t.IsZero() {
			return t
		}
	}
	return r.req.t.cfg.now()
}

// noteFrame applies to req what f tells besides its tokens and its end
// marker, as NewReader and NewHandler do: the usage (SetUsage,
// SetReasoningTokens and SetCachedInputTokens: the last usage wins, a
// cached count of 0 included), else the prompt size (setInputTokens, and
// its cached counts when it has some); who answered and why it stopped
// (SetResponse, only for a frame that tells it, so other frames cost a
// test); the server's own times; the stream's first error is kept in
// *streamErr. It reports whether f held the stream's first error.
func noteFrame(req *Request, f Frame, streamErr *error) (first bool) {
	if f.ResponseModel != "" || f.ResponseID != "" || len(f.FinishReasons) > 0 {
		req.SetResponse(f.ResponseModel, f.ResponseID, f.FinishReasons...)
	}
	if f.HasUsage {
		req.SetUsage(f.InputTokens, f.OutputTokens)
		req.SetReasoningTokens(f.ReasoningTokens)
		req.SetCachedInputTokens(f.CachedInputTokens, f.CacheWriteInputTokens)
	} else if f.HasInput {
		req.setInputTokens(f.InputTokens)
		if f.CachedInputTokens > 0 || f.CacheWriteInputTokens > 0 {
			req.SetCachedInputTokens(f.CachedInputTokens, f.CacheWriteInputTokens)
		}
	}
	if f.ServerPrefill > 0 || f.ServerDecode > 0 {
		req.setServerTimes(f.ServerPrefill, f.ServerDecode)
	}
	if f.Err != nil && *streamErr == nil {
		*streamErr = f.Err
		return true
	}
	return false
}

// end ends the request once, from Read or Close, and stops the context
// watcher; later calls do nothing.
func (r *reader) end(err error) {
	if r.endOnce(err) {
		r.stopWatch()
	}
}

// endOnce ends the request unless it has ended, and reports whether it did.
// A call that loses the race returns only once the winner's End has
// returned: a Close or Read racing the context watcher must not return
// before the request is recorded (the watcher's End takes microseconds).
func (r *reader) endOnce(err error) bool {
	if !r.ended.CompareAndSwap(false, true) {
		r.ending.Wait()
		return false
	}
	r.req.End(err)
	r.ending.Done()
	return true
}

func (r *reader) Close() error {
	switch err := r.closeErr.Load(); {
	case r.sawDone.Load():
		// The stream is complete: clients commonly stop reading at [DONE]
		// and close without waiting for EOF.
		r.end(r.doneErr)
	case err != nil:
		// The stream failed and the caller stopped there: an error, not a
		// caller giving up.
		r.end(*err)
	default:
		r.end(errStopped)
	}
	if c, ok := r.body.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// WrapChan measures req from a channel of stream items: each item is a chunk
// of count(item) answer tokens (nil count: 1), passed on unchanged. A
// goroutine forwards the items and ends the request and the returned channel
// when in is closed or req's context is done: the consumer must drain the
// channel or cancel the context.
func WrapChan[T any](req *Request, in <-chan T, count func(T) int) <-chan T {
	out := make(chan T)
	ctx := req.ctx
	done := ctx.Done()
	go func() {
		defer close(out)
		for {
			select {
			case v, ok := <-in:
				if !ok {
					req.End(nil)
					return
				}
				req.Chunk(countOf(count, v))
				select {
				case out <- v:
				case <-done:
					req.End(ctx.Err())
					return
				}
			case <-done:
				req.End(ctx.Err())
				return
			}
		}
	}()
	return out
}

func countOf[T any](count func(T) int, v T) int {
	if count == nil {
		return 1
	}
	return count(v)
}

// WrapSeq measures req from an iterator of stream items: each item is a
// chunk of count(item) answer tokens (nil count: 1), yielded unchanged. The
// request ends with the iteration: OK when seq is exhausted, canceled when
// the consumer stops early or req's context is done. The returned iterator
// is single-use, like the request it measures.
func WrapSeq[T any](req *Request, seq iter.Seq[T], count func(T) int) iter.Seq[T] {
	return func(yield func(T) bool) {
		var endErr error = errStopped
		defer func() { req.End(endErr) }()
		for v := range seq {
			if err := req.ctx.Err(); err != nil {
				endErr = err
				return
			}
			req.Chunk(countOf(count, v))
			if !yield(v) {
				return
			}
		}
		endErr = nil
	}
}

// WrapSeq2 is WrapSeq for iterators that pair each item with an error, as
// many streaming clients do: the first non-nil error ends the request with
// OutcomeError (or OutcomeCanceled for context errors) after it is yielded;
// its item carries no tokens.
func WrapSeq2[T any](req *Request, seq iter.Seq2[T, error], count func(T) int) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var endErr error = errStopped
		defer func() { req.End(endErr) }()
		for v, err := range seq {
			if err != nil {
				endErr = err
				yield(v, err)
				return
			}
			if err := req.ctx.Err(); err != nil {
				endErr = err
				return
			}
			req.Chunk(countOf(count, v))
			if !yield(v, nil) {
				return
			}
		}
		endErr = nil
	}
}

// errNoBody is returned by Read on a reader with a nil body.
var errNoBody = errors.New("llmmetrics: NewReader was given a nil body")

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

type noFrames struct{}

func (noFrames) Decode([]byte, func(Frame)) {}
func (noFrames) Flush(func(Frame))          {}
func (noFrames) Err() error                 { return nil }
