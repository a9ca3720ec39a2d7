package llmmetrics

import (
	"bytes"
	"strings"
	"time"

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

// server reads the server's own account of the request: Groq's usage times
// (prompt_time, completion_time, in seconds: groq-python CompletionUsage)
// and llama.cpp's timings. From the timings it also takes the cached
// input tokens, when the usage does not say them itself
// (prompt_tokens_details.cached_tokens keeps precedence): cache_n where
// sent, else the prompt tokens the engine did not process, prompt_tokens −
// prompt_n. llama.cpp's server sets a slot's n_past to the prefix the new
// prompt shares with the slot's cache (common_part of cache_tokens and the
// prompt) and processes the prompt from there, counting
// n_prompt_tokens_processed (prompt_n): every prompt token it did not
// process was in its cache. The timings may come on another chunk than
// the usage (one per chunk with timings_per_token): the last ones seen
// apply, and a chunk of timings after the usage repeats that usage with the
// cached count.
func (o *openAIInterp) server(f *openAIFacts, u *jsonscan.Ints, fr *Frame) {
	if u.Has[usPromptTime] {
		fr.ServerPrefill = time.Duration(u.Val[usPromptTime])
	}
	if u.Has[usCompletionTime] {
		fr.ServerDecode = time.Duration(u.Val[usCompletionTime])
	}
	t := &f.timings
	timed := t.Has[tmPromptN] || t.Has[tmCacheN] || t.Has[tmPromptMS] || t.Has[tmPredictedMS]
	if timed {
		o.timings = *t
		if t.Has[tmPromptMS] {
			fr.ServerPrefill = time.Duration(t.Val[tmPromptMS])
		}
		if t.Has[tmPredictedMS] {
			fr.ServerDecode = time.Duration(t.Val[tmPredictedMS])
		}
	}
	if fr.HasUsage {
		o.usage, o.usageCached = usage{has: true, in: fr.InputTokens, out: fr.OutputTokens,
			reasoning: fr.ReasoningTokens, cached: fr.CachedInputTokens}, u.Has[usCached] || u.Has[usCacheHit]
	}
	if !o.usage.has || o.usageCached {
		return
	}
	cached, ok := timingsCached(&o.timings, o.usage.in)
	switch {
	case !ok:
	case fr.HasUsage:
		fr.CachedInputTokens = cached
	case timed:
		o.usage.set(fr)
		fr.CachedInputTokens = cached
	}
}

// timingsCached returns the cached input tokens llama.cpp's timings t tell
// of a prompt of in tokens: cache_n, else in − prompt_n.
func timingsCached(t *jsonscan.Ints, in int) (int, bool) {
	switch {
	case t.Has[tmCacheN] && t.Val[tmCacheN] <= in:
		return t.Val[tmCacheN], true
	case !t.Has[tmCacheN] && t.Has[tmPromptN] && t.Val[tmPromptN] <= in:
		return in - t.Val[tmPromptN], true
	}
	return 0, false
}

// The top-level counts of an OpenAI usage object, by index (oaiChatUsage,
// oaiRespUsage): input, output, total, and DeepSeek's cache hits; the
// reasoning and cached counts of the details objects are at usReasoning and
// usCached.
const (
	usIn = iota
	usOut
	usTotal
	usCacheHit
	usPromptTime     // Groq's prompt_time, in ns
	usCompletionTime // Groq's completion_time, in ns
)

// The usage objects: chat completions' top-level "usage" (also Groq's
// x_groq.usage) and the Responses API's "response.usage". The cached input
// count is prompt_tokens_details.cached_tokens (OpenAI chat completions,
// openai-go CompletionUsagePromptTokensDetails; also xAI, OpenRouter, vLLM
// with --enable-prompt-tokens-details), DeepSeek's prompt_cache_hit_tokens
// (api-docs.deepseek.com/api/create-chat-completion: both part of
// prompt_tokens), and the Responses API's input_tokens_details.cached_tokens
// (openai-go ResponseUsageInputTokensDetails).
var (
	oaiChatUsage = shape(
		[]usageCount{count("prompt_tokens", usIn), count("completion_tokens", usOut), count("total_tokens", usTotal),
			count("prompt_cache_hit_tokens", usCacheHit),
			timeIn("prompt_time", usPromptTime, time.Second), timeIn("completion_time", usCompletionTime, time.Second)},
		nest("completion_tokens_details", count("reasoning_tokens", usReasoning)),
		nest("prompt_tokens_details", count("cached_tokens", usCached)),
	)
	oaiRespUsage = shape(
		[]usageCount{count("input_tokens", usIn), count("output_tokens", usOut), count("total_tokens", usTotal)},
		nest("output_tokens_details", count("reasoning_tokens", usReasoning)),
		nest("input_tokens_details", count("cached_tokens", usCached)),
	)
)

// The counts and times of llama.cpp's "timings" object, by index in
// llamaTimings.
const (
	tmPromptN = iota
	tmCacheN
	tmPromptMS
	tmPredictedMS
)

// llamaTimings is llama.cpp's server's "timings" object (tools/server:
// result_timings::to_json): prompt_n, the prompt tokens the engine
// processed (slot.n_prompt_tokens_processed), cache_n, those it reused from
// the slot's cache (builds since mid-2025), and the milliseconds it spent
// on each phase.
var llamaTimings = shape([]usageCount{count("prompt_n", tmPromptN), count("cache_n", tmCacheN),
	timeIn("prompt_ms", tmPromptMS, time.Millisecond), timeIn("predicted_ms", tmPredictedMS, time.Millisecond)})

// usage is what a usage object says, in Frame's terms.
type usage struct {
	has                        bool
	in, out, reasoning, cached int
}

// set puts u into fr's usage fields.
func (u usage) set(fr *Frame) {
	fr.HasUsage, fr.InputTokens, fr.OutputTokens = u.has, u.in, u.out
	fr.ReasoningTokens, fr.CachedInputTokens = u.reasoning, u.cached
}

// respUsage reads a Responses usage object: whether it has an input or
// output count, and the counts (0 when absent). output_tokens includes the
// reasoning tokens (a reasoning count above it cannot be inside it, and is
// added), input_tokens the cached ones.
func respUsage(u *jsonscan.Ints) usage {
	r := baseUsage(u)
	if r.reasoning > r.out {
		r.out = satAdd(r.out, r.reasoning)
	}
	return r
}

// baseUsage reads the counts of an OpenAI usage object as they are. A
// cached count (either name: DeepSeek sends both) above the input count is
// not believed.
func baseUsage(u *jsonscan.Ints) usage {
	r := usage{has: u.Has[usIn] || u.Has[usOut], in: u.Get(usIn), out: u.Get(usOut), reasoning: u.Get(usReasoning)}
	if c := max(u.Get(usCached), u.Get(usCacheHit)); c <= r.in {
		r.cached = c
	}
	return r
}

// chatUsage reads a chat completions usage object like respUsage. Most
// providers count reasoning inside completion_tokens; xAI counts it beside
// (total_tokens = prompt + completion + reasoning: UKGovernmentBEIS/inspect_ai#5528,
// a recorded grok-3-mini usage 10 + 1328 + 307 = 1645), so the
// reasoning count is added to the output when the total says so, or when
// it exceeds the completion count, which then cannot hold it (a gateway
// relaying a reasoning model: completion_tokens 35, reasoning_tokens 223).
func chatUsage(u *jsonscan.Ints) usage {
	r := baseUsage(u)
	if reasoningBeside(r.in, r.out, r.reasoning, u.Has[usTotal], u.Get(usTotal)) {
		r.out = satAdd(r.out, r.reasoning)
	}
	return r
}

// reasoningBeside reports whether a usage's reasoning count is beside its
// output count rather than inside it: the total says so, or the reasoning
// count exceeds the output count.
func reasoningBeside(in, out, reasoning int, hasTotal bool, total int) bool {
	return reasoning > out || reasoning > 0 && hasTotal && total == satAdd(satAdd(in, out), reasoning)
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

// partKind classifies the "type" of a typed content part.
type partKind uint8

const (
	partUntyped  partKind = iota // no "type", or not a string
	partText                     // "text"
	partThinking                 // "thinking"
	partOther                    // image_url, document_url, reference, file, audio, …
)

func classifyPart(t []byte) partKind {
	switch string(t) {
	case "text":
		return partText
	case "thinking":
		return partThinking
	}
	return partOther
}

// walkContentParts reads a content array of typed parts at i (Mistral's
// DeltaMessageContent = str | List[ContentChunk], mistralai/client-python
// v2.5.1 docs/models/deltamessagecontent.md): does a part carry answer text,
// reasoning text?
func walkContentParts(j *jsonscan.Scanner, i, depth int) (next int, answer, reasoning, ok bool) {
	i, more, ok := j.OpenArray(i, depth)
	for ok && more {
		if j.At(i) == '{' {
			var a, r bool
			i, a, r, ok = walkContentPart(j, i, depth+1, false)
			answer, reasoning = answer || a, reasoning || r
		} else {
			i, ok = j.Skip(i, depth+1)
		}
		if ok {
			i, more, ok = j.NextElement(i)
		}
	}
	return i, answer, reasoning, ok
}

// walkContentPart reads one typed part at i: a TextChunk {"type": "text",
// "text"} carries answer text when text is non-empty; a ThinkChunk {"type":
// "thinking", "thinking": [TextChunk | ReferenceChunk | ToolReferenceChunk,
// …]} carries reasoning when one of its inner text parts does
// (docs/models/thinkchunk.md, textchunk.md: "type" is optional, so an untyped
// part is read by its members). Inside a ThinkChunk (inner), "thinking" is
// not read: the inner parts are TextChunks and references.
func walkContentPart(j *jsonscan.Scanner, i, depth int, inner bool) (next int, answer, reasoning, ok bool) {
	typ := partUntyped
	var text, thinking bool
	next, ok = j.Members(i, depth, func(k []byte, i int) (next int, ok bool) {
		switch {
		case string(k) == "type":
			var t []byte
			var isStr bool
			next, t, isStr, ok = j.StringValue(i, depth+1)
			typ = partUntyped
			if isStr {
				typ = classifyPart(t)
			}
			return next, ok
		case string(k) == "text":
			next, text, ok = j.NonEmptyString(i, depth+1)
			return next, ok
		case string(k) == "thinking" && !inner:
			thinking = false
			if j.At(i) == '[' {
				next, thinking, ok = walkThinkingParts(j, i, depth+1)
				return next, ok
			}
		}
		return j.Skip(i, depth+1)
	})
	answer = text && (typ == partText || typ == partUntyped)
	reasoning = thinking && (typ == partThinking || typ == partUntyped)
	return next, answer, reasoning, ok
}

// walkThinkingParts reads a ThinkChunk's "thinking" array at i: does one of
// its inner parts carry text?
func walkThinkingParts(j *jsonscan.Scanner, i, depth int) (next int, carries, ok bool) {
	i, more, ok := j.OpenArray(i, depth)
	for ok && more {
		if j.At(i) == '{' {
			var text bool
			i, text, _, ok = walkContentPart(j, i, depth+1, true)
			carries = carries || text
		} else {
			i, ok = j.Skip(i, depth+1)
		}
		if ok {
			i, more, ok = j.NextElement(i)
		}
	}
	return i, carries, ok
}

// detailKind classifies the "type" of an OpenRouter reasoning detail.
type detailKind uint8

const (
	detailOther   detailKind = iota // reasoning.encrypted, an unknown or missing type
	detailText                      // "reasoning.text"
	detailSummary                   // "reasoning.summary"
)

// walkReasoningDetails reads OpenRouter's delta.reasoning_details array at
// i: does one of its details carry visible reasoning text? A
// {"type": "reasoning.text", "text"} detail with a non-empty text does, as
// a {"type": "reasoning.summary", "summary"} with a non-empty summary; a
// {"type": "reasoning.encrypted", "data"} detail does not (opaque data, like
// Anthropic's signature_delta and Gemini's bare thoughtSignature), nor a
// reasoning.text that holds only its "signature" (OpenRouter's reasoning
// tokens guide, https://openrouter.ai/docs/guides/best-practices/reasoning-tokens;
// the schemas of @openrouter/ai-sdk-provider src/schemas/reasoning-details.ts).
func walkReasoningDetails(j *jsonscan.Scanner, i, depth int) (next int, carries, ok bool) {
	i, more, ok := j.OpenArray(i, depth)
	for ok && more {
		if j.At(i) == '{' {
			var c bool
			i, c, ok = walkReasoningDetail(j, i, depth+1)
			carries = carries || c
		} else {
			i, ok = j.Skip(i, depth+1)
		}
		if ok {
			i, more, ok = j.NextElement(i)
		}
	}
	return i, carries, ok
}

// walkReasoningDetail reads one reasoning detail object at i.
func walkReasoningDetail(j *jsonscan.Scanner, i, depth int) (next int, carries, ok bool) {
	kind := detailOther
	var text, summary bool
	next, ok = j.Members(i, depth, func(k []byte, i int) (next int, ok bool) {
		switch string(k) {
		case "type":
			var t []byte
			var isStr bool
			next, t, isStr, ok = j.StringValue(i, depth+1)
			kind = detailOther
			switch {
			case !isStr:
			case string(t) == "reasoning.text":
				kind = detailText
			case string(t) == "reasoning.summary":
				kind = detailSummary
			}
			return next, ok
		case "text":
			next, text, ok = j.NonEmptyString(i, depth+1)
			return next, ok
		case "summary":
			next, summary, ok = j.NonEmptyString(i, depth+1)
			return next, ok
		}
		return j.Skip(i, depth+1)
	})
	return next, kind == detailText && text || kind == detailSummary && summary, ok
}
