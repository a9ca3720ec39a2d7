package llmmetrics

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// frameView is a Frame with its error as text, so frames compare with ==.
type frameView struct {
	Tokens        int
	HasUsage      bool
	HasInput      bool
	In, Out       int
	Err           string
	Done          bool
	streamErrType string
}

func view(f Frame) frameView {
	v := frameView{Tokens: f.Tokens, HasUsage: f.HasUsage, HasInput: f.HasInput, In: f.InputTokens, Out: f.OutputTokens, Done: f.Done}
	if f.Err != nil {
		v.Err = f.Err.Error()
		var se *StreamError
		if errors.As(f.Err, &se) {
			v.streamErrType = se.Type
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
	Frames      int
	Tokens      int
	TokenFrames int
	FirstToken  int // index of the first frame that carries tokens, -1 if none
	HasUsage    bool
	In, Out     int // the last usage (In also from an input-only frame)
	Done        bool
	Errs        int
	ErrType     string // StreamError.Type of the first error frame
}

func summarize(frames []frameView) summary {
	s := summary{Frames: len(frames), FirstToken: -1}
	for i, f := range frames {
		if f.Tokens > 0 {
			s.Tokens += f.Tokens
			s.TokenFrames++
			if s.FirstToken < 0 {
				s.FirstToken = i
			}
		}
		if f.HasUsage {
			s.HasUsage, s.In, s.Out = true, f.In, f.Out
		} else if f.HasInput {
			s.In = f.In
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
	prev := otel.GetErrorHandler()
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, err)
	}))
	t.Cleanup(func() { otel.SetErrorHandler(prev) })
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
}

var fixtures = []fixture{
	{"openai_chat.sse", openAI, summary{Frames: 11, Tokens: 7, TokenFrames: 7, FirstToken: 1, HasUsage: true, In: 14, Out: 7, Done: true}},
	{"openai_reasoning.sse", openAI, summary{Frames: 13, Tokens: 10, TokenFrames: 10, FirstToken: 1, HasUsage: true, In: 12, Out: 48, Done: true}},
	{"openai_tools.sse", openAI, summary{Frames: 12, Tokens: 10, TokenFrames: 10, FirstToken: 0, Done: true}},
	{"openai_completions.sse", openAI, summary{Frames: 7, Tokens: 4, TokenFrames: 4, FirstToken: 0, HasUsage: true, In: 5, Out: 4, Done: true}},
	{"openai_responses.sse", openAI, summary{Frames: 27, Tokens: 11, TokenFrames: 11, FirstToken: 4, HasUsage: true, In: 25, Out: 60, Done: true}},
	{"vllm_continuous_usage.sse", openAI, summary{Frames: 9, Tokens: 9, TokenFrames: 6, FirstToken: 1, HasUsage: true, In: 20, Out: 9, Done: true}},
	{"openai_error.sse", openAI, summary{Frames: 4, Tokens: 2, TokenFrames: 2, FirstToken: 1, Errs: 1, ErrType: "server_error"}},
	{"openai_keepalive_crlf.sse", openAI, summary{Frames: 6, Tokens: 3, TokenFrames: 3, FirstToken: 1, Done: true}},
	{"anthropic_thinking_tools.sse", anthropic, summary{Frames: 21, Tokens: 9, TokenFrames: 9, FirstToken: 3, HasUsage: true, In: 572, Out: 89, Done: true}},
	{"anthropic_error.sse", anthropic, summary{Frames: 4, Tokens: 1, TokenFrames: 1, FirstToken: 2, In: 25, Errs: 1, ErrType: "overloaded_error"}},
}

func openAI() Decoder { return NewOpenAIDecoder() }

func anthropic() Decoder { return NewAnthropicDecoder() }

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
			assert.NotErrorIs(t, d.Err(), ErrFrameTooLarge)
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
