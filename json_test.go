package llmmetrics

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// jsonFrames decodes pieces with a fresh JSON decoder and returns the frames.
func jsonFrames(pieces ...[]byte) []Frame {
	d := NewJSONDecoder()
	var out []Frame
	emit := func(f Frame) { out = append(out, f) }
	for _, p := range pieces {
		d.Decode(p, emit)
	}
	d.Flush(emit)
	return out
}

func TestJSONDecoderFixtures(t *testing.T) {
	for _, tc := range []struct {
		file    string
		in, out int
	}{
		{"openai_chat.json", 19, 10},
		{"openai_completions.json", 5, 7},
		{"openai_responses.json", 36, 87},
		{"openai_embeddings.json", 8, 0},
		{"anthropic_message.json", 2095 + 100 + 50, 503},
		{"gemini_generate.json", 8, 11 + 1000},
		{"ollama_chat.json", 26, 298},
		{"ollama_generate.json", 26, 290},
	} {
		t.Run(tc.file, func(t *testing.T) {
			errs := otelErrors(t)
			data, err := os.ReadFile(filepath.Join("testdata", "json", tc.file))
			require.NoError(t, err)
			orig := bytes.Clone(data)
			want := []Frame{{HasUsage: true, InputTokens: tc.in, OutputTokens: tc.out, Done: true}}
			assert.Equal(t, want, jsonFrames(data))
			for cut := 0; cut <= len(data); cut++ {
				require.Equal(t, want, jsonFrames(data[:cut], data[cut:]), "split at byte %d", cut)
			}
			bytewise := make([][]byte, len(data))
			for i := range data {
				bytewise[i] = data[i : i+1]
			}
			assert.Equal(t, want, jsonFrames(bytewise...))
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
		{"no usage", `{"id":"x","choices":[]}`, []Frame{{Done: true}}, 0},
		{"usage null", `{"usage":null}`, []Frame{{Done: true}}, 0},
		{"last usage wins", `{"usage":{"prompt_tokens":1,"completion_tokens":2},"usage":{"prompt_tokens":3}}`,
			[]Frame{{HasUsage: true, InputTokens: 3, Done: true}}, 0},
		{"nested usage is not the answer's", `{"data":{"usage":{"prompt_tokens":1}}}`, []Frame{{Done: true}}, 0},
		{"non-integer counts are absent", `{"usage":{"prompt_tokens":1.5,"completion_tokens":"7"}}`, []Frame{{Done: true}}, 0},
		{"negative count", `{"usage":{"completion_tokens":-2,"prompt_tokens":4}}`, []Frame{{HasUsage: true, InputTokens: 4, Done: true}}, 0},
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
		})
	}
}

func TestJSONDecoderLongAnswerBoundedMemory(t *testing.T) {
	// A 4 MiB answer is scanned with the decoder's fixed memory.
	content := strings.Repeat("token ", 700_000)
	body := []byte(`{"choices":[{"message":{"content":"` + content + `"}}],"usage":{"prompt_tokens":3,"completion_tokens":700000}}`)
	d := NewJSONDecoder()
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
	data, err := os.ReadFile(filepath.Join("testdata", "json", "openai_chat.json"))
	require.NoError(t, err)
	d := NewJSONDecoder().(*jsonDecoder)
	var f Frame
	emit := func(fr Frame) { f = fr }
	allocs := testing.AllocsPerRun(100, func() {
		d.s.Reset()
		d.stopped = false
		for p := data; len(p) > 0; p = p[min(len(p), 64):] {
			d.Decode(p[:min(len(p), 64)], emit)
		}
	})
	assert.Zero(t, allocs)
	assert.Equal(t, 10, f.OutputTokens)
}

func FuzzJSONDecoder(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "json", "*.json"))
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
