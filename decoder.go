package llmmetrics

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/llmmetrics/llmmetrics/internal/jsonscan"
	"go.opentelemetry.io/otel"
)

// This file holds the contract of the stream decoders, which find frames
// (SSE events, lines, Reads) in the bytes of a response body and say how many
// output tokens each frame carries without allocating on the hot path: the
// Decoder interface, Frame, the options and errors they share, and the text
// decoder. The SSE framing is in sse.go, the NDJSON framing in ndjson.go, the
// protocols in openai.go, anthropic.go, gemini.go (with its JSON-array
// framing) and ndjson.go (Ollama), the JSON scanner in internal/jsonscan.

// defaultMaxFrameBytes is the default limit on the size of one frame (1 MiB);
// see WithMaxFrameBytes.
const defaultMaxFrameBytes = 1 << 20

// ErrFrameTooLarge is the problem (wrapped, with context) a decoder reports
// through its Err and (once per stream) through otel.Handle when one frame
// of a stream is larger than its limit (see WithMaxFrameBytes). The decoder then stops: its
// later Decode and Flush calls do nothing, so memory stays bounded whatever
// the server sends.
var ErrFrameTooLarge = errors.New("llmmetrics: frame too large")

// ErrMalformedFrame is the problem (wrapped, with context) a decoder reports
// through its Err and (once per stream) through otel.Handle when a frame
// cannot be interpreted (for example an SSE event whose data is not a JSON
// object). The frame is reported with no tokens and decoding goes on with
// the next frame.
var ErrMalformedFrame = errors.New("llmmetrics: malformed frame")

// Frame is what a Decoder reports about one complete frame of a stream
// (one SSE event, one line, one Read).
//
// The zero Frame is a frame that carries nothing: no tokens, no usage, no
// error, not the end.
type Frame struct {
	// Tokens is the number of output tokens the frame carries; 0 for frames that carry none
	// (role-only or empty deltas, keep-alives, usage-only chunks, [DONE]).
	//
	// When the server does not say how many tokens a frame holds (the usual
	// case), a frame that carries content counts as 1 token (per choice that
	// carries content, for an OpenAI chunk with several choices), so the sum
	// over a stream is a lower bound of the real output: the server's usage
	// (HasUsage), when it sends one, is the exact count.
	Tokens int
	// Reasoning reports that the frame's tokens are reasoning ("thinking")
	// tokens, not answer tokens: OpenAI-compatible reasoning_content or
	// reasoning deltas, Responses reasoning deltas, Anthropic thinking_delta,
	// Gemini thought parts, Ollama thinking, typed "thinking" content parts.
	// A frame that carries both reasoning and answer tokens is an answer
	// frame (Reasoning false). Answer tokens are content, refusal and tool
	// calls. The first answer frame of a stream marks Record.FirstOutput.
	Reasoning bool
	// HasUsage reports that the frame carried the server's exact usage; InputTokens and
	// OutputTokens are then the counts so far (cumulative; the last one wins).
	// OutputTokens counts every output token, reasoning included (a decoder
	// adds the reasoning count where the provider leaves it out, as xAI and
	// Gemini do), and ReasoningTokens is how many of them the server reports
	// as reasoning (0 when it does not say).
	HasUsage                  bool
	InputTokens, OutputTokens int
	ReasoningTokens           int
	// CachedInputTokens and CacheWriteInputTokens are how many of the
	// InputTokens the provider read from and wrote to its prompt cache
	// (Record.CachedInputTokens, Record.CacheWriteInputTokens), reported
	// with the usage (HasUsage) or with the prompt's size (HasInput); 0 when
	// the provider does not say.
	CachedInputTokens, CacheWriteInputTokens int
	// HasInput reports that the frame told the prompt's size before any
	// output count (Anthropic's message_start): InputTokens is set,
	// OutputTokens is not, and the chunk count stays N until a usage frame
	// (HasUsage) arrives. The reader applies it with Request.SetInputTokens.
	HasInput bool
	// Err is non-nil when the stream itself reported an error (an OpenAI error object,
	// an Anthropic "error" event, a Responses "error"/"response.failed" event).
	// The built-in decoders set it to a *StreamError. The frame's other
	// fields still count: a frame may carry tokens, usage and an error at
	// once, and a reader applies the tokens and usage before the error.
	Err error
	// Done marks the protocol's end-of-stream marker ([DONE], message_stop, response.completed).
	Done bool
}

// Decoder finds frames in a byte stream. A Decoder is used by one stream
// (not safe for concurrent use).
type Decoder interface {
	// Decode is given every byte read from the stream, in order, exactly
	// once. p is valid only during the call and must not be modified or
	// retained. Decode calls emit once per frame completed by p, in order.
	// It never panics.
	Decode(p []byte, emit func(Frame))
	// Flush is called once at the end of the stream so a final frame that
	// lacks its terminator is reported.
	Flush(emit func(Frame))
	// Err returns the first problem the decoder found in the stream so far,
	// as bufio.Scanner.Err does: an error wrapping ErrFrameTooLarge or
	// ErrMalformedFrame, or nil when there was none. The built-in decoders
	// also report the first problem of each stream through otel.Handle as
	// it happens (later ones are not: one broken upstream sends millions of
	// bad frames, and the handler runs on the caller's read). An error
	// the stream itself reports (Frame.Err) is not a decoding problem.
	Err() error
}

// StreamError is an error that the stream itself reported: an OpenAI error
// object ({"error": {"message", "type", "code"}}, also inside a chunk that
// carries choices and usage, as OpenRouter ends a failed stream), a Groq
// x_groq.error text, an Anthropic "error" event, or a Responses API "error"
// or "response.failed" event. The built-in decoders put a *StreamError in
// Frame.Err, beside whatever else the frame carries (its tokens and usage
// count too). Fields the provider did not send are empty; a numeric code
// (vLLM and OpenRouter send HTTP status codes) is given in decimal, so an
// OpenRouter {"code": 400} has ErrorType "400".
type StreamError struct {
	// Type is the provider's error type, e.g. "server_error" or
	// "overloaded_error".
	Type string
	// Code is the provider's error code, e.g. "rate_limit_exceeded" or "500".
	Code string
	// Message is the provider's human-readable message.
	Message string
}

// ErrorType returns the error's value for the OpenTelemetry error.type
// attribute (semconv.ErrorType reads it, so a Tracker's default error typing
// uses it): Type, else Code, else "stream_error". Provider types and codes
// are few, so the attribute keeps a low cardinality.
func (e *StreamError) ErrorType() string {
	switch {
	case e.Type != "":
		return e.Type
	case e.Code != "":
		return e.Code
	}
	return "stream_error"
}

// Error returns "llmmetrics: stream error (TYPE, code CODE): MESSAGE", leaving
// out the parts that are empty.
func (e *StreamError) Error() string {
	var b strings.Builder
	b.WriteString("llmmetrics: stream error")
	switch {
	case e.Type != "" && e.Code != "":
		fmt.Fprintf(&b, " (%s, code %s)", e.Type, e.Code)
	case e.Type != "":
		fmt.Fprintf(&b, " (%s)", e.Type)
	case e.Code != "":
		fmt.Fprintf(&b, " (code %s)", e.Code)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// DecoderOption configures a Decoder built by Protocol.NewDecoder,
// NewSSEDecoder or NewNDJSONDecoder.
type DecoderOption interface {
	applyDecoder(*decoderConfig)
}

type decoderConfig struct {
	maxFrame int
}

type decoderOptionFunc func(*decoderConfig)

func (f decoderOptionFunc) applyDecoder(c *decoderConfig) { f(c) }

func newDecoderConfig(opts []DecoderOption) decoderConfig {
	c := decoderConfig{maxFrame: defaultMaxFrameBytes}
	for _, o := range opts {
		if o != nil {
			o.applyDecoder(&c)
		}
	}
	return c
}

// WithMaxFrameBytes sets the largest frame, in bytes, that a decoder
// buffers: for SSE, the bytes of one event's data lines plus the line being
// read; for NDJSON, one line; for a JSON array, one element
// (1 MiB when not given; n ≤ 0 also means the
// default). A larger frame is the stream's ErrFrameTooLarge (see
// Decoder.Err) and stops decoding of that stream, so a decoder never holds
// much more than n bytes (about 4n in the worst case).
func WithMaxFrameBytes(n int) DecoderOption {
	return decoderOptionFunc(func(c *decoderConfig) {
		if n <= 0 {
			n = defaultMaxFrameBytes
		}
		c.maxFrame = n
	})
}

// problems keeps the first decoding problem of a stream for Decoder.Err and
// reports it, once per stream, through otel.Handle: a decoder embeds it.
// Later problems of the same stream are dropped, so a stream of
// malformed frames costs the caller's read no more than a stream of valid
// ones, whatever the error handler does (the default one writes to stderr).
type problems struct{ err error }

// report records a problem of the stream (an error wrapping
// ErrFrameTooLarge or ErrMalformedFrame).
func (p *problems) report(err error) {
	if p.err != nil {
		return
	}
	p.err = err
	otel.Handle(err)
}

// Err implements Decoder: the first problem reported, or nil.
func (p *problems) Err() error { return p.err }

// malformed returns the ErrMalformedFrame of a protocol's event whose data
// is not what the protocol sends, showing the start of the data. It costs
// one small allocation: the text is built only if someone reads it (a
// stream reports only its first problem).
func malformed(provider string, data []byte, why string) error {
	e := &malformedError{provider: provider, why: why, size: len(data)}
	e.n = copy(e.shown[:], data)
	return e
}

// malformedError is the error of malformed.
type malformedError struct {
	provider, why string
	size, n       int
	shown         [64]byte
}

func (e *malformedError) Error() string {
	return fmt.Sprintf("%v: %s event data %s (%d bytes: %q)", ErrMalformedFrame, e.provider, e.why, e.size, e.shown[:e.n])
}

func (e *malformedError) Unwrap() error { return ErrMalformedFrame }

// NewTextDecoder returns a Decoder for a plain-text stream: each non-empty
// Decode call (one Read of the body) is one frame carrying count(p) tokens
// (1 when count is nil; a negative count is taken as 0). count is called on
// the goroutine that calls Decode and must not retain p. Flush reports
// nothing, and Err is always nil: the decoder buffers nothing and every
// Read is a frame.
func NewTextDecoder(count func([]byte) int) Decoder {
	return &textDecoder{count: count}
}

type textDecoder struct {
	count func([]byte) int
}

// Decode implements Decoder.
func (t *textDecoder) Decode(p []byte, emit func(Frame)) {
	if len(p) == 0 {
		return
	}
	n := 1
	if t.count != nil {
		n = max(t.count(p), 0)
	}
	emit(Frame{Tokens: n})
}

// Flush implements Decoder; a text stream has no unterminated frame.
func (t *textDecoder) Flush(func(Frame)) {}

// Err implements Decoder; a text stream has no malformed frame.
func (t *textDecoder) Err() error { return nil }

// Stream errors: the rare path, where encoding/json is fine.

type errWhere int

const (
	errTopLevel       errWhere = iota // {"error": {...}} or {"error": "text"}
	errResponsesEvent                 // {"type":"error","code":..,"message":..} (or a nested "error")
	errResponseFailed                 // {"type":"response.failed","response":{"error":{...}}}
	errXGroq                          // {"x_groq":{"error":"text"}} (Groq)
)

func parseStreamError(data []byte, where errWhere) *StreamError {
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return &StreamError{Message: "unreadable error object"}
	}
	var v any
	switch where {
	case errTopLevel:
		v = m["error"]
		if v == nil {
			v = m // Anthropic-style {"type":"error", ...} without an error member
		}
	case errResponsesEvent:
		if e, ok := m["error"]; ok && e != nil {
			v = e
		} else {
			e := errorFromMap(m)
			e.Type = ""
			return e
		}
	case errResponseFailed:
		if r, ok := m["response"].(map[string]any); ok {
			v = r["error"]
		}
		if v == nil {
			return &StreamError{Message: "response failed"}
		}
	case errXGroq:
		if x, ok := m["x_groq"].(map[string]any); ok {
			v = x["error"]
		}
	}
	switch e := v.(type) {
	case map[string]any:
		return errorFromMap(e)
	case string:
		return &StreamError{Message: e}
	default:
		b, _ := json.Marshal(e)
		return &StreamError{Message: string(b)}
	}
}

func errorFromMap(m map[string]any) *StreamError {
	str := func(k string) string {
		switch v := m[k].(type) {
		case string:
			return v
		case json.Number:
			return v.String()
		case bool:
			return strconv.FormatBool(v)
		}
		return ""
	}
	return &StreamError{Type: str("type"), Code: str("code"), Message: str("message")}
}

// usageShape names the members of a provider's usage object: the counts at
// its top level, the reasoning count inside the object that breaks the
// output count down, and the cached count inside the one that breaks the
// input count down.
type usageShape struct {
	names      []string // top-level counts, read into indices 0 … len(names)−1 (< usReasoning)
	outDetails string   // the breakdown of the output count, e.g. "completion_tokens_details"
	reasoning  []string // the one reasoning count inside outDetails, read into index usReasoning
	inDetails  string   // the breakdown of the input count, e.g. "prompt_tokens_details"
	cached     []string // the one cached count inside inDetails, read into index usCached
}

// The indices of a usage object's counts read from its breakdowns (see
// usageShape); its top-level counts come first.
const (
	usReasoning = jsonscan.MaxInts - 2
	usCached    = jsonscan.MaxInts - 1
)

// walkUsage reads a usage object of shape s at i into u (reset first): the
// counts named at its top level, the reasoning count of its output details
// at usReasoning and the cached count of its input details at usCached.
// Any other value is skipped and leaves u empty. As everywhere, the last
// member of a name wins.
func walkUsage(j *jsonscan.Scanner, i, depth int, s *usageShape, u *jsonscan.Ints) (int, bool) {
	*u = jsonscan.Ints{}
	return j.Members(i, depth, func(k []byte, i int) (int, bool) {
		for n, name := range s.names {
			if string(k) == name {
				next, v, isInt, ok := j.Int(i, depth+1)
				u.Val[n], u.Has[n] = v, isInt
				return next, ok
			}
		}
		var d jsonscan.Ints
		switch {
		case s.outDetails != "" && string(k) == s.outDetails:
			i, ok := j.Ints(i, depth+1, s.reasoning, &d)
			u.Val[usReasoning], u.Has[usReasoning] = d.Val[0], d.Has[0]
			return i, ok
		case s.inDetails != "" && string(k) == s.inDetails:
			i, ok := j.Ints(i, depth+1, s.cached, &d)
			u.Val[usCached], u.Has[usCached] = d.Val[0], d.Has[0]
			return i, ok
		}
		return j.Skip(i, depth+1)
	})
}

// walkUsageHolder reads a value that may be an object with a "usage" member
// (the Responses API's "response", Anthropic's "message") into u.
func walkUsageHolder(j *jsonscan.Scanner, i, depth int, s *usageShape, u *jsonscan.Ints) (int, bool) {
	*u = jsonscan.Ints{}
	return j.Members(i, depth, func(k []byte, i int) (int, bool) {
		if string(k) == "usage" {
			return walkUsage(j, i, depth+1, s, u)
		}
		return j.Skip(i, depth+1)
	})
}
