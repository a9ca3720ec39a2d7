package llmmetrics

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAnthropicDecoderFrames(t *testing.T) {
	ev := func(name, payload string) string { return "event: " + name + "\ndata: " + payload + "\n\n" }
	start := ev("message_start", `{"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":10,"cache_creation_input_tokens":5,"cache_read_input_tokens":20,"output_tokens":1}}}`)
	tests := []struct {
		name string
		in   string
		want []frameView
	}{
		{"message_start sums the prompt and ignores its placeholder output count", start, []frameView{{HasInput: true, In: 35, Cached: 20, CacheWrite: 5}}},
		{"text_delta", ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}`), []frameView{{Tokens: 1}}},
		{"empty text_delta", ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":""}}`), []frameView{{}}},
		{"thinking_delta", ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}`), []frameView{{Tokens: 1, Reasoning: true}}},
		{"empty thinking_delta", ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":""}}`), []frameView{{}}},
		{"input_json_delta", ev("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\""}}`), []frameView{{Tokens: 1}}},
		{"signature_delta", ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQB"}}`), []frameView{{}}},
		{"text under the wrong delta type", ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","text":"x"}}`), []frameView{{}}},
		{"message_delta keeps the input count",
			start + ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}`),
			[]frameView{{HasInput: true, In: 35, Cached: 20, CacheWrite: 5}, {HasUsage: true, In: 35, Out: 15, Cached: 20, CacheWrite: 5}}},
		{"message_delta with its own input counts",
			start + ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":10,"cache_creation_input_tokens":5,"cache_read_input_tokens":25,"output_tokens":15}}`),
			[]frameView{{HasInput: true, In: 35, Cached: 20, CacheWrite: 5}, {HasUsage: true, In: 40, Out: 15, Cached: 25, CacheWrite: 5}}},
		{"message_delta with thinking tokens (inside output_tokens)",
			start + ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":61,"output_tokens_details":{"thinking_tokens":49}}}`),
			[]frameView{{HasInput: true, In: 35, Cached: 20, CacheWrite: 5}, {HasUsage: true, In: 35, Out: 61, ReasoningOut: 49, Cached: 20, CacheWrite: 5}}},
		{"message_start's thinking placeholder is ignored",
			ev("message_start", `{"type":"message_start","message":{"usage":{"input_tokens":3,"output_tokens":1,"output_tokens_details":{"thinking_tokens":1}}}}`),
			[]frameView{{HasInput: true, In: 3}}},
		{"an error member beside usage: both applied",
			ev("message_delta", `{"type":"message_delta","usage":{"output_tokens":7},"error":{"type":"overloaded_error","message":"Overloaded"}}`),
			[]frameView{{HasUsage: true, Out: 7, Err: "llmmetrics: stream error (overloaded_error): Overloaded", streamErrType: "overloaded_error"}}},
		{"message_stop", ev("message_stop", `{"type":"message_stop"}`), []frameView{{Done: true}}},
		{"ping", ev("ping", `{"type": "ping"}`), []frameView{{}}},
		{"error", ev("error", `{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}`),
			[]frameView{{Err: "llmmetrics: stream error (overloaded_error): Overloaded", streamErrType: "overloaded_error"}}},
		{"unknown event", ev("content_block_citation", `{"type":"content_block_citation","text":"x"}`), []frameView{{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := otelErrors(t)
			assert.Equal(t, tt.want, countsOnly(decodePieces(newAnthropicDecoder(), []byte(tt.in))))
			assert.Empty(t, errs())
		})
	}
}

// A content event allocates nothing once the decoder's buffers have grown.
func TestAnthropicDecodeContentEventAllocs(t *testing.T) {
	events := map[string][]byte{
		"text_delta":     []byte("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n"),
		"thinking_delta": []byte("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\" Sum 378.\"}}\n\n"),
		"message_delta":  []byte("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":61,\"output_tokens_details\":{\"thinking_tokens\":49}}}\n\n"),
	}
	for name, ev := range events {
		t.Run(name, func(t *testing.T) {
			d := newAnthropicDecoder()
			frames := 0
			emit := func(f Frame) { frames += f.Tokens + f.OutputTokens }
			d.Decode(ev, emit)
			assert.Zero(t, testing.AllocsPerRun(100, func() { d.Decode(ev, emit) }))
			require.Positive(t, frames)
		})
	}
}
