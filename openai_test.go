package llmmetrics

import (
	"context"
	"io"
	"strings"
	"testing"
	"testing/synctest"
	"time"

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
		{"reasoning_content", chunk(`{"choices":[{"delta":{"reasoning_content":"hmm"}}]}`), []frameView{{Tokens: 1, Reasoning: true}}},
		{"reasoning (vLLM)", chunk(`{"choices":[{"delta":{"reasoning":"hmm","content":null}}]}`), []frameView{{Tokens: 1, Reasoning: true}}},
		{"empty reasoning_content beside an empty content", chunk(`{"choices":[{"delta":{"role":"assistant","content":"","reasoning_content":""}}]}`), []frameView{{}}},
		{"reasoning and content in one delta is an answer chunk", chunk(`{"choices":[{"delta":{"reasoning_content":"so","content":"4"}}]}`), []frameView{{Tokens: 1}}},
		{"two choices, one reasoning and one answering, is an answer chunk", chunk(`{"choices":[{"index":0,"delta":{"reasoning":"so"}},{"index":1,"delta":{"content":"4"}}]}`), []frameView{{Tokens: 2}}},
		{"two reasoning choices", chunk(`{"choices":[{"index":0,"delta":{"reasoning":"so"}},{"index":1,"delta":{"reasoning_content":"hm"}}]}`), []frameView{{Tokens: 2, Reasoning: true}}},
		{"content parts: text", chunk(`{"choices":[{"delta":{"content":[{"type":"text","text":"17 × 23"}]}}]}`), []frameView{{Tokens: 1}}},
		{"content parts: thinking with nested text parts", chunk(`{"choices":[{"delta":{"content":[{"type":"thinking","thinking":[{"type":"text","text":"Okay"}]}]}}]}`), []frameView{{Tokens: 1, Reasoning: true}}},
		{"content parts: thinking then text is an answer chunk", chunk(`{"choices":[{"delta":{"content":[{"type":"thinking","thinking":[{"type":"text","text":"so"}]},{"type":"text","text":"4"}]}}]}`), []frameView{{Tokens: 1}}},
		{"content parts: empty array", chunk(`{"choices":[{"delta":{"content":[]}}]}`), []frameView{{}}},
		{"content parts: empty text", chunk(`{"choices":[{"delta":{"content":[{"type":"text","text":""}]}}]}`), []frameView{{}}},
		{"content parts: thinking with empty inner text", chunk(`{"choices":[{"delta":{"content":[{"type":"thinking","thinking":[{"type":"text","text":""}]}]}}]}`), []frameView{{}}},
		{"content parts: thinking with no inner part", chunk(`{"choices":[{"delta":{"content":[{"type":"thinking","thinking":[]}]}}]}`), []frameView{{}}},
		{"content parts: a reference inside thinking carries nothing", chunk(`{"choices":[{"delta":{"content":[{"type":"thinking","thinking":[{"type":"reference","reference_ids":[3]}]}]}}]}`), []frameView{{}}},
		{"content parts: an image carries nothing", chunk(`{"choices":[{"delta":{"content":[{"type":"image_url","image_url":"https://x/y.png"}]}}]}`), []frameView{{}}},
		{"content parts: text under another type carries nothing", chunk(`{"choices":[{"delta":{"content":[{"type":"reference","text":"x"}]}}]}`), []frameView{{}}},
		{"content parts: untyped text part (type is optional)", chunk(`{"choices":[{"delta":{"content":[{"text":"a"}]}}]}`), []frameView{{Tokens: 1}}},
		{"content parts: untyped thinking part", chunk(`{"choices":[{"delta":{"content":[{"thinking":[{"text":"a"}]}]}}]}`), []frameView{{Tokens: 1, Reasoning: true}}},
		{"content parts: type after the text", chunk(`{"choices":[{"delta":{"content":[{"thinking":[{"text":"a","type":"text"}],"type":"thinking"}]}}]}`), []frameView{{Tokens: 1, Reasoning: true}}},
		{"content parts: the last content member wins", chunk(`{"choices":[{"delta":{"content":[{"type":"text","text":"a"}],"content":[]}}]}`), []frameView{{}}},
		{"content parts: a later string replaces thinking parts", chunk(`{"choices":[{"delta":{"content":[{"type":"thinking","thinking":[{"text":"a"}]}],"content":"b"}}]}`), []frameView{{Tokens: 1}}},
		{"reasoning_details: reasoning.text", chunk(`{"choices":[{"delta":{"reasoning_details":[{"type":"reasoning.text","text":"so","format":"anthropic-claude-v1","index":0}]}}]}`), []frameView{{Tokens: 1, Reasoning: true}}},
		{"reasoning_details: reasoning.summary", chunk(`{"choices":[{"delta":{"reasoning_details":[{"type":"reasoning.summary","summary":"**Plan","format":"openai-responses-v1","index":0}]}}]}`), []frameView{{Tokens: 1, Reasoning: true}}},
		{"reasoning_details: reasoning.encrypted carries nothing", chunk(`{"choices":[{"delta":{"reasoning_details":[{"type":"reasoning.encrypted","data":"gAAAAABo"}]}}]}`), []frameView{{}}},
		{"reasoning_details: a signature alone carries nothing", chunk(`{"choices":[{"delta":{"reasoning_details":[{"type":"reasoning.text","signature":"EqcD","index":0}]}}]}`), []frameView{{}}},
		{"reasoning_details: empty text and empty array carry nothing", chunk(`{"choices":[{"delta":{"reasoning_details":[{"type":"reasoning.text","text":""}]}}]}`) + chunk(`{"choices":[{"delta":{"reasoning_details":[]}}]}`), []frameView{{}, {}}},
		{"reasoning_details: summary text under the text type carries nothing", chunk(`{"choices":[{"delta":{"reasoning_details":[{"type":"reasoning.text","summary":"x"}]}}]}`), []frameView{{}}},
		{"reasoning_details: untyped detail carries nothing", chunk(`{"choices":[{"delta":{"reasoning_details":[{"text":"x"}]}}]}`), []frameView{{}}},
		{"reasoning_details: type after the text, encrypted then text", chunk(`{"choices":[{"delta":{"reasoning_details":[{"type":"reasoning.encrypted","data":"x"},{"text":"a","type":"reasoning.text"}]}}]}`), []frameView{{Tokens: 1, Reasoning: true}}},
		{"reasoning_details beside content is an answer chunk", chunk(`{"choices":[{"delta":{"content":"4","reasoning_details":[{"type":"reasoning.text","text":"so"}]}}]}`), []frameView{{Tokens: 1}}},
		{"reasoning_details not an array", chunk(`{"choices":[{"delta":{"reasoning_details":{"type":"reasoning.text","text":"so"}}}]}`), []frameView{{}}},
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
		{"placeholder usage: content chunks carry, the usage-only chunk does not",
			chunk(`{"choices":[{"delta":{"content":"a"}}],"usage":{"prompt_tokens":5,"completion_tokens":0}}`) +
				chunk(`{"choices":[{"delta":{"content":"b"}}],"usage":{"prompt_tokens":5,"completion_tokens":0}}`) +
				chunk(`{"choices":[{"delta":{"content":"c"}}],"usage":{"prompt_tokens":5,"completion_tokens":0}}`) +
				chunk(`{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":9}}`),
			[]frameView{{Tokens: 1, HasUsage: true, In: 5}, {Tokens: 1, HasUsage: true, In: 5}, {Tokens: 1, HasUsage: true, In: 5}, {HasUsage: true, In: 5, Out: 9}}},
		{"placeholder usage: an empty finish delta with the real usage carries nothing",
			chunk(`{"choices":[{"delta":{"content":"a"}}],"usage":{"prompt_tokens":5,"completion_tokens":0}}`) +
				chunk(`{"choices":[{"delta":{"content":"b"}}],"usage":{"prompt_tokens":5,"completion_tokens":0}}`) +
				chunk(`{"choices":[{"delta":{"content":""},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":9}}`),
			[]frameView{{Tokens: 1, HasUsage: true, In: 5}, {Tokens: 1, HasUsage: true, In: 5}, {HasUsage: true, In: 5, Out: 9}}},
		{"placeholder usage: the last content chunk with the real usage takes what the others did not",
			chunk(`{"choices":[{"delta":{"content":"a"}}],"usage":{"prompt_tokens":5,"completion_tokens":0}}`) +
				chunk(`{"choices":[{"delta":{"content":"b"}}],"usage":{"prompt_tokens":5,"completion_tokens":0}}`) +
				chunk(`{"choices":[{"delta":{"content":"c"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":9}}`),
			[]frameView{{Tokens: 1, HasUsage: true, In: 5}, {Tokens: 1, HasUsage: true, In: 5}, {Tokens: 7, HasUsage: true, In: 5, Out: 9}}},
		{"continuous usage: a count that grows on a chunk without content is no token",
			chunk(`{"choices":[{"delta":{"content":"a"}}],"usage":{"prompt_tokens":5,"completion_tokens":1}}`) +
				chunk(`{"choices":[{"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":3}}`),
			[]frameView{{Tokens: 1, HasUsage: true, In: 5, Out: 1}, {HasUsage: true, In: 5, Out: 3}}},
		{"[DONE]", "data: [DONE]\n\n", []frameView{{Done: true}}},
		{"error object", chunk(`{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}`),
			[]frameView{{Err: "llmmetrics: stream error (requests, code rate_limit_exceeded): Rate limit reached", streamErrType: "requests"}}},
		{"vLLM error object with a numeric code", chunk(`{"error":{"object":"error","message":"boom","type":"InternalServerError","param":null,"code":500}}`),
			[]frameView{{Err: "llmmetrics: stream error (InternalServerError, code 500): boom", streamErrType: "InternalServerError"}}},
		{"error as a string", chunk(`{"error":"upstream closed"}`), []frameView{{Err: "llmmetrics: stream error: upstream closed", streamErrType: "stream_error"}}},
		{"OpenRouter error beside choices and usage: all applied, numeric code as the type",
			chunk(`{"id":"gen-1","error":{"code":400,"message":"Token limit reached"},"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"error"}],"usage":{"prompt_tokens":43,"completion_tokens":10,"total_tokens":53}}`),
			[]frameView{{Tokens: 1, HasUsage: true, In: 43, Out: 10, Err: "llmmetrics: stream error (code 400): Token limit reached", streamErrType: "400"}}},
		{"OpenRouter error with a string code",
			chunk(`{"error":{"code":"server_error","message":"boom"},"choices":[{"delta":{"content":""},"finish_reason":"error"}]}`),
			[]frameView{{Err: "llmmetrics: stream error (code server_error): boom", streamErrType: "server_error"}}},
		{"error after the usage member", chunk(`{"usage":{"prompt_tokens":4,"completion_tokens":2},"error":{"type":"overloaded","message":"m"}}`),
			[]frameView{{HasUsage: true, In: 4, Out: 2, Err: "llmmetrics: stream error (overloaded): m", streamErrType: "overloaded"}}},
		{"error null is no error", chunk(`{"error":null,"choices":[{"delta":{"content":"a"}}]}`), []frameView{{Tokens: 1}}},
		{"responses text delta", "event: response.output_text.delta\n" + chunk(`{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi","sequence_number":4}`), []frameView{{Tokens: 1}}},
		{"responses empty delta", chunk(`{"type":"response.output_text.delta","delta":""}`), []frameView{{}}},
		{"responses reasoning_text delta", chunk(`{"type":"response.reasoning_text.delta","delta":"so"}`), []frameView{{Tokens: 1, Reasoning: true}}},
		{"responses reasoning summary delta", chunk(`{"type":"response.reasoning_summary_text.delta","delta":"so"}`), []frameView{{Tokens: 1, Reasoning: true}}},
		{"responses empty reasoning delta", chunk(`{"type":"response.reasoning_text.delta","delta":""}`), []frameView{{}}},
		{"responses refusal delta", chunk(`{"type":"response.refusal.delta","delta":"no"}`), []frameView{{Tokens: 1}}},
		{"responses function call arguments delta", chunk(`{"type":"response.function_call_arguments.delta","delta":"{\""}`), []frameView{{Tokens: 1}}},
		{"responses done event carries none", chunk(`{"type":"response.output_text.done","text":"Hi"}`), []frameView{{}}},
		{"responses created carries none", chunk(`{"type":"response.created","response":{"usage":null,"output":[]}}`), []frameView{{}}},
		{"responses completed", chunk(`{"type":"response.completed","response":{"status":"completed","usage":{"input_tokens":7,"output_tokens":30,"total_tokens":37}}}`),
			[]frameView{{Done: true, HasUsage: true, In: 7, Out: 30}}},
		{"responses incomplete", chunk(`{"type":"response.incomplete","response":{"status":"incomplete","usage":{"input_tokens":7,"output_tokens":16}}}`),
			[]frameView{{Done: true, HasUsage: true, In: 7, Out: 16}}},
		{"responses failed", chunk(`{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"The model failed"}}}`),
			[]frameView{{Err: "llmmetrics: stream error (code server_error): The model failed", streamErrType: "server_error"}}},
		{"responses failed with usage", chunk(`{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"m"},"usage":{"input_tokens":7,"output_tokens":3,"output_tokens_details":{"reasoning_tokens":2}}}}`),
			[]frameView{{HasUsage: true, In: 7, Out: 3, ReasoningOut: 2, Err: "llmmetrics: stream error (code server_error): m", streamErrType: "server_error"}}},
		{"responses error event", "event: error\n" + chunk(`{"type":"error","code":"ERR_SOMETHING","message":"Something went wrong","param":null,"sequence_number":1}`),
			[]frameView{{Err: "llmmetrics: stream error (code ERR_SOMETHING): Something went wrong", streamErrType: "ERR_SOMETHING"}}},
		{"responses completed with reasoning tokens (inside output_tokens)", chunk(`{"type":"response.completed","response":{"usage":{"input_tokens":40,"output_tokens":220,"output_tokens_details":{"reasoning_tokens":192},"total_tokens":260}}}`),
			[]frameView{{Done: true, HasUsage: true, In: 40, Out: 220, ReasoningOut: 192}}},
		{"chat reasoning tokens inside completion_tokens (OpenAI)", chunk(`{"choices":[],"usage":{"prompt_tokens":20,"completion_tokens":214,"total_tokens":234,"completion_tokens_details":{"reasoning_tokens":192}}}`),
			[]frameView{{HasUsage: true, In: 20, Out: 214, ReasoningOut: 192}}},
		{"chat reasoning tokens outside completion_tokens (xAI: total = prompt + completion + reasoning)", chunk(`{"choices":[],"usage":{"prompt_tokens":19,"completion_tokens":6,"total_tokens":182,"completion_tokens_details":{"reasoning_tokens":157}}}`),
			[]frameView{{HasUsage: true, In: 19, Out: 163, ReasoningOut: 157}}},
		{"reasoning tokens within the completion count, without a total, are taken as inside", chunk(`{"choices":[],"usage":{"prompt_tokens":19,"completion_tokens":160,"completion_tokens_details":{"reasoning_tokens":157}}}`),
			[]frameView{{HasUsage: true, In: 19, Out: 160, ReasoningOut: 157}}},
		{"reasoning tokens above the completion count cannot be inside it", chunk(`{"choices":[],"usage":{"prompt_tokens":19,"completion_tokens":35,"total_tokens":54,"completion_tokens_details":{"reasoning_tokens":223}}}`),
			[]frameView{{HasUsage: true, In: 19, Out: 35 + 223, ReasoningOut: 223}}},
		{"cached tokens (prompt_tokens_details)", chunk(`{"choices":[],"usage":{"prompt_tokens":2006,"completion_tokens":300,"prompt_tokens_details":{"cached_tokens":1920}}}`),
			[]frameView{{HasUsage: true, In: 2006, Out: 300, Cached: 1920}}},
		{"DeepSeek prompt_cache_hit_tokens", chunk(`{"choices":[],"usage":{"prompt_tokens":1052,"completion_tokens":5,"prompt_cache_hit_tokens":1024,"prompt_cache_miss_tokens":28}}`),
			[]frameView{{HasUsage: true, In: 1052, Out: 5, Cached: 1024}}},
		{"a cached count above the prompt is not believed", chunk(`{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":11}}}`),
			[]frameView{{HasUsage: true, In: 10, Out: 5}}},
		{"cached tokens null", chunk(`{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":null}}}`),
			[]frameView{{HasUsage: true, In: 10, Out: 5}}},
		{"responses completed with cached tokens", chunk(`{"type":"response.completed","response":{"usage":{"input_tokens":2006,"input_tokens_details":{"cached_tokens":1920},"output_tokens":300}}}`),
			[]frameView{{Done: true, HasUsage: true, In: 2006, Out: 300, Cached: 1920}}},
		{"details null", chunk(`{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"completion_tokens_details":null}}`),
			[]frameView{{HasUsage: true, In: 1, Out: 2}}},
		{"Groq x_groq usage", chunk(`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"x_groq":{"id":"req_1","usage":{"queue_time":0.04,"prompt_tokens":36,"prompt_time":0.004,"completion_tokens":8,"completion_time":0.03,"total_tokens":44,"total_time":0.03}}}`),
			[]frameView{{HasUsage: true, In: 36, Out: 8}}},
		{"Groq top-level usage wins over x_groq usage", chunk(`{"choices":[],"usage":{"prompt_tokens":36,"completion_tokens":9},"x_groq":{"usage":{"prompt_tokens":1,"completion_tokens":1}}}`),
			[]frameView{{HasUsage: true, In: 36, Out: 9}}},
		{"Groq x_groq id only", chunk(`{"choices":[{"delta":{"role":"assistant","content":""}}],"x_groq":{"id":"req_1"}}`), []frameView{{}}},
		{"Groq x_groq error with usage", chunk(`{"choices":[{"delta":{},"finish_reason":"stop"}],"x_groq":{"error":"stopped: capacity","usage":{"prompt_tokens":5,"completion_tokens":3}}}`),
			[]frameView{{HasUsage: true, In: 5, Out: 3, Err: "llmmetrics: stream error: stopped: capacity", streamErrType: "stream_error"}}},
		{"Groq empty x_groq error is none", chunk(`{"choices":[{"delta":{"content":"a"}}],"x_groq":{"error":""}}`), []frameView{{Tokens: 1}}},
		{"no final blank line: Flush reports the frame", `data: {"choices":[{"delta":{"content":"a"}}]}`, []frameView{{Tokens: 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := otelErrors(t)
			assert.Equal(t, tt.want, countsOnly(decodePieces(newOpenAIDecoder(), []byte(tt.in))))
			assert.Empty(t, errs())
		})
	}
}

// A content event allocates nothing once the decoder's buffers have grown.
func TestOpenAIDecodeContentEventAllocs(t *testing.T) {
	events := map[string][]byte{
		"chat content":          []byte(`data: {"id":"chatcmpl-AZ9kQ2mVb1rT7xY3","object":"chat.completion.chunk","created":1731511200,"model":"gpt-4o-mini","system_fingerprint":"fp_0ba0d124f1","choices":[{"index":0,"delta":{"content":" Paris"},"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n"),
		"split event":           []byte(`data: {"id":"chatcmpl-AZ9kQ2mVb1rT7xY3","choices":[{"index":0,"delta":{"content":" Paris"}}]}` + "\r\n\r\n"),
		"tool call":             []byte(`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":1}"}}]}}]}` + "\n\n"),
		"responses":             []byte(`data: {"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi","sequence_number":4}` + "\n\n"),
		"continuous":            []byte(`data: {"choices":[{"delta":{"content":"a"}}],"usage":{"prompt_tokens":5,"completion_tokens":2}}` + "\n\n"),
		"thinking part":         []byte(`data: {"id":"7c1f","object":"chat.completion.chunk","created":1756300000,"model":"magistral-medium-2509","choices":[{"index":0,"delta":{"content":[{"type":"thinking","thinking":[{"type":"text","text":" for 17 times 23."}]}]},"finish_reason":null}]}` + "\n\n"),
		"text part":             []byte(`data: {"id":"7c1f","choices":[{"index":0,"delta":{"content":[{"type":"text","text":"17 × 23"}]},"finish_reason":null}]}` + "\n\n"),
		"reasoning_content":     []byte(`data: {"id":"8f7e","choices":[{"index":0,"delta":{"reasoning_content":", 2+2","role":"assistant"}}],"usage":null}` + "\n\n"),
		"xai usage every chunk": []byte(`data: {"id":"x","choices":[{"index":0,"delta":{"content":"Hi","role":"assistant"}}],"usage":{"prompt_tokens":38,"completion_tokens":3,"total_tokens":41,"completion_tokens_details":{"reasoning_tokens":0}}}` + "\n\n"),
		"reasoning_details":     []byte(`data: {"id":"gen-1758886222-GCs7FInUrjLNXlZuOEsF","provider":"Google","model":"anthropic/claude-sonnet-4","object":"chat.completion.chunk","created":1758886222,"choices":[{"index":0,"delta":{"role":"assistant","content":"","reasoning_details":[{"type":"reasoning.text","text":" access","format":"anthropic-claude-v1","index":0}]},"finish_reason":null}]}` + "\n\n"),
		"responses reasoning":   []byte(`data: {"type":"response.reasoning_summary_text.delta","sequence_number":4,"item_id":"rs_1","output_index":0,"summary_index":0,"delta":"**Checking**","obfuscation":"a1B2c3"}` + "\n\n"),
	}
	for name, ev := range events {
		t.Run(name, func(t *testing.T) {
			d := newOpenAIDecoder()
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
			with := decodePieces(newOpenAIDecoder(), []byte(tt.in))
			without := decodePieces(newOpenAITestDecoder(false, nil), []byte(tt.in))
			assert.Equal(t, tt.want, countsOnly(with))
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

// A proxy puts a placeholder usage (completion_tokens 0) on
// every content chunk and the real usage at the end. Ten content chunks
// 10 ms apart are ten chunks, whatever the usage says: TTFT 10 ms, E2EL
// 100 ms (the last content chunk), TPOT 90 ms / (31 − 1) = 3 ms, N = 31.
// Before the fix the first variant gave 1 chunk, TPOT 0 and E2EL 10 ms, the
// second a phantom 11th chunk at 110 ms.
func TestOpenAIPlaceholderUsageTiming(t *testing.T) {
	for _, file := range []string{"placeholder_usage_usage_chunk.sse", "placeholder_usage_empty_finish.sse"} {
		t.Run(file, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				data := readFixture(t, file)
				ends := eventEnds(data)
				require.Len(t, ends, 12, "10 content chunks, the real usage, [DONE]")
				// Event k arrives (k+1)·10 ms after Start (the header comments
				// come with the first).
				var pieces []piece
				prev := 0
				for _, e := range ends {
					pieces = append(pieces, piece{10 * time.Millisecond, string(data[prev:e])})
					prev = e
				}
				tr, _ := newTestTracker(t)
				start := time.Now()
				req := tr.Start(context.Background())
				rc := NewReader(req, &timedBody{pieces: pieces}, newOpenAIDecoder())
				var got []byte
				buf := make([]byte, 1<<16) // one Read per piece: a piece's delay is taken once
				for {
					n, err := rc.Read(buf)
					got = append(got, buf[:n]...)
					if err == io.EOF {
						break
					}
					require.NoError(t, err)
				}
				assert.Equal(t, data, got, "bytes out == bytes in")
				rec := req.End(nil)

				assert.Equal(t, 10, rec.Chunks)
				assert.Equal(t, 31, rec.OutputTokens)
				assert.Equal(t, 12, rec.InputTokens)
				assert.Equal(t, start.Add(120*time.Millisecond), rec.End)
				ttft, ok := rec.TTFT()
				require.True(t, ok)
				assert.Equal(t, 10*time.Millisecond, ttft)
				e2el, ok := rec.E2EL()
				require.True(t, ok)
				assert.Equal(t, 100*time.Millisecond, e2el)
				tpot, ok := rec.TPOT()
				require.True(t, ok)
				assert.Equal(t, 3*time.Millisecond, tpot)
				assert.Equal(t, 10*time.Millisecond, rec.MaxITL)
				assert.Len(t, rec.ITL, 9)
			})
		})
	}
}
