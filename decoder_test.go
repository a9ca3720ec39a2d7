package llmmetrics

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// frameView is a Frame with its error as text, so frames compare with ==.
type frameView struct {
	Tokens        int
	Reasoning     bool
	HasUsage      bool
	HasInput      bool
	In, Out       int
	ReasoningOut  int // Frame.ReasoningTokens
	Cached        int // Frame.CachedInputTokens
	CacheWrite    int // Frame.CacheWriteInputTokens
	Err           string
	Done          bool
	streamErrType string // the StreamError's ErrorType: the error.type a Tracker records
	Model, ID     string // Frame.ResponseModel, ResponseID
	Finish        string // Frame.FinishReasons joined with ","
	Prefill       time.Duration
	Decode        time.Duration
}

func view(f Frame) frameView {
	v := frameView{Tokens: f.Tokens, Reasoning: f.Reasoning, HasUsage: f.HasUsage, HasInput: f.HasInput,
		In: f.InputTokens, Out: f.OutputTokens, ReasoningOut: f.ReasoningTokens,
		Cached: f.CachedInputTokens, CacheWrite: f.CacheWriteInputTokens, Done: f.Done,
		Model: f.ResponseModel, ID: f.ResponseID, Finish: strings.Join(f.FinishReasons, ","),
		Prefill: f.ServerPrefill, Decode: f.ServerDecode}
	if f.Err != nil {
		v.Err = f.Err.Error()
		var se *StreamError
		if errors.As(f.Err, &se) {
			v.streamErrType = se.ErrorType()
		}
	}
	return v
}

// decodePieces feeds pieces to d in order, then flushes, and returns the frames.
func decodePieces(d Decoder, pieces ...[]byte) []frameView {
	var out []frameView
	emit := func(f Frame) { out = append(out, view(f)) }
	for _, p := range pieces {
		d.Decode(p, emit)
	}
	d.Flush(emit)
	return out
}

// summary is what a test table states about a whole stream.
type summary struct {
	Frames          int
	Tokens          int
	TokenFrames     int
	ReasoningFrames int // token-carrying frames whose tokens are reasoning
	FirstToken      int // index of the first frame that carries tokens, -1 if none
	FirstAnswer     int // index of the first frame that carries answer tokens, -1 if none
	HasUsage        bool
	In, Out         int // the last usage (In also from an input-only frame)
	Reasoning       int // the last usage's reasoning count
	Cached          int // the last usage's cached input count (or an input-only frame's)
	CacheWrite      int // the last usage's cache-write input count (or an input-only frame's)
	Done            bool
	Errs            int
	ErrType         string // StreamError.ErrorType of the first error frame
}

func summarize(frames []frameView) summary {
	s := summary{Frames: len(frames), FirstToken: -1, FirstAnswer: -1}
	for i, f := range frames {
		if f.Tokens > 0 {
			s.Tokens += f.Tokens
			s.TokenFrames++
			if s.FirstToken < 0 {
				s.FirstToken = i
			}
			if f.Reasoning {
				s.ReasoningFrames++
			} else if s.FirstAnswer < 0 {
				s.FirstAnswer = i
			}
		}
		if f.HasUsage {
			s.HasUsage, s.In, s.Out, s.Reasoning = true, f.In, f.Out, f.ReasoningOut
			s.Cached, s.CacheWrite = f.Cached, f.CacheWrite
		} else if f.HasInput {
			s.In = f.In
			if f.Cached > 0 || f.CacheWrite > 0 {
				s.Cached, s.CacheWrite = f.Cached, f.CacheWrite
			}
		}
		s.Done = s.Done || f.Done
		if f.Err != "" {
			if s.Errs == 0 {
				s.ErrType = f.streamErrType
			}
			s.Errs++
		}
	}
	return s
}

// otelErrors captures what the code under test reports through otel.Handle
// until the test ends.
func otelErrors(t testing.TB) func() []error {
	t.Helper()
	var mu sync.Mutex
	var errs []error
	handleOtel(t, func(err error) {
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, err)
	})
	return func() []error {
		mu.Lock()
		defer mu.Unlock()
		return append([]error(nil), errs...)
	}
}

type fixture struct {
	file string
	dec  func() Decoder
	want summary
	// n is the Record's N read through NewReader: max(the last usage's
	// output count, token-carrying chunks), or the chunk tokens without
	// usage. lowUsage marks a usage below the chunk count, which the
	// Request reports through otel.Handle (errUsageBelowChunks).
	n        int
	lowUsage bool
}

// fixtures are every file in testdata/sse (TestFixturesAreListed), with
// what was counted in them by hand; the new ones are described, with their
// sources, in their own headers.
var fixtures = []fixture{
	{"openai_chat.sse", openAI, summary{Frames: 11, Tokens: 7, TokenFrames: 7, FirstToken: 1, FirstAnswer: 1, HasUsage: true, In: 14, Out: 7, Done: true}, 7, false},
	{"openai_reasoning.sse", openAI, summary{Frames: 13, Tokens: 10, TokenFrames: 10, ReasoningFrames: 5, FirstToken: 1, FirstAnswer: 6, HasUsage: true, In: 12, Out: 48, Reasoning: 38, Done: true}, 48, false},
	{"openai_tools.sse", openAI, summary{Frames: 12, Tokens: 10, TokenFrames: 10, FirstToken: 0, FirstAnswer: 0, Done: true}, 10, false},
	{"openai_completions.sse", openAI, summary{Frames: 7, Tokens: 4, TokenFrames: 4, FirstToken: 0, FirstAnswer: 0, HasUsage: true, In: 5, Out: 4, Done: true}, 4, false},
	{"openai_responses.sse", openAI, summary{Frames: 27, Tokens: 11, TokenFrames: 11, ReasoningFrames: 3, FirstToken: 4, FirstAnswer: 12, HasUsage: true, In: 25, Out: 60, Reasoning: 40, Done: true}, 60, false},
	{"vllm_continuous_usage.sse", openAI, summary{Frames: 9, Tokens: 9, TokenFrames: 6, FirstToken: 1, FirstAnswer: 1, HasUsage: true, In: 20, Out: 9, Done: true}, 9, false},
	{"openai_error.sse", openAI, summary{Frames: 4, Tokens: 2, TokenFrames: 2, FirstToken: 1, FirstAnswer: 1, Errs: 1, ErrType: "server_error"}, 2, false},
	{"openai_keepalive_crlf.sse", openAI, summary{Frames: 6, Tokens: 3, TokenFrames: 3, FirstToken: 1, FirstAnswer: 1, Done: true}, 3, false},
	{"anthropic_thinking_tools.sse", anthropic, summary{Frames: 21, Tokens: 9, TokenFrames: 9, ReasoningFrames: 3, FirstToken: 3, FirstAnswer: 9, HasUsage: true, In: 572, Out: 89, Cached: 100, Done: true}, 89, false},
	{"anthropic_error.sse", anthropic, summary{Frames: 4, Tokens: 1, TokenFrames: 1, FirstToken: 2, FirstAnswer: 2, In: 25, Errs: 1, ErrType: "overloaded_error"}, 1, false},

	// The providers' documented shapes (expected values re-counted by
	// hand from each fixture's source, named in its header).
	{"openrouter_error_with_usage.sse", openAI, summary{Frames: 4, Tokens: 2, TokenFrames: 2, FirstToken: 1, FirstAnswer: 1, HasUsage: true, In: 43, Out: 10, Errs: 1, ErrType: "400"}, 10, false},
	{"mistral_magistral_thinking.sse", openAI, summary{Frames: 9, Tokens: 5, TokenFrames: 5, ReasoningFrames: 3, FirstToken: 1, FirstAnswer: 5, HasUsage: true, In: 18, Out: 40, Done: true}, 40, false},
	{"openai_responses_incomplete.sse", openAI, summary{Frames: 24, Tokens: 16, TokenFrames: 16, FirstToken: 4, FirstAnswer: 4, HasUsage: true, In: 31, Out: 0, Done: true}, 16, true},
	{"openai_responses_reasoning_usage.sse", openAI, summary{Frames: 20, Tokens: 7, TokenFrames: 7, ReasoningFrames: 2, FirstToken: 4, FirstAnswer: 11, HasUsage: true, In: 40, Out: 220, Reasoning: 192, Done: true}, 220, false},
	{"azure_content_filter.sse", openAI, summary{Frames: 12, Tokens: 6, TokenFrames: 6, FirstToken: 2, FirstAnswer: 2, HasUsage: true, In: 12, Out: 6, Done: true}, 6, false},
	{"azure_content_filter_blocked.sse", openAI, summary{Frames: 7, Tokens: 3, TokenFrames: 3, FirstToken: 2, FirstAnswer: 2, Done: true}, 3, false},
	{"groq_x_groq_usage.sse", openAI, summary{Frames: 10, Tokens: 7, TokenFrames: 7, FirstToken: 1, FirstAnswer: 1, HasUsage: true, In: 36, Out: 8, Done: true}, 8, false},
	{"groq_reasoning.sse", openAI, summary{Frames: 8, Tokens: 5, TokenFrames: 5, ReasoningFrames: 3, FirstToken: 1, FirstAnswer: 4, HasUsage: true, In: 14, Out: 27, Done: true}, 27, false},
	{"xai_usage_every_chunk.sse", openAI, summary{Frames: 9, Tokens: 8, TokenFrames: 8, FirstToken: 0, FirstAnswer: 0, HasUsage: true, In: 38, Out: 8, Done: true}, 8, false},
	{"xai_reasoning_usage.sse", openAI, summary{Frames: 7, Tokens: 5, TokenFrames: 5, ReasoningFrames: 3, FirstToken: 0, FirstAnswer: 3, HasUsage: true, In: 19, Out: 163, Reasoning: 157, Cached: 2, Done: true}, 163, false},
	{"deepseek_reasoning_content.sse", openAI, summary{Frames: 9, Tokens: 6, TokenFrames: 6, ReasoningFrames: 4, FirstToken: 1, FirstAnswer: 5, HasUsage: true, In: 17, Out: 96, Reasoning: 88, Done: true}, 96, false},
	{"openai_chat_reasoning_usage.sse", openAI, summary{Frames: 10, Tokens: 6, TokenFrames: 6, FirstToken: 1, FirstAnswer: 1, HasUsage: true, In: 20, Out: 214, Reasoning: 192, Done: true}, 214, false},
	// A placeholder usage (completion_tokens 0) on every
	// content chunk, the real one at the end: 10 chunks, no phantom one.
	{"placeholder_usage_usage_chunk.sse", openAI, summary{Frames: 12, Tokens: 10, TokenFrames: 10, FirstToken: 0, FirstAnswer: 0, HasUsage: true, In: 12, Out: 31, Done: true}, 31, false},
	{"placeholder_usage_empty_finish.sse", openAI, summary{Frames: 12, Tokens: 10, TokenFrames: 10, FirstToken: 0, FirstAnswer: 0, HasUsage: true, In: 12, Out: 31, Done: true}, 31, false},
	// OpenRouter's delta.reasoning_details (text and
	// summary carry reasoning; encrypted and signature-only details none).
	{"openrouter_reasoning_details_text.sse", openAI, summary{Frames: 12, Tokens: 5, TokenFrames: 5, ReasoningFrames: 3, FirstToken: 2, FirstAnswer: 7, HasUsage: true, In: 423, Out: 110, Reasoning: 63, Done: true}, 110, false},
	{"openrouter_reasoning_details_summary_encrypted.sse", openAI, summary{Frames: 9, Tokens: 5, TokenFrames: 5, ReasoningFrames: 3, FirstToken: 0, FirstAnswer: 4, HasUsage: true, In: 64, Out: 210, Reasoning: 192, Done: true}, 210, false},
	// Cached input tokens, one fixture per provider shape.
	{"openai_chat_cached.sse", openAI, summary{Frames: 9, Tokens: 5, TokenFrames: 5, FirstToken: 1, FirstAnswer: 1, HasUsage: true, In: 2006, Out: 300, Cached: 1920, Done: true}, 300, false},
	{"openai_responses_cached.sse", openAI, summary{Frames: 9, Tokens: 5, TokenFrames: 5, FirstToken: 2, FirstAnswer: 2, HasUsage: true, In: 2006, Out: 300, Cached: 1920, Done: true}, 300, false},
	{"deepseek_cache_hit.sse", openAI, summary{Frames: 8, Tokens: 5, TokenFrames: 5, FirstToken: 1, FirstAnswer: 1, HasUsage: true, In: 1052, Out: 5, Cached: 1024, Done: true}, 5, false},
	{"anthropic_cache_write.sse", anthropic, summary{Frames: 11, Tokens: 5, TokenFrames: 5, FirstToken: 3, FirstAnswer: 3, HasUsage: true, In: 21 + 188086 + 1024, Out: 393, Cached: 1024, CacheWrite: 188086, Done: true}, 393, false},
	{"anthropic_thinking_usage_details.sse", anthropic, summary{Frames: 14, Tokens: 5, TokenFrames: 5, ReasoningFrames: 3, FirstToken: 3, FirstAnswer: 9, HasUsage: true, In: 1072, Out: 61, Reasoning: 49, Cached: 1024, Done: true}, 61, false},
	// Captured from llama.cpp's server (release b4747): usage and timings
	// on the finish chunk, which carries no token (an empty delta, an
	// empty "text"); 16 and 12 content chunks, as many tokens as the usage.
	{"llamacpp_chat_usage_timings.sse", openAI, summary{Frames: 18, Tokens: 16, TokenFrames: 16, FirstToken: 0, FirstAnswer: 0, HasUsage: true, In: 33, Out: 16, Done: true}, 16, false},
	{"llamacpp_completions.sse", openAI, summary{Frames: 14, Tokens: 12, TokenFrames: 12, FirstToken: 0, FirstAnswer: 0, HasUsage: true, In: 5, Out: 12, Done: true}, 12, false},
	// The same server: a long system prompt, then the same prompt again
	// with another question; timings.prompt_n 22 of 1,039 prompt tokens
	// tells the 1,017 the slot's cache served.
	{"llamacpp_prefix_first.sse", openAI, summary{Frames: 10, Tokens: 8, TokenFrames: 8, FirstToken: 0, FirstAnswer: 0, HasUsage: true, In: 1040, Out: 8, Done: true}, 8, false},
	{"llamacpp_prefix_reused.sse", openAI, summary{Frames: 10, Tokens: 8, TokenFrames: 8, FirstToken: 0, FirstAnswer: 0, HasUsage: true, In: 1039, Out: 8, Cached: 1017, Done: true}, 8, false},
}

// Every fixture in testdata/sse has its row in fixtures, so none goes
// untested.
func TestFixturesAreListed(t *testing.T) {
	names, err := filepath.Glob(filepath.Join("testdata", "sse", "*.sse"))
	require.NoError(t, err)
	require.NotEmpty(t, names)
	listed := map[string]bool{}
	for _, fx := range fixtures {
		assert.False(t, listed[fx.file], "%s listed twice", fx.file)
		listed[fx.file] = true
	}
	for _, n := range names {
		assert.True(t, listed[filepath.Base(n)], "%s has no row in fixtures", filepath.Base(n))
	}
	assert.Len(t, listed, len(names), "a listed fixture is missing from testdata/sse")
}

func openAI() Decoder { return newOpenAIDecoder() }

func anthropic() Decoder { return newAnthropicDecoder() }

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "sse", name))
	require.NoError(t, err)
	return b
}

func TestDecoderFixtures(t *testing.T) {
	for _, fx := range fixtures {
		t.Run(fx.file, func(t *testing.T) {
			errs := otelErrors(t)
			data := readFixture(t, fx.file)
			orig := bytes.Clone(data)

			d := fx.dec()
			whole := decodePieces(d, data)
			assert.Equal(t, fx.want, summarize(whole))
			assert.Empty(t, errs(), "a well-formed fixture reports nothing through otel.Handle")
			assert.NoError(t, d.Err(), "a well-formed fixture has no decoding problem")

			for cut := 0; cut <= len(data); cut++ {
				got := decodePieces(fx.dec(), data[:cut], data[cut:])
				if !assert.Equal(t, whole, got, "split at byte %d", cut) {
					break
				}
			}
			bytewise := make([][]byte, len(data))
			for i := range data {
				bytewise[i] = data[i : i+1]
			}
			assert.Equal(t, whole, decodePieces(fx.dec(), bytewise...), "1-byte pieces")
			assert.Equal(t, orig, data, "the decoder must not modify its input")
		})
	}
}

// chunk wraps a JSON payload as one SSE event.
func chunk(payload string) string { return "data: " + payload + "\n\n" }

func TestTextDecoder(t *testing.T) {
	words := func(p []byte) int { return len(bytes.Fields(p)) }
	tests := []struct {
		name   string
		count  func([]byte) int
		pieces []string
		want   []frameView
	}{
		{"default counts 1 per chunk", nil, []string{"Hello", " world", ""}, []frameView{{Tokens: 1}, {Tokens: 1}}},
		{"custom counter", words, []string{"Hello there", " world", "  "}, []frameView{{Tokens: 2}, {Tokens: 1}, {Tokens: 0}}},
		{"negative count is 0", func([]byte) int { return -3 }, []string{"x"}, []frameView{{}}},
		{"nothing", nil, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var pieces [][]byte
			for _, p := range tt.pieces {
				pieces = append(pieces, []byte(p))
			}
			d := NewTextDecoder(tt.count)
			assert.Equal(t, tt.want, decodePieces(d, pieces...))
			assert.NoError(t, d.Err())
		})
	}
}

func TestMalformedFrames(t *testing.T) {
	tests := []struct {
		name string
		dec  func() Decoder
		in   string
	}{
		{"openai not JSON", openAI, "data: {\"choices\":[{\"delta\":{\"content\":\"a\"\n\n"},
		{"openai trailing garbage", openAI, "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]} x\n\n"},
		{"openai array", openAI, "data: [1,2]\n\n"},
		{"openai null", openAI, "data: null\n\n"},
		{"openai empty data", openAI, "data:\n\n"},
		{"openai invalid escape", openAI, "data: {\"choices\":[{\"delta\":{\"content\":\"\\x\"}}]}\n\n"},
		{"anthropic not JSON", anthropic, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"a\"}\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := otelErrors(t)
			// A malformed frame carries nothing, and the next frame is still decoded.
			in := tt.in + "data: [DONE]\n\n"
			if tt.dec().(*sseDecoder).name == "anthropic" {
				in = tt.in + "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
			}
			d := tt.dec()
			got := decodePieces(d, []byte(in))
			assert.Equal(t, []frameView{{}, {Done: true}}, got)
			reported := errs()
			require.Len(t, reported, 1)
			assert.ErrorIs(t, reported[0], ErrMalformedFrame)
			assert.True(t, strings.HasPrefix(reported[0].Error(), "llmmetrics: "), reported[0].Error())
			assert.Equal(t, reported[0], d.Err(), "the stream's Err is the problem otel.Handle saw")
			assert.NotErrorIs(t, d.Err(), errFrameTooLarge)
		})
	}
}

func TestStreamErrorText(t *testing.T) {
	tests := []struct {
		err       StreamError
		want      string
		errorType string
	}{
		{StreamError{}, "llmmetrics: stream error", "stream_error"},
		{StreamError{Message: "m"}, "llmmetrics: stream error: m", "stream_error"},
		{StreamError{Type: "t", Message: "m"}, "llmmetrics: stream error (t): m", "t"},
		{StreamError{Code: "c"}, "llmmetrics: stream error (code c)", "c"},
		{StreamError{Type: "t", Code: "c", Message: "m"}, "llmmetrics: stream error (t, code c): m", "t"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.err.Error())
			assert.Equal(t, tt.errorType, tt.err.ErrorType())
			assert.Equal(t, semconv.ErrorTypeKey.String(tt.errorType), semconv.ErrorType(&tt.err), "semconv reads ErrorType")
		})
	}
}

// TestMalformedReportedOncePerStream: a stream of 1,000 malformed frames
// reports its first problem through otel.Handle once; Err keeps that
// first one; every frame is still decoded (the valid one at the end
// counts), and a second stream reports its own first problem.
func TestMalformedReportedOncePerStream(t *testing.T) {
	const n = 1000
	repeat := func(frame string, end string) string { return strings.Repeat(frame, n) + end }
	tests := []struct {
		name  string
		dec   func() Decoder
		in    string
		first string // a substring of the first problem's text
	}{
		{"openai", func() Decoder { return newOpenAIDecoder() },
			"data: first\n\n" + repeat("data: x\n\n", `data: {"choices":[{"delta":{"content":"a"}}]}`+"\n\n"), `"first"`},
		{"anthropic", func() Decoder { return newAnthropicDecoder() },
			"event: content_block_delta\ndata: first\n\n" + repeat("event: content_block_delta\ndata: x\n\n",
				"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"a\"}}\n\n"), `"first"`},
		{"gemini sse", func() Decoder { return newGeminiDecoder() },
			"data: first\n\n" + repeat("data: x\n\n", `data: {"candidates":[{"content":{"parts":[{"text":"a"}]}}]}`+"\n\n"), `"first"`},
		{"ollama", func() Decoder { return newOllamaDecoder() },
			"first\n" + repeat("x\n", `{"response":"a","done":false}`+"\n"), `"first"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := otelErrors(t)
			for stream := 1; stream <= 2; stream++ {
				d := tt.dec()
				got := decodePieces(d, []byte(tt.in))
				require.Len(t, got, n+2)
				assert.Positive(t, got[n+1].Tokens, "the valid frame after the malformed ones counts")
				reported := errs()
				require.Len(t, reported, stream, "one report per stream")
				assert.ErrorIs(t, reported[stream-1], ErrMalformedFrame)
				assert.Contains(t, reported[stream-1].Error(), tt.first, "the first problem is the one reported")
				assert.Equal(t, reported[stream-1], d.Err(), "Err keeps the first problem")
			}
		})
	}
}
