package llmmetrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// This file holds the ResponseWriter that NewHandler gives the handler it
// measures. Its shape follows github.com/felixge/httpsnoop (one wrapper
// type per set of optional interfaces, so the handler sees exactly the
// interfaces the server's writer has) and otelhttp's
// internal/request/resp_writer_wrapper.go (Flush, and Unwrap for
// http.ResponseController), without depending on either.

// respWriter wraps the server's ResponseWriter for one measured request. It
// is used by the handler's goroutine (a ResponseWriter is not for
// concurrent use), and by ServeHTTP's deferred end once the handler has
// returned.
type respWriter struct {
	w    http.ResponseWriter
	core *httpCore
	r    *http.Request // the request next gets
	orig *http.Request // the request ServeHTTP got
	ep   endpoint

	// The span starts at ServeHTTP's entry; ctx carries it (the request's
	// own context when no span is made) and span is nil unless it records.
	ctx     context.Context
	span    trace.Span
	spanKVs []attribute.KeyValue // the span's attributes known at the entry; the Request's once it starts

	// The request starts once (request): at ServeHTTP's entry when the
	// model is known then, else when the body has told it or next answers.
	start   time.Time
	once    sync.Once
	beginFn func() // rw.begin, bound once
	req     *Request
	modelMu sync.Mutex // guards model: the body may be read on another goroutine
	model   string

	dec  Decoder     // nil: the answer is not decoded
	emit func(Frame) // rw.apply, bound once so Decode calls do not allocate

	status    int           // the final status written; 0 until the header is
	sniff     bool          // a 2xx status without a Content-Type: choose at the first Write
	held      [2]heldFrames // frames written since the last Flush: answer, reasoning
	streamErr error
	writeErr  error // the first failed Write or Flush
	sawDone   bool
}

// Header implements http.ResponseWriter.
func (rw *respWriter) Header() http.Header { return rw.w.Header() }

// WriteHeader implements http.ResponseWriter.
func (rw *respWriter) WriteHeader(code int) {
	if rw.status == 0 {
		rw.header(code, nil)
	}
	rw.w.WriteHeader(code)
}

// Write implements http.ResponseWriter: p goes to the server's writer
// first, then the bytes written are decoded.
func (rw *respWriter) Write(p []byte) (int, error) {
	switch {
	case rw.status == 0:
		rw.header(http.StatusOK, p)
	case rw.sniff && len(p) > 0:
		rw.sniff = false
		rw.choose(p)
	}
	n, err := rw.w.Write(p)
	if n > 0 && rw.dec != nil {
		rw.dec.Decode(p[:n], rw.emit)
	}
	if err != nil && rw.writeErr == nil {
		rw.writeErr = err
	}
	return n, err
}

// Flush implements http.Flusher; see FlushError.
func (rw *respWriter) Flush() { _ = rw.FlushError() }

// FlushError flushes the server's writer (as http.ResponseController does:
// its FlushError or Flush, through Unwrap) and then records the
// token-carrying frames written since the last flush, at the time the
// flush was called: that is when they left for the client (the clock is
// read before the flush, so a client that reacts to the bytes cannot be
// seen to get them before they were sent). When the writer
// cannot flush (http.ErrNotSupported) they stay held until the next flush
// or the end.
func (rw *respWriter) FlushError() error {
	if rw.status == 0 {
		rw.header(http.StatusOK, nil)
	}
	if rw.sniff { // the header goes out now, without a type
		rw.sniff = false
		rw.choose(nil)
	}
	var at time.Time
	held := rw.holding()
	if held {
		at = rw.core.t.cfg.now()
	}
	err := flush(rw.w)
	switch {
	case err == nil:
		if held {
			rw.release(at)
		}
	case !errors.Is(err, http.ErrNotSupported) && rw.writeErr == nil:
		rw.writeErr = err
	}
	return err
}

// Unwrap returns the server's ResponseWriter, for http.ResponseController.
func (rw *respWriter) Unwrap() http.ResponseWriter { return rw.w }

// WriteString implements io.StringWriter, as Write does.
func (rw *respWriter) WriteString(s string) (int, error) { return rw.Write([]byte(s)) }

// SetReadDeadline sets the server writer's read deadline, as
// http.ResponseController does (http.ErrNotSupported when it cannot).
func (rw *respWriter) SetReadDeadline(d time.Time) error {
	return http.NewResponseController(rw.w).SetReadDeadline(d)
}

// SetWriteDeadline sets the server writer's write deadline, as
// http.ResponseController does (http.ErrNotSupported when it cannot).
func (rw *respWriter) SetWriteDeadline(d time.Time) error {
	return http.NewResponseController(rw.w).SetWriteDeadline(d)
}

// EnableFullDuplex enables the server writer's full duplex mode, as
// http.ResponseController does (http.ErrNotSupported when it cannot).
func (rw *respWriter) EnableFullDuplex() error {
	return http.NewResponseController(rw.w).EnableFullDuplex()
}

// flush flushes w as http.ResponseController.Flush does, without
// allocating.
func flush(w http.ResponseWriter) error {
	for {
		switch t := w.(type) {
		case interface{ FlushError() error }:
			return t.FlushError()
		case http.Flusher:
			t.Flush()
			return nil
		case interface{ Unwrap() http.ResponseWriter }:
			w = t.Unwrap()
		default:
			return errFlushNotSupported
		}
	}
}

// errFlushNotSupported is FlushError's error for a writer that cannot
// flush; it wraps http.ErrNotSupported, as http.ResponseController's does.
var errFlushNotSupported = fmt.Errorf("llmmetrics: flush: %w", http.ErrNotSupported)

// header chooses the decoder when the final status is written: code, with
// the first bytes of the body in p (nil when the header is written by
// WriteHeader or Flush).
func (rw *respWriter) header(code int, p []byte) {
	rw.request() // next answers: the request has started
	if code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols {
		return // informational (103 Early Hints): the final status comes later
	}
	rw.status = code
	if code < 200 || code >= 300 {
		return // not an answer to decode
	}
	if _, ok := rw.w.Header()["Content-Type"]; !ok && len(p) == 0 {
		// WriteHeader without a type: net/http sniffs it from the first
		// Write (unless a Flush sends the header first).
		rw.sniff = true
		return
	}
	rw.choose(p)
}

// choose chooses the decoder of a 2xx answer whose first bytes are p (nil
// when none were written before the header was sent).
func (rw *respWriter) choose(p []byte) {
	h := rw.w.Header()
	ct := ""
	if v, ok := h["Content-Type"]; ok {
		if len(v) > 0 {
			ct = v[0]
		}
	} else if len(p) > 0 {
		// net/http sends the type it sniffs from the first bytes; the
		// decoder is chosen from it, as the client will (autoDecoder).
		ct = http.DetectContentType(p)
	}
	var ce string
	if v := h["Content-Encoding"]; len(v) > 0 {
		ce = v[0]
	}
	if f := rw.core.cfg.decoder; f != nil {
		if d := f(rw.r, &http.Response{StatusCode: rw.status, Header: h, Request: rw.r}); d != nil {
			rw.dec = d
			return
		}
	}
	rw.dec = autoDecoder(rw.ep, ce, ct)
}

// apply takes one frame of the answer: its tokens are held until they are
// flushed; the rest is applied at once.
func (rw *respWriter) apply(f Frame) {
	if f.Tokens > 0 {
		h := &rw.held[0]
		if f.Reasoning {
			h = &rw.held[1]
		}
		h.frames++
		h.tokens += f.Tokens
	}
	noteFrame(rw.req, f, &rw.streamErr)
	if f.Done {
		rw.sawDone = true
	}
}

// heldFrames counts token-carrying frames written but not yet flushed.
type heldFrames struct{ frames, tokens int }

// holding reports whether frames are held.
func (rw *respWriter) holding() bool { return rw.held[0].frames+rw.held[1].frames > 0 }

// release records the held frames as arriving at t, reasoning frames
// (ReasoningChunkAt) before answer frames (ChunkAt). Each kind is recorded
// as its number of frames with one token each but the first, which carries
// the rest: frames arriving at the same time give the same TTFT, TTFO,
// gaps, chunk count and token sum whatever their sizes.
func (rw *respWriter) release(t time.Time) {
	if h := rw.held[1]; h.frames > 0 {
		rw.req.ReasoningChunkAt(t, h.tokens-(h.frames-1))
		for i := 1; i < h.frames; i++ {
			rw.req.ReasoningChunkAt(t, 1)
		}
	}
	if h := rw.held[0]; h.frames > 0 {
		rw.req.ChunkAt(t, h.tokens-(h.frames-1))
		for i := 1; i < h.frames; i++ {
			rw.req.ChunkAt(t, 1)
		}
	}
	rw.held = [2]heldFrames{}
}

// ---------------------------------------------------------------------------
// Optional interfaces

// readFrom is the io.ReaderFrom of a respWriter whose server writer has one.
type readFrom struct {
	*respWriter
	rf io.ReaderFrom
}

var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// ReadFrom implements io.ReaderFrom. An answer that is not decoded goes to
// the server writer's ReadFrom (its zero-copy path); one that is decoded is
// copied through Write, so the decoder sees its bytes.
func (rf readFrom) ReadFrom(src io.Reader) (int64, error) {
	rw := rf.respWriter
	if rw.status == 0 {
		if _, ok := rw.w.Header()["Content-Type"]; ok {
			rw.header(http.StatusOK, nil) // no sniffing needed
		}
	}
	if rw.status != 0 && rw.dec == nil && !rw.sniff {
		return rf.rf.ReadFrom(src) // its error may be src's: not taken as the client's
	}
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	return io.CopyBuffer(writerOnly{rw}, src, *bp)
}

// writerOnly hides a writer's ReadFrom from io.CopyBuffer.
type writerOnly struct{ io.Writer }

// wrap returns rw as the ResponseWriter next gets: with CloseNotify,
// Hijack, Push and ReadFrom only where the server's writer has them, so a
// caller that type-asserts one (gin's Context.Stream asserts
// http.CloseNotifier) finds what the server offers, and no more. Flush,
// FlushError, WriteString, Unwrap and the deadline methods are always
// there: they report http.ErrNotSupported, as http.ResponseController
// does, when the server's writer cannot.
func (rw *respWriter) wrap() http.ResponseWriter {
	var o optionals
	var has int
	//lint:ignore SA1019 kept for the callers that still assert it (gin)
	if o.CloseNotifier, _ = rw.w.(http.CloseNotifier); o.CloseNotifier != nil {
		has |= hasCloseNotifier
	}
	if o.Hijacker, _ = rw.w.(http.Hijacker); o.Hijacker != nil {
		has |= hasHijacker
	}
	if o.Pusher, _ = rw.w.(http.Pusher); o.Pusher != nil {
		has |= hasPusher
	}
	if rf, ok := rw.w.(io.ReaderFrom); ok {
		o.ReaderFrom, has = readFrom{rw, rf}, has|hasReaderFrom
	}
	return wrappers[has](rw, o)
}

// The optional interfaces of a server's ResponseWriter, as bits of an
// index into wrappers.
const (
	hasCloseNotifier = 1 << iota
	hasHijacker
	hasPusher
	hasReaderFrom
)

// optionals holds the optional interfaces wrap found (ReaderFrom is rw's
// own readFrom over the server writer's).
type optionals struct {
	http.CloseNotifier
	http.Hijacker
	http.Pusher
	io.ReaderFrom
}

// Short names for the table below.
type (
	rwCN = http.CloseNotifier //lint:ignore SA1019 kept for the callers that still assert it (gin)
	rwHJ = http.Hijacker
	rwPS = http.Pusher
	rwRF = io.ReaderFrom
)

// wrappers[has] builds the writer that has exactly the interfaces of has:
// one struct type per combination, as github.com/felixge/httpsnoop's Wrap
// and client_golang's promhttp delegators do (Go cannot add a method to a
// value at run time).
var wrappers = [16]func(*respWriter, optionals) http.ResponseWriter{
	0: func(w *respWriter, _ optionals) http.ResponseWriter { return w },
	hasCloseNotifier: func(w *respWriter, o optionals) http.ResponseWriter {
		return struct {
			*respWriter
			rwCN
		}{w, o.CloseNotifier}
	},
	hasHijacker: func(w *respWriter, o optionals) http.ResponseWriter {
		return struct {
			*respWriter
			rwHJ
		}{w, o.Hijacker}
	},
	hasCloseNotifier | hasHijacker: func(w *respWriter, o optionals) http.ResponseWriter {
		return struct {
			*respWriter
			rwCN
			rwHJ
		}{w, o.CloseNotifier, o.Hijacker}
	},
	hasPusher: func(w *respWriter, o optionals) http.ResponseWriter {
		return struct {
			*respWriter
			rwPS
		}{w, o.Pusher}
	},
	hasCloseNotifier | hasPusher: func(w *respWriter, o optionals) http.ResponseWriter {
		return struct {
			*respWriter
			rwCN
			rwPS
		}{w, o.CloseNotifier, o.Pusher}
	},
	hasHijacker | hasPusher: func(w *respWriter, o optionals) http.ResponseWriter {
		return struct {
			*respWriter
			rwHJ
			rwPS
		}{w, o.Hijacker, o.Pusher}
	},
	hasCloseNotifier | hasHijacker | hasPusher: func(w *respWriter, o optionals) http.ResponseWriter {
		return struct {
			*respWriter
			rwCN
			rwHJ
			rwPS
		}{w, o.CloseNotifier, o.Hijacker, o.Pusher}
	},
	hasReaderFrom: func(w *respWriter, o optionals) http.ResponseWriter {
		return struct {
			*respWriter
			rwRF
		}{w, o.ReaderFrom}
	},
	hasCloseNotifier | hasReaderFrom: func(w *respWriter, o optionals) http.ResponseWriter {
		return struct {
			*respWriter
			rwCN
			rwRF
		}{w, o.CloseNotifier, o.ReaderFrom}
	},
	hasHijacker | hasReaderFrom: func(w *respWriter, o optionals) http.ResponseWriter {
		return struct {
			*respWriter
			rwHJ
			rwRF
		}{w, o.Hijacker, o.ReaderFrom}
	},
	hasCloseNotifier | hasHijacker | hasReaderFrom: func(w *respWriter, o optionals) http.ResponseWriter {
		return struct {
			*respWriter
			rwCN
			rwHJ
			rwRF
		}{w, o.CloseNotifier, o.Hijacker, o.ReaderFrom}
	},
	hasPusher | hasReaderFrom: func(w *respWriter, o optionals) http.ResponseWriter {
		return struct {
			*respWriter
			rwPS
			rwRF
		}{w, o.Pusher, o.ReaderFrom}
	},
	hasCloseNotifier | hasPusher | hasReaderFrom: func(w *respWriter, o optionals) http.ResponseWriter {
		return struct {
			*respWriter
			rwCN
			rwPS
			rwRF
		}{w, o.CloseNotifier, o.Pusher, o.ReaderFrom}
	},
	hasHijacker | hasPusher | hasReaderFrom: func(w *respWriter, o optionals) http.ResponseWriter {
		return struct {
			*respWriter
			rwHJ
			rwPS
			rwRF
		}{w, o.Hijacker, o.Pusher, o.ReaderFrom}
	},
	hasCloseNotifier | hasHijacker | hasPusher | hasReaderFrom: func(w *respWriter, o optionals) http.ResponseWriter {
		return struct {
			*respWriter
			rwCN
			rwHJ
			rwPS
			rwRF
		}{w, o.CloseNotifier, o.Hijacker, o.Pusher, o.ReaderFrom}
	},
}
