package llmmetrics

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

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

// ErrMalformedFrame is the problem (wrapped) a decoder reports through Err
// and otel.Handle when a frame cannot be interpreted (the frame carries no
// tokens and decoding goes on) or is over the size limit (WithMaxFrameBytes:
// decoding of the stream then stops, so its memory stays bounded).
var ErrMalformedFrame = errors.New("llmmetrics: malformed frame")

// errFrameTooLarge is the ErrMalformedFrame of a frame over the limit.
var errFrameTooLarge = fmt.Errorf("%w: too large", ErrMalformedFrame)

// Frame is what a Decoder reports about one complete frame of a stream
// (one SSE event, one line, one Read). The zero Frame carries nothing.
type Frame struct {
	// Tokens is the number of output tokens the frame carries; 0 for a
	// role-only delta, a keep-alive, a usage-only chunk or [DONE]. Where the
	// server does not say, a frame with content counts 1 (per choice), so
	// the sum is a lower bound that the usage (HasUsage) corrects.
	Tokens int
	// Reasoning reports that the tokens are reasoning ("thinking") tokens;
	// a frame that carries answer tokens too is an answer frame. The first
	// answer frame marks Record.FirstOutput.
	Reasoning bool
	// HasUsage reports that the frame carried the server's usage: the
	// counts so far (the last one wins). OutputTokens includes the
	// reasoning tokens, of which ReasoningTokens is the reported count.
	HasUsage                  bool
	InputTokens, OutputTokens int
	ReasoningTokens           int
	// CachedInputTokens and CacheWriteInputTokens are how many of the
	// InputTokens the provider read from and wrote to its prompt cache.
	CachedInputTokens, CacheWriteInputTokens int
	// HasInput reports that the frame told the prompt's size before any
	// output count (Anthropic's message_start): InputTokens is set, the
	// output count is not.
	HasInput bool
	// Err is the error the stream itself reported (a *StreamError for the
	// built-in decoders); the frame's tokens and usage still count.
	Err error
	// Done marks the protocol's end-of-stream marker ([DONE],
	// message_stop, response.completed).
	Done bool
	// ResponseModel and ResponseID are the model that answered and the
	// answer's id, on the first frame that tells them (and on a frame that
	// tells a different value); "" on the others.
	ResponseModel, ResponseID string
	// FinishReasons are the reasons this frame gives for the end of a
	// choice (or of the answer), one per choice that ended in it, in the
	// provider's words. The slice belongs to the decoder: it is valid only
	// during the emit call.
	FinishReasons []string
	// ServerPrefill and ServerDecode are the server's own account of the
	// request, on its clock: the time it spent on the prompt and on
	// generating (llama.cpp's timings, Ollama's durations, Groq's usage
	// times; docs/decoders.md). 0 when the frame does not say.
	ServerPrefill, ServerDecode time.Duration
}

// Decoder finds frames in a byte stream. A Decoder is used by one stream
// (not safe for concurrent use).
type Decoder interface {
	// Decode is given every byte of the stream, in order, once; p must not
	// be modified or retained. It calls emit once per frame p completes,
	// in order, and never panics.
	Decode(p []byte, emit func(Frame))
	// Flush is called once at the end of the stream, for a final frame
	// that lacks its terminator.
	Flush(emit func(Frame))
	// Err returns the first problem found so far (wrapping
	// ErrMalformedFrame), as bufio.Scanner.Err does.
	// The built-in decoders also report it through otel.Handle, once per
	// stream. An error the stream reports (Frame.Err) is not a problem.
	Err() error
}

// StreamError is an error the stream itself reported: an OpenAI error
// object (also inside a chunk with choices), a Groq x_groq.error, an
// Anthropic "error" event, or a Responses "error" or "response.failed"
// event. Fields the provider did not send are empty; a numeric code is
// given in decimal.
type StreamError struct {
	// Type is the provider's error type, e.g. "server_error" or
	// "overloaded_error".
	Type string
	// Code is the provider's error code, e.g. "rate_limit_exceeded" or "500".
	Code string
	// Message is the provider's human-readable message.
	Message string
}

// ErrorType returns the error.type attribute's value: Type, else Code,
// else "stream_error".
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

// DecoderOption configures a built-in Decoder.
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

// WithMaxFrameBytes sets the largest frame a decoder buffers, in bytes (an
// SSE event, an NDJSON line, a JSON array element): 1 MiB when not given or
// n ≤ 0. A larger frame is an ErrMalformedFrame that stops decoding the
// stream.
// ProtocolJSON's decoder holds no frame (it scans the answer in constant
// memory), so the limit has nothing to bound there.
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
// ErrMalformedFrame).
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
// Decode call (one Read) is a frame of count(p) tokens (1 when count is
// nil). count must not retain p.
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

// Stream errors: the rare path, where encoding/json is fine. Each protocol
// finds its error object in its own file; these read what it found.

// eventObject decodes an event's data as a JSON object (numbers kept as
// json.Number).
func eventObject(data []byte) (map[string]any, bool) {
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil || m == nil {
		return nil, false
	}
	return m, true
}

// unreadableError is the StreamError of an error event whose JSON cannot be
// read.
func unreadableError() *StreamError { return &StreamError{Message: "unreadable error object"} }

// topLevelError reads the most common shape, {"error": {...}} or
// {"error": "text"}; an object without an "error" member is read as the
// error itself (Anthropic's {"type": "error", ...}).
func topLevelError(data []byte) *StreamError {
	m, ok := eventObject(data)
	if !ok {
		return unreadableError()
	}
	if v := m["error"]; v != nil {
		return errorFromValue(v)
	}
	return errorFromMap(m)
}

// errorFromValue reads an error value: an object's type, code and message,
// a string as the message, anything else as its JSON text.
func errorFromValue(v any) *StreamError {
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
