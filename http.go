package llmmetrics

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/llmmetrics/llmmetrics/internal/jsonstream"
)

// This file holds what the HTTP integrations share (NewTransport and
// Middleware in transport.go; NewHandler in handler.go): the wire
// protocols and the choice of a decoder, the options, and the error of an
// HTTP failure status.

// Protocol is the wire format of an LLM answer, which decides the Decoder
// that measures it. The zero value is ProtocolUnknown.
type Protocol uint8

const (
	// ProtocolUnknown: nothing told the format. Its decoder sniffs the
	// body: a body that starts with '{' or '[' is a JSON answer
	// (ProtocolJSON); else the first events of a server-sent event stream
	// are looked at ("choices" or a "response.*" type: OpenAI;
	// "message_start": Anthropic; "candidates": Gemini). When they tell
	// nothing, the stream gives no frames: only the outcome and E2EL are
	// measured.
	ProtocolUnknown Protocol = iota
	// ProtocolOpenAI: an OpenAI-compatible SSE stream (chat completions,
	// completions, the Responses API); NewOpenAIDecoder.
	ProtocolOpenAI
	// ProtocolAnthropic: an Anthropic Messages SSE stream; NewAnthropicDecoder.
	ProtocolAnthropic
	// ProtocolGemini: a Gemini streamGenerateContent stream, as SSE
	// (alt=sse) or as a JSON array of responses (without alt=sse).
	ProtocolGemini
	// ProtocolOllama: an Ollama NDJSON stream (/api/chat, /api/generate).
	ProtocolOllama
	// ProtocolJSON: one non-streaming JSON answer of any provider;
	// NewUsageDecoder (usage only, no TTFT).
	ProtocolJSON
)

var protocolNames = [...]string{
	ProtocolUnknown:   "unknown",
	ProtocolOpenAI:    "openai",
	ProtocolAnthropic: "anthropic",
	ProtocolGemini:    "gemini",
	ProtocolOllama:    "ollama",
	ProtocolJSON:      "json",
}

// String returns the protocol's lower-case name ("openai", "json", …).
func (p Protocol) String() string {
	if int(p) < len(protocolNames) {
		return protocolNames[p]
	}
	return "Protocol(" + strconv.Itoa(int(p)) + ")"
}

// MarshalText encodes the protocol as its lower-case name, as String does;
// a value without a name is an ErrInvalidText error.
func (p Protocol) MarshalText() ([]byte, error) {
	if int(p) >= len(protocolNames) {
		return nil, fmt.Errorf("%w: no name for protocol %d", ErrInvalidText, uint8(p))
	}
	return []byte(protocolNames[p]), nil
}

// UnmarshalText decodes a protocol name ("openai", "anthropic", "gemini",
// "ollama", "json" or "unknown"), in any case.
func (p *Protocol) UnmarshalText(b []byte) error {
	i, ok := parseName(b, protocolNames[:])
	if !ok {
		return fmt.Errorf("%w: unknown protocol %q (want %s)", ErrInvalidText, b, strings.Join(protocolNames[:], ", "))
	}
	*p = Protocol(i)
	return nil
}

// NewDecoder returns a new Decoder for one answer in protocol p, built with
// opts. ProtocolGemini's decoder takes its framing from the body's first
// byte that is not white space: '[' (or '{') is the JSON array that
// streamGenerateContent sends without alt=sse (NewGeminiArrayDecoder),
// anything else the alt=sse event stream (NewGeminiDecoder). An invalid p
// gives nil (no frames: only the outcome and E2EL are measured).
func (p Protocol) NewDecoder(opts ...DecoderOption) Decoder {
	switch p {
	case ProtocolOpenAI:
		return NewOpenAIDecoder(opts...)
	case ProtocolAnthropic:
		return NewAnthropicDecoder(opts...)
	case ProtocolGemini:
		return &geminiAutoDecoder{opts: opts}
	case ProtocolOllama:
		return NewOllamaDecoder(opts...)
	case ProtocolJSON:
		return NewUsageDecoder(opts...)
	case ProtocolUnknown:
		return newSniffDecoder(opts)
	}
	return nil
}

// DetectProtocol chooses the protocol of an answer from the request's URL
// path and the response's Content-Type, as NewTransport and Middleware do:
//
//	Content-Type              path                                              protocol
//	text/event-stream         …/chat/completions, …/completions, …/responses    ProtocolOpenAI
//	text/event-stream         …/messages                                        ProtocolAnthropic
//	text/event-stream         …:streamGenerateContent                           ProtocolGemini
//	text/event-stream         any other                                         ProtocolUnknown (sniffed)
//	application/x-ndjson      any                                               ProtocolOllama
//	application/json          …:streamGenerateContent (no alt=sse: an array)    ProtocolGemini
//	application/json          any other                                         ProtocolJSON
//	other or none             as the path says (…/api/chat, …/api/generate:     the path's protocol, else
//	                          ProtocolOllama; the rows above)                   ProtocolUnknown
//
// NewTransport, Middleware and NewHandler add one rule that needs the
// body: an answer of type text/plain or none (what a Go server sends when
// its handler sets no type; NewHandler uses the type net/http sniffs) whose
// first byte that is not white space is '{' or '[' is ProtocolJSON, unless
// the path tells a stream of JSON values (Ollama, :streamGenerateContent).
//
// Paths are matched by their suffix, so prefixes do not matter (Azure's
// /openai/deployments/NAME/chat/completions, OpenRouter's
// /api/v1/chat/completions, Groq's /openai/v1/…, vLLM's /v1/…); a query or
// a trailing slash is ignored. Content-Type parameters (charset) and case
// are ignored.
func DetectProtocol(path, contentType string) Protocol {
	return chooseProtocol(classifyPath(path), contentType)
}

// chooseProtocol applies the Content-Type rules of DetectProtocol to the
// endpoint ep (whose protocol may come from WithProtocol).
func chooseProtocol(ep endpoint, contentType string) Protocol {
	switch mediaTypeOf(contentType) {
	case mediaSSE:
		switch ep.proto {
		case ProtocolOpenAI, ProtocolAnthropic, ProtocolGemini:
			return ep.proto
		}
		return ProtocolUnknown
	case mediaNDJSON:
		return ProtocolOllama
	case mediaJSON:
		if ep.geminiStream {
			return ProtocolGemini
		}
		return ProtocolJSON
	}
	return ep.proto
}

type mediaType uint8

const (
	mediaOther mediaType = iota
	mediaSSE
	mediaNDJSON
	mediaJSON
)

// mediaTypeOf classifies a Content-Type value without allocating.
func mediaTypeOf(ct string) mediaType {
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	ct = strings.TrimSpace(ct)
	switch {
	case strings.EqualFold(ct, "text/event-stream"):
		return mediaSSE
	case strings.EqualFold(ct, "application/x-ndjson"), strings.EqualFold(ct, "application/ndjson"):
		return mediaNDJSON
	case strings.EqualFold(ct, "application/json"):
		return mediaJSON
	}
	return mediaOther
}

// endpoint is what a request's URL path tells.
type endpoint struct {
	proto         Protocol
	op            attribute.KeyValue // gen_ai.operation.name; invalid when unknown
	geminiStream  bool               // …:streamGenerateContent
	streamOptions bool               // OpenAI chat completions or completions: stream_options applies
	pathModel     string             // Gemini's /models/{model}:…, Azure's /deployments/{name}/…
}

// Operation names (semconv v1.41.0 gen_ai.operation.name values).
var (
	opChat           = semconv.GenAIOperationNameChat
	opTextCompletion = semconv.GenAIOperationNameTextCompletion
	opGenerate       = semconv.GenAIOperationNameGenerateContent
	opEmbeddings     = semconv.GenAIOperationNameEmbeddings
)

// classifyPath reads the protocol, the operation and a model name from a
// URL path; see DetectProtocol.
func classifyPath(path string) endpoint {
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	path = strings.TrimRight(path, "/")
	var ep endpoint
	switch {
	case strings.HasSuffix(path, "/chat/completions"):
		ep = endpoint{proto: ProtocolOpenAI, op: opChat, streamOptions: true}
	case strings.HasSuffix(path, "/completions"):
		ep = endpoint{proto: ProtocolOpenAI, op: opTextCompletion, streamOptions: true}
	case strings.HasSuffix(path, "/responses"):
		ep = endpoint{proto: ProtocolOpenAI, op: opChat}
	case strings.HasSuffix(path, "/embeddings") && !strings.HasSuffix(path, "/api/embeddings"):
		ep = endpoint{proto: ProtocolOpenAI, op: opEmbeddings}
	case strings.HasSuffix(path, "/messages"):
		ep = endpoint{proto: ProtocolAnthropic, op: opChat}
	case strings.HasSuffix(path, ":streamGenerateContent"):
		ep = endpoint{proto: ProtocolGemini, op: opGenerate, geminiStream: true}
	case strings.HasSuffix(path, ":generateContent"):
		ep = endpoint{proto: ProtocolGemini, op: opGenerate}
	case strings.HasSuffix(path, ":embedContent"), strings.HasSuffix(path, ":batchEmbedContents"):
		ep = endpoint{proto: ProtocolGemini, op: opEmbeddings}
	case strings.HasSuffix(path, "/api/chat"):
		ep = endpoint{proto: ProtocolOllama, op: opChat}
	case strings.HasSuffix(path, "/api/generate"):
		ep = endpoint{proto: ProtocolOllama, op: opTextCompletion}
	case strings.HasSuffix(path, "/api/embed"), strings.HasSuffix(path, "/api/embeddings"):
		ep = endpoint{proto: ProtocolOllama, op: opEmbeddings}
	default:
		return endpoint{}
	}
	switch {
	case ep.proto == ProtocolGemini:
		// …/models/{model}:method (Gemini API and Vertex AI).
		if i := strings.LastIndex(path, "/models/"); i >= 0 {
			m := path[i+len("/models/"):]
			if j := strings.LastIndexByte(m, ':'); j >= 0 {
				ep.pathModel = m[:j]
			}
		}
	case ep.proto == ProtocolOpenAI:
		// Azure OpenAI: /openai/deployments/{deployment}/chat/completions.
		if i := strings.Index(path, "/deployments/"); i >= 0 {
			m := path[i+len("/deployments/"):]
			if j := strings.IndexByte(m, '/'); j > 0 {
				ep.pathModel = m[:j]
			}
		}
	}
	return ep
}

// provOllama is Ollama's gen_ai.provider.name: not one of the well-known
// values of semconv v1.41.0, which allows others.
var provOllama = semconv.GenAIProviderNameKey.String("ollama")

var hostProviders = map[string]attribute.KeyValue{
	"api.openai.com":                    semconv.GenAIProviderNameOpenAI,
	"api.anthropic.com":                 semconv.GenAIProviderNameAnthropic,
	"generativelanguage.googleapis.com": semconv.GenAIProviderNameGCPGemini,
	"aiplatform.googleapis.com":         semconv.GenAIProviderNameGCPVertexAI,
	"api.groq.com":                      semconv.GenAIProviderNameGroq,
	"api.deepseek.com":                  semconv.GenAIProviderNameDeepseek,
	"api.mistral.ai":                    semconv.GenAIProviderNameMistralAI,
	"api.x.ai":                          semconv.GenAIProviderNameXAI,
	"api.perplexity.ai":                 semconv.GenAIProviderNamePerplexity,
	"api.cohere.com":                    semconv.GenAIProviderNameCohere,
	"api.cohere.ai":                     semconv.GenAIProviderNameCohere,
}

// providerOf returns the gen_ai.provider.name of a request to host (a URL
// host, perhaps with a port) speaking protocol p: the well-known provider of
// the host, else the protocol's provider (as the GenAI conventions advise
// for OpenAI-compatible servers: "openai"); invalid when neither is known.
func providerOf(host string, p Protocol) attribute.KeyValue {
	if i := strings.LastIndexByte(host, ':'); i >= 0 && !strings.Contains(host[i:], "]") {
		host = host[:i]
	}
	for i := 0; i < len(host); i++ {
		if 'A' <= host[i] && host[i] <= 'Z' {
			host = strings.ToLower(host)
			break
		}
	}
	if kv, ok := hostProviders[host]; ok {
		return kv
	}
	switch {
	case strings.HasSuffix(host, ".openai.azure.com"):
		return semconv.GenAIProviderNameAzureAIOpenAI
	case strings.HasSuffix(host, ".services.ai.azure.com"), strings.HasSuffix(host, ".inference.ai.azure.com"),
		strings.HasSuffix(host, ".models.ai.azure.com"):
		return semconv.GenAIProviderNameAzureAIInference
	case strings.HasSuffix(host, "-aiplatform.googleapis.com"):
		return semconv.GenAIProviderNameGCPVertexAI
	case strings.HasPrefix(host, "bedrock-runtime.") && strings.HasSuffix(host, ".amazonaws.com"):
		return semconv.GenAIProviderNameAWSBedrock
	}
	switch p {
	case ProtocolOpenAI:
		return semconv.GenAIProviderNameOpenAI
	case ProtocolAnthropic:
		return semconv.GenAIProviderNameAnthropic
	case ProtocolGemini:
		return semconv.GenAIProviderNameGCPGemini
	case ProtocolOllama:
		return provOllama
	}
	return attribute.KeyValue{}
}

// HTTPStatusError is the error a request measured by NewTransport,
// Middleware or NewHandler ends with when the response's status code is 400
// or more: the request fails (OutcomeError) with error.type the status code
// ("429").
type HTTPStatusError struct {
	// StatusCode is the response's HTTP status code.
	StatusCode int
}

// Error returns "llmmetrics: HTTP status 429 Too Many Requests".
func (e *HTTPStatusError) Error() string {
	return fmt.Sprintf("llmmetrics: HTTP status %d %s", e.StatusCode, http.StatusText(e.StatusCode))
}

// ErrorType returns the status code in decimal, the error.type attribute
// of the GenAI conventions for an HTTP failure.
func (e *HTTPStatusError) ErrorType() string { return strconv.Itoa(e.StatusCode) }

// ---------------------------------------------------------------------------
// Options

// HTTPOption configures NewTransport, Middleware and NewHandler.
type HTTPOption interface {
	applyHTTP(*httpConfig)
}

type httpOptionFunc func(*httpConfig)

func (f httpOptionFunc) applyHTTP(c *httpConfig) { f(c) }

// httpConfig holds every setting of an HTTP integration; newHTTPConfig
// sets the defaults.
type httpConfig struct {
	protocol     Protocol
	hasProtocol  bool
	decoder      func(*http.Request, *http.Response) Decoder
	includeUsage bool
	reqAttrs     func(*http.Request) []attribute.KeyValue
	models       map[string]string // the allowlist, each name mapped to itself; nil: none
	filter       func(*http.Request) bool
}

func newHTTPConfig(opts []HTTPOption) httpConfig {
	c := httpConfig{filter: isPost}
	for _, o := range opts {
		if o != nil {
			o.applyHTTP(&c)
		}
	}
	return c
}

func isPost(r *http.Request) bool { return r.Method == http.MethodPost }

// WithProtocol says which protocol the endpoint speaks, in place of the
// request path (for a gateway with its own paths, say): a streamed answer is
// decoded as p. A response whose Content-Type is application/json is still
// one JSON answer (ProtocolJSON), and application/x-ndjson still Ollama's
// stream; see DetectProtocol. Values other than the Protocol constants are
// ignored. Default: the protocol the path tells.
func WithProtocol(p Protocol) HTTPOption {
	return httpOptionFunc(func(c *httpConfig) {
		if p <= ProtocolJSON {
			c.protocol, c.hasProtocol = p, true
		}
	})
}

// WithDecoder sets a function that returns the Decoder of each response
// (status below 300); it is called with the caller's request, on the
// goroutine of the round trip (for NewHandler: with the request next got
// and a response holding the status and header next wrote, no Body, when
// the header is written). A nil result leaves the choice to the
// automatic one (DetectProtocol and WithProtocol). A nil function is ignored.
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
// server then ends the stream with a usage chunk, which NewOpenAIDecoder
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
// SGLang, llama.cpp, Ollama's OpenAI API, …). Default: off. NewHandler
// ignores it (a server does not rewrite its clients' requests).
func WithIncludeUsage() HTTPOption {
	return httpOptionFunc(func(c *httpConfig) { c.includeUsage = true })
}

// WithRequestAttributes sets a function that returns extra attributes for
// each request's measurements, read from the caller's request (which it
// must not modify); it runs on the goroutine of the round trip (for
// NewHandler: next's, or the one that reads the request body). Its
// attributes win over the automatic ones of the same key. Keep them
// low-cardinality: each distinct set is a series (the Tracker's attribute
// cache is bounded, see WithAttributeCacheSize, but the metrics backend's
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

// WithFilter sets which requests are measured: those for which f returns
// true (f must not modify the request); the others pass through untouched.
// Default: POST requests (every generation or embedding call of the LLM
// APIs is a POST; GETs of /models or /files are not measured). A nil
// function is ignored.
func WithFilter(f func(*http.Request) bool) HTTPOption {
	return httpOptionFunc(func(c *httpConfig) {
		if f != nil {
			c.filter = f
		}
	})
}

// ---------------------------------------------------------------------------
// Sniffing

// Bounds of the sniff: the events and bytes looked at before giving up.
const (
	maxSniffEvents = 8
	maxSniffBytes  = 64 << 10
)

var sniffSchema = jsonstream.NewSchema(
	jsonstream.Field{Path: "type", MaxString: 32},
	jsonstream.Field{Path: "choices"},
	jsonstream.Field{Path: "candidates"},
	jsonstream.Field{Path: "usageMetadata"},
)

// sniffDecoder is ProtocolUnknown's decoder: it keeps the bytes until the
// body tells its protocol, then gives them to that protocol's decoder, which
// decodes the rest.
type sniffDecoder struct {
	opts    []DecoderOption
	real    Decoder // the protocol's decoder, once known
	off     bool    // gave up, or the protocol has no decoder: no frames
	started bool    // the first non-space byte has been seen
	buf     []byte  // the bytes seen while undecided
	probe   Decoder // SSE framing of the undecided bytes
	scan    *jsonstream.Scanner
	found   Protocol
	events  int
	ignore  func(Frame)
}

func newSniffDecoder(opts []DecoderOption) *sniffDecoder {
	d := &sniffDecoder{opts: opts, ignore: func(Frame) {}}
	d.probe = NewSSEDecoder(d.classify, opts...)
	return d
}

// Decode implements Decoder.
func (d *sniffDecoder) Decode(p []byte, emit func(Frame)) {
	switch {
	case d.real != nil:
		d.real.Decode(p, emit)
		return
	case d.off || len(p) == 0:
		return
	}
	if !d.started {
		i := 0
		for i < len(p) && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r') {
			i++
		}
		if i < len(p) {
			d.started = true
			if p[i] == '{' || p[i] == '[' {
				d.found = ProtocolJSON
			}
		}
	}
	if len(d.buf)+len(p) > maxSniffBytes {
		d.giveUp()
		return
	}
	d.buf = append(d.buf, p...)
	if d.found == ProtocolUnknown {
		d.probe.Decode(p, d.ignore)
	}
	d.decide(emit)
}

// Err implements Decoder: the problems of the protocol's decoder, once the
// protocol is known (the sniff itself reports none).
func (d *sniffDecoder) Err() error {
	if d.real != nil {
		return d.real.Err()
	}
	return nil
}

// Flush implements Decoder.
func (d *sniffDecoder) Flush(emit func(Frame)) {
	if d.real == nil && !d.off {
		d.probe.Flush(d.ignore) // a last event without its blank line
		d.decide(emit)
	}
	if d.real != nil {
		d.real.Flush(emit)
	}
	d.giveUp()
}

// decide switches to the protocol found, if any.
func (d *sniffDecoder) decide(emit func(Frame)) {
	switch {
	case d.found != ProtocolUnknown:
		d.real = d.found.NewDecoder(d.opts...)
		if d.real == nil {
			d.giveUp()
			return
		}
		buf := d.buf
		d.buf, d.probe, d.scan = nil, nil, nil
		d.real.Decode(buf, emit)
	case d.events >= maxSniffEvents:
		d.giveUp()
	}
}

func (d *sniffDecoder) giveUp() {
	d.off = d.real == nil
	d.buf, d.probe, d.scan = nil, nil, nil
}

// classify looks at one SSE event of the undecided stream. It reports no
// problem: an event it cannot read only tells nothing.
func (d *sniffDecoder) classify(event, data []byte) (Frame, error) {
	d.events++
	if d.found != ProtocolUnknown {
		return Frame{}, nil
	}
	if string(bytes.TrimSpace(data)) == "[DONE]" {
		d.found = ProtocolOpenAI
		return Frame{}, nil
	}
	if d.scan == nil {
		d.scan = jsonstream.NewScanner(sniffSchema)
	}
	s := d.scan
	s.Reset()
	s.Feed(data)
	s.Feed(space)
	if !s.Done() || s.Root.Kind != jsonstream.KindObject {
		return Frame{}, nil
	}
	typ := s.Values[0].Str
	switch {
	case s.Values[1].Kind != jsonstream.KindNone:
		d.found = ProtocolOpenAI
	case strings.HasPrefix(string(typ), "response."):
		d.found = ProtocolOpenAI
	case string(typ) == "message_start" || string(event) == "message_start":
		d.found = ProtocolAnthropic
	case s.Values[2].Kind != jsonstream.KindNone || s.Values[3].Kind != jsonstream.KindNone:
		d.found = ProtocolGemini
	}
	return Frame{}, nil
}
