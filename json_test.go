package llmmetrics

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// jsonFrames decodes pieces with a fresh JSON decoder and returns the frames.
func jsonFrames(pieces ...[]byte) []Frame {
	d := newUsageDecoder()
	var out []Frame
	emit := func(f Frame) { out = append(out, f) }
	for _, p := range pieces {
		d.Decode(p, emit)
	}
	d.Flush(emit)
	return out
}

func TestJSONDecoderFixtures(t *testing.T) {
	// Expected counts computed by hand from each fixture's usage object,
	// model, id, finish reason and timings.
	tests := []struct {
		file               string
		in, out, reasoning int
		cached, write      int    // CachedInputTokens, CacheWriteInputTokens (part of in)
		errType, errCode   string // a *StreamError's, for error bodies
		model, id, reason  string // ResponseModel, ResponseID, the one finish reason
		prefill, decode    time.Duration
	}{
		{"json/openai_chat_completion.json", 1180, 275, 256, 1024, 0, "", "", "o4-mini-2025-04-16", "chatcmpl-C3c4D5e6F7g8H9i0J1k2L3m4N5o6", "stop", 0, 0},
		{"json/openai_completion.json", 5, 7, 0, 0, 0, "", "", "gpt-3.5-turbo-instruct:20230824-v2", "cmpl-C4d5E6f7G8h9I0j1K2l3M4n5", "length", 0, 0},
		{"json/openai_response.json", 40, 150, 128, 0, 0, "", "", "o4-mini-2025-04-16", "resp_68b0a1b2c3d48190e5f6a7b8c9d0e1f20a1b2c3d4e5f6a7b", "completed", 0, 0},
		{"json/openai_embeddings.json", 8, 0, 0, 0, 0, "", "", "text-embedding-ada-002", "", "", 0, 0},
		{"json/anthropic_message.json", 48 + 2051 + 0, 58, 41, 0, 2051, "", "", "claude-opus-4-8", "msg_01Bc7Yq2Wn8Lm4Pz6Rt3Vx5K", "end_turn", 0, 0},
		{"json/gemini_generate_content.json", 2071, 25 + 306, 306, 2048, 0, "", "", "gemini-2.5-flash", "Wm4pQr7TzKc2nV9sLx1dHfA", "STOP", 0, 0},
		{"gemini/generate_content_function_call.json", 41, 7 + 412, 412, 0, 0, "", "", "gemini-2.5-pro", "Ja2lRbN8Dq5fUc0WkYs3TgP", "STOP", 0, 0},
		{"json/openai_response_cached.json", 2006, 300, 0, 1920, 0, "", "", "gpt-4.1-2025-04-14", "resp_67ccd3a9da748190baa7f1570fe91ac604becb25c45c1d41", "completed", 0, 0},
		{"json/anthropic_message_cache_read.json", 21 + 0 + 188086, 393, 0, 188086, 0, "", "", "claude-sonnet-4-5", "msg_01XFDUDYJgAACzvnptvVoYEL", "end_turn", 0, 0},
		{"json/deepseek_chat_completion.json", 1052, 5, 0, 1024, 0, "", "", "deepseek-chat", "9d1f2c3b-4a5e-4f60-8b7c-6d5e4f3a2b1c", "stop", 0, 0},
		{"json/ollama_chat.json", 19, 9, 0, 0, 0, "", "", "qwen3:8b", "", "stop", 24573166, 162838875},
		{"json/ollama_generate.json", 26, 11, 0, 0, 0, "", "", "llama3.2", "", "stop", 325953000, 470921300},
		// usage beside llama.cpp's timings: 54.756 ms and 40.617 ms; all 29
		// prompt tokens processed, none cached.
		{"json/llamacpp_chat_completion.json", 29, 10, 0, 0, 0, "", "", "m", "chatcmpl-lwrPw6HrMYFKnBKEoMKnXENjJanwBlHs", "length", 54756 * time.Microsecond, 40617 * time.Microsecond},
		{"json/openai_error_429.json", 0, 0, 0, 0, 0, "tokens", "rate_limit_exceeded", "", "", "", 0, 0},
		{"json/anthropic_error_429.json", 0, 0, 0, 0, 0, "rate_limit_error", "", "", "", "", 0, 0},
		{"json/gemini_error_429.json", 0, 0, 0, 0, 0, "RESOURCE_EXHAUSTED", "429", "", "", "", 0, 0},
		{"json/openai_error_200.json", 0, 0, 0, 0, 0, "invalid_request_error", "model_not_found", "", "", "", 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			errs := otelErrors(t)
			data, err := os.ReadFile(filepath.Join("testdata", tc.file))
			require.NoError(t, err)
			orig := bytes.Clone(data)
			whole := jsonFrames(data)
			require.Len(t, whole, 1)
			f := whole[0]
			assert.True(t, f.Done)
			assert.Zero(t, f.Tokens, "a JSON answer carries no stream tokens")
			if tc.errType != "" || tc.errCode != "" {
				var se *StreamError
				require.ErrorAs(t, f.Err, &se)
				assert.Equal(t, tc.errType, se.Type)
				assert.Equal(t, tc.errCode, se.Code)
				assert.NotEmpty(t, se.Message)
				assert.False(t, f.HasUsage)
			} else {
				assert.NoError(t, f.Err)
				var reasons []string
				if tc.reason != "" {
					reasons = []string{tc.reason}
				}
				assert.Equal(t, Frame{HasUsage: true, InputTokens: tc.in, OutputTokens: tc.out, ReasoningTokens: tc.reasoning,
					CachedInputTokens: tc.cached, CacheWriteInputTokens: tc.write, Done: true,
					ResponseModel: tc.model, ResponseID: tc.id, FinishReasons: reasons,
					ServerPrefill: tc.prefill, ServerDecode: tc.decode}, f)
			}
			for cut := 0; cut <= len(data); cut++ {
				require.Equal(t, whole, jsonFrames(data[:cut], data[cut:]), "split at byte %d", cut)
			}
			bytewise := make([][]byte, len(data))
			for i := range data {
				bytewise[i] = data[i : i+1]
			}
			assert.Equal(t, whole, jsonFrames(bytewise...))
			assert.Equal(t, orig, data, "the decoder does not modify its input")
			assert.Empty(t, errs())
		})
	}
}

func TestJSONDecoderCases(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want []Frame
		errs int // reports through otel.Handle
	}{
		{"no usage", `{"id":"x","choices":[]}`, []Frame{{Done: true, ResponseID: "x"}}, 0},
		{"usage null", `{"usage":null}`, []Frame{{Done: true}}, 0},
		{"last usage wins", `{"usage":{"prompt_tokens":1,"completion_tokens":2},"usage":{"prompt_tokens":3}}`,
			[]Frame{{HasUsage: true, InputTokens: 3, Done: true}}, 0},
		{"nested usage is not the answer's", `{"data":{"usage":{"prompt_tokens":1}}}`, []Frame{{Done: true}}, 0},
		{"non-integer counts are absent", `{"usage":{"prompt_tokens":1.5,"completion_tokens":"7"}}`, []Frame{{Done: true}}, 0},
		{"negative count", `{"usage":{"completion_tokens":-2,"prompt_tokens":4}}`, []Frame{{HasUsage: true, InputTokens: 4, Done: true}}, 0},
		{"xAI: reasoning beside completion_tokens", `{"usage":{"prompt_tokens":10,"completion_tokens":1328,"total_tokens":1645,"completion_tokens_details":{"reasoning_tokens":307}}}`,
			[]Frame{{HasUsage: true, InputTokens: 10, OutputTokens: 1328 + 307, ReasoningTokens: 307, Done: true}}, 0},
		{"OpenAI: reasoning inside completion_tokens", `{"usage":{"prompt_tokens":20,"completion_tokens":214,"total_tokens":234,"completion_tokens_details":{"reasoning_tokens":192}}}`,
			[]Frame{{HasUsage: true, InputTokens: 20, OutputTokens: 214, ReasoningTokens: 192, Done: true}}, 0},
		{"ollama without prompt_eval_count (cached prompt)", `{"done":true,"eval_count":12}`,
			[]Frame{{HasUsage: true, OutputTokens: 12, Done: true}}, 0},
		{"error object with success status", `{"error":{"message":"no such model","type":"invalid_request_error","param":null,"code":"model_not_found"}}`,
			[]Frame{{Done: true, Err: &StreamError{Type: "invalid_request_error", Code: "model_not_found", Message: "no such model"}}}, 0},
		{"numeric error code (vLLM)", `{"object":"error","error":{"message":"bad","type":"BadRequestError","code":400}}`,
			[]Frame{{Done: true, Err: &StreamError{Type: "BadRequestError", Code: "400", Message: "bad"}}}, 0},
		{"error string", `{"error":"model not found"}`, []Frame{{Done: true, Err: &StreamError{Message: "model not found"}}}, 0},
		{"error null, false or empty", `{"error":null,"x":{"error":1}}`, []Frame{{Done: true}}, 0},
		{"error false", `{"error":false}`, []Frame{{Done: true}}, 0},
		{"error empty", `{"error":""}`, []Frame{{Done: true}}, 0},
		{"top-level array", `[{"usage":{"prompt_tokens":1}}]`, []Frame{{Done: true}}, 0},
		{"top-level number", `12`, []Frame{{Done: true}}, 0},
		{"trailing bytes ignored", `{"eval_count":1} garbage`, []Frame{{HasUsage: true, OutputTokens: 1, Done: true}}, 0},
		{"not JSON", `<html>bad gateway</html>`, nil, 1},
		{"cut short", `{"usage":{"prompt_tokens":1`, nil, 1},
		{"empty body", ``, nil, 1},
		{"SSE sent as JSON", "data: {}\n\n", nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := otelErrors(t)
			assert.Equal(t, tc.want, jsonFrames([]byte(tc.in)))
			got := errs()
			assert.Len(t, got, tc.errs)
			for _, err := range got {
				assert.ErrorIs(t, err, ErrMalformedFrame)
			}
			d := newUsageDecoder()
			d.Decode([]byte(tc.in), func(Frame) {})
			d.Flush(func(Frame) {})
			if tc.errs > 0 {
				assert.ErrorIs(t, d.Err(), ErrMalformedFrame, "Err tells the problem")
			} else {
				assert.NoError(t, d.Err())
			}
		})
	}
}

func TestJSONDecoderLongAnswerBoundedMemory(t *testing.T) {
	// A 4 MiB answer is scanned with the decoder's fixed memory.
	content := strings.Repeat("token ", 700_000)
	body := []byte(`{"choices":[{"message":{"content":"` + content + `"}}],"usage":{"prompt_tokens":3,"completion_tokens":700000}}`)
	d := newUsageDecoder()
	var got []Frame
	emit := func(f Frame) { got = append(got, f) }
	allocs := testing.AllocsPerRun(1, func() {
		for p := body; len(p) > 0; p = p[min(len(p), 32<<10):] {
			d.Decode(p[:min(len(p), 32<<10)], emit)
		}
	})
	assert.Equal(t, []Frame{{HasUsage: true, InputTokens: 3, OutputTokens: 700000, Done: true}}, got[:1])
	assert.LessOrEqual(t, allocs, 1.0, "only the emitted frame's slice may grow")
}

func TestJSONDecoderDecodeAllocs(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "json", "openai_chat_completion.json"))
	require.NoError(t, err)
	d := newUsageDecoder().(*usageDecoder)
	var f Frame
	emit := func(fr Frame) { f = fr }
	allocs := testing.AllocsPerRun(100, func() {
		d.s.Reset()
		d.stopped = false
		for p := data; len(p) > 0; p = p[min(len(p), 64):] {
			d.Decode(p[:min(len(p), 64)], emit)
		}
	})
	// The answer's model and id are the only allocations: two strings
	// per answer, kept in the Record (its finish reason is a known one).
	assert.Equal(t, 2.0, allocs)
	assert.Equal(t, 275, f.OutputTokens)
}

func FuzzJSONDecoder(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "json", "*.json"))
	more, _ := filepath.Glob(filepath.Join("testdata", "gemini", "*.json"))
	files = append(files, more...)
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err == nil {
			f.Add(b, uint16(7))
		}
	}
	f.Add([]byte(`{"usage":{"input_tokens":1,"cache_read_input_tokens":9223372036854775807}}`), uint16(3))
	f.Fuzz(func(t *testing.T, data []byte, cut uint16) {
		whole := jsonFrames(data)
		require.LessOrEqual(t, len(whole), 1, "one frame at most")
		for _, fr := range whole {
			require.True(t, fr.Done)
			require.Zero(t, fr.Tokens, "a JSON answer is not a stream")
			require.GreaterOrEqual(t, fr.InputTokens, 0)
			require.GreaterOrEqual(t, fr.OutputTokens, 0)
		}
		c := int(cut) % (len(data) + 1)
		require.Equal(t, whole, jsonFrames(data[:c], data[c:]), "split at %d", c)
	})
}

// Read through NewReader, whole, split at every byte and one byte
// at a time, every provider's cached-token shape reaches the Record:
// CachedInputTokens and CacheWriteInputTokens, both part of InputTokens
// (the whole prompt). The SSE streams of OpenAI chat, Responses, DeepSeek
// and Anthropic are in TestReaderFixtures.
func TestReaderCachedInputTokens(t *testing.T) {
	usageDec := func() Decoder { return newUsageDecoder() }
	tests := []struct {
		file               string
		dec                func() Decoder
		in, cached, writes int
	}{
		{"gemini/stream_cached.sse", gemini, 2071, 2048, 0},
		{"json/openai_chat_completion.json", usageDec, 1180, 1024, 0},
		{"json/openai_response_cached.json", usageDec, 2006, 1920, 0},
		{"json/anthropic_message.json", usageDec, 48 + 2051, 0, 2051},
		{"json/anthropic_message_cache_read.json", usageDec, 21 + 188086, 188086, 0},
		{"json/gemini_generate_content.json", usageDec, 2071, 2048, 0},
		{"json/deepseek_chat_completion.json", usageDec, 1052, 1024, 0},
		{"json/ollama_chat.json", usageDec, 19, 0, 0},              // Ollama reports no cached count
		{"json/llamacpp_chat_completion.json", usageDec, 29, 0, 0}, // llama.cpp b4747 reports no cached count
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			errs := otelErrors(t)
			data, err := os.ReadFile(filepath.Join("testdata", tc.file))
			require.NoError(t, err)
			tr, _ := newTestTracker(t)
			read := func(r io.Reader) {
				req := tr.Start(context.Background())
				got, err := io.ReadAll(NewReader(req, r, tc.dec()))
				require.NoError(t, err)
				require.Equal(t, data, got)
				rec := req.End(nil)
				require.Equal(t, tc.in, rec.InputTokens, "input tokens: the whole prompt")
				require.Equal(t, tc.cached, rec.CachedInputTokens)
				require.Equal(t, tc.writes, rec.CacheWriteInputTokens)
			}
			read(bytes.NewReader(data))
			for cut := 0; cut <= len(data); cut++ {
				read(io.MultiReader(bytes.NewReader(data[:cut]), bytes.NewReader(data[cut:])))
			}
			read(iotest.OneByteReader(bytes.NewReader(data)))
			assert.Empty(t, errs())
		})
	}
}

// The last usage wins, a revision to 0 cached tokens included; an
// input-only frame does not clear what a usage said.
func TestNoteFrameCachedLastUsageWins(t *testing.T) {
	tr, _ := newTestTracker(t)
	req := tr.Start(context.Background())
	var streamErr error
	noteFrame(req, Frame{HasInput: true, InputTokens: 100, CachedInputTokens: 60, CacheWriteInputTokens: 10}, &streamErr)
	noteFrame(req, Frame{HasUsage: true, InputTokens: 100, OutputTokens: 5, CachedInputTokens: 80}, &streamErr)
	rec := req.End(nil)
	assert.Equal(t, 80, rec.CachedInputTokens)
	assert.Zero(t, rec.CacheWriteInputTokens, "the usage said no cache write")

	req = tr.Start(context.Background())
	noteFrame(req, Frame{HasUsage: true, InputTokens: 100, OutputTokens: 5, CachedInputTokens: 80}, &streamErr)
	noteFrame(req, Frame{HasInput: true, InputTokens: 100}, &streamErr)
	assert.Equal(t, 80, req.End(nil).CachedInputTokens, "an input-only frame without counts keeps them")
}
