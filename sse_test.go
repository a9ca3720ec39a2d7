package llmmetrics

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

func openAI() Decoder    { return NewOpenAIDecoder() }
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

			whole := decodePieces(fx.dec(), data)
			assert.Equal(t, fx.want, summarize(whole))
			assert.Empty(t, errs(), "a well-formed fixture reports nothing through otel.Handle")

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

func TestAnthropicDecoderFrames(t *testing.T) {
	ev := func(name, payload string) string { return "event: " + name + "\ndata: " + payload + "\n\n" }
	start := ev("message_start", `{"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":10,"cache_creation_input_tokens":5,"cache_read_input_tokens":20,"output_tokens":1}}}`)
	tests := []struct {
		name string
		in   string
		want []frameView
	}{
		{"message_start sums the prompt and ignores its placeholder output count", start, []frameView{{HasInput: true, In: 35}}},
		{"text_delta", ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}`), []frameView{{Tokens: 1}}},
		{"empty text_delta", ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":""}}`), []frameView{{}}},
		{"thinking_delta", ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}`), []frameView{{Tokens: 1}}},
		{"input_json_delta", ev("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\""}}`), []frameView{{Tokens: 1}}},
		{"signature_delta", ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQB"}}`), []frameView{{}}},
		{"text under the wrong delta type", ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","text":"x"}}`), []frameView{{}}},
		{"message_delta keeps the input count",
			start + ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}`),
			[]frameView{{HasInput: true, In: 35}, {HasUsage: true, In: 35, Out: 15}}},
		{"message_delta with its own input counts",
			start + ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":10,"cache_creation_input_tokens":5,"cache_read_input_tokens":25,"output_tokens":15}}`),
			[]frameView{{HasInput: true, In: 35}, {HasUsage: true, In: 40, Out: 15}}},
		{"message_stop", ev("message_stop", `{"type":"message_stop"}`), []frameView{{Done: true}}},
		{"ping", ev("ping", `{"type": "ping"}`), []frameView{{}}},
		{"error", ev("error", `{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}`),
			[]frameView{{Err: "llmmetrics: stream error (overloaded_error): Overloaded", streamErrType: "overloaded_error"}}},
		{"unknown event", ev("content_block_citation", `{"type":"content_block_citation","text":"x"}`), []frameView{{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := otelErrors(t)
			assert.Equal(t, tt.want, decodePieces(NewAnthropicDecoder(), []byte(tt.in)))
			assert.Empty(t, errs())
		})
	}
}

type sseEvent struct{ Event, Data string }

// recordEvents returns an SSE decoder that records what interpret is given.
func recordEvents(opts ...DecoderOption) (Decoder, *[]sseEvent) {
	var got []sseEvent
	d := NewSSEDecoder(func(event, data []byte) Frame {
		got = append(got, sseEvent{string(event), string(data)})
		return Frame{Tokens: 1}
	}, opts...)
	return d, &got
}

func TestSSEFraming(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []sseEvent
	}{
		{"LF", "data: a\n\ndata: b\n\n", []sseEvent{{"", "a"}, {"", "b"}}},
		{"CRLF", "data: a\r\n\r\ndata: b\r\n\r\n", []sseEvent{{"", "a"}, {"", "b"}}},
		{"CR", "data: a\r\rdata: b\r\r", []sseEvent{{"", "a"}, {"", "b"}}},
		{"mixed line endings", "data: a\r\n\rdata: b\n\r\n", []sseEvent{{"", "a"}, {"", "b"}}},
		{"multi-line data joined with LF", "data: a\ndata: b\ndata:\n\n", []sseEvent{{"", "a\nb\n"}}},
		{"only one leading space is dropped", "data:  a\ndata:b\n\n", []sseEvent{{"", " a\nb"}}},
		{"event name", "event: delta\ndata: x\n\n", []sseEvent{{"delta", "x"}}},
		{"event name does not leak to the next event", "event: one\ndata: x\n\ndata: y\n\n", []sseEvent{{"one", "x"}, {"", "y"}}},
		{"event with no data is not dispatched", "event: ping\n\ndata: y\n\n", []sseEvent{{"", "y"}}},
		{"empty data line dispatches empty data", "data\n\n", []sseEvent{{"", ""}}},
		{"comments and keep-alives", ": keep-alive\n:\n\n: ping\ndata: x\n: inside\n\n", []sseEvent{{"", "x"}}},
		{"id, retry and unknown fields", "id: 7\nretry: 1000\nfoo: bar\ndata: x\n\n", []sseEvent{{"", "x"}}},
		{"colon in the value", "data: {\"a\":\"b:c\"}\n\n", []sseEvent{{"", `{"a":"b:c"}`}}},
		{"BOM at the start is skipped", "\xEF\xBB\xBFdata: x\n\n", []sseEvent{{"", "x"}}},
		{"a second BOM is not skipped", "\xEF\xBB\xBF\xEF\xBB\xBFdata: x\n\ndata: y\n\n", []sseEvent{{"", "y"}}},
		{"a partial BOM is ordinary bytes", "\xEF\xBBdata: x\n\ndata: y\n\n", []sseEvent{{"", "y"}}},
		{"Flush ends the last line and event", "data: a\ndata: b", []sseEvent{{"", "a\nb"}}},
		{"Flush with a trailing CR", "data: a\r", []sseEvent{{"", "a"}}},
		{"nothing", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := []byte(tt.in)
			d, got := recordEvents()
			frames := decodePieces(d, in)
			assert.Equal(t, tt.want, *got)
			assert.Len(t, frames, len(tt.want), "one frame per event")
			for cut := 0; cut <= len(in); cut++ {
				d, got2 := recordEvents()
				decodePieces(d, in[:cut], in[cut:])
				assert.Equal(t, tt.want, *got2, "split at byte %d", cut)
			}
		})
	}
}

func TestSSEDecoderNilInterpret(t *testing.T) {
	got := decodePieces(NewSSEDecoder(nil), []byte("data: x\n\ndata: y\n\n"))
	assert.Equal(t, []frameView{{}, {}}, got)
}

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
			assert.Equal(t, tt.want, decodePieces(NewTextDecoder(tt.count, WithMaxFrameBytes(1)), pieces...))
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
			got := decodePieces(tt.dec(), []byte(in))
			assert.Equal(t, []frameView{{}, {Done: true}}, got)
			reported := errs()
			require.Len(t, reported, 1)
			assert.ErrorIs(t, reported[0], ErrMalformedFrame)
			assert.True(t, strings.HasPrefix(reported[0].Error(), "llmmetrics: "), reported[0].Error())
		})
	}
}

func TestFrameTooLarge(t *testing.T) {
	big := "data: " + strings.Repeat("x", 100) + "\n\n"
	tests := []struct {
		name   string
		limit  int
		in     string
		frames int  // frames before decoding stops
		stops  bool // ErrFrameTooLarge reported
	}{
		{"under the limit", 106, big + big, 2, false},
		{"one line over the limit", 105, "data: a\n\n" + big + "data: b\n\n", 1, true},
		{"many data lines over the limit", 30, "data: a\n\n" + strings.Repeat("data: 0123456789\n", 3) + "\ndata: b\n\n", 1, true},
		{"an unterminated line over the limit", 50, "data: a\n\n" + strings.Repeat("y", 51), 1, true},
		{"long comment lines count too", 50, ":" + strings.Repeat("y", 60) + "\ndata: a\n\n", 0, true},
		{"default limit is 1 MiB", 0, "data: " + strings.Repeat("z", 1<<20) + "\n\n", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := otelErrors(t)
			for _, pieces := range []int{1, 7} {
				d, _ := recordEvents(WithMaxFrameBytes(tt.limit))
				in := []byte(tt.in)
				var chunks [][]byte
				for len(in) > 0 {
					n := min(len(in), max(1, len(tt.in)/pieces))
					chunks, in = append(chunks, in[:n]), in[n:]
				}
				got := decodePieces(d, chunks...)
				assert.Len(t, got, tt.frames, "%d pieces", pieces)
				// A stopped decoder ignores everything after.
				d.Decode([]byte("data: late\n\n"), func(Frame) { t.Error("frame after the decoder stopped") })
				if tt.stops {
					assert.Len(t, d.(*sseDecoder).data, 0, "buffers are released")
				}
			}
			reported := errs()
			if !tt.stops {
				assert.Empty(t, reported)
				return
			}
			require.Len(t, reported, 2)
			assert.ErrorIs(t, reported[0], ErrFrameTooLarge)
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

// The scanner enforces encoding/json's nesting limit exactly.
func TestScannerDepthLimit(t *testing.T) {
	for _, depth := range []int{maxJSONDepth - 1, maxJSONDepth, maxJSONDepth + 1} {
		for _, open := range []string{"[", "{\"a\":"} {
			t.Run(fmt.Sprintf("%s%d", open[:1], depth), func(t *testing.T) {
				closer := "]"
				if open != "[" {
					closer = "}"
				}
				// The top-level object is one level; the rest nest inside "x".
				doc := `{"x":` + strings.Repeat(open, depth-1) + "1" + strings.Repeat(closer, depth-1) + "}"
				var j jsonScanner
				var f facts
				_, refOK := refFacts([]byte(doc))
				assert.Equal(t, depth <= maxJSONDepth, refOK, "encoding/json")
				assert.Equal(t, refOK, j.scan([]byte(doc), &f), "scanner")
			})
		}
	}
}

// A content event on the OpenAI chat path allocates nothing once the
// decoder's buffers have grown.
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
	t.Run("anthropic text_delta", func(t *testing.T) {
		ev := []byte("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n")
		d := NewAnthropicDecoder()
		tokens := 0
		emit := func(f Frame) { tokens += f.Tokens }
		d.Decode(ev, emit)
		assert.Zero(t, testing.AllocsPerRun(100, func() { d.Decode(ev, emit) }))
		require.Positive(t, tokens)
	})
}

// Line endings are found in linear time: a long run of CR-only lines (no LF
// anywhere) used to be rescanned for an LF once per line.
func TestSSEManyCROnlyLines(t *testing.T) {
	const n = 200_000
	in := bytes.Repeat([]byte("data: x\r\r"), n)
	frames := decodePieces(NewSSEDecoder(func(_, data []byte) Frame { return Frame{Tokens: len(data)} }), in)
	require.Len(t, frames, n)
	assert.Equal(t, frameView{Tokens: 1}, frames[n-1])
}

// The scan cache (see scanCache) must give the frames a full scan gives.
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
			with := decodePieces(newOpenAIDecoder(nil, true), []byte(tt.in))
			without := decodePieces(newOpenAIDecoder(nil, false), []byte(tt.in))
			assert.Equal(t, tt.want, with)
			assert.Equal(t, without, with)

			d := newOpenAIDecoder(nil, true)
			decodePieces(d, []byte(tt.in))
			hits := d.cache.hits
			if strings.Contains(tt.name, "malformed") {
				assert.Len(t, errs(), 3, "one report per decoder")
			} else {
				assert.Empty(t, errs())
			}
			assert.Equal(t, tt.hits, hits)
		})
	}
}

// The string scan skips 8 bytes at a time: a quote, a backslash or a control
// character must be found at every offset, in keys and values, as
// encoding/json finds it.
func TestScannerStringsAtEveryOffset(t *testing.T) {
	specials := []string{`"`, `\"`, `\\`, `\n`, `\u00e9`, `\x`, "\x00", "\x1f", "\x7f", "\x80", "\xff", " "}
	for _, sp := range specials {
		t.Run(fmt.Sprintf("%q", sp), func(t *testing.T) {
			for k := range 20 {
				body := strings.Repeat("a", k) + sp + strings.Repeat("b", 20-k)
				for _, doc := range []string{
					`{"choices":[{"delta":{"content":"` + body + `"}}]}`,
					`{"` + body + `":1,"choices":[{"text":"x"}]}`,
				} {
					var j jsonScanner
					var got facts
					ok := j.scan([]byte(doc), &got)
					want, refOK := refFacts([]byte(doc))
					require.Equal(t, refOK, ok, "validity of %q", doc)
					if ok {
						assert.Equal(t, want, got, "facts of %q", doc)
					}
				}
			}
		})
	}
}
