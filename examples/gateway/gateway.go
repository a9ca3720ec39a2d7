package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httputil"
	"net/url"

	"github.com/llmmetrics/llmmetrics"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// Gateway is a reverse proxy in front of an OpenAI-compatible upstream that
// measures every response in the server role: TTFT from the moment the
// gateway received the request to the first token-carrying event it
// forwards. Bytes pass through unchanged, and each event is flushed to the
// client as soon as it arrives from the upstream (no added buffering).
type Gateway struct {
	tracker *llmmetrics.Tracker
	proxy   *httputil.ReverseProxy
	// OnRecord, when set, is called with each request's Record once it has
	// ended (from the goroutine serving the request).
	OnRecord func(llmmetrics.Record)
}

type requestKey struct{}

// maxPeek bounds how much of a request body is read to find its model.
const maxPeek = 1 << 20

// NewGateway returns a Gateway that forwards to upstream and measures with
// tracker (which should have the server role).
func NewGateway(upstream *url.URL, tracker *llmmetrics.Tracker) *Gateway {
	g := &Gateway{tracker: tracker}
	g.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(upstream)
			pr.SetXForwarded()
		},
		FlushInterval: -1, // flush after every write: events reach the client as they come
		ModifyResponse: func(resp *http.Response) error {
			req := resp.Request.Context().Value(requestKey{}).(*llmmetrics.Request)
			resp.Body = llmmetrics.NewReader(req, resp.Body, decoderFor(resp))
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			r.Context().Value(requestKey{}).(*llmmetrics.Request).End(err)
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	return g
}

// ServeHTTP forwards r and measures the response.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The proxy's transport may still be reading the request body (at the
	// least, one more Read after the declared Content-Length, to check the
	// body is not longer) while the upstream's answer is already being
	// copied out. By default net/http's HTTP/1 server drains and closes an
	// unread request body when a handler starts its response; that last
	// Read then fails with "invalid Read on closed Body" and the transport
	// drops the upstream connection in the middle of the stream
	// (golang/go#40747). Full duplex keeps the body open until ServeHTTP
	// returns. HTTP/2 is always full duplex (ErrNotSupported); peekModel
	// covers a ResponseWriter that cannot switch for bodies up to maxPeek.
	_ = http.NewResponseController(w).EnableFullDuplex()
	req := g.tracker.Start(r.Context(), semconv.GenAIRequestModel(peekModel(r)))
	// Deferred: when the client goes away mid-stream, ReverseProxy aborts
	// the response with panic(http.ErrAbortHandler).
	defer func() {
		// The reader ended the request at EOF, error, cancel or Close; this
		// only collects the Record (End is idempotent).
		rec := req.End(llmmetrics.ErrStopped)
		if g.OnRecord != nil {
			g.OnRecord(rec)
		}
	}()
	g.proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestKey{}, req)))
}

// peekModel returns the "model" of a JSON request body, leaving the body
// as it was for the upstream. A body read whole (up to maxPeek) is
// forwarded from memory, so the upstream transport never reads the inbound
// body (see ServeHTTP); a longer one is the bytes read followed by the
// rest of the inbound body.
func peekModel(r *http.Request) string {
	if r.Body == nil {
		return "unknown"
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, maxPeek))
	if err == nil && len(b) < maxPeek {
		r.Body = io.NopCloser(bytes.NewReader(b))
	} else {
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(b), r.Body), r.Body}
	}
	var body struct{ Model string }
	if err != nil || json.Unmarshal(b, &body) != nil || body.Model == "" {
		return "unknown"
	}
	return body.Model
}

// decoderFor picks how a response is decoded: OpenAI SSE for event
// streams; for an error status, a decoder that reports the status as the
// stream's error at its end; nothing for other bodies (a non-streaming
// response is measured as one E2EL).
func decoderFor(resp *http.Response) llmmetrics.Decoder {
	if resp.StatusCode >= 400 {
		return statusDecoder{fmt.Errorf("upstream HTTP %d", resp.StatusCode)}
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/event-stream" {
		return llmmetrics.NewOpenAIDecoder()
	}
	return nil
}

// statusDecoder finds no frames and reports err at the end of the body.
type statusDecoder struct{ err error }

func (statusDecoder) Decode([]byte, func(llmmetrics.Frame)) {}
func (d statusDecoder) Flush(emit func(llmmetrics.Frame))   { emit(llmmetrics.Frame{Err: d.err}) }

// Err reports no decoding problem: the status error is the stream's own
// error (Frame.Err), not a malformed frame.
func (statusDecoder) Err() error { return nil }
