package llmmetrics

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// NewTransport returns an http.RoundTripper that measures with t, in the
// client role, every LLM request sent through base (nil: the
// http.DefaultTransport):
//
//	hc := &http.Client{Transport: llmmetrics.NewTransport(tracker, nil)}
//
// Each round trip is one request, until the response body ends, with a
// client span that base's request carries; the body is wrapped as by
// NewReader, with the Decoder chosen from the Content-Type and the path. A
// status of 400 or more is OutcomeError with error.type the status code.
// The caller's request is never modified; each retry is its own request. docs/http.md has the details. A nil Tracker measures
// nothing. It is safe for concurrent use if base is.
func NewTransport(t *Tracker, base http.RoundTripper, opts ...TransportOption) http.RoundTripper {
	return &transport{core: newHTTPCore(t, newTransportConfig(opts)), base: base}
}

type transport struct {
	core *httpCore
	base http.RoundTripper
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	return t.core.roundTrip(req, base)
}

// CloseIdleConnections closes the idle connections of the base transport,
// if it can (http.Client.CloseIdleConnections calls it).
func (t *transport) CloseIdleConnections() {
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	if c, ok := base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// Middleware returns a function that measures with t every LLM request
// passed through it, as NewTransport does; next sends the request. Its type
// is that of the option.Middleware of github.com/openai/openai-go (v3) and
// github.com/anthropics/anthropic-sdk-go (aliases of this function type),
// so it goes straight into their option.WithMiddleware:
//
//	client := openai.NewClient(option.WithMiddleware(llmmetrics.Middleware(tracker)))
//
// The SDKs run their middleware once per attempt, so each retry is its own
// request. The returned function is safe for concurrent use.
func Middleware(t *Tracker, opts ...TransportOption) func(*http.Request, func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	c := newHTTPCore(t, newTransportConfig(opts))
	return func(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
		return c.roundTrip(req, nextFunc(next))
	}
}

// nextFunc makes a middleware's next function a RoundTripper (a func value
// converts to an interface without allocating).
type nextFunc func(*http.Request) (*http.Response, error)

func (f nextFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// errNoResponse ends a request whose round trip returned neither a response
// nor an error (a broken RoundTripper or middleware).
var errNoResponse = errors.New("llmmetrics: round trip returned no response and no error")

// roundTrip measures one round trip of req through next.
func (c *httpCore) roundTrip(req *http.Request, next http.RoundTripper) (*http.Response, error) {
	if c.t == nil || !c.cfg.measured(req) {
		return next.RoundTrip(req)
	}
	start, hops := c.t.cfg.now(), 0
	if prev := req.Response; prev != nil {
		if hop, ok := prev.Body.(*redirectHop); ok {
			// The client follows a redirect: one request from its first hop.
			start, hops = hop.start, hop.hops
		}
	}
	ep := c.endpointOf(req)
	ctx := req.Context()
	// The span starts first: whether it records decides how much of the
	// body is read (requestFacts), and what next sends is its child.
	sctx, span := ctx, trace.Span(nil)
	if c.t.tracing() {
		sctx, span = c.t.startSpan(ctx, sideClient, start, c.spanStart(sideClient, ep))
	}
	var kvs []attribute.KeyValue
	if span != nil {
		kvs = clientServerAttrs(req, make([]attribute.KeyValue, 0, spanAttrCap))
	}
	out, model, addedUsage, kvs := c.prepare(sctx, req, ep, kvs)
	r := c.begin(sctx, span, sideClient, start, c.attrs(req, ep, model), kvs)

	resp, err := next.RoundTrip(out)
	switch {
	case err != nil:
		// The context only classifies the outcome (a transport may wrap its
		// end in an error of its own); the caller gets base's error
		// unchanged, so a context.WithCancelCause cause survives.
		endErr := err
		if ctxErr := ctx.Err(); ctxErr != nil {
			endErr = ctxErr
		}
		r.End(endErr)
		return resp, err
	case resp == nil:
		r.End(errNoResponse)
		return resp, err
	case resp.StatusCode >= 400:
		r.End(&HTTPStatusError{StatusCode: resp.StatusCode})
		return resp, nil
	case isRedirect(resp) && hops+1 >= clientMaxRedirects:
		// http.Client's default CheckRedirect gives up here, returning
		// an error and no answer: the call ends, failed.
		r.End(&redirectLimitError{StatusCode: resp.StatusCode})
		return resp, nil
	case isRedirect(resp):
		// A hop, not a request: it is not recorded. If the client follows
		// it, the request it sends (whose Response is resp) is measured
		// from this hop's start.
		r.discard(resp.StatusCode)
		body := resp.Body
		if body == nil {
			body = http.NoBody
		}
		resp.Body = &redirectHop{ReadCloser: body, start: start, hops: hops + 1}
		return resp, nil
	case resp.StatusCode < 200 || resp.StatusCode >= 300 || resp.Body == nil || resp.Body == http.NoBody:
		// Not an answer to decode. A 101's body is the upgraded
		// connection, an io.ReadWriteCloser that must stay one (otelhttp's
		// transport.go keeps the Write method for it); it is returned as is.
		r.End(nil)
		return resp, nil
	}
	resp.Body = NewReader(r, resp.Body, c.decoder(req, resp, ep))
	if addedUsage && mediaTypeOf(resp.Header.Get("Content-Type")) == mediaSSE {
		// The caller did not ask for the usage chunk: it does not see it.
		resp.Body = newUsageFilter(resp.Body)
	}
	return resp, nil
}

// isRedirect reports whether resp is a redirect that http.Client follows:
// 301, 302, 303, 307 or 308 with a Location.
func isRedirect(resp *http.Response) bool {
	switch resp.StatusCode {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return len(resp.Header["Location"]) > 0
	}
	return false
}

// discard ends r without recording it: only the active count goes back
// down (a redirect hop of NewTransport is not a request), and its span ends
// as the hop's, with the redirect's status. Later calls, and End after it,
// do nothing.
func (r *Request) discard(status int) {
	r.mu.Lock()
	done := r.ended
	r.ended = true
	kvs := r.spanKVs
	r.mu.Unlock()
	if !done {
		r.inst.active.Add(r.ctx, -1, r.set.active...)
		if r.span != nil {
			r.endHopSpan(kvs, status)
		}
	}
}

// redirectHop is the body of a redirect response: the body itself, and
// when the hop started, for the request that follows it.
type redirectHop struct {
	io.ReadCloser
	start time.Time
	hops  int // redirects so far in this call, this one included
}

// clientMaxRedirects is how many redirects http.Client's default
// CheckRedirect follows: at the 10th it returns "stopped after 10
// redirects".
const clientMaxRedirects = 10

// redirectLimitError ends a call whose 10th redirect http.Client's
// default policy does not follow.
type redirectLimitError struct{ StatusCode int }

func (e *redirectLimitError) Error() string {
	return fmt.Sprintf("llmmetrics: HTTP status %d, redirect %d of a call: http.Client's default policy stops here", e.StatusCode, clientMaxRedirects)
}

// ErrorType implements the error.type of a Record: "too_many_redirects".
func (e *redirectLimitError) ErrorType() string { return "too_many_redirects" }

// decoder returns the Decoder of a response: WithDecoder's, else the
// automatic choice; nil (no frames) for a body still compressed (the
// caller asked for an encoding itself, so net/http did not decode it).
func (c *httpCore) decoder(req *http.Request, resp *http.Response, ep endpoint) Decoder {
	if c.cfg.decoder != nil {
		if d := c.cfg.decoder(req, resp); d != nil {
			return d
		}
	}
	return autoDecoder(ep, resp.Header.Get("Content-Encoding"), resp.Header.Get("Content-Type"))
}

// autoDecoder is the automatic choice of a decoder, one rule for both
// sides (NewHandler passes the Content-Type net/http sends, sniffed when
// the handler set none): nil (no frames) for a body that is compressed
// (Content-Encoding other than identity); for a text/plain body, or one
// without a type, the first byte decides (plainTextDecoder); else the Decoder
// of chooseProtocol.
func autoDecoder(ep endpoint, contentEncoding, contentType string) Decoder {
	if contentEncoding != "" && !strings.EqualFold(contentEncoding, "identity") {
		return nil
	}
	if isPlainText(contentType) {
		return &plainTextDecoder{ep: ep}
	}
	return chooseProtocol(ep, contentType).NewDecoder()
}

// isPlainText reports whether a Content-Type is text/plain or absent: what
// a client gets from a Go server whose handler set none (net/http sniffs
// JSON as "text/plain; charset=utf-8").
func isPlainText(ct string) bool {
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	ct = strings.TrimSpace(ct)
	return ct == "" || strings.EqualFold(ct, "text/plain")
}

// plainTextDecoder decodes a body whose type does not tell its format: a body
// whose first byte that is not white space is '{' or '[' is one JSON
// answer (ProtocolJSON), unless the path tells a stream of JSON values
// (Ollama's NDJSON, Gemini's streamGenerateContent array); any other body
// is what the path tells (chooseProtocol with no type).
type plainTextDecoder struct {
	ep   endpoint
	real Decoder // chosen at the first byte that is not white space
	off  bool    // chosen, with no decoder
}

// Decode implements Decoder.
func (d *plainTextDecoder) Decode(p []byte, emit func(Frame)) {
	if d.real == nil && !d.off {
		i := 0
		for i < len(p) && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n') {
			i++
		}
		if i == len(p) {
			return // white space: nothing told yet
		}
		proto := chooseProtocol(d.ep, "")
		if (p[i] == '{' || p[i] == '[') && !d.ep.streamsValues() {
			proto = ProtocolJSON
		}
		if d.real = proto.NewDecoder(); d.real == nil {
			d.off = true
			return
		}
		p = p[i:]
	}
	if d.real != nil {
		d.real.Decode(p, emit)
	}
}

// Flush implements Decoder.
func (d *plainTextDecoder) Flush(emit func(Frame)) {
	if d.real != nil {
		d.real.Flush(emit)
	}
}

// Err implements Decoder.
func (d *plainTextDecoder) Err() error {
	if d.real != nil {
		return d.real.Err()
	}
	return nil
}
