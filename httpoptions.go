package llmmetrics

import (
	"net/http"

	"go.opentelemetry.io/otel/attribute"
)

// HTTPOption configures NewTransport, Middleware and NewHandler. Every
// HTTPOption is a TransportOption.
type HTTPOption interface {
	TransportOption
	applyHTTP(*httpConfig)
}

// TransportOption configures NewTransport and Middleware: every HTTPOption,
// and WithIncludeUsage, which rewrites the request and so cannot be passed
// to NewHandler.
type TransportOption interface {
	applyTransport(*httpConfig)
}

type httpOptionFunc func(*httpConfig)

func (f httpOptionFunc) applyHTTP(c *httpConfig)      { f(c) }
func (f httpOptionFunc) applyTransport(c *httpConfig) { f(c) }

type transportOptionFunc func(*httpConfig)

func (f transportOptionFunc) applyTransport(c *httpConfig) { f(c) }

// httpConfig holds every setting of an HTTP integration; newHTTPConfig
// sets the defaults.
type httpConfig struct {
	protocol     Protocol
	hasProtocol  bool
	decoder      func(*http.Request, *http.Response) Decoder
	includeUsage bool
	reqAttrs     func(*http.Request) []attribute.KeyValue
	models       map[string]string          // the allowlist, each name mapped to itself; nil: none
	filters      []func(*http.Request) bool // all must pass; the first is isPost
}

// newTransportConfig returns the settings of NewTransport and Middleware.
func newTransportConfig(opts []TransportOption) httpConfig {
	c := httpConfig{filters: []func(*http.Request) bool{isPost}}
	for _, o := range opts {
		if o != nil {
			o.applyTransport(&c)
		}
	}
	return c
}

// newHandlerConfig returns the settings of NewHandler.
func newHandlerConfig(opts []HTTPOption) httpConfig {
	c := httpConfig{filters: []func(*http.Request) bool{isPost}}
	for _, o := range opts {
		if o != nil {
			o.applyHTTP(&c)
		}
	}
	return c
}

func isPost(r *http.Request) bool { return r.Method == http.MethodPost }

// measured reports whether every filter lets r be measured.
func (c *httpConfig) measured(r *http.Request) bool {
	for _, f := range c.filters {
		if !f(r) {
			return false
		}
	}
	return true
}

// WithProtocol decodes streamed answers as p in place of what the request
// path tells (for a gateway with its own paths); a JSON or NDJSON
// Content-Type still decides (docs/http.md). Values other than the Protocol
// constants are ignored.
func WithProtocol(p Protocol) HTTPOption {
	return httpOptionFunc(func(c *httpConfig) {
		if p.valid() {
			c.protocol, c.hasProtocol = p, true
		}
	})
}

// WithDecoder sets a function that returns the Decoder of each response
// with a status below 300, called with the caller's request on the round
// trip's goroutine (for NewHandler: when next writes the header, with a
// response that has no Body). A nil result leaves the automatic choice.
func WithDecoder(f func(req *http.Request, resp *http.Response) Decoder) HTTPOption {
	return httpOptionFunc(func(c *httpConfig) {
		if f != nil {
			c.decoder = f
		}
	})
}

// WithIncludeUsage asks OpenAI-style servers for the exact token counts: a
// streamed request to …/chat/completions or …/completions is sent with
// "stream_options": {"include_usage": true} unless it says otherwise, and
// the usage-only chunk the caller did not ask for is left out of the bytes
// it reads. The caller's request is not modified (a copy is sent). Use it
// with servers that accept stream_options; docs/http.md has the details.
// Default: off.
func WithIncludeUsage() TransportOption {
	return transportOptionFunc(func(c *httpConfig) { c.includeUsage = true })
}

// WithRequestAttributes sets a function that returns extra attributes for
// each request's measurements, read from the caller's request (which it
// must not modify); they win over the automatic ones of the same key. Keep
// them low-cardinality: each distinct set is a series.
func WithRequestAttributes(f func(*http.Request) []attribute.KeyValue) HTTPOption {
	return httpOptionFunc(func(c *httpConfig) {
		if f != nil {
			c.reqAttrs = f
		}
	})
}

// WithModels sets an allowlist of model names for gen_ai.request.model;
// another name becomes "_OTHER", so whoever writes the requests cannot grow
// the number of series. Calls add up. Default: no allowlist for the client
// wrappers; for NewHandler, every name is "_OTHER" unless allowlisted.
func WithModels(names ...string) HTTPOption {
	return httpOptionFunc(func(c *httpConfig) {
		if c.models == nil {
			c.models = make(map[string]string, len(names))
		}
		for _, n := range names {
			c.models[n] = n
		}
	})
}

// WithFilter adds a filter: a request is measured when every filter returns
// true for it (f must not modify it). The default filter, which runs
// first, measures POST requests only (every LLM generation call is a
// POST), so a filter that drops /health does not start measuring GETs.
func WithFilter(f func(*http.Request) bool) HTTPOption {
	return httpOptionFunc(func(c *httpConfig) {
		if f != nil {
			c.filters = append(c.filters, f)
		}
	})
}
