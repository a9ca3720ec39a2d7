package llmmetrics

import (
	"math"

	"go.opentelemetry.io/otel"
)

// ---------------------------------------------------------------------------
// Anthropic Messages SSE

// NewAnthropicDecoder returns a Decoder for one Anthropic Messages SSE stream:
//
//   - message_start: HasInput with InputTokens = input_tokens plus
//     cache_creation_input_tokens plus cache_read_input_tokens (the whole
//     prompt); its usage.output_tokens is a placeholder (usually 1) and is
//     ignored, so a stream cut before message_delta keeps its chunk count;
//   - content_block_delta: a text_delta, thinking_delta or input_json_delta
//     with non-empty text carries 1 token (a lower bound); signature_delta
//     carries none;
//   - message_delta: HasUsage with the cumulative usage.output_tokens (input
//     counts kept from message_start unless the event sends its own);
//   - message_stop: Done; error: Err; ping and the other events: nothing.
//
// Data that is not a JSON object is reported through otel.Handle
// (ErrMalformedFrame) and carries nothing. The options are WithMaxFrameBytes.
func NewAnthropicDecoder(opts ...DecoderOption) Decoder {
	return newAnthropicDecoder(opts, true)
}

func newAnthropicDecoder(opts []DecoderOption, cache bool) *sseDecoder {
	a := &anthropicInterp{}
	a.cache.off = !cache
	d := newSSE("anthropic", a.interpret, opts)
	d.cache = &a.cache
	return d
}

type anthropicInterp struct {
	j       jsonScanner
	cache   scanCache
	in, out int
}

func (a *anthropicInterp) interpret(_, data []byte) Frame {
	f := a.cache.scan(&a.j, data)
	if f == nil {
		otel.Handle(malformed("anthropic", data, "is not a JSON object"))
		return Frame{}
	}
	return a.frame(f, data)
}

func (a *anthropicInterp) frame(f *facts, data []byte) Frame {
	if f.err || f.typ == kindError {
		return Frame{Err: parseStreamError(data, errTopLevel)}
	}
	switch f.typ {
	case kindMessageStart:
		return a.input(&f.msgUsage)
	case kindContentBlockDelta:
		if f.delta.carriesAnthropic() {
			return Frame{Tokens: 1}
		}
	case kindMessageDelta:
		return a.usage(&f.usage)
	case kindMessageStop:
		return Frame{Done: true}
	}
	return Frame{}
}

// input takes the prompt size of message_start (its output count is a
// placeholder, not a count).
func (a *anthropicInterp) input(u *usageVals) Frame {
	if !(u.ok[useInputTokens] || u.ok[useCacheCreation] || u.ok[useCacheRead]) {
		return Frame{}
	}
	a.in = satAdd(satAdd(u.get(useInputTokens), u.get(useCacheCreation)), u.get(useCacheRead))
	return Frame{HasInput: true, InputTokens: a.in}
}

func (a *anthropicInterp) usage(u *usageVals) Frame {
	hasIn := u.ok[useInputTokens] || u.ok[useCacheCreation] || u.ok[useCacheRead]
	if !hasIn && !u.ok[useOutputTokens] {
		return Frame{}
	}
	if hasIn {
		a.in = satAdd(satAdd(u.get(useInputTokens), u.get(useCacheCreation)), u.get(useCacheRead))
	}
	if u.ok[useOutputTokens] {
		a.out = u.v[useOutputTokens]
	}
	return Frame{HasUsage: true, InputTokens: a.in, OutputTokens: a.out}
}

func satAdd(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}
