package llmmetrics

import (
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
)

// This file holds the one table of wire protocols. Each protocol declares,
// in its own file, a protocolSpec: its decoder, the request paths that speak
// it, how its answers are framed, how its first event is recognised and the
// provider it implies. Everything that chooses, recognises or names a
// protocol (Protocol.NewDecoder and String, the HTTP integrations' choice of
// decoder, the sniffing decoder, endpoint classification) reads that
// declaration. CONTRIBUTING.md ("Adding a protocol") lists the steps.

// Protocol is the wire format of an LLM answer, which decides the Decoder
// that measures it. The zero value is ProtocolUnknown. docs/http.md shows
// which request path and Content-Type choose each one.
type Protocol uint8

const (
	// ProtocolUnknown: nothing told the format. Its decoder sniffs the
	// body: a body that starts with '{' or '[' is a JSON answer
	// (ProtocolJSON); else the first events of a server-sent event stream
	// tell the protocol (docs/decoders.md). When they tell nothing, the
	// stream gives no frames: only the outcome and E2EL are measured.
	ProtocolUnknown Protocol = iota
	// ProtocolOpenAI: an OpenAI-compatible SSE stream (chat completions,
	// completions, the Responses API).
	ProtocolOpenAI
	// ProtocolAnthropic: an Anthropic Messages SSE stream.
	ProtocolAnthropic
	// ProtocolGemini: a Gemini streamGenerateContent stream, as SSE
	// (alt=sse) or as a JSON array of responses (without alt=sse).
	ProtocolGemini
	// ProtocolOllama: an Ollama NDJSON stream (/api/chat, /api/generate).
	ProtocolOllama
	// ProtocolJSON: one non-streaming JSON answer of any provider;
	// its usage only (no TTFT, TPOT or ITL).
	ProtocolJSON
	// ProtocolCohere: a Cohere v2 Chat SSE stream (/v2/chat).
	ProtocolCohere

	protocolCount // the number of protocols: keep last
)

// protocolSpecs is the table of protocols, by Protocol: one row each. It is
// filled by init rather than in its declaration because the sniffing
// decoder (ProtocolUnknown's) chooses among its rows.
var protocolSpecs [protocolCount]*protocolSpec

func init() {
	protocolSpecs = [protocolCount]*protocolSpec{
		ProtocolUnknown:   &unknownSpec,   // sniff.go
		ProtocolOpenAI:    &openAISpec,    // openai.go
		ProtocolAnthropic: &anthropicSpec, // anthropic.go
		ProtocolGemini:    &geminiSpec,    // gemini.go
		ProtocolOllama:    &ollamaSpec,    // ndjson.go
		ProtocolJSON:      &jsonSpec,      // json.go
		ProtocolCohere:    &cohereSpec,    // cohere.go
	}
	initPaths()
	initSniff()
	initAnswers()
}

// protocolSpec declares one wire protocol.
type protocolSpec struct {
	// name is the protocol's lower-case name (Protocol.String); title its
	// name for people (docs/http.md's tables).
	name, title string
	// decoder returns the Decoder of one answer; nil means no frames.
	decoder func(opts []DecoderOption) Decoder
	// provider is the gen_ai.provider.name of a request in this protocol
	// to a host that does not name a provider of its own (providerOf);
	// invalid when the protocol implies none.
	provider attribute.KeyValue
	// paths are the request paths that speak the protocol, matched by
	// their suffix: of all protocols' paths, the longest suffix that
	// matches wins.
	paths []pathRule
	// pathModel reads a model name from a request path of the protocol
	// (Gemini's /models/{model}:…, Azure's /deployments/{name}/…); nil
	// when its paths name none. pathIsModel: that name is the request's
	// model, and its body names none (Gemini); else it is the fallback of
	// the body's "model" (an Azure deployment).
	pathModel   func(path string) string
	pathIsModel bool
	// streams is whether a request streams when its body has no "stream"
	// member (OpenAI and Anthropic: no; Ollama: yes); streamUnknown when
	// the protocol's paths tell it instead.
	streams streamMode
	// sse: a text/event-stream answer on one of the protocol's paths is
	// decoded as this protocol (else it is sniffed).
	sse bool
	// ndjson: an application/x-ndjson answer, on any path, is this
	// protocol's (one protocol at most).
	ndjson bool
	// sniff tells how the first events of an undecided event stream show
	// this protocol (see sniff.go).
	sniff sniffRule
	// answer tells how ProtocolJSON's decoder reads the usage of the
	// protocol's non-streaming answer, when no shape of json.go does; nil
	// when one does.
	answer *answerRule
}

// pathRule is one request path of a protocol.
type pathRule struct {
	// suffix is the end of the path ("/chat/completions").
	suffix string
	// op is the gen_ai.operation.name of a request to the path.
	op attribute.KeyValue
	// streamOptions: OpenAI's stream_options applies (WithIncludeUsage).
	streamOptions bool
	// array: an application/json answer on this path is a stream of
	// values in one JSON array (Gemini's streamGenerateContent without
	// alt=sse), read by the protocol's decoder, not ProtocolJSON's.
	array bool
	// stream is whether a request to the path streams, when the path
	// tells it (Gemini's :streamGenerateContent and :generateContent);
	// streamUnknown when the body does.
	stream streamMode
}

// streamMode is whether a request streams, where something other than its
// body tells it.
type streamMode uint8

const (
	streamUnknown streamMode = iota
	streamYes
	streamNo
)

// spec returns p's row of the table, or nil for an invalid p.
func (p Protocol) spec() *protocolSpec {
	if int(p) < len(protocolSpecs) {
		return protocolSpecs[p]
	}
	return nil
}

func (p Protocol) valid() bool { return int(p) < len(protocolSpecs) }

// String returns the protocol's lower-case name ("openai", "json", …).
func (p Protocol) String() string {
	if s := p.spec(); s != nil {
		return s.name
	}
	return "Protocol(" + strconv.Itoa(int(p)) + ")"
}

// NewDecoder returns a new Decoder for one answer in protocol p, built with
// opts. ProtocolGemini's decoder takes its framing from the body's first
// byte that is not white space: '[' (or '{') is the JSON array that
// streamGenerateContent sends without alt=sse, anything else the alt=sse
// event stream. docs/decoders.md tells what each counts. An invalid p
// gives nil (no frames: only the outcome and E2EL are measured).
func (p Protocol) NewDecoder(opts ...DecoderOption) Decoder {
	if s := p.spec(); s != nil && s.decoder != nil {
		return s.decoder(opts)
	}
	return nil
}

// detectProtocol chooses the protocol of an answer from the request's URL
// path and the response's Content-Type, as NewTransport and Middleware do;
// docs/http.md has the table of the choices, which TestHTTPDocsTable
// checks against the protocol table. NewTransport, Middleware and
// NewHandler add one rule that needs the body: an answer of type
// text/plain or none (what a Go server sends when its handler sets no
// type; NewHandler uses the type net/http sniffs) whose first byte that is
// not white space is '{' or '[' is ProtocolJSON, unless the path tells a
// stream of JSON values (an NDJSON protocol, a JSON array stream).
//
// Paths are matched by their suffix, so prefixes do not matter (Azure's
// /openai/deployments/NAME/chat/completions, OpenRouter's
// /api/v1/chat/completions, Groq's /openai/v1/…, vLLM's /v1/…); a query or
// a trailing slash is ignored. Content-Type parameters (charset) and case
// are ignored.
func detectProtocol(path, contentType string) Protocol {
	return chooseProtocol(classifyPath(path), contentType)
}

// ndjsonProtocol is the protocol of an application/x-ndjson answer
// (protocolSpec.ndjson), set by initPaths.
var ndjsonProtocol Protocol

// chooseProtocol applies the Content-Type rules of detectProtocol to the
// endpoint ep (whose protocol may come from WithProtocol).
func chooseProtocol(ep endpoint, contentType string) Protocol {
	switch mediaTypeOf(contentType) {
	case mediaSSE:
		if s := ep.proto.spec(); s != nil && s.sse {
			return ep.proto
		}
		return ProtocolUnknown
	case mediaNDJSON:
		return ndjsonProtocol
	case mediaJSON:
		if ep.array {
			return ep.proto
		}
		return ProtocolJSON
	}
	return ep.proto
}

// streamsValues reports whether an answer on ep that starts with '{' or '['
// is a stream of JSON values (an NDJSON protocol's, a JSON array stream)
// rather than one JSON answer.
func (ep endpoint) streamsValues() bool {
	return ep.array || ep.proto == ndjsonProtocol && ep.proto != ProtocolUnknown
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
