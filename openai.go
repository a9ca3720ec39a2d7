package llmmetrics

import (
	"bytes"

	"go.opentelemetry.io/otel"
)

// ---------------------------------------------------------------------------
// OpenAI-compatible SSE

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
// not a JSON object is reported through otel.Handle (ErrMalformedFrame) and
// carries nothing. The options are WithMaxFrameBytes.
func NewOpenAIDecoder(opts ...DecoderOption) Decoder {
	return newOpenAIDecoder(opts, true)
}

func newOpenAIDecoder(opts []DecoderOption, cache bool) *sseDecoder {
	o := &openAIInterp{}
	o.cache.off = !cache
	d := newSSE("openai", o.interpret, opts)
	d.cache = &o.cache
	return d
}

type openAIInterp struct {
	j     jsonScanner
	cache scanCache
	// continuous is set once a chunk carried both choices and usage
	// (vLLM continuous_usage_stats); prevOut is the last completion_tokens.
	continuous bool
	prevOut    int
}

func isDoneMarker(data []byte) bool {
	return string(bytes.TrimSpace(data)) == "[DONE]"
}

func (o *openAIInterp) interpret(_, data []byte) Frame {
	if isDoneMarker(data) {
		return Frame{Done: true}
	}
	f := o.cache.scan(&o.j, data)
	if f == nil {
		otel.Handle(malformed("openai", data, "is not a JSON object"))
		return Frame{}
	}
	return o.frame(f, data)
}

func (o *openAIInterp) frame(f *facts, data []byte) Frame {
	switch {
	case f.err:
		return Frame{Err: parseStreamError(data, errTopLevel)}
	case f.typ == kindError:
		return Frame{Err: parseStreamError(data, errResponsesEvent)}
	case f.typ == kindRespFailed:
		fr := Frame{Err: parseStreamError(data, errResponseFailed)}
		fr.HasUsage, fr.InputTokens, fr.OutputTokens = f.respUsage.inOut(useInputTokens, useOutputTokens)
		return fr
	case f.typ == kindRespDelta:
		if f.deltaStr {
			return Frame{Tokens: 1}
		}
		return Frame{}
	case f.typ == kindRespCompleted || f.typ == kindRespIncomplete:
		fr := Frame{Done: true}
		fr.HasUsage, fr.InputTokens, fr.OutputTokens = f.respUsage.inOut(useInputTokens, useOutputTokens)
		return fr
	case f.typ == kindRespOther:
		return Frame{}
	}
	fr := Frame{Tokens: f.carrying}
	fr.HasUsage, fr.InputTokens, fr.OutputTokens = f.usage.inOut(usePromptTokens, useCompletionTokens)
	if fr.HasUsage {
		if f.choices > 0 {
			if o.continuous {
				fr.Tokens = max(0, fr.OutputTokens-o.prevOut)
			}
			o.continuous = true
		}
		o.prevOut = fr.OutputTokens
	}
	return fr
}
