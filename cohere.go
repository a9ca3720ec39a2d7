package llmmetrics

import (
	"bytes"

	"github.com/llmmetrics/llmmetrics/internal/jsonscan"
	"github.com/llmmetrics/llmmetrics/internal/jsonstream"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// This file holds Cohere's v2 Chat protocol. Shapes: cohere-ai/cohere-go
// v2.9 (v_2.go: V2ChatStreamResponse and its events, ChatFinishReason,
// Usage, UsageTokens, UsageBilledUnits, V2ChatResponse) and Cohere's
// streaming guide (docs.cohere.com/v2/docs/streaming); the recorded
// streams are named in the headers of testdata/sse/cohere_*.sse.

// cohereSpec is ProtocolCohere's row of the protocol table.
var cohereSpec = protocolSpec{
	name:     "cohere",
	title:    "Cohere v2 Chat",
	decoder:  func(opts []DecoderOption) Decoder { return newCohereDecoder(opts...) },
	provider: semconv.GenAIProviderNameCohere,
	paths:    []pathRule{{suffix: "/v2/chat", op: opChat}},
	sse:      true,
	streams:  streamNo,
	sniff:    sniffRule{types: []string{"message-start"}},
	answer:   &cohereAnswer,
}

// cohereAnswer reads the usage of a non-streaming answer (V2ChatResponse):
// the same Usage object as message-end's, at the top level.
var cohereAnswer = answerRule{
	fields: []jsonstream.Field{
		{Path: "usage"},
		{Path: "usage.tokens"}, {Path: "usage.tokens.input_tokens"}, {Path: "usage.tokens.output_tokens"},
		{Path: "usage.billed_units"}, {Path: "usage.billed_units.input_tokens"}, {Path: "usage.billed_units.output_tokens"},
		{Path: "usage.cached_tokens"},
	},
	read: func(a answerValues) usage {
		var u jsonscan.Ints
		for k, idx := range cohereAnswerCounts {
			if idx >= 0 {
				u.Has[idx], u.Val[idx] = a.has(k), a.get(k)
			}
		}
		var fr Frame
		cohereUsageFrame(&u, &fr)
		return usage{has: fr.HasUsage, in: fr.InputTokens, out: fr.OutputTokens, cached: fr.CachedInputTokens}
	},
}

// cohereAnswerCounts maps cohereAnswer's fields to the counts of
// cohereUsage (-1: an object, not a count).
var cohereAnswerCounts = [...]int{-1, -1, cohTokensIn, cohTokensOut, -1, cohBilledIn, cohBilledOut, cohCached}

// newCohereDecoder returns a Decoder for one Cohere v2 Chat SSE stream (POST
// /v2/chat with "stream": true). Each event's data is a JSON object whose
// "type" names it:
//
//   - content-start and content-delta: delta.message.content.text, when a
//     non-empty string, carries 1 answer token, delta.message.content.thinking
//     1 reasoning token (a lower bound, as for every protocol that does not
//     count per event);
//   - tool-plan-delta: a non-empty delta.message.tool_plan carries 1
//     reasoning token (the plan is "a chain-of-thought style reflection"
//     the model writes before its tool calls);
//   - tool-call-start and tool-call-delta: a non-empty
//     delta.message.tool_calls.function.name or .arguments carries 1 answer
//     token;
//   - message-end: Done; HasUsage from delta.usage: InputTokens and
//     OutputTokens from usage.tokens (the tokens the model read and wrote),
//     else from usage.billed_units (what is billed: the same output, an
//     input that may leave out the template); CachedInputTokens from
//     usage.cached_tokens ("prompt tokens that hit the inference cache";
//     not believed above the input). A finish_reason of ERROR or TIMEOUT,
//     or a non-empty delta.error, is Err, a *StreamError with Type the
//     finish reason and Message the error text;
//   - message-start, content-end, tool-call-end, citation-start,
//     citation-end, debug and any other event: nothing ("data: [DONE]",
//     which a gateway may add, is Done).
//
// Counts must be non-negative JSON integers to be read. Data that is not a
// JSON object is a malformed frame (ErrMalformedFrame, see Decoder.Err) and
// carries nothing. Decoding allocates nothing per event once the decoder's
// buffers have grown to the largest event. The options are
// WithMaxFrameBytes.
func newCohereDecoder(opts ...DecoderOption) Decoder {
	return newSSE("cohere", &cohereInterp{}, opts)
}

type cohereInterp struct {
	j     jsonscan.Scanner
	cache jsonscan.Cache[cohereFacts]
	info  answerInfo
}

func (c *cohereInterp) interpret(_, data []byte) (Frame, error) {
	f, hit := c.cache.Walk(&c.j, data, walkCohere)
	fr, err := c.frame(f, data)
	if f != nil && !hit {
		c.answer(f, data, &fr)
	}
	return fr, err
}

// answer puts on fr the answer's id (message-start's, also on message-end)
// and its finish reason (message-end's delta.finish_reason); Cohere's stream
// names no model. See answerinfo.go.
func (c *cohereInterp) answer(f *cohereFacts, data []byte, fr *Frame) {
	c.info.note(fr, data, strSpan{}, f.id)
	c.info.finishOne(fr, data, f.finish)
}

func (c *cohereInterp) release() { c.cache.Reset() }

// frame turns the facts of one event (nil: data is not a JSON object) into
// its Frame.
func (c *cohereInterp) frame(f *cohereFacts, data []byte) (Frame, error) {
	if f == nil {
		if string(bytes.TrimSpace(data)) == "[DONE]" {
			return Frame{Done: true}, nil
		}
		return Frame{}, malformed("cohere", data, "is not a JSON object")
	}
	var fr Frame
	if answer, reasoning := f.carries(); answer || reasoning {
		fr.Tokens, fr.Reasoning = 1, !answer
	}
	if f.typ == cohereMessageEnd {
		fr.Done = true
		cohereUsageFrame(&f.usage, &fr)
	}
	if f.failed || f.errText {
		fr.Err = cohereError(data)
	}
	return fr, nil
}

// The counts of a Cohere usage object, by index in cohereUsage.
const (
	cohTokensIn = iota
	cohTokensOut
	cohBilledIn
	cohBilledOut
	cohCached
)

// cohereUsage is Cohere's Usage: two count objects and the cached count.
var cohereUsage = shape(
	[]usageCount{count("cached_tokens", cohCached)},
	nest("tokens", count("input_tokens", cohTokensIn), count("output_tokens", cohTokensOut)),
	nest("billed_units", count("input_tokens", cohBilledIn), count("output_tokens", cohBilledOut)),
)

// cohereUsageFrame puts a usage object's counts into fr: the model's
// token counts where given, else the billed units.
func cohereUsageFrame(u *jsonscan.Ints, fr *Frame) {
	in, out := cohTokensIn, cohTokensOut
	if !u.Has[cohTokensIn] && !u.Has[cohTokensOut] {
		in, out = cohBilledIn, cohBilledOut
	}
	if !u.Has[in] && !u.Has[out] {
		return
	}
	fr.HasUsage, fr.InputTokens, fr.OutputTokens = true, u.Get(in), u.Get(out)
	if c := u.Get(cohCached); c <= fr.InputTokens {
		fr.CachedInputTokens = c
	}
}

// cohereError reads the error of a message-end event, on the rare path:
// its finish reason as the type, delta.error as the message.
func cohereError(data []byte) *StreamError {
	m, ok := eventObject(data)
	if !ok {
		return unreadableError()
	}
	e := &StreamError{}
	if d, ok := m["delta"].(map[string]any); ok {
		if r, ok := d["finish_reason"].(string); ok && (r == "ERROR" || r == "TIMEOUT") {
			e.Type = r
		}
		e.Message, _ = d["error"].(string)
	}
	return e
}

// cohereKind classifies the "type" of an event.
type cohereKind uint8

const (
	cohereOther cohereKind = iota
	cohereMessageEnd
)

// cohereFacts is what one event's JSON says. Where a member appears twice,
// the last one counts (as with encoding/json into a map).
type cohereFacts struct {
	typ      cohereKind
	text     bool          // delta.message.content.text is a non-empty string
	thinking bool          // delta.message.content.thinking likewise
	toolPlan bool          // delta.message.tool_plan likewise
	fnName   bool          // delta.message.tool_calls.function.name likewise
	fnArgs   bool          // delta.message.tool_calls.function.arguments likewise
	failed   bool          // delta.finish_reason is ERROR or TIMEOUT
	errText  bool          // delta.error is a non-empty string
	usage    jsonscan.Ints // delta.usage (cohereUsage)
	id       strSpan       // top-level "id"
	finish   strSpan       // delta.finish_reason
}

// carries reports whether the event carries answer and reasoning tokens.
func (f *cohereFacts) carries() (answer, reasoning bool) {
	return f.text || f.fnName || f.fnArgs, f.thinking || f.toolPlan
}

// walkCohere reads the top-level object of a Cohere event at i.
func walkCohere(j *jsonscan.Scanner, i int, f *cohereFacts) (int, bool) {
	return j.Members(i, 0, func(k []byte, i int) (next int, ok bool) {
		switch string(k) {
		case "type":
			var t []byte
			var isStr bool
			next, t, isStr, ok = j.StringValue(i, 1)
			f.typ = cohereOther
			if isStr && string(t) == "message-end" {
				f.typ = cohereMessageEnd
			}
			return next, ok
		case "delta":
			*f = cohereFacts{typ: f.typ, id: f.id}
			return j.Members(i, 1, func(k []byte, i int) (int, bool) { return walkCohereDelta(j, k, i, 2, f) })
		case "id":
			next, f.id, ok = readStr(j, i, 1)
			return next, ok
		}
		return j.Skip(i, 1)
	})
}

// walkCohereDelta reads one member (named k, its value at i and depth) of
// an event's delta.
func walkCohereDelta(j *jsonscan.Scanner, k []byte, i, depth int, f *cohereFacts) (next int, ok bool) {
	switch string(k) {
	case "message":
		f.text, f.thinking, f.toolPlan, f.fnName, f.fnArgs = false, false, false, false, false
		return j.Members(i, depth, func(k []byte, i int) (int, bool) { return walkCohereMessage(j, k, i, depth+1, f) })
	case "finish_reason":
		next, f.finish, ok = readStr(j, i, depth)
		f.failed = false
		if r := f.finish; ok && r.end > r.start {
			t := j.Text(int(r.start), int(r.end), r.esc)
			f.failed = string(t) == "ERROR" || string(t) == "TIMEOUT"
		}
		return next, ok
	case "error":
		var t []byte
		var isStr bool
		next, t, isStr, ok = j.StringValue(i, depth)
		f.errText = isStr && len(t) > 0
		return next, ok
	case "usage":
		return walkUsage(j, i, depth, cohereUsage, &f.usage)
	}
	return j.Skip(i, depth)
}

// walkCohereMessage reads one member of a delta's message: its content
// (an object in a delta; an array, skipped, in message-start), tool plan
// and tool call.
func walkCohereMessage(j *jsonscan.Scanner, k []byte, i, depth int, f *cohereFacts) (next int, ok bool) {
	switch string(k) {
	case "content":
		f.text, f.thinking = false, false
		return j.Members(i, depth, func(k []byte, i int) (next int, ok bool) {
			switch string(k) {
			case "text":
				next, f.text, ok = j.NonEmptyString(i, depth+1)
			case "thinking":
				next, f.thinking, ok = j.NonEmptyString(i, depth+1)
			default:
				next, ok = j.Skip(i, depth+1)
			}
			return next, ok
		})
	case "tool_plan":
		next, f.toolPlan, ok = j.NonEmptyString(i, depth)
		return next, ok
	case "tool_calls":
		f.fnName, f.fnArgs = false, false
		return j.Members(i, depth, func(k []byte, i int) (int, bool) {
			if string(k) != "function" {
				return j.Skip(i, depth+1)
			}
			f.fnName, f.fnArgs = false, false
			return j.Members(i, depth+1, func(k []byte, i int) (next int, ok bool) {
				switch string(k) {
				case "name":
					next, f.fnName, ok = j.NonEmptyString(i, depth+2)
				case "arguments":
					next, f.fnArgs, ok = j.NonEmptyString(i, depth+2)
				default:
					next, ok = j.Skip(i, depth+2)
				}
				return next, ok
			})
		})
	}
	return j.Skip(i, depth)
}
