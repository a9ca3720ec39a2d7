package llmmetrics

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// answerSeen is who answered a stream and why it ended, as its frames say:
// the last model and id told, and every finish reason in order.
type answerSeen struct{ model, id, reasons string }

func answerOf(frames []frameView) answerSeen {
	var a answerSeen
	var reasons []string
	for _, f := range frames {
		if f.Model != "" {
			a.model = f.Model
		}
		if f.ID != "" {
			a.id = f.ID
		}
		if f.Finish != "" {
			reasons = append(reasons, f.Finish)
		}
	}
	a.reasons = strings.Join(reasons, ",")
	return a
}

// fixtureAnswers is who answered each stream of testdata/sse and why it
// ended, read by hand from the files: chat chunks' model, id and
// choices[].finish_reason; the Responses API's response.model, id and
// status (incomplete_details.reason when incomplete); Anthropic's
// message.model, id and delta.stop_reason; Cohere's id and
// delta.finish_reason (no model in its stream).
var fixtureAnswers = map[string]answerSeen{
	"anthropic_cache_write.sse":                          {"claude-sonnet-4-5", "msg_01XFDUDYJgAACzvnptvVoYEL", "end_turn"},
	"anthropic_error.sse":                                {"claude-opus-4-1-20250805", "msg_01A9VnZ3kYb2wq8e5JxH4tLm", ""},
	"anthropic_thinking_tools.sse":                       {"claude-sonnet-4-5-20250929", "msg_01XFDUDYJgAACzvnptvVoYEL", "tool_use"},
	"anthropic_thinking_usage_details.sse":               {"claude-opus-4-8", "msg_01Hq7Xv3Lm9Pk2Wn5Rt8Yb4C", "end_turn"},
	"azure_content_filter.sse":                           {"gpt-4o-2024-11-20", "chatcmpl-C1a2B3c4D5e6F7g8H9i0J1k2L3m4", "stop"},
	"azure_content_filter_blocked.sse":                   {"gpt-4o-2024-11-20", "chatcmpl-C9z8Y7x6W5v4U3t2S1r0Q9p8O7n6", "content_filter"},
	"cohere_chat.sse":                                    {"", "5f1a9c2e-7b3d-4e8a-9c61-2d4b8e0f3a17", "COMPLETE"},
	"cohere_error.sse":                                   {"", "e9a4c3b1-2f8d-4d6e-b7a0-5c1e3f9d2b68", "ERROR"},
	"cohere_thinking.sse":                                {"", "b2d7e1f0-4c3a-4a9b-8e2d-1f6a5c7b9d03", "COMPLETE"},
	"cohere_tool_call.sse":                               {"", "0c6e4b7a-31d2-4f4e-8a5b-6e9d2c1f7b40", "TOOL_CALL"},
	"deepseek_cache_hit.sse":                             {"deepseek-chat", "9d1f2c3b-4a5e-4f60-8b7c-6d5e4f3a2b1c", "stop"},
	"deepseek_reasoning_content.sse":                     {"deepseek-reasoner", "3b8f0d2a-91c4-4e7a-b6d5-2f1e0c9b8a76", "stop"},
	"groq_reasoning.sse":                                 {"qwen/qwen3-32b", "chatcmpl-9e8d7c6b-5a4f-3e2d-1c0b-a9f8e7d6c5b4", "stop"},
	"groq_x_groq_usage.sse":                              {"llama-3.3-70b-versatile", "chatcmpl-5b1e2d3c-4f5a-6b7c-8d9e-0f1a2b3c4d5e", "stop"},
	"llamacpp_chat_usage_timings.sse":                    {"m", "chatcmpl-2eUQGxa16cMNYMQWYQmK2JURiplAqwdV", "length"},
	"llamacpp_completions.sse":                           {"m", "chatcmpl-3ssEHUyJ0abXVn4J7G5qn4LzSmwdsKU8", "length"},
	"llamacpp_prefix_first.sse":                          {"random", "chatcmpl-SzzBvBHTX3BxSRfCgloUi2fruIy3yPLB", "length"},
	"llamacpp_prefix_reused.sse":                         {"random", "chatcmpl-ZdrYlYhykZlc510kk3wHfKe6Nv2vA9D6", "length"},
	"mistral_magistral_thinking.sse":                     {"magistral-medium-2509", "7c1f0e5b9a2d4c3e8f6a1b2c3d4e5f60", "stop"},
	"openai_chat.sse":                                    {"gpt-4o-mini-2024-07-18", "chatcmpl-AZ9kQ2mVb1rT7xY3", "stop"},
	"openai_chat_cached.sse":                             {"gpt-4o-2024-08-06", "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG", "stop"},
	"openai_chat_reasoning_usage.sse":                    {"o4-mini-2025-04-16", "chatcmpl-C2b3C4d5E6f7G8h9I0j1K2l3M4n5", "stop"},
	"openai_completions.sse":                             {"gpt-3.5-turbo-instruct", "cmpl-AZ9kX0cVd3eR6tYu", "length"},
	"openai_error.sse":                                   {"gpt-4o-2024-08-06", "chatcmpl-AZ9kZ5bNc8dW2xQe", ""},
	"openai_keepalive_crlf.sse":                          {"gpt-4o-mini", "chatcmpl-AZ9kb7cPd0eX4yRf", "stop"},
	"openai_reasoning.sse":                               {"deepseek-reasoner", "0f3c8a52-7d1e-4b7a-9a0e-5c2d8e6f1b34", "stop"},
	"openai_responses.sse":                               {"o4-mini-2025-04-16", "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b", "completed"},
	"openai_responses_cached.sse":                        {"gpt-4.1-2025-04-14", "resp_67ccd3a9da748190baa7f1570fe91ac604becb25c45c1d41", "completed"},
	"openai_responses_incomplete.sse":                    {"gpt-4.1-mini-2025-04-14", "resp_68a1f0c2b7d48190a3e5c6d7f8091a2b0c3d4e5f6a7b8c9d", "max_output_tokens"},
	"openai_responses_reasoning_usage.sse":               {"o4-mini-2025-04-16", "resp_68a1f3d4e5f68190a7b8c9d0e1f2a3b40c5d6e7f8a9b0c1d", "completed"},
	"openai_tools.sse":                                   {"gpt-4o-mini-2024-07-18", "chatcmpl-AZ9kT9nW4cPq0sLm", "tool_calls"},
	"openrouter_error_with_usage.sse":                    {"openai/gpt-4o-mini", "gen-1755012345-Xq7pLmN2vR8tKd4sWb9c", "error"},
	"openrouter_reasoning_details_summary_encrypted.sse": {"openai/gpt-5-2025-08-07", "gen-1773324233-7bbCvshdLdDQrXb5TMah", "stop"},
	"openrouter_reasoning_details_text.sse":              {"anthropic/claude-sonnet-4", "gen-1758886222-GCs7FInUrjLNXlZuOEsF", "stop"},
	"placeholder_usage_empty_finish.sse":                 {"deepseek-chat", "5e1c7a90-2d4b-4f6e-8a3c-9b0d1e2f3a4b", "stop"},
	"placeholder_usage_usage_chunk.sse":                  {"deepseek-chat", "5e1c7a90-2d4b-4f6e-8a3c-9b0d1e2f3a4b", ""},
	"vllm_continuous_usage.sse":                          {"meta-llama/Llama-3.1-8B-Instruct", "chatcmpl-8f2b1c9e4d7a4e0b9c3f5a6d7e8f9a0b", "stop"},
	"xai_reasoning_usage.sse":                            {"grok-3-mini", "8f7e6d5c-4b3a-4291-8f7e-6d5c4b3a2918", "stop"},
	"xai_usage_every_chunk.sse":                          {"grok-3", "d2b7c1a4-6e3f-4a8b-9c0d-1e2f3a4b5c6d", "stop"},
}

// TestFixtureAnswers: every SSE fixture tells who answered and why it ended,
// whole and split at every byte.
func TestFixtureAnswers(t *testing.T) {
	names, err := filepath.Glob(filepath.Join("testdata", "sse", "*.sse"))
	require.NoError(t, err)
	require.Len(t, fixtureAnswers, len(names), "every fixture of testdata/sse has its row")
	for _, fx := range fixtures {
		t.Run(fx.file, func(t *testing.T) {
			want, ok := fixtureAnswers[fx.file]
			require.True(t, ok, "no row in fixtureAnswers")
			data := readFixture(t, fx.file)
			assert.Equal(t, want, answerOf(decodePieces(fx.dec(), data)))
			for cut := 0; cut <= len(data); cut++ {
				if !assert.Equal(t, want, answerOf(decodePieces(fx.dec(), data[:cut], data[cut:])), "split at %d", cut) {
					break
				}
			}
		})
	}
}

// TestAnswerInfoFrames: the model and id go on the first frame that tells
// them and on a frame that tells another; each choice's finish reason once.
func TestAnswerInfoFrames(t *testing.T) {
	chunk := func(s string) string { return "data: " + s + "\n\n" }
	for _, tc := range []struct {
		name string
		dec  func() Decoder
		in   string
		want []frameView // Model, ID and Finish only
	}{
		{"told once", openAI, chunk(`{"id":"c1","model":"m","choices":[{"delta":{"content":"a"}}]}`) +
			chunk(`{"id":"c1","model":"m","choices":[{"delta":{"content":"b"}}]}`),
			[]frameView{{Model: "m", ID: "c1"}, {}}},
		{"a new model is told", openAI, chunk(`{"model":"m1","choices":[]}`) + chunk(`{"model":"m2","choices":[]}`) + chunk(`{"model":"m1","choices":[]}`),
			[]frameView{{Model: "m1"}, {Model: "m2"}, {Model: "m1"}}},
		{"escaped and invalid UTF-8 strings read as encoding/json does", openAI, chunk(`{"model":"caf\u00e9","id":"a\u0062","choices":[{"finish_reason":"st\u006fp"}]}`) +
			chunk("{\"model\":\"caf\\u00e9\",\"id\":\"\xff\",\"choices\":[]}"),
			[]frameView{{Model: "café", ID: "ab", Finish: "stop"}, {ID: "\uFFFD"}}},
		{"two choices end in two chunks", openAI, chunk(`{"choices":[{"index":1,"finish_reason":"length"}]}`) + chunk(`{"choices":[{"index":0,"finish_reason":"stop"}]}`),
			[]frameView{{Finish: "length"}, {Finish: "stop"}}},
		{"two choices end in one chunk, positions as indices", openAI, chunk(`{"choices":[{"finish_reason":"stop"},{"finish_reason":"tool_calls"}]}`),
			[]frameView{{Finish: "stop,tool_calls"}}},
		{"a repeated finish is told once", openAI, chunk(`{"choices":[{"index":0,"finish_reason":"stop"}]}`) + chunk(`{"choices":[{"index":0,"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":2}}`),
			[]frameView{{Finish: "stop"}, {}}},
		{"an unknown reason is kept", openAI, chunk(`{"choices":[{"finish_reason":"eos_token"}]}`), []frameView{{Finish: "eos_token"}}},
		{"null and empty reasons are none", openAI, chunk(`{"choices":[{"finish_reason":null},{"finish_reason":""}]}`), []frameView{{}}},
		{"responses: created tells the model, incomplete the reason", openAI,
			chunk(`{"type":"response.created","response":{"id":"r1","model":"gpt","status":"in_progress"}}`) +
				chunk(`{"type":"response.incomplete","response":{"id":"r1","model":"gpt","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"}}}`),
			[]frameView{{Model: "gpt", ID: "r1"}, {Finish: "max_output_tokens"}}},
		{"responses: failed", openAI, chunk(`{"type":"response.failed","response":{"id":"r2","status":"failed","error":{"code":"server_error"}}}`),
			[]frameView{{ID: "r2", Finish: "failed"}}},
		{"anthropic", anthropic, "event: message_start\n" + chunk(`{"type":"message_start","message":{"id":"msg_1","model":"claude","usage":{"input_tokens":3}}}`) +
			"event: message_delta\n" + chunk(`{"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"output_tokens":9}}`),
			[]frameView{{Model: "claude", ID: "msg_1"}, {Finish: "max_tokens"}}},
		{"gemini: candidates with their index", func() Decoder { return newGeminiDecoder() },
			chunk(`{"candidates":[{"index":1,"finishReason":"MAX_TOKENS"},{"index":0}],"modelVersion":"gemini-x","responseId":"g1"}`) +
				chunk(`{"candidates":[{"index":0,"finishReason":"STOP"}],"modelVersion":"gemini-x","responseId":"g1"}`),
			[]frameView{{Model: "gemini-x", ID: "g1", Finish: "MAX_TOKENS"}, {Finish: "STOP"}}},
		{"ollama", func() Decoder { return newOllamaDecoder() },
			`{"model":"llama3","response":"a","done":false}` + "\n" + `{"model":"llama3","response":"","done":true,"done_reason":"length"}` + "\n",
			[]frameView{{Model: "llama3"}, {Finish: "length"}}},
		{"cohere", func() Decoder { return newCohereDecoder() },
			chunk(`{"id":"c-1","type":"message-start","delta":{"message":{"role":"assistant"}}}`) +
				chunk(`{"type":"message-end","id":"c-1","delta":{"finish_reason":"MAX_TOKENS"}}`),
			[]frameView{{ID: "c-1"}, {Finish: "MAX_TOKENS"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []frameView
			for _, f := range decodePieces(tc.dec(), []byte(tc.in)) {
				got = append(got, frameView{Model: f.Model, ID: f.ID, Finish: f.Finish})
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestAnswerInfoCacheHits: events the scan cache answers (the same bytes
// but for their text) tell nothing new, and the frames with and without
// the cache agree.
func TestAnswerInfoCacheHits(t *testing.T) {
	var in strings.Builder
	for _, s := range []string{"a", "b", "c"} {
		in.WriteString(`data: {"id":"c1","model":"m","choices":[{"index":0,"delta":{"content":"` + s + `"},"finish_reason":null}]}` + "\n\n")
	}
	in.WriteString(`data: {"id":"c1","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n")
	hits := 0
	with := decodePieces(newOpenAITestDecoder(true, &hits), []byte(in.String()))
	assert.Equal(t, 2, hits, "the second and third chunks are cache hits")
	assert.Equal(t, decodePieces(newOpenAITestDecoder(false, nil), []byte(in.String())), with)
	assert.Equal(t, answerSeen{"m", "c1", "stop"}, answerOf(with))
	assert.Equal(t, "m", with[0].Model)
	assert.Empty(t, with[1].Model+with[2].Model+with[3].Model)
}

// TestJSONAnswerInfo: who answered a non-streaming answer and why it ended.
func TestJSONAnswerInfo(t *testing.T) {
	long := strings.Repeat("m", maxNameText+1)
	for _, tc := range []struct {
		name, in         string
		model, id, finis string
	}{
		{"responses incomplete", `{"object":"response","id":"r","model":"gpt","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"}}`, "gpt", "r", "max_output_tokens"},
		{"responses completed", `{"status":"completed","object":"response"}`, "", "", "completed"},
		{"a status that is not a response's", `{"status":"completed"}`, "", "", ""},
		{"the first choice's reason", `{"choices":[{"finish_reason":"length"},{"finish_reason":"stop"}]}`, "", "", "length"},
		{"the first candidate's reason", `{"candidates":[{"finishReason":"SAFETY"}],"modelVersion":"g","responseId":"x"}`, "g", "x", "SAFETY"},
		{"an unknown reason", `{"stop_reason":"new_reason"}`, "", "", "new_reason"},
		{"a model name too long is not told", `{"model":"` + long + `"}`, "", "", ""},
		{"not strings", `{"model":7,"id":null,"done_reason":true}`, "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			frames := jsonFrames([]byte(tc.in))
			require.Len(t, frames, 1)
			f := frames[0]
			assert.Equal(t, tc.model, f.ResponseModel)
			assert.Equal(t, tc.id, f.ResponseID)
			assert.Equal(t, tc.finis, strings.Join(f.FinishReasons, ","))
		})
	}
}
