package main

import (
	"net/http"
	"net/http/httputil"
	"net/url"

	"github.com/llmmetrics/llmmetrics"
)

// Gateway is a reverse proxy in front of an LLM server that measures every
// answer in the server role with llmmetrics.NewHandler: TTFT from the
// moment the gateway received the request to the flush that sent the first
// token-carrying event on to the client. Bytes pass through unchanged, and
// each event is flushed to the client as soon as it arrives from the
// upstream (httputil.ReverseProxy flushes event streams after every write).
type Gateway struct {
	handler http.Handler
	proxy   *httputil.ReverseProxy
}

// NewGateway returns a Gateway that forwards to upstream with its own
// http.Transport and measures with tracker (which should have the server
// role, the default). opts go to NewHandler: pass WithModels with the
// models the upstream serves, or every model is "_OTHER".
func NewGateway(upstream *url.URL, tracker *llmmetrics.Tracker, opts ...llmmetrics.HTTPOption) *Gateway {
	g := &Gateway{}
	g.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(upstream)
			pr.SetXForwarded()
		},
		// Its own connections: nothing shared with http.DefaultTransport.
		Transport: http.DefaultTransport.(*http.Transport).Clone(),
		// An unreachable upstream is a 502, which NewHandler counts as an
		// Error with error.type "502".
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	g.handler = llmmetrics.NewHandler(tracker, http.HandlerFunc(g.forward), opts...)
	return g
}

// ServeHTTP forwards r and measures the answer.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) { g.handler.ServeHTTP(w, r) }

// forward is the proxy, behind NewHandler.
func (g *Gateway) forward(w http.ResponseWriter, r *http.Request) {
	// The proxy's transport may still be reading the request body (at the
	// least, one more Read after the declared Content-Length, to check the
	// body is not longer) while the upstream's answer is already being
	// copied out. By default net/http's HTTP/1 server drains and closes an
	// unread request body when a handler starts its response; that last
	// Read then fails with "invalid Read on closed Body" and the transport
	// drops the upstream connection in the middle of the stream
	// (golang/go#40747). NewHandler's body answers that last Read with
	// io.EOF itself once the declared length has been read; full duplex
	// keeps the inbound body open while the rest of a body still comes. It reaches the
	// server's writer through NewHandler's Unwrap. HTTP/2 is always full
	// duplex (ErrNotSupported).
	_ = http.NewResponseController(w).EnableFullDuplex()
	g.proxy.ServeHTTP(w, r)
}
