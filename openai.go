package llmmetrics

import (
	"bytes"

	"github.com/llmmetrics/llmmetrics/internal/jsonscan"
)

// NewOpenAIDecoder returns a Decoder for one OpenAI-compatible SSE stream.
// It understands:
//
//   - chat completions chunks: a choice whose delta has a non-empty content,
//     reasoning_content, reasoning or refusal string, a non-empty tool_calls
//     array or a non-empty function_call object carries tokens; role-only and
//     empty deltas do not. A chunk with several choices counts 1 token per
//     choice that carries tokens;
//   - legacy completions chunks: a choice with a non-empty text carries tokens;
//   - the final usage chunk of stream_options.include_usage (top-level
//     "usage": {"prompt_tokens", "completion_tokens"}, empty choices): HasUsage;
//   - vLLM's continuous_usage_stats, where every chunk carries the cumulative
//     usage: from the second chunk with both choices and usage on, Tokens is
//     completion_tokens minus the previous chunk's completion_tokens, the exact
//     count per chunk;
//   - the Responses API event stream: every "response.*.delta" event with a
//     non-empty delta string (response.output_text.delta,
//     response.reasoning_text.delta, response.reasoning_summary_text.delta,
//     response.refusal.delta, response.function_call_arguments.delta, …)
//     carries 1 token; response.completed and response.incomplete are Done and
//     carry the usage (response.usage.input_tokens/output_tokens);
//     response.failed and error events set Err;
//   - "data: [DONE]" (Done) and an error object ({"error": {...}}: Err set, no
//     tokens).
//
// With no usage from the server, the sum of Tokens is the number of
// token-carrying chunks (per choice): a lower bound of the output tokens.
// Decoding allocates nothing per event once the decoder's buffers have grown
// to the largest event.
// Usage counts must be non-negative JSON integers to be read. Data that is
// not a JSON object is a malformed frame (ErrMalformedFrame, see
// Decoder.Err) and carries nothing. The options are WithMaxFrameBytes.
func NewOpenAIDecoder(opts ...DecoderOption) Decoder {
	o := &openAIInterp{}
	return newSSE("openai", o, opts)
}

type openAIInterp struct {
	j     jsonscan.Scanner
	cache jsonscan.Cache[openAIFacts]
	// continuous is set once a chunk carried both choices and usage
	// (vLLM continuous_usage_stats); prevOut is the last completion_tokens.
	continuous bool
	prevOut    int
}

func (o *openAIInterp) interpret(_, data []byte) (Frame, error) {
	f, _ := o.cache.Walk(&o.j, data, walkOpenAI)
	return o.frame(f, data)
}

func (o *openAIInterp) release() { o.cache.Reset() }

// frame turns the facts of one event (nil: data is not a JSON object) into
// its Frame.
func (o *openAIInterp) frame(f *openAIFacts, data []byte) (Frame, error) {
	switch {
	case f == nil:
		if string(bytes.TrimSpace(data)) == "[DONE]" {
			return Frame{Done: true}, nil
		}
		return Frame{}, malformed("openai", data, "is not a JSON object")
	case f.err:
		return Frame{Err: parseStreamError(data, errTopLevel)}, nil
	case f.typ == oaiError:
		return Frame{Err: parseStreamError(data, errResponsesEvent)}, nil
	case f.typ == oaiRespFailed:
		fr := Frame{Err: parseStreamError(data, errResponseFailed)}
		fr.HasUsage, fr.InputTokens, fr.OutputTokens = inOut(&f.respUsage)
		return fr, nil
	case f.typ == oaiRespDelta:
		if f.deltaStr {
			return Frame{Tokens: 1}, nil
		}
		return Frame{}, nil
	case f.typ == oaiRespCompleted || f.typ == oaiRespIncomplete:
		fr := Frame{Done: true}
		fr.HasUsage, fr.InputTokens, fr.OutputTokens = inOut(&f.respUsage)
		return fr, nil
	case f.typ == oaiRespOther:
		return Frame{}, nil
	}
	fr := Frame{Tokens: f.carrying}
	fr.HasUsage, fr.InputTokens, fr.OutputTokens = inOut(&f.usage)
	if fr.HasUsage {
		if f.choices > 0 {
			if o.continuous {
				fr.Tokens = max(0, fr.OutputTokens-o.prevOut)
			}
			o.continuous = true
		}
		o.prevOut = fr.OutputTokens
	}
	return fr, nil
}

// inOut reads a usage object read with oaiUsageNames or oaiRespUsageNames:
// whether either count is present, and both (0 when absent).
func inOut(u *jsonscan.Ints) (bool, int, int) {
	return u.Has[0] || u.Has[1], u.Get(0), u.Get(1)
}

// The usage objects, input count first: chat completions' top-level
// "usage" and the Responses API's "response.usage".
var (
	oaiUsageNames     = []string{"prompt_tokens", "completion_tokens"}
	oaiRespUsageNames = []string{"input_tokens", "output_tokens"}
)

// oaiKind classifies the top-level "type" of an event (Responses API).
type oaiKind uint8

const (
	oaiNone           oaiKind = iota // no "type", or not a string
	oaiOther                         // a type this decoder does not look at
	oaiError                         // "error"
	oaiRespDelta                     // "response.….delta"
	oaiRespCompleted                 // "response.completed"
	oaiRespIncomplete                // "response.incomplete"
	oaiRespFailed                    // "response.failed"
	oaiRespOther                     // any other "response.…"
)

func classifyOpenAI(t []byte) oaiKind {
	switch string(t) {
	case "error":
		return oaiError
	case "response.completed":
		return oaiRespCompleted
	case "response.incomplete":
		return oaiRespIncomplete
	case "response.failed":
		return oaiRespFailed
	}
	if bytes.HasPrefix(t, []byte("response.")) {
		if bytes.HasSuffix(t, []byte(".delta")) && len(t) >= len("response.")+len(".delta") {
			return oaiRespDelta
		}
		return oaiRespOther
	}
	return oaiOther
}

// openAIFacts is what one event's JSON says. Where a member appears twice,
// the last one counts (as with encoding/json into a map).
type openAIFacts struct {
	typ       oaiKind       // top-level "type"
	choices   int           // length of the top-level "choices" array (0 if not an array)
	carrying  int           // choices that carry tokens
	usage     jsonscan.Ints // top-level "usage" (oaiUsageNames)
	respUsage jsonscan.Ints // "response": {"usage": ...} (oaiRespUsageNames)
	err       bool          // top-level "error" is present and not null
	deltaStr  bool          // top-level "delta" is a non-empty string (Responses)
}

// walkOpenAI reads the top-level object of an OpenAI event at i.
func walkOpenAI(j *jsonscan.Scanner, i int, f *openAIFacts) (int, bool) {
	i, more, ok := j.OpenObject(i, 0)
	for ok && more {
		var k []byte
		if k, i, ok = j.Key(i); !ok {
			break
		}
		switch string(k) {
		case "choices":
			i, ok = walkChoices(j, i, 1, f)
		case "usage":
			i, ok = j.Ints(i, 1, oaiUsageNames, &f.usage)
		case "error":
			f.err = j.At(i) != 'n'
			i, ok = j.Skip(i, 1)
		case "type":
			var t []byte
			var isStr bool
			i, t, isStr, ok = j.StringValue(i, 1)
			f.typ = oaiNone
			if isStr {
				f.typ = classifyOpenAI(t)
			}
		case "delta":
			i, f.deltaStr, ok = j.NonEmptyString(i, 1)
		case "response":
			i, ok = walkUsageHolder(j, i, 1, oaiRespUsageNames, &f.respUsage)
		default:
			i, ok = j.Skip(i, 1)
		}
		if ok {
			i, more, ok = j.NextMember(i)
		}
	}
	return i, ok
}

// walkChoices reads the "choices" value at i into f.choices and f.carrying.
func walkChoices(j *jsonscan.Scanner, i, depth int, f *openAIFacts) (int, bool) {
	f.choices, f.carrying = 0, 0
	if j.At(i) != '[' {
		return j.Skip(i, depth)
	}
	i, more, ok := j.OpenArray(i, depth)
	for ok && more {
		f.choices++
		if j.At(i) == '{' {
			var carries bool
			if i, carries, ok = walkChoice(j, i, depth+1); carries {
				f.carrying++
			}
		} else {
			i, ok = j.Skip(i, depth+1)
		}
		if ok {
			i, more, ok = j.NextElement(i)
		}
	}
	return i, ok
}

// walkChoice reads one choice object: it carries tokens when its "delta"
// object has a member that carries output, or its "text" (legacy
// completions) is a non-empty string.
func walkChoice(j *jsonscan.Scanner, i, depth int) (next int, carries, ok bool) {
	var delta, text bool
	i, more, ok := j.OpenObject(i, depth)
	for ok && more {
		var k []byte
		if k, i, ok = j.Key(i); !ok {
			break
		}
		switch string(k) {
		case "delta":
			delta = false
			if j.At(i) == '{' {
				i, delta, ok = walkChatDelta(j, i, depth+1)
			} else {
				i, ok = j.Skip(i, depth+1)
			}
		case "text":
			i, text, ok = j.NonEmptyString(i, depth+1)
		default:
			i, ok = j.Skip(i, depth+1)
		}
		if ok {
			i, more, ok = j.NextMember(i)
		}
	}
	return i, text || delta, ok
}

// Chat delta members that carry output, one bit each (the last member of a
// name decides its bit).
const (
	bitContent = 1 << iota
	bitReasoningContent
	bitReasoning
	bitRefusal
	bitToolCalls    // non-empty array
	bitFunctionCall // non-empty object
)

// walkChatDelta reads a chat delta object at i: does a member carry output?
func walkChatDelta(j *jsonscan.Scanner, i, depth int) (next int, carries, ok bool) {
	var bits uint8
	i, more, ok := j.OpenObject(i, depth)
	for ok && more {
		var k []byte
		if k, i, ok = j.Key(i); !ok {
			break
		}
		var bit uint8
		var yes bool
		switch string(k) {
		case "content":
			bit = bitContent
			i, yes, ok = j.NonEmptyString(i, depth+1)
		case "reasoning_content":
			bit = bitReasoningContent
			i, yes, ok = j.NonEmptyString(i, depth+1)
		case "reasoning":
			bit = bitReasoning
			i, yes, ok = j.NonEmptyString(i, depth+1)
		case "refusal":
			bit = bitRefusal
			i, yes, ok = j.NonEmptyString(i, depth+1)
		case "tool_calls":
			bit = bitToolCalls
			i, yes, ok = j.NonEmptyArray(i, depth+1)
		case "function_call":
			bit = bitFunctionCall
			i, yes, ok = j.NonEmptyObject(i, depth+1)
		default:
			i, ok = j.Skip(i, depth+1)
		}
		if yes {
			bits |= bit
		} else {
			bits &^= bit
		}
		if ok {
			i, more, ok = j.NextMember(i)
		}
	}
	return i, bits != 0, ok
}
