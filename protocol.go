package llmmetrics

import "strings"

// How the HTTP integrations (NewTransport and Middleware in transport.go,
// NewHandler in handler.go) choose the decoder of an answer.

// NewDecoder returns a new Decoder for one answer in protocol p, built with
// opts. ProtocolGemini's decoder takes its framing from the body's first
// byte that is not white space: '[' (or '{') is the JSON array that
// streamGenerateContent sends without alt=sse, anything else the alt=sse
// event stream. docs/decoders.md tells what each counts. An invalid p
// gives nil (no frames: only the outcome and E2EL are measured).
func (p Protocol) NewDecoder(opts ...DecoderOption) Decoder {
	switch p {
	case ProtocolOpenAI:
		return newOpenAIDecoder(opts...)
	case ProtocolAnthropic:
		return newAnthropicDecoder(opts...)
	case ProtocolGemini:
		return &geminiAutoDecoder{opts: opts}
	case ProtocolOllama:
		return newOllamaDecoder(opts...)
	case ProtocolJSON:
		return newUsageDecoder(opts...)
	case ProtocolUnknown:
		return newSniffDecoder(opts)
	}
	return nil
}

// detectProtocol chooses the protocol of an answer from the request's URL
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
func detectProtocol(path, contentType string) Protocol {
	return chooseProtocol(classifyPath(path), contentType)
}

// chooseProtocol applies the Content-Type rules of detectProtocol to the
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
