package llmmetrics

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/llmmetrics/llmmetrics/internal/jsonscan"

	"github.com/llmmetrics/llmmetrics/internal/jsonstream"
)

// This file holds the decoder of non-streaming JSON answers: it reads the
// usage object on the side while the caller reads the body.

// jsonSpec is ProtocolJSON's row of the protocol table: one non-streaming
// answer of any protocol, chosen by its Content-Type, not by a path.
var jsonSpec = protocolSpec{
	name:    "json",
	title:   "one JSON answer",
	decoder: func(opts []DecoderOption) Decoder { return newUsageDecoder(opts...) },
}

// newUsageDecoder returns a Decoder for one non-streaming JSON answer (a
// response with Content-Type application/json): it finds the token counts
// in the answer and reports them in one Frame, with HasUsage and Done, when
// the top-level value closes. That frame carries no Tokens: a body that is
// not a stream has no TTFT, TPOT or ITL, only E2EL and its token counts.
//
// It reads, from the top-level object:
//
//   - "usage" with "prompt_tokens" and "completion_tokens" (OpenAI chat
//     completions, completions and embeddings); ReasoningTokens from
//     "completion_tokens_details.reasoning_tokens", added to the output when
//     "total_tokens" shows the provider left it out (xAI);
//     CachedInputTokens from "prompt_tokens_details.cached_tokens" or
//     DeepSeek's "prompt_cache_hit_tokens" (both part of prompt_tokens);
//   - else "usage" with "input_tokens", "output_tokens" and, summed into the
//     input, "cache_creation_input_tokens" and "cache_read_input_tokens"
//     (the Responses API; Anthropic Messages, whose input_tokens excludes
//     the cached part); ReasoningTokens from "output_tokens_details"
//     ("reasoning_tokens", or Anthropic's "thinking_tokens");
//     CachedInputTokens from Anthropic's "cache_read_input_tokens" (and
//     CacheWriteInputTokens from "cache_creation_input_tokens"), else from
//     the Responses API's "input_tokens_details.cached_tokens";
//   - else Gemini's "usageMetadata": input = promptTokenCount +
//     toolUsePromptTokenCount, output = candidatesTokenCount +
//     thoughtsTokenCount (Gemini counts thoughts apart from the candidates),
//     ReasoningTokens = thoughtsTokenCount, CachedInputTokens =
//     cachedContentTokenCount (part of promptTokenCount);
//   - else Ollama's "prompt_eval_count" and "eval_count" (Ollama reports no
//     cached count);
//   - a non-null "error" member sets Frame.Err to a *StreamError (an error
//     object sent with a success status): Type from "type" (else Gemini's
//     "status"), Code from "code", Message from "message" (or the error
//     itself when it is a string).
//
// Counts must be non-negative JSON integers to be read; where a member
// appears twice the last one counts. The answer is scanned as it goes by, in
// pieces of any size, with a fixed amount of memory whatever its size: the
// caller's bytes are neither copied nor delayed. A body that is not JSON, or
// that ends before its value does, is the stream's ErrMalformedFrame (Err,
// and otel.Handle) and gives no frame. Bytes after the top-level value are
// ignored. It takes the options of Protocol.NewDecoder, of which
// WithMaxFrameBytes has no frame to bound here: the scan holds none.
func newUsageDecoder(opts ...DecoderOption) Decoder {
	_ = newDecoderConfig(opts)
	return &usageDecoder{s: jsonstream.NewScanner(answerSchema)}
}

// Members of a JSON answer, by index in answerSchema.
const (
	jUsage = iota
	jPromptTokens
	jCompletionTokens
	jTotalTokens
	jCompletionDetails
	jCompletionReasoning
	jInputTokens
	jOutputTokens
	jCacheCreation
	jCacheRead
	jOutputDetails
	jOutputReasoning
	jOutputThinking
	jPromptDetails
	jPromptDetailsCached
	jPromptCacheHit
	jInputDetails
	jInputDetailsCached
	jUsageMetadata
	jPromptTokenCount
	jCandidatesTokenCount
	jThoughtsTokenCount
	jToolUsePromptTokenCount
	jCachedContentTokenCount
	jPromptEvalCount
	jEvalCount
	jError
	jErrorType
	jErrorCode
	jErrorMessage
	jErrorStatus
	jID
	jModel
	jResponseID
	jModelVersion
	jObject
	jStatus
	jIncomplete
	jIncompleteReason
	jStopReason
	jDoneReason
	jFinishReason
	jChoices
	jChoice0
	jChoice0Finish
	jCandidates
	jCandidate0
	jCandidate0Finish
	jTimings
	jTimingsPromptN
	jTimingsCacheN
	jTimingsPromptMS
	jTimingsPredictedMS
	jPromptTime
	jCompletionTime
	jPromptEvalDuration
	jEvalDuration
)

// maxNumberText bounds the text of a time kept from an answer
// ("83.203").
const maxNumberText = 32

// maxNameText bounds a model name or an answer id kept from an answer, and
// maxReasonText a finish reason.
const (
	maxNameText   = 256
	maxReasonText = 64
)

// maxErrorText bounds each text kept from an error object.
const maxErrorText = 256

// answerFields are the members every JSON answer is scanned for: the usage
// shapes of the built-in protocols that share them, and the error; each
// protocol with an answer rule adds its own (initAnswers).
var answerFields = []jsonstream.Field{
	jsonstream.Field{Path: "usage"},
	jsonstream.Field{Path: "usage.prompt_tokens"},
	jsonstream.Field{Path: "usage.completion_tokens"},
	jsonstream.Field{Path: "usage.total_tokens"},
	jsonstream.Field{Path: "usage.completion_tokens_details"},
	jsonstream.Field{Path: "usage.completion_tokens_details.reasoning_tokens"},
	jsonstream.Field{Path: "usage.input_tokens"},
	jsonstream.Field{Path: "usage.output_tokens"},
	jsonstream.Field{Path: "usage.cache_creation_input_tokens"},
	jsonstream.Field{Path: "usage.cache_read_input_tokens"},
	jsonstream.Field{Path: "usage.output_tokens_details"},
	jsonstream.Field{Path: "usage.output_tokens_details.reasoning_tokens"},
	jsonstream.Field{Path: "usage.output_tokens_details.thinking_tokens"},
	jsonstream.Field{Path: "usage.prompt_tokens_details"},
	jsonstream.Field{Path: "usage.prompt_tokens_details.cached_tokens"},
	jsonstream.Field{Path: "usage.prompt_cache_hit_tokens"},
	jsonstream.Field{Path: "usage.input_tokens_details"},
	jsonstream.Field{Path: "usage.input_tokens_details.cached_tokens"},
	jsonstream.Field{Path: "usageMetadata"},
	jsonstream.Field{Path: "usageMetadata.promptTokenCount"},
	jsonstream.Field{Path: "usageMetadata.candidatesTokenCount"},
	jsonstream.Field{Path: "usageMetadata.thoughtsTokenCount"},
	jsonstream.Field{Path: "usageMetadata.toolUsePromptTokenCount"},
	jsonstream.Field{Path: "usageMetadata.cachedContentTokenCount"},
	jsonstream.Field{Path: "prompt_eval_count"},
	jsonstream.Field{Path: "eval_count"},
	jsonstream.Field{Path: "error", MaxString: maxErrorText},
	jsonstream.Field{Path: "error.type", MaxString: 64},
	jsonstream.Field{Path: "error.code", MaxString: 64},
	jsonstream.Field{Path: "error.message", MaxString: maxErrorText},
	jsonstream.Field{Path: "error.status", MaxString: 64},
	// Who answered and why it ended: OpenAI (chat, completions) "id",
	// "model" and the first choice's finish_reason; the Responses API's id,
	// model and status or incomplete_details.reason ("object": "response");
	// Anthropic's id, model and stop_reason; Gemini's responseId,
	// modelVersion and the first candidate's finishReason; Ollama's model
	// and done_reason; Cohere's id and finish_reason.
	jsonstream.Field{Path: "id", MaxString: maxNameText},
	jsonstream.Field{Path: "model", MaxString: maxNameText},
	jsonstream.Field{Path: "responseId", MaxString: maxNameText},
	jsonstream.Field{Path: "modelVersion", MaxString: maxNameText},
	jsonstream.Field{Path: "object", MaxString: 16},
	jsonstream.Field{Path: "status", MaxString: maxReasonText},
	jsonstream.Field{Path: "incomplete_details"},
	jsonstream.Field{Path: "incomplete_details.reason", MaxString: maxReasonText},
	jsonstream.Field{Path: "stop_reason", MaxString: maxReasonText},
	jsonstream.Field{Path: "done_reason", MaxString: maxReasonText},
	jsonstream.Field{Path: "finish_reason", MaxString: maxReasonText},
	jsonstream.Field{Path: "choices"},
	jsonstream.Field{Path: "choices.0"},
	jsonstream.Field{Path: "choices.0.finish_reason", MaxString: maxReasonText},
	jsonstream.Field{Path: "candidates"},
	jsonstream.Field{Path: "candidates.0"},
	jsonstream.Field{Path: "candidates.0.finishReason", MaxString: maxReasonText},
	// The server's own account (see the streaming decoders): llama.cpp's
	// timings, Groq's usage times, Ollama's durations.
	jsonstream.Field{Path: "timings"},
	jsonstream.Field{Path: "timings.prompt_n"},
	jsonstream.Field{Path: "timings.cache_n"},
	jsonstream.Field{Path: "timings.prompt_ms", MaxString: maxNumberText},
	jsonstream.Field{Path: "timings.predicted_ms", MaxString: maxNumberText},
	jsonstream.Field{Path: "usage.prompt_time", MaxString: maxNumberText},
	jsonstream.Field{Path: "usage.completion_time", MaxString: maxNumberText},
	jsonstream.Field{Path: "prompt_eval_duration"},
	jsonstream.Field{Path: "eval_duration"},
}

// answerSchema reads answerFields and the protocols' answer rules' fields
// (initAnswers).
var answerSchema *jsonstream.Schema

// answerRule declares how a protocol's non-streaming JSON answer keeps a
// usage that no built-in shape of this file reads: the members to capture
// (paths from the top-level object, parents before children; a path
// another rule or this file already captures is shared) and how their
// values make the frame's usage. Rules are tried, in the order of the
// protocol table, after this file's own shapes.
type answerRule struct {
	fields []jsonstream.Field
	// read returns the usage a holds; its has is false when the answer
	// has none of the protocol's counts.
	read func(a answerValues) usage
	// idx holds the schema index of each field (initAnswers).
	idx []int
}

// answerValues gives an answer rule its captured values, indexed like its
// fields.
type answerValues struct {
	v   []jsonstream.Value
	idx []int
}

// has reports whether field k is a non-negative integer count.
func (a answerValues) has(k int) bool { return a.v[a.idx[k]].IntOK }

// get returns field k's count, or 0 when it has none.
func (a answerValues) get(k int) int {
	if v := &a.v[a.idx[k]]; v.IntOK {
		return v.Int
	}
	return 0
}

// initAnswers builds answerSchema from answerFields and the answer rules
// of the protocol table.
func initAnswers() {
	fields := slices.Clone(answerFields)
	index := map[string]int{}
	for i, f := range fields {
		index[f.Path] = i
	}
	for _, s := range protocolSpecs {
		if s.answer == nil {
			continue
		}
		s.answer.idx = s.answer.idx[:0]
		for _, f := range s.answer.fields {
			i, ok := index[f.Path]
			if !ok {
				i = len(fields)
				index[f.Path] = i
				fields = append(fields, f)
			}
			s.answer.idx = append(s.answer.idx, i)
		}
	}
	answerSchema = jsonstream.NewSchema(fields...)
}

var space = []byte{' '}

type usageDecoder struct {
	problems
	s       *jsonstream.Scanner
	stopped bool
	reasons []string // the frame's FinishReasons (reused)
}

// Decode implements Decoder.
func (d *usageDecoder) Decode(p []byte, emit func(Frame)) {
	if d.stopped || len(p) == 0 {
		return
	}
	d.s.Feed(p)
	d.check(emit)
}

// Flush implements Decoder: it completes a top-level number and reports an
// answer that ended before its end.
func (d *usageDecoder) Flush(emit func(Frame)) {
	if d.stopped {
		return
	}
	d.s.Feed(space) // ends a top-level number, as EOF does
	if d.check(emit) {
		return
	}
	d.stopped = true
	d.report(fmt.Errorf("%w: json answer ended after %d bytes, before the end of its value", ErrMalformedFrame, d.s.Offset()))
}

// check emits the frame once the value is complete and reports a syntax
// error; it reports whether decoding stopped.
func (d *usageDecoder) check(emit func(Frame)) bool {
	switch {
	case d.s.Done():
		d.stopped = true
		emit(d.frame())
	case d.s.Err() != nil:
		d.stopped = true
		d.report(fmt.Errorf("%w: json answer: %w", ErrMalformedFrame, d.s.Err()))
	}
	return d.stopped
}

func (d *usageDecoder) frame() Frame {
	v := d.s.Values
	f := Frame{Done: true}
	has := func(i int) bool { return v[i].IntOK }
	get := func(i int) int {
		if v[i].IntOK {
			return v[i].Int
		}
		return 0
	}
	// cachedOf is a cached count that is part of the prompt count of the
	// usage: not believed above it.
	cachedOf := func(c, prompt int) int {
		if c <= prompt {
			return c
		}
		return 0
	}
	switch {
	case has(jPromptTokens) || has(jCompletionTokens):
		f.HasUsage, f.InputTokens, f.OutputTokens = true, get(jPromptTokens), get(jCompletionTokens)
		f.ReasoningTokens = get(jCompletionReasoning)
		if reasoningBeside(f.InputTokens, f.OutputTokens, f.ReasoningTokens, has(jTotalTokens), get(jTotalTokens)) {
			f.OutputTokens = satAdd(f.OutputTokens, f.ReasoningTokens) // xAI: reasoning beside completion_tokens
		}
		// OpenAI's cached_tokens and DeepSeek's prompt_cache_hit_tokens
		// (DeepSeek sends both) are part of prompt_tokens.
		f.CachedInputTokens = cachedOf(max(get(jPromptDetailsCached), get(jPromptCacheHit)), get(jPromptTokens))
	case has(jInputTokens) || has(jOutputTokens) || has(jCacheCreation) || has(jCacheRead):
		f.HasUsage = true
		// The Responses API's input_tokens includes its cached tokens
		// (input_tokens_details.cached_tokens); Anthropic's excludes both
		// cache counts, which are then added: InputTokens is the whole
		// prompt either way.
		f.InputTokens = satAdd(satAdd(get(jInputTokens), get(jCacheCreation)), get(jCacheRead))
		f.OutputTokens = get(jOutputTokens)
		f.ReasoningTokens = max(get(jOutputReasoning), get(jOutputThinking))
		if f.ReasoningTokens > f.OutputTokens {
			f.OutputTokens = satAdd(f.OutputTokens, f.ReasoningTokens) // cannot be inside it
		}
		if has(jCacheCreation) || has(jCacheRead) {
			f.CachedInputTokens, f.CacheWriteInputTokens = get(jCacheRead), get(jCacheCreation)
		} else {
			f.CachedInputTokens = cachedOf(get(jInputDetailsCached), f.InputTokens)
		}
	case has(jPromptTokenCount) || has(jCandidatesTokenCount) || has(jThoughtsTokenCount) || has(jToolUsePromptTokenCount):
		f.HasUsage = true
		f.InputTokens = satAdd(get(jPromptTokenCount), get(jToolUsePromptTokenCount))
		f.OutputTokens = satAdd(get(jCandidatesTokenCount), get(jThoughtsTokenCount))
		f.ReasoningTokens = get(jThoughtsTokenCount)
		f.CachedInputTokens = cachedOf(get(jCachedContentTokenCount), get(jPromptTokenCount))
	case has(jPromptEvalCount) || has(jEvalCount):
		// Ollama reports no cached count: prompt_eval_count is the prompt
		// tokens it evaluated (a cached prompt prefix is left out).
		f.HasUsage, f.InputTokens, f.OutputTokens = true, get(jPromptEvalCount), get(jEvalCount)
	default:
		for _, s := range protocolSpecs {
			if s.answer == nil {
				continue
			}
			if u := s.answer.read(answerValues{v, s.answer.idx}); u.has {
				u.set(&f)
				break
			}
		}
	}
	d.answer(&f)
	d.server(&f, has(jPromptDetailsCached) || has(jPromptCacheHit))
	switch e := &v[jError]; e.Kind {
	case jsonstream.KindNone, jsonstream.KindNull, jsonstream.KindFalse:
	case jsonstream.KindString:
		if e.End-e.Start > 2 { // not ""
			f.Err = &StreamError{Message: string(e.Str)}
		}
	default:
		typ := d.text(jErrorType)
		if typ == "" {
			typ = d.text(jErrorStatus) // Gemini: "RESOURCE_EXHAUSTED"
		}
		f.Err = &StreamError{Type: typ, Code: d.text(jErrorCode), Message: d.text(jErrorMessage)}
	}
	return f
}

// answer puts on f who answered and why the answer ended. Only the first
// choice's (candidate's) finish reason is read: a non-streaming answer
// with several choices reports that one.
func (d *usageDecoder) answer(f *Frame) {
	v := d.s.Values
	f.ResponseModel = d.first(jModel, jModelVersion)
	f.ResponseID = d.first(jID, jResponseID)
	reason := -1
	for _, i := range [...]int{jChoice0Finish, jStopReason, jCandidate0Finish, jDoneReason, jFinishReason} {
		if d.whole(i) {
			reason = i
			break
		}
	}
	if reason < 0 && string(v[jObject].Str) == "response" {
		reason = jStatus
		if d.whole(jIncompleteReason) {
			reason = jIncompleteReason
		}
	}
	if reason >= 0 && d.whole(reason) {
		r, ok := knownReason(v[reason].Str)
		if !ok {
			r = string(v[reason].Str)
		}
		d.reasons = append(d.reasons[:0], r)
		f.FinishReasons = d.reasons
	}
}

// server puts on f the server's own account of the request (its prefill
// and decode times) and, from llama.cpp's timings, the cached input tokens
// when the usage did not say them (explicit).
func (d *usageDecoder) server(f *Frame, explicit bool) {
	v := d.s.Values
	f.ServerPrefill = d.time(jTimingsPromptMS, time.Millisecond, d.time(jPromptTime, time.Second, time.Duration(d.int(jPromptEvalDuration))))
	f.ServerDecode = d.time(jTimingsPredictedMS, time.Millisecond, d.time(jCompletionTime, time.Second, time.Duration(d.int(jEvalDuration))))
	if !f.HasUsage || explicit || v[jTimings].Kind != jsonstream.KindObject {
		return
	}
	var t jsonscan.Ints
	t.Val[tmPromptN], t.Has[tmPromptN] = d.int(jTimingsPromptN), v[jTimingsPromptN].IntOK
	t.Val[tmCacheN], t.Has[tmCacheN] = d.int(jTimingsCacheN), v[jTimingsCacheN].IntOK
	if c, ok := timingsCached(&t, f.InputTokens); ok {
		f.CachedInputTokens = c
	}
}

// int returns field i's count, or 0.
func (d *usageDecoder) int(i int) int {
	if v := &d.s.Values[i]; v.IntOK {
		return v.Int
	}
	return 0
}

// time returns field i, a time in unit, or otherwise when it is not one.
func (d *usageDecoder) time(i int, unit, otherwise time.Duration) time.Duration {
	v := &d.s.Values[i]
	if v.Kind != jsonstream.KindNumber || v.Truncated {
		return otherwise
	}
	if t, ok := durationOf(v.Str, unit); ok {
		return t
	}
	return otherwise
}

// whole reports whether field i is a non-empty string kept whole.
func (d *usageDecoder) whole(i int) bool {
	v := &d.s.Values[i]
	return v.Kind == jsonstream.KindString && len(v.Str) > 0 && !v.Truncated
}

// first returns the first of the fields that is a non-empty string kept
// whole, or "".
func (d *usageDecoder) first(fields ...int) string {
	for _, i := range fields {
		if d.whole(i) {
			return string(d.s.Values[i].Str)
		}
	}
	return ""
}

// text returns a captured string, or a captured integer in decimal.
func (d *usageDecoder) text(i int) string {
	v := &d.s.Values[i]
	switch {
	case v.Kind == jsonstream.KindString:
		return string(v.Str)
	case v.IntOK:
		return strconv.Itoa(v.Int)
	}
	return ""
}
