package llmmetrics

import (
	"math"

	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/llmmetrics/llmmetrics/internal/jsonscan"
)

// anthropicSpec is ProtocolAnthropic's row of the protocol table.
var anthropicSpec = protocolSpec{
	name:     "anthropic",
	title:    "Anthropic Messages",
	decoder:  func(opts []DecoderOption) Decoder { return newAnthropicDecoder(opts...) },
	provider: semconv.GenAIProviderNameAnthropic,
	paths:    []pathRule{{suffix: "/messages", op: opChat}},
	sse:      true,
	streams:  streamNo,
	sniff:    sniffRule{types: []string{"message_start"}},
}

// newAnthropicDecoder returns a Decoder for one Anthropic Messages SSE stream:
//
//   - message_start: HasInput with InputTokens = input_tokens plus
//     cache_creation_input_tokens plus cache_read_input_tokens (the whole
//     prompt: Anthropic's input_tokens excludes both cache counts),
//     CachedInputTokens = cache_read_input_tokens and CacheWriteInputTokens
//     = cache_creation_input_tokens; its usage.output_tokens is a
//     placeholder (usually 1) and is ignored, so a stream cut before
//     message_delta keeps its chunk count;
//   - content_block_delta: a text_delta, thinking_delta or input_json_delta
//     with non-empty text carries 1 token (a lower bound), reasoning for
//     thinking_delta (Frame.Reasoning); signature_delta carries none;
//   - message_delta: HasUsage with the cumulative usage.output_tokens, which
//     includes thinking (input and cache counts kept from message_start
//     unless the event sends its own), and ReasoningTokens from
//     usage.output_tokens_details.thinking_tokens (anthropic-sdk-go v1.46.0
//     and later, MessageDeltaUsage: "output_tokens remains the inclusive,
//     authoritative total"; 0 when absent, as in older streams);
//   - message_stop: Done; error: Err (with whatever else the event carries);
//     ping and the other events: nothing.
//
// Data that is not a JSON object is a malformed frame (ErrMalformedFrame, see
// Decoder.Err) and carries nothing. The options are WithMaxFrameBytes.
func newAnthropicDecoder(opts ...DecoderOption) Decoder {
	return newSSE("anthropic", &anthropicInterp{}, opts)
}

type anthropicInterp struct {
	j     jsonscan.Scanner
	cache jsonscan.Cache[anthropicFacts]
	// The counts so far: the whole prompt, the output, and the prompt's
	// cache-read and cache-creation parts.
	in, out, read, written int
	info                   answerInfo
}

func (a *anthropicInterp) interpret(_, data []byte) (Frame, error) {
	f, hit := a.cache.Walk(&a.j, data, walkAnthropic)
	fr, err := a.frame(f, data)
	if f != nil && !hit {
		a.answer(f, data, &fr)
	}
	return fr, err
}

// answer puts on fr who answered (message_start's message names the model
// and id) and why (message_delta's delta.stop_reason), see answerinfo.go.
func (a *anthropicInterp) answer(f *anthropicFacts, data []byte, fr *Frame) {
	a.info.note(fr, data, f.model, f.id)
	a.info.finishOne(fr, data, f.delta.stopReason)
}

func (a *anthropicInterp) release() { a.cache.Reset() }

// frame turns the facts of one event (nil: data is not a JSON object) into
// its Frame.
func (a *anthropicInterp) frame(f *anthropicFacts, data []byte) (Frame, error) {
	if f == nil {
		return Frame{}, malformed("anthropic", data, "is not a JSON object")
	}
	var fr Frame
	switch f.typ {
	case anthMessageStart:
		fr = a.input(&f.msgUsage)
	case anthContentBlockDelta:
		if f.delta.carries() {
			fr = Frame{Tokens: 1, Reasoning: f.delta.typ == anthThinkingDelta}
		}
	case anthMessageDelta:
		fr = a.usage(&f.usage)
	case anthMessageStop:
		fr = Frame{Done: true}
	}
	if f.err || f.typ == anthError {
		fr.Err = topLevelError(data)
	}
	return fr, nil
}

// The counts of an Anthropic usage object, by index in anthUsage
// (output_tokens_details.thinking_tokens is at usReasoning).
const (
	anthInput = iota
	anthOutput
	anthCacheCreation
	anthCacheRead
)

var anthUsage = shape(
	[]usageCount{count("input_tokens", anthInput), count("output_tokens", anthOutput),
		count("cache_creation_input_tokens", anthCacheCreation), count("cache_read_input_tokens", anthCacheRead)},
	nest("output_tokens_details", count("thinking_tokens", usReasoning)),
)

// prompt returns whether u has an input count, and the whole prompt: fresh,
// cache-creating and cache-read input tokens.
func prompt(u *jsonscan.Ints) (bool, int) {
	has := u.Has[anthInput] || u.Has[anthCacheCreation] || u.Has[anthCacheRead]
	return has, satAdd(satAdd(u.Get(anthInput), u.Get(anthCacheCreation)), u.Get(anthCacheRead))
}

// takePrompt keeps the prompt counts of u, when it has one: the whole
// prompt and its cache-read and cache-creation parts (input_tokens excludes
// both: "total_input_tokens = cache_read_input_tokens +
// cache_creation_input_tokens + input_tokens", Anthropic's prompt caching
// guide, Tracking cache performance).
func (a *anthropicInterp) takePrompt(u *jsonscan.Ints) bool {
	has, in := prompt(u)
	if has {
		a.in, a.read, a.written = in, u.Get(anthCacheRead), u.Get(anthCacheCreation)
	}
	return has
}

// input takes the prompt size of message_start (its output count is a
// placeholder, not a count).
func (a *anthropicInterp) input(u *jsonscan.Ints) Frame {
	if !a.takePrompt(u) {
		return Frame{}
	}
	return Frame{HasInput: true, InputTokens: a.in, CachedInputTokens: a.read, CacheWriteInputTokens: a.written}
}

// usage takes message_delta's cumulative usage; the prompt counts are
// message_start's unless it sends its own.
func (a *anthropicInterp) usage(u *jsonscan.Ints) Frame {
	hasIn := a.takePrompt(u)
	if !hasIn && !u.Has[anthOutput] {
		return Frame{}
	}
	if u.Has[anthOutput] {
		a.out = u.Val[anthOutput]
	}
	out := a.out
	if r := u.Get(usReasoning); r > out {
		out = satAdd(out, r) // a thinking count above output_tokens cannot be inside it
	}
	return Frame{HasUsage: true, InputTokens: a.in, OutputTokens: out, ReasoningTokens: u.Get(usReasoning),
		CachedInputTokens: a.read, CacheWriteInputTokens: a.written}
}

func satAdd(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}

// anthKind classifies the "type" of an event or of a delta.
type anthKind uint8

const (
	anthNone anthKind = iota // no "type", or not a string
	anthOther
	anthError
	anthMessageStart
	anthContentBlockDelta
	anthMessageDelta
	anthMessageStop
	anthTextDelta
	anthThinkingDelta
	anthInputJSONDelta
)

func classifyAnthropic(t []byte) anthKind {
	switch string(t) {
	case "error":
		return anthError
	case "message_start":
		return anthMessageStart
	case "content_block_delta":
		return anthContentBlockDelta
	case "message_delta":
		return anthMessageDelta
	case "message_stop":
		return anthMessageStop
	case "text_delta":
		return anthTextDelta
	case "thinking_delta":
		return anthThinkingDelta
	case "input_json_delta":
		return anthInputJSONDelta
	}
	return anthOther
}

// anthropicFacts is what one event's JSON says. Where a member appears
// twice, the last one counts (as with encoding/json into a map).
type anthropicFacts struct {
	typ      anthKind      // top-level "type"
	err      bool          // top-level "error" is present and not null
	delta    anthDelta     // top-level "delta" object (content_block_delta, message_delta)
	usage    jsonscan.Ints // top-level "usage" (message_delta; anthUsage)
	msgUsage jsonscan.Ints // "message": {"usage": ...} (message_start)
	model    strSpan       // "message": {"model": ...} (message_start)
	id       strSpan       // "message": {"id": ...}
}

// anthDelta is a content_block_delta's delta: its type, and which of its
// text members are non-empty strings.
type anthDelta struct {
	typ                         anthKind
	text, thinking, partialJSON bool
	stopReason                  strSpan // message_delta's stop_reason
}

// carries reports whether the delta's own text member (the one its type
// names) is non-empty.
func (d anthDelta) carries() bool {
	switch d.typ {
	case anthTextDelta:
		return d.text
	case anthThinkingDelta:
		return d.thinking
	case anthInputJSONDelta:
		return d.partialJSON
	}
	return false
}

func walkAnthropic(j *jsonscan.Scanner, i int, f *anthropicFacts) (int, bool) {
	return j.Members(i, 0, func(k []byte, i int) (next int, ok bool) {
		switch string(k) {
		case "type":
			next, f.typ, ok = anthropicType(j, i, 1)
			return next, ok
		case "error":
			f.err = j.At(i) != 'n'
		case "delta":
			f.delta = anthDelta{}
			return j.Members(i, 1, func(k []byte, i int) (int, bool) { return walkAnthropicDelta(j, k, i, 2, &f.delta) })
		case "usage":
			return walkUsage(j, i, 1, anthUsage, &f.usage)
		case "message":
			return walkAnthropicMessage(j, i, 1, f)
		}
		return j.Skip(i, 1)
	})
}

// walkAnthropicMessage reads message_start's "message" at i: its usage,
// model and id.
func walkAnthropicMessage(j *jsonscan.Scanner, i, depth int, f *anthropicFacts) (int, bool) {
	f.msgUsage, f.model, f.id = jsonscan.Ints{}, strSpan{}, strSpan{}
	return j.Members(i, depth, func(k []byte, i int) (next int, ok bool) {
		switch string(k) {
		case "usage":
			return walkUsage(j, i, depth+1, anthUsage, &f.msgUsage)
		case "model":
			next, f.model, ok = readStr(j, i, depth+1)
		case "id":
			next, f.id, ok = readStr(j, i, depth+1)
		default:
			next, ok = j.Skip(i, depth+1)
		}
		return next, ok
	})
}

func anthropicType(j *jsonscan.Scanner, i, depth int) (int, anthKind, bool) {
	i, t, isStr, ok := j.StringValue(i, depth)
	if !isStr {
		return i, anthNone, ok
	}
	return i, classifyAnthropic(t), ok
}

// walkAnthropicDelta reads one member (named k, its value at i and depth)
// of a content_block_delta's delta into d.
func walkAnthropicDelta(j *jsonscan.Scanner, k []byte, i, depth int, d *anthDelta) (next int, ok bool) {
	switch string(k) {
	case "type":
		next, d.typ, ok = anthropicType(j, i, depth)
	case "text":
		next, d.text, ok = j.NonEmptyString(i, depth)
	case "thinking":
		next, d.thinking, ok = j.NonEmptyString(i, depth)
	case "partial_json":
		next, d.partialJSON, ok = j.NonEmptyString(i, depth)
	case "stop_reason":
		next, d.stopReason, ok = readStr(j, i, depth)
	default:
		next, ok = j.Skip(i, depth)
	}
	return next, ok
}
