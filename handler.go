package llmmetrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"syscall"

	"go.opentelemetry.io/otel/attribute"

	"github.com/llmmetrics/llmmetrics/internal/jsonstream"
)

// This file holds the server side of the HTTP integration: NewHandler,
// which measures what an http.Handler answers. Its ResponseWriter wrapper
// is in handler_writer.go; what it shares with the client side (the
// options, the request's attributes and model, the choice of a decoder) is
// in httpoptions.go, httpreq.go, protocol.go, endpoint.go and transport.go.

// NewHandler returns an http.Handler that measures with t, in the server
// role, every LLM answer next serves:
//
//	mux.Handle("/v1/", llmmetrics.NewHandler(tracker, upstream))
//
// A request runs while ServeHTTP does, with a server span that next's
// request carries. next's ResponseWriter passes every
// byte and flush through at once and keeps the server writer's optional
// interfaces; the bytes are decoded on the side, a token timed when it is
// flushed. The request body is never read ahead. docs/http.md has the
// details. It is safe for concurrent use if next is.
func NewHandler(t *Tracker, next http.Handler, opts ...HTTPOption) http.Handler {
	c := newHTTPCore(t, newHandlerConfig(opts))
	if c.cfg.models == nil {
		c.cfg.models = map[string]string{} // every client-supplied name folds into "_OTHER"
	}
	return &handler{core: c, next: next}
}

type handler struct {
	core *httpCore
	next http.Handler
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c := h.core
	if c.t == nil || !c.cfg.measured(r) {
		h.next.ServeHTTP(w, r)
		return
	}
	rw := &respWriter{w: w, core: c, r: r, orig: r, ep: c.endpointOf(r), start: c.t.cfg.now()}
	rw.emit, rw.beginFn = rw.apply, rw.begin
	rw.model = modelName(c, rw.ep.pathModel, false)
	// The span starts at once, so that next runs in it; it is named again
	// when the model is known (begin).
	ctx := r.Context()
	rw.ctx = ctx
	if c.t.tracing() {
		rw.ctx, rw.span = c.t.startSpan(ctx, sideServer, rw.start, c.spanStart(sideServer, rw.ep))
	}
	if rw.span != nil {
		rw.spanKVs = serverAttrs(r.Host, r.TLS != nil, make([]attribute.KeyValue, 0, spanAttrCap))
	}
	var b *reqBody
	if r.Body != nil && r.Body != http.NoBody {
		// Nothing is read ahead: Expect: 100-continue is honoured and
		// memory follows the bytes received. When the model is read from
		// the body (as next reads it), the request starts once it is
		// known, or when next answers, whichever comes first. For a span
		// that records, the body is scanned on for requestFacts.
		b = &reqBody{rc: r.Body, rw: rw, size: r.ContentLength, wantModel: c.wantModel(rw.ep)}
		if (b.wantModel || rw.span != nil) && hasJSONBody(r) {
			b.s = requestScanners.Get().(*jsonstream.Scanner)
			b.s.Reset()
		} else {
			b.wantModel = false
		}
		in := r.WithContext(rw.ctx)
		in.Body = b
		rw.r = in
	} else if rw.ctx != ctx {
		rw.r = r.WithContext(rw.ctx)
	}
	if rw.span != nil && (b == nil || b.s == nil) {
		rw.spanKVs = requestFacts(nil, rw.ep, rw.spanKVs) // no JSON body to scan: what the path tells
	}
	if b == nil || !b.wantModel {
		rw.request()
	}
	defer func() {
		p := recover()
		rw.end(p)
		if p != nil {
			panic(p)
		}
	}()
	h.next.ServeHTTP(rw.wrap(), rw.r)
}

// begin starts the measured request, at the time ServeHTTP was entered,
// with the model known by now; run once, through request.
func (rw *respWriter) begin() {
	rw.modelMu.Lock()
	model := rw.model
	rw.modelMu.Unlock()
	c := rw.core
	rw.req = c.begin(rw.ctx, rw.span, sideServer, rw.start, c.attrs(rw.orig, rw.ep, model), rw.spanKVs)
}

// request starts the measured request if it has not started, and returns
// it. The body's reader (modelBody, perhaps on another goroutine) and the
// writer's methods both call it.
func (rw *respWriter) request() *Request {
	rw.once.Do(rw.beginFn)
	return rw.req
}

// reqBody is the request body next reads. It reads nothing next does not
// ask for and keeps no byte. While the model is wanted, the bytes next
// reads go on the side to a JSON scanner until the "model" member is known
// (or the body tells it is not there); then the request starts. For a span
// that records, the scanner goes on until the body has told what
// requestFacts reads (factsKnown) or has ended. Once the body has given all
// it declared (Content-Length) or io.EOF, it answers io.EOF itself: a
// proxy's transport reads once more after the declared length, and
// net/http's HTTP/1 server may have closed the inbound body by then, when
// the response started (golang/go#40747), which would make the transport
// drop the upstream connection mid-stream.
type reqBody struct {
	rc        io.ReadCloser
	rw        *respWriter
	s         *jsonstream.Scanner // nil once the scan has stopped, or when there is none
	wantModel bool                // the scan looks for the model
	size      int64               // the declared length; -1: unknown
	n         int64               // bytes read
	eof       bool
}

// Read implements io.Reader.
func (b *reqBody) Read(p []byte) (int, error) {
	if b.eof || b.size >= 0 && b.n >= b.size {
		b.eof = true
		if b.s != nil {
			b.stop()
		}
		return 0, io.EOF
	}
	n, err := b.rc.Read(p)
	b.n += int64(n)
	b.eof = err == io.EOF
	if s := b.s; s != nil {
		if n > 0 {
			s.Feed(p[:n])
		}
		ended := err != nil || s.Done() || s.Err() != nil || s.Offset() > maxRequestBytes ||
			!b.wantModel && factsKnown(s, b.rw.ep)
		if b.wantModel {
			switch v := &s.Values[rModel]; {
			case v.Kind == jsonstream.KindString && (v.Complete || v.Truncated):
				// A truncated name is longer than any kept: it is _OTHER
				// however long it goes on.
				b.found(modelName(b.rw.core, v.Str, v.Truncated))
			case ended, v.Kind != jsonstream.KindNone && v.Kind != jsonstream.KindString:
				b.found("") // no model in the body: the path's, if any
			}
		}
		if b.s != nil && ended {
			b.stop()
		}
	}
	return n, err
}

// found ends the search for the model with m ("" for none) and starts the
// request; the scan stops unless a span wants the rest.
func (b *reqBody) found(m string) {
	b.setModel(m)
	if b.rw.span == nil {
		b.stop()
	}
}

// setModel ends the search for the model with m ("" for none) and starts
// the request.
func (b *reqBody) setModel(m string) {
	rw := b.rw
	b.wantModel = false
	if m != "" {
		rw.modelMu.Lock()
		rw.model = m
		rw.modelMu.Unlock()
	}
	rw.request()
}

// stop ends the scan of the body: the model, if still looked for, is not
// in it; a recording span gets what the body told (requestFacts).
func (b *reqBody) stop() {
	if b.wantModel {
		b.setModel("")
	}
	if b.rw.span != nil {
		b.rw.request().addSpanFacts(b.s, b.rw.ep)
	}
	requestScanners.Put(b.s)
	b.s = nil
}

// Close implements io.Closer.
func (b *reqBody) Close() error { return b.rc.Close() }

// end ends the request when ServeHTTP returns, after a panic p if not nil.
func (rw *respWriter) end(p any) {
	rw.request()
	if rw.dec != nil {
		rw.dec.Flush(rw.emit)
	}
	now := rw.core.t.cfg.now()
	if rw.holding() {
		rw.release(now) // net/http sends what was not flushed as the handler returns
	}
	rw.req.EndAt(now, rw.endErr(p))
}

// endErr is the error the request ends with; see NewHandler.
func (rw *respWriter) endErr(p any) error {
	switch {
	case p != nil:
		if err, ok := p.(error); ok && errors.Is(err, http.ErrAbortHandler) {
			return errAborted
		}
		return &panicError{v: p}
	case rw.status >= 400:
		return &HTTPStatusError{StatusCode: rw.status}
	case rw.streamErr != nil:
		return rw.streamErr
	case rw.writeErr != nil && !connectionFailed(rw.writeErr):
		return &writeError{rw.writeErr} // the handler's own failure, even after the end marker
	case rw.sawDone:
		return nil // complete, even if the client left right after the end
	}
	if err := rw.orig.Context().Err(); err != nil {
		return err
	}
	if rw.writeErr != nil {
		return fmt.Errorf("llmmetrics: the client went away: %w: %w", context.Canceled, rw.writeErr)
	}
	return nil
}

// connectionFailed reports whether a failed Write or Flush means the
// connection to the client failed (the client went away): a network error
// (net.Error: a reset, a broken pipe, a deadline), a closed connection or
// pipe, or a context error. Anything else, such as the handler's own
// misuse (http.ErrContentLength, http.ErrBodyNotAllowed, http.ErrHijacked),
// is the handler's failure.
func connectionFailed(err error) bool {
	var ne net.Error
	switch {
	case errors.Is(err, http.ErrContentLength), errors.Is(err, http.ErrBodyNotAllowed), errors.Is(err, http.ErrHijacked):
		return false
	case errors.As(err, &ne),
		errors.Is(err, net.ErrClosed), errors.Is(err, io.ErrClosedPipe),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, os.ErrDeadlineExceeded),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return true
	}
	return false
}

// writeError ends a request whose handler's own Write or Flush failed for
// a reason other than the connection (http.ErrContentLength, …):
// OutcomeError with error.type "write".
type writeError struct{ err error }

func (e *writeError) Error() string {
	return "llmmetrics: the handler's write failed: " + e.err.Error()
}
func (e *writeError) Unwrap() error { return e.err }

// ErrorType returns "write", the error.type of the request.
func (e *writeError) ErrorType() string { return "write" }

// errAborted ends a request whose handler panicked with
// http.ErrAbortHandler. It wraps context.Canceled: OutcomeCanceled.
var errAborted = abortError{}

type abortError struct{}

func (abortError) Error() string {
	return "llmmetrics: the handler aborted the response (http.ErrAbortHandler)"
}
func (abortError) Unwrap() error { return context.Canceled }

// panicError ends a request whose handler panicked (not with
// http.ErrAbortHandler): OutcomeError with error.type "panic".
type panicError struct{ v any }

func (e *panicError) Error() string { return fmt.Sprintf("llmmetrics: the handler panicked: %v", e.v) }

// ErrorType returns "panic", the error.type of the request.
func (e *panicError) ErrorType() string { return "panic" }
