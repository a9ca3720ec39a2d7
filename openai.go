package llmmetrics

import (
	"bytes"
	"strings"

	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/llmmetrics/llmmetrics/internal/jsonscan"
)

// openAISpec is ProtocolOpenAI's row of the protocol table: the
// OpenAI-compatible APIs of OpenAI, Azure OpenAI, vLLM, SGLang, TGI,
// llama.cpp, Groq, xAI, DeepSeek, Mistral, OpenRouter and others.
var openAISpec = protocolSpec{
	name:     "openai",
	title:    "OpenAI-compatible",
	decoder:  func(opts []DecoderOption) Decoder { return newOpenAIDecoder(opts...) },
	provider: semconv.GenAIProviderNameOpenAI, // the convention's advice for OpenAI-compatible servers
	paths: []pathRule{
		{suffix: "/chat/completions", op: opChat, streamOptions: true},
		{suffix: "/completions", op: opTextCompletion, streamOptions: true},
		{suffix: "/responses", op: opChat},
		{suffix: "/embeddings", op: opEmbeddings},
	},
	pathModel: azureDeployment,
	sse:       true,
	streams:   streamNo,
	sniff:     sniffRule{members: []string{"choices"}, typePrefix: "response.", done: true},
}

// azureDeployment reads the deployment name of an Azure OpenAI path,
// /openai/deployments/{deployment}/chat/completions, as the model.
func azureDeployment(path string) string {
	if i := strings.Index(path, "/deployments/"); i >= 0 {
		m := path[i+len("/deployments/"):]
		if j := strings.IndexByte(m, '/'); j > 0 {
			return m[:j]
		}
	}
	return ""
}

// newOpenAIDecoder returns a Decoder for one OpenAI-compatible SSE stream.
// It understands:
//
//   - chat completions chunks: a choice whose delta has a non-empty content,
//     reasoning_content, reasoning or refusal string, a non-empty tool_calls
//     array or a non-empty function_call object carries tokens; role-only and
//     empty deltas do not. A chunk with several choices counts 1 token per
//     choice that carries tokens;
//   - content given as an array of typed parts (Mistral's Magistral models):
//     a {"type": "text", "text": …} part with non-empty text carries answer
//     tokens, a {"type": "thinking", "thinking": [{"type": "text", "text":
//     …}, …]} part with a non-empty inner text carries reasoning tokens (a
//     part without "type" is read by the member it has, as Mistral's types
//     make "type" optional); other parts (images, references), empty texts
//     and an empty array carry nothing;
//   - reasoning: reasoning_content (DeepSeek, xAI), reasoning (vLLM, Groq),
//     thinking parts and OpenRouter's reasoning_details (a detail of type
//     reasoning.text with a non-empty text, or reasoning.summary with a
//     non-empty summary; reasoning.encrypted carries opaque data and no
//     token, see docs/decoders.md) are reasoning tokens (Frame.Reasoning
//     when the chunk carries no answer token); content, refusal, tool calls
//     and text parts are answer tokens;
//   - legacy completions chunks: a choice with a non-empty text carries tokens;
//   - usage (top-level "usage": {"prompt_tokens", "completion_tokens"}, or
//     Groq's "x_groq": {"usage": …} when there is no top-level usage): HasUsage,
//     on whichever chunk carries it, the last one winning (xAI repeats the
//     cumulative usage on every chunk). The reasoning count is
//     completion_tokens_details.reasoning_tokens; OpenAI, Azure, DeepSeek and
//     OpenRouter count it inside completion_tokens, xAI outside, so it is
//     added to OutputTokens exactly when total_tokens = prompt_tokens +
//     completion_tokens + reasoning_tokens. CachedInputTokens is
//     prompt_tokens_details.cached_tokens or DeepSeek's
//     prompt_cache_hit_tokens (part of prompt_tokens; the Responses API's
//     input_tokens_details.cached_tokens likewise);
//   - usage on the chunks that carry content (vLLM's continuous_usage_stats,
//     xAI, or a proxy that puts a placeholder usage with completion_tokens 0
//     on every chunk): a chunk whose choices carry content always carries
//     tokens, and a chunk whose choices carry none (a role-only or empty
//     finish delta) never does, whatever its usage says; the usage only sets
//     N (HasUsage). From the second chunk with both choices and usage on, a
//     chunk that carries content counts the growth of completion_tokens
//     beyond the tokens of the frames before it when that is more than 1 per
//     carrying choice, so vLLM's growing counts give the exact count per
//     chunk and a placeholder 0 gives 1;
//   - the Responses API event stream: every "response.*.delta" event with a
//     non-empty delta string (response.output_text.delta,
//     response.refusal.delta, response.function_call_arguments.delta, …)
//     carries 1 token, reasoning for response.reasoning_text.delta and
//     response.reasoning_summary_text.delta; response.completed and
//     response.incomplete are Done and carry the usage
//     (response.usage.input_tokens/output_tokens, reasoning count
//     output_tokens_details.reasoning_tokens, inside output_tokens);
//     response.failed and error events set Err;
//   - "data: [DONE]" (Done) and errors: an error object ({"error": {...}},
//     also beside choices and usage, as OpenRouter ends a failed stream) or a
//     Groq x_groq.error text sets Err, and whatever else the chunk carries
//     (tokens, usage) is reported in the same frame.
//
// With no usage from the server, the sum of Tokens is the number of
// token-carrying chunks (per choice): a lower bound of the output tokens.
// Decoding allocates nothing per event once the decoder's buffers have grown
// to the largest event.
// Usage counts must be non-negative JSON integers to be read. Data that is
// not a JSON object is a malformed frame (ErrMalformedFrame, see
// Decoder.Err) and carries nothing. The options are WithMaxFrameBytes.
func newOpenAIDecoder(opts ...DecoderOption) Decoder {
	o := &openAIInterp{}
	return newSSE("openai", o, opts)
}

type openAIInterp struct {
	j     jsonscan.Scanner
	cache jsonscan.Cache[openAIFacts]
	// continuous is set once a chunk carried both choices and usage
	// (vLLM continuous_usage_stats); emitted is the sum of the Tokens of
	// the chat frames so far.
	continuous bool
	emitted    int
	info       answerInfo
	// The last usage (and whether it said its cached count) and llama.cpp
	// timings of the stream, for the cached count the timings tell.
	usage       usage
	usageCached bool
	timings     jsonscan.Ints
}

func (o *openAIInterp) interpret(_, data []byte) (Frame, error) {
	f, hit := o.cache.Walk(&o.j, data, walkOpenAI)
	fr, err := o.frame(f, data)
	if f != nil && !hit {
		o.answer(f, data, &fr)
	}
	return fr, err
}

// answer puts on fr who answered and why choices ended (see answerinfo.go):
// chat and completions chunks name the model and id at their top level and
// a choice's finish_reason; the Responses API names them in its "response"
// object, whose status (or incomplete_details.reason) ends the answer on
// response.completed, response.incomplete and response.failed.
func (o *openAIInterp) answer(f *openAIFacts, data []byte, fr *Frame) {
	r := &f.resp
	switch f.typ {
	case oaiRespCompleted, oaiRespIncomplete, oaiRespFailed:
		o.info.note(fr, data, r.model, r.id)
		reason := r.status
		if r.reason.set() {
			reason = r.reason
		}
		o.info.finishOne(fr, data, reason)
	case oaiRespOther:
		o.info.note(fr, data, r.model, r.id) // response.created, response.in_progress
	default:
		o.info.note(fr, data, f.model, f.id)
		o.info.finish(fr, data, &f.finishes)
	}
}

func (o *openAIInterp) release() { o.cache.Reset() }

// frame turns the facts of one event (nil: data is not a JSON object) into
// its Frame. An error is reported beside the rest of the frame: its tokens
// and usage count too.
func (o *openAIInterp) frame(f *openAIFacts, data []byte) (Frame, error) {
	if f == nil {
		if string(bytes.TrimSpace(data)) == "[DONE]" {
			return Frame{Done: true}, nil
		}
		return Frame{}, malformed("openai", data, "is not a JSON object")
	}
	var fr Frame
	switch f.typ {
	case oaiRespDelta, oaiRespReasoningDelta:
		if f.deltaStr {
			fr.Tokens, fr.Reasoning = 1, f.typ == oaiRespReasoningDelta
		}
	case oaiRespCompleted, oaiRespIncomplete, oaiRespFailed:
		fr.Done = f.typ != oaiRespFailed
		respUsage(&f.respUsage).set(&fr)
	case oaiError, oaiRespOther:
	default:
		o.chunk(f, &fr)
	}
	switch {
	case f.err:
		fr.Err = topLevelError(data)
	case f.typ == oaiError:
		fr.Err = responsesEventError(data)
	case f.typ == oaiRespFailed:
		fr.Err = responseFailedError(data)
	case f.groqErr:
		fr.Err = groqError(data)
	}
	return fr, nil
}

// Stream errors, read on the rare path with encoding/json.

// responsesEventError reads a Responses API "error" event:
// {"type":"error","code":…,"message":…}, or the same with a nested "error"
// object.
func responsesEventError(data []byte) *StreamError {
	m, ok := eventObject(data)
	if !ok {
		return unreadableError()
	}
	if e, ok := m["error"]; ok && e != nil {
		return errorFromValue(e)
	}
	e := errorFromMap(m)
	e.Type = "" // the event's own type, "error"
	return e
}

// responseFailedError reads a "response.failed" event:
// {"type":"response.failed","response":{"error":{…}}}.
func responseFailedError(data []byte) *StreamError {
	m, ok := eventObject(data)
	if !ok {
		return unreadableError()
	}
	if r, ok := m["response"].(map[string]any); ok && r["error"] != nil {
		return errorFromValue(r["error"])
	}
	return &StreamError{Message: "response failed"}
}

// groqError reads Groq's {"x_groq":{"error":"text"}}.
func groqError(data []byte) *StreamError {
	m, ok := eventObject(data)
	if !ok {
		return unreadableError()
	}
	var v any
	if x, ok := m["x_groq"].(map[string]any); ok {
		v = x["error"]
	}
	return errorFromValue(v)
}

// chunk fills fr from a chat or completions chunk.
func (o *openAIInterp) chunk(f *openAIFacts, fr *Frame) {
	fr.Tokens = f.carrying
	u := &f.usage
	if !u.Has[usIn] && !u.Has[usOut] {
		u = &f.groqUsage
	}
	// Most chunks carry neither a usage nor timings: one test each.
	if u.Has[usIn] || u.Has[usOut] {
		chatUsage(u).set(fr)
	}
	if fr.HasUsage || f.timings != (jsonscan.Ints{}) || u.Has[usPromptTime] || u.Has[usCompletionTime] {
		o.server(f, u, fr)
	}
	if fr.HasUsage && f.choices > 0 {
		// Only a chunk that carries content carries tokens (never one
		// without: a finish chunk's usage is not a chunk of its own), and
		// it carries at least one per carrying choice: a count that did
		// not grow (a placeholder 0) takes nothing away.
		if o.continuous && f.carrying > 0 {
			fr.Tokens = max(f.carrying, fr.OutputTokens-o.emitted)
		}
		o.continuous = true
	}
	o.emitted = satAdd(o.emitted, fr.Tokens)
	fr.Reasoning = fr.Tokens > 0 && f.answering == 0
}

// oaiKind classifies the top-level "type" of an event (Responses API).
type oaiKind uint8

const (
	oaiNone               oaiKind = iota // no "type", or not a string
	oaiOther                             // a type this decoder does not look at
	oaiError                             // "error"
	oaiRespDelta                         // "response.….delta" (answer)
	oaiRespReasoningDelta                // "response.reasoning….delta"
	oaiRespCompleted                     // "response.completed"
	oaiRespIncomplete                    // "response.incomplete"
	oaiRespFailed                        // "response.failed"
	oaiRespOther                         // any other "response.…"
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
			if bytes.HasPrefix(t, []byte("response.reasoning")) {
				return oaiRespReasoningDelta
			}
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
	answering int           // choices that carry answer (not only reasoning) tokens
	usage     jsonscan.Ints // top-level "usage" (oaiChatUsage)
	groqUsage jsonscan.Ints // "x_groq": {"usage": ...} (oaiChatUsage)
	respUsage jsonscan.Ints // "response": {"usage": ...} (oaiRespUsage)
	timings   jsonscan.Ints // llama.cpp's top-level "timings" (llamaTimings)
	model, id strSpan       // top-level "model" and "id" (chat, completions)
	finishes  finishList    // the choices' finish_reason, with their index
	resp      respFacts     // the rest of "response" (Responses API)
	err       bool          // top-level "error" is present and not null
	groqErr   bool          // "x_groq": {"error": ...} is a non-empty string
	deltaStr  bool          // top-level "delta" is a non-empty string (Responses)
}

// walkOpenAI reads the top-level object of an OpenAI event at i.
func walkOpenAI(j *jsonscan.Scanner, i int, f *openAIFacts) (int, bool) {
	return j.Members(i, 0, func(k []byte, i int) (next int, ok bool) {
		switch string(k) {
		case "choices":
			return walkChoices(j, i, 1, f)
		case "usage":
			return walkUsage(j, i, 1, oaiChatUsage, &f.usage)
		case "x_groq":
			return walkXGroq(j, i, 1, f)
		case "timings":
			return walkUsage(j, i, 1, llamaTimings, &f.timings)
		case "error":
			f.err = j.At(i) != 'n'
		case "type":
			var t []byte
			var isStr bool
			next, t, isStr, ok = j.StringValue(i, 1)
			f.typ = oaiNone
			if isStr {
				f.typ = classifyOpenAI(t)
			}
			return next, ok
		case "delta":
			next, f.deltaStr, ok = j.NonEmptyString(i, 1)
			return next, ok
		case "response":
			return walkResponse(j, i, 1, f)
		case "model":
			next, f.model, ok = readStr(j, i, 1)
			return next, ok
		case "id":
			next, f.id, ok = readStr(j, i, 1)
			return next, ok
		}
		return j.Skip(i, 1)
	})
}

// respFacts is what the Responses API's "response" object says besides its
// usage.
type respFacts struct {
	model, id, status strSpan
	reason            strSpan // incomplete_details.reason
}

// walkResponse reads the Responses API's "response" object at i: its
// usage, model, id, status and incomplete_details.reason.
func walkResponse(j *jsonscan.Scanner, i, depth int, f *openAIFacts) (int, bool) {
	f.respUsage, f.resp = jsonscan.Ints{}, respFacts{}
	return j.Members(i, depth, func(k []byte, i int) (next int, ok bool) {
		switch string(k) {
		case "usage":
			return walkUsage(j, i, depth+1, oaiRespUsage, &f.respUsage)
		case "model":
			next, f.resp.model, ok = readStr(j, i, depth+1)
		case "id":
			next, f.resp.id, ok = readStr(j, i, depth+1)
		case "status":
			next, f.resp.status, ok = readStr(j, i, depth+1)
		case "incomplete_details":
			f.resp.reason = strSpan{}
			return j.Members(i, depth+1, func(k []byte, i int) (next int, ok bool) {
				if string(k) != "reason" {
					return j.Skip(i, depth+2)
				}
				next, f.resp.reason, ok = readStr(j, i, depth+2)
				return next, ok
			})
		default:
			return j.Skip(i, depth+1)
		}
		return next, ok
	})
}

// walkXGroq reads Groq's "x_groq" object (groq-python XGroq: id, usage,
// error "indicating why a stream was stopped early", …) at i.
func walkXGroq(j *jsonscan.Scanner, i, depth int, f *openAIFacts) (int, bool) {
	f.groqUsage, f.groqErr = jsonscan.Ints{}, false
	return j.Members(i, depth, func(k []byte, i int) (int, bool) {
		switch string(k) {
		case "usage":
			return walkUsage(j, i, depth+1, oaiChatUsage, &f.groqUsage)
		case "error":
			// Not NonEmptyString: the hot string (jsonscan.Cache) stays the
			// delta text of the chunk.
			next, t, isStr, ok := j.StringValue(i, depth+1)
			f.groqErr = isStr && len(t) > 0
			return next, ok
		}
		return j.Skip(i, depth+1)
	})
}

// walkChoices reads the "choices" value at i into f.choices, f.carrying and
// f.answering.
func walkChoices(j *jsonscan.Scanner, i, depth int, f *openAIFacts) (int, bool) {
	f.choices, f.carrying, f.answering, f.finishes = 0, 0, 0, finishList{}
	if j.At(i) != '[' {
		return j.Skip(i, depth)
	}
	i, more, ok := j.OpenArray(i, depth)
	for ok && more {
		f.choices++
		if j.At(i) == '{' {
			var answer, reasoning bool
			if i, answer, reasoning, ok = walkChoice(j, i, depth+1, f.choices-1, &f.finishes); answer || reasoning {
				f.carrying++
				if answer {
					f.answering++
				}
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

// walkChoice reads one choice object, the pos-th of its array: it carries
// answer or reasoning tokens by the members of its "delta" object, and
// answer tokens when its "text" (legacy completions) is a non-empty string;
// its finish_reason, if a string, goes to fl with its "index" (pos when it
// has none).
func walkChoice(j *jsonscan.Scanner, i, depth, pos int, fl *finishList) (next int, answer, reasoning, ok bool) {
	var delta uint8
	var text bool
	var reason strSpan
	index := pos
	next, ok = j.Members(i, depth, func(k []byte, i int) (next int, ok bool) {
		switch string(k) {
		case "finish_reason":
			next, reason, ok = readStr(j, i, depth+1)
			return next, ok
		case "index":
			var v int
			var isInt bool
			next, v, isInt, ok = j.Int(i, depth+1)
			index = pos
			if isInt {
				index = v
			}
			return next, ok
		case "delta":
			delta = 0
			if j.At(i) == '{' {
				next, delta, ok = walkChatDelta(j, i, depth+1)
				return next, ok
			}
		case "text":
			next, text, ok = j.NonEmptyString(i, depth+1)
			return next, ok
		}
		return j.Skip(i, depth+1)
	})
	fl.add(index, reason)
	return next, text || delta&answerBits != 0, delta&reasoningBits != 0, ok
}

// Chat delta members that carry output, one bit each (the last member of a
// name decides its bits; "content" decides two).
const (
	bitContent         = 1 << iota // a non-empty string, or an array with a text part
	bitContentThinking             // an array with a thinking part
	bitReasoningContent
	bitReasoning
	bitRefusal
	bitToolCalls        // non-empty array
	bitFunctionCall     // non-empty object
	bitReasoningDetails // an array with a reasoning.text or reasoning.summary text

	answerBits    = bitContent | bitRefusal | bitToolCalls | bitFunctionCall
	reasoningBits = bitContentThinking | bitReasoningContent | bitReasoning | bitReasoningDetails
)

// walkChatDelta reads a chat delta object at i: which members carry output?
func walkChatDelta(j *jsonscan.Scanner, i, depth int) (next int, bits uint8, ok bool) {
	next, ok = j.Members(i, depth, func(k []byte, i int) (next int, ok bool) {
		var mask, set uint8
		var yes bool
		switch string(k) {
		case "content":
			mask = bitContent | bitContentThinking
			if j.At(i) == '[' {
				var answer, reasoning bool
				next, answer, reasoning, ok = walkContentParts(j, i, depth+1)
				if answer {
					set |= bitContent
				}
				if reasoning {
					set |= bitContentThinking
				}
			} else {
				next, yes, ok = j.NonEmptyString(i, depth+1)
			}
		case "reasoning_content":
			mask = bitReasoningContent
			next, yes, ok = j.NonEmptyString(i, depth+1)
		case "reasoning":
			mask = bitReasoning
			next, yes, ok = j.NonEmptyString(i, depth+1)
		case "refusal":
			mask = bitRefusal
			next, yes, ok = j.NonEmptyString(i, depth+1)
		case "tool_calls":
			mask = bitToolCalls
			next, yes, ok = j.NonEmptyArray(i, depth+1)
		case "function_call":
			mask = bitFunctionCall
			next, yes, ok = j.NonEmptyObject(i, depth+1)
		case "reasoning_details":
			mask = bitReasoningDetails
			if j.At(i) == '[' {
				next, yes, ok = walkReasoningDetails(j, i, depth+1)
			} else {
				next, ok = j.Skip(i, depth+1)
			}
		default:
			return j.Skip(i, depth+1)
		}
		if yes {
			set = mask &^ bitContentThinking // a content string is answer text
		}
		bits = bits&^mask | set
		return next, ok
	})
	return next, bits, ok
}
