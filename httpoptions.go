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

// TransportOption configures the client side, NewTransport and Middleware:
// every HTTPOption, and WithIncludeUsage, which changes the request sent and
// so has no meaning for NewHandler (passing it there does not compile).
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

// WithProtocol says which protocol the endpoint speaks, in place of the
// request path (for a gateway with its own paths, say): a streamed answer is
// decoded as p. A response whose Content-Type is application/json is still
// one JSON answer (ProtocolJSON), and application/x-ndjson still Ollama's
// stream; docs/http.md has the table. Values other than the Protocol constants are
// ignored. Default: the protocol the path tells.
func WithProtocol(p Protocol) HTTPOption {
	return httpOptionFunc(func(c *httpConfig) {
		if p.valid() {
			c.protocol, c.hasProtocol = p, true
		}
	})
}

// WithDecoder sets a function that returns the Decoder of each response
// (status below 300); it is called with the caller's request, on the
// goroutine of the round trip (for NewHandler: with the request next got
// and a response holding the status and header next wrote, no Body, when
// the header is written). A nil result leaves the choice to the
// automatic one (the Content-Type and path, and WithProtocol). A nil function is ignored.
func WithDecoder(f func(req *http.Request, resp *http.Response) Decoder) HTTPOption {
	return httpOptionFunc(func(c *httpConfig) {
		if f != nil {
			c.decoder = f
		}
	})
}

// WithIncludeUsage makes the exact output token count arrive with every
// OpenAI-style streamed answer: a request to …/chat/completions or
// …/completions whose JSON body has "stream": true and no
// "stream_options.include_usage" is sent with "stream_options":
// {"include_usage": true} added (merged into an existing stream_options
// object; an explicit include_usage, true or false, is left alone). The
// server then ends the stream with a usage chunk, which ProtocolOpenAI.NewDecoder
// reads; without it N is the number of token-carrying chunks, a lower
// bound. openai-go and go-openai do not ask for it by default. The caller
// does not see the chunk it did not ask for: when the library added
// include_usage, the usage-only event ("choices": [] and a usage object) is
// left out of the bytes the caller reads (the decoder still reads it), so a
// loop that indexes Choices[0] of every chunk keeps working; see
// docs/http.md.
//
// The caller's request is not modified: the request sent is a copy whose
// Body, GetBody, ContentLength and Content-Length header (if set) describe
// the new body; everything else in the body is kept byte for byte. A body
// over 4 MiB, compressed (Content-Encoding), or not a JSON object is sent
// unchanged. Some OpenAI-compatible servers reject unknown members: use it
// with servers that accept stream_options (OpenAI, Azure OpenAI, vLLM,
// SGLang, llama.cpp, Ollama's OpenAI API, …). Default: off. It is a
// TransportOption only: a server does not rewrite its clients' requests.
func WithIncludeUsage() TransportOption {
	return transportOptionFunc(func(c *httpConfig) { c.includeUsage = true })
}

// WithRequestAttributes sets a function that returns extra attributes for
// each request's measurements, read from the caller's request (which it
// must not modify); it runs on the goroutine of the round trip (for
// NewHandler: next's, or the one that reads the request body). Its
// attributes win over the automatic ones of the same key. Keep them
// low-cardinality: each distinct set is a series (the Tracker's attribute
// cache is bounded, but the metrics backend's
// series are not). A nil function is ignored.
func WithRequestAttributes(f func(*http.Request) []attribute.KeyValue) HTTPOption {
	return httpOptionFunc(func(c *httpConfig) {
		if f != nil {
			c.reqAttrs = f
		}
	})
}

// WithModels sets an allowlist of model names for gen_ai.request.model:
// another name becomes "_OTHER", so whoever writes the requests cannot grow
// the number of series. Repeated calls add up; WithModels() with no names
// folds every model into "_OTHER". Default for NewTransport and
// Middleware: no allowlist, which suits a client, where the program itself
// names the models; for NewHandler, whose model names come from its
// clients: every name is "_OTHER" unless allowlisted.
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
// true for it (f must not modify the request); the others pass through
// untouched. Filters run in the order given, after the default one, which
// measures POST requests only (every generation or embedding call of the
// LLM APIs is a POST; GETs of /models or /files are not measured), so a
// filter that drops /health does not start measuring GETs. A nil function
// is ignored.
func WithFilter(f func(*http.Request) bool) HTTPOption {
	return httpOptionFunc(func(c *httpConfig) {
		if f != nil {
			c.filters = append(c.filters, f)
		}
	})
}
