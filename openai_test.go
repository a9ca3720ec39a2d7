package llmmetrics

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOpenAIDecoderFrames(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []frameView
	}{
		{"content", chunk(`{"choices":[{"index":0,"delta":{"content":"Hi"}}]}`), []frameView{{Tokens: 1}}},
		{"role only", chunk(`{"choices":[{"index":0,"delta":{"role":"assistant"}}]}`), []frameView{{}}},
		{"empty content", chunk(`{"choices":[{"index":0,"delta":{"content":""}}]}`), []frameView{{}}},
		{"null content", chunk(`{"choices":[{"index":0,"delta":{"content":null}}]}`), []frameView{{}}},
		{"non-string content", chunk(`{"choices":[{"index":0,"delta":{"content":7}}]}`), []frameView{{}}},
		{"empty delta with finish", chunk(`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`), []frameView{{}}},
		{"reasoning_content", chunk(`{"choices":[{"delta":{"reasoning_content":"hmm"}}]}`), []frameView{{Tokens: 1}}},
		{"reasoning (vLLM)", chunk(`{"choices":[{"delta":{"reasoning":"hmm","content":null}}]}`), []frameView{{Tokens: 1}}},
		{"refusal", chunk(`{"choices":[{"delta":{"refusal":"I can't"}}]}`), []frameView{{Tokens: 1}}},
		{"tool_calls", chunk(`{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{"}}]}}]}`), []frameView{{Tokens: 1}}},
		{"empty tool_calls", chunk(`{"choices":[{"delta":{"tool_calls":[]}}]}`), []frameView{{}}},
		{"legacy function_call", chunk(`{"choices":[{"delta":{"function_call":{"arguments":"x"}}}]}`), []frameView{{Tokens: 1}}},
		{"legacy completions text", chunk(`{"choices":[{"text":" once","index":0}]}`), []frameView{{Tokens: 1}}},
		{"legacy completions empty text", chunk(`{"choices":[{"text":"","finish_reason":"length"}]}`), []frameView{{}}},
		{"three choices, two carry", chunk(`{"choices":[{"index":0,"delta":{"content":"a"}},{"index":1,"delta":{"role":"assistant"}},{"index":2,"delta":{"content":"b"}}]}`), []frameView{{Tokens: 2}}},
		{"last duplicate member wins", chunk(`{"choices":[{"delta":{"content":"a","content":""}}]}`), []frameView{{}}},
		{"escaped member name", chunk(`{"choices":[{"delta":{"\u0063ontent":"a"}}]}`), []frameView{{Tokens: 1}}},
		{"usage null on a content chunk", chunk(`{"choices":[{"delta":{"content":"a"}}],"usage":null}`), []frameView{{Tokens: 1}}},
		{"include_usage chunk", chunk(`{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":12,"total_tokens":21}}`), []frameView{{HasUsage: true, In: 9, Out: 12}}},
		{"usage with a non-integer count ignores it", chunk(`{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":1.5}}`), []frameView{{HasUsage: true, In: 9}}},
		{"usage with no counts", chunk(`{"choices":[],"usage":{"total_tokens":21}}`), []frameView{{}}},
		{"usage on the last content chunk (one usage chunk: heuristic count)",
			chunk(`{"choices":[{"delta":{"content":"!"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":40}}`),
			[]frameView{{Tokens: 1, HasUsage: true, In: 3, Out: 40}}},
		{"continuous usage: exact deltas after the first",
			chunk(`{"choices":[{"delta":{"role":"assistant","content":""}}],"usage":{"prompt_tokens":5,"completion_tokens":0}}`) +
				chunk(`{"choices":[{"delta":{"content":"a b"}}],"usage":{"prompt_tokens":5,"completion_tokens":2}}`) +
				chunk(`{"choices":[{"delta":{"content":"c"}}],"usage":{"prompt_tokens":5,"completion_tokens":3}}`) +
				chunk(`{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":3}}`),
			[]frameView{{HasUsage: true, In: 5}, {Tokens: 2, HasUsage: true, In: 5, Out: 2}, {Tokens: 1, HasUsage: true, In: 5, Out: 3}, {HasUsage: true, In: 5, Out: 3}}},
		{"[DONE]", "data: [DONE]\n\n", []frameView{{Done: true}}},
		{"error object", chunk(`{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}`),
			[]frameView{{Err: "llmmetrics: stream error (requests, code rate_limit_exceeded): Rate limit reached", streamErrType: "requests"}}},
		{"vLLM error object with a numeric code", chunk(`{"error":{"object":"error","message":"boom","type":"InternalServerError","param":null,"code":500}}`),
			[]frameView{{Err: "llmmetrics: stream error (InternalServerError, code 500): boom", streamErrType: "InternalServerError"}}},
		{"error as a string", chunk(`{"error":"upstream closed"}`), []frameView{{Err: "llmmetrics: stream error: upstream closed"}}},
		{"error null is no error", chunk(`{"error":null,"choices":[{"delta":{"content":"a"}}]}`), []frameView{{Tokens: 1}}},
		{"responses text delta", "event: response.output_text.delta\n" + chunk(`{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi","sequence_number":4}`), []frameView{{Tokens: 1}}},
		{"responses empty delta", chunk(`{"type":"response.output_text.delta","delta":""}`), []frameView{{}}},
		{"responses reasoning_text delta", chunk(`{"type":"response.reasoning_text.delta","delta":"so"}`), []frameView{{Tokens: 1}}},
		{"responses reasoning summary delta", chunk(`{"type":"response.reasoning_summary_text.delta","delta":"so"}`), []frameView{{Tokens: 1}}},
		{"responses function call arguments delta", chunk(`{"type":"response.function_call_arguments.delta","delta":"{\""}`), []frameView{{Tokens: 1}}},
		{"responses done event carries none", chunk(`{"type":"response.output_text.done","text":"Hi"}`), []frameView{{}}},
		{"responses created carries none", chunk(`{"type":"response.created","response":{"usage":null,"output":[]}}`), []frameView{{}}},
		{"responses completed", chunk(`{"type":"response.completed","response":{"status":"completed","usage":{"input_tokens":7,"output_tokens":30,"total_tokens":37}}}`),
			[]frameView{{Done: true, HasUsage: true, In: 7, Out: 30}}},
		{"responses incomplete", chunk(`{"type":"response.incomplete","response":{"status":"incomplete","usage":{"input_tokens":7,"output_tokens":16}}}`),
			[]frameView{{Done: true, HasUsage: true, In: 7, Out: 16}}},
		{"responses failed", chunk(`{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"The model failed"}}}`),
			[]frameView{{Err: "llmmetrics: stream error (code server_error): The model failed"}}},
		{"responses error event", "event: error\n" + chunk(`{"type":"error","code":"ERR_SOMETHING","message":"Something went wrong","param":null,"sequence_number":1}`),
			[]frameView{{Err: "llmmetrics: stream error (code ERR_SOMETHING): Something went wrong"}}},
		{"no final blank line: Flush reports the frame", `data: {"choices":[{"delta":{"content":"a"}}]}`, []frameView{{Tokens: 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := otelErrors(t)
			assert.Equal(t, tt.want, decodePieces(NewOpenAIDecoder(), []byte(tt.in)))
			assert.Empty(t, errs())
		})
	}
}

// A content event allocates nothing once the decoder's buffers have grown.
func TestOpenAIDecodeContentEventAllocs(t *testing.T) {
	events := map[string][]byte{
		"chat content": []byte(`data: {"id":"chatcmpl-AZ9kQ2mVb1rT7xY3","object":"chat.completion.chunk","created":1731511200,"model":"gpt-4o-mini","system_fingerprint":"fp_0ba0d124f1","choices":[{"index":0,"delta":{"content":" Paris"},"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n"),
		"split event":  []byte(`data: {"id":"chatcmpl-AZ9kQ2mVb1rT7xY3","choices":[{"index":0,"delta":{"content":" Paris"}}]}` + "\r\n\r\n"),
		"tool call":    []byte(`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":1}"}}]}}]}` + "\n\n"),
		"responses":    []byte(`data: {"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi","sequence_number":4}` + "\n\n"),
		"continuous":   []byte(`data: {"choices":[{"delta":{"content":"a"}}],"usage":{"prompt_tokens":5,"completion_tokens":2}}` + "\n\n"),
	}
	for name, ev := range events {
		t.Run(name, func(t *testing.T) {
			d := NewOpenAIDecoder()
			tokens := 0
			emit := func(f Frame) { tokens += f.Tokens }
			half := len(ev) / 2
			d.Decode(ev, emit) // warm up the buffers
			allocs := testing.AllocsPerRun(100, func() {
				d.Decode(ev[:half], emit)
				d.Decode(ev[half:], emit)
			})
			assert.Zero(t, allocs)
			require.Positive(t, tokens)
		})
	}
}

// The scan cache (jsonscan.Cache) must give the frames a full walk gives,
// and answer the events it is meant for.
func TestScanCache(t *testing.T) {
	const pre, post = `{"id":"c1","choices":[{"index":0,"delta":{"content":`, `},"finish_reason":null}]}`
	ev := func(content string) string { return chunk(pre + content + post) }
	tests := []struct {
		name string
		in   string
		want []frameView
		hits int // events answered by the cache
	}{
		{"same shape, new text", ev(`"a"`) + ev(`"bcd"`) + ev(`"\"\u00e9"`), []frameView{{Tokens: 1}, {Tokens: 1}, {Tokens: 1}}, 2},
		{"text becomes empty", ev(`"a"`) + ev(`""`) + ev(`"b"`), []frameView{{Tokens: 1}, {}, {Tokens: 1}}, 0},
		{"a quote ends the string early", ev(`"a"`) + ev(`"a","content":""`), []frameView{{Tokens: 1}, {}}, 0},
		{"an escaped quote runs into the tail (malformed)", ev(`"a"`) + chunk(pre+`"a\"`+post), []frameView{{Tokens: 1}, {}}, 0},
		{"other bytes change", ev(`"a"`) + chunk(`{"id":"c2","choices":[{"index":0,"delta":{"content":"b"},"finish_reason":null}]}`), []frameView{{Tokens: 1}, {Tokens: 1}}, 0},
		{"empty delta keeps the old cache", ev(`"a"`) + chunk(`{"choices":[{"delta":{}}]}`) + ev(`"b"`), []frameView{{Tokens: 1}, {}, {Tokens: 1}}, 1},
		{"usage chunk between", ev(`"a"`) + chunk(`{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1}}`) + ev(`"b"`),
			[]frameView{{Tokens: 1}, {HasUsage: true, In: 1, Out: 1}, {Tokens: 1}}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := otelErrors(t)
			with := decodePieces(NewOpenAIDecoder(), []byte(tt.in))
			without := decodePieces(newOpenAITestDecoder(false, nil), []byte(tt.in))
			assert.Equal(t, tt.want, with)
			assert.Equal(t, without, with)

			hits := 0
			decodePieces(newOpenAITestDecoder(true, &hits), []byte(tt.in))
			if strings.Contains(tt.name, "malformed") {
				assert.Len(t, errs(), 3, "one report per decoder")
			} else {
				assert.Empty(t, errs())
			}
			assert.Equal(t, tt.hits, hits)
		})
	}
}
