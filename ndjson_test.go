package llmmetrics

import (
	"errors"
	"strings"
	"testing"

	"github.com/llmmetrics/llmmetrics/internal/jsonscan"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func ollama() Decoder { return newOllamaDecoder() }

// The fixtures' lines, read by hand from the files.
func TestOllamaFixtures(t *testing.T) {
	tests := []struct {
		dir, file string
		want      []fullView
	}{
		{"ndjson", "ollama_chat_thinking.ndjson", []fullView{
			thoughtTok.answering("qwen3:8b", ""), thoughtTok, thoughtTok, // message.thinking; every line names the model
			answerTok, answerTok, answerTok, // message.content
			fullView{}.usage(19, 9, 0).done().finish("stop").server(24573166, 162838875), // eval_count includes the thinking
		}},
		{"ndjson", "ollama_chat_tools.ndjson", []fullView{
			answerTok.answering("llama3.2", ""), // message.tool_calls, content ""
			fullView{}.usage(169, 15, 0).done().finish("stop").server(24573166, 115959084),
		}},
		{"ndjson", "ollama_chat_error.ndjson", []fullView{
			answerTok.answering("llama3.2", ""), answerTok, answerTok,
			{frameView: frameView{Err: "llmmetrics: stream error: an error was encountered while running the model: unexpected EOF", streamErrType: "stream_error"}},
		}},
		{"ndjson", "ollama_generate_thinking.ndjson", []fullView{
			thoughtTok.answering("deepseek-r1:8b", ""), thoughtTok, // thinking
			answerTok, answerTok, // response
			fullView{}.usage(12, 7, 0).done().finish("stop").server(130079000, 618823125),
		}},
		// stream:false answers one object with the same counts; content and
		// thinking concatenated make it an answer line.
		{"json", "ollama_chat.json", []fullView{answerTok.usage(19, 9, 0).done().answering("qwen3:8b", "").finish("stop").server(24573166, 162838875)}},
		{"json", "ollama_generate.json", []fullView{answerTok.usage(26, 11, 0).done().answering("llama3.2", "").finish("stop").server(325953000, 470921300)}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			checkFixture(t, ollama, readTestdata(t, tt.dir, tt.file), tt.want)
		})
	}
}

func TestOllamaDecoderFrames(t *testing.T) {
	const head = `{"model":"llama3.2","created_at":"2026-08-21T10:25:10.5Z",`
	line := func(rest string) string { return head + rest + "\n" }
	errFrame := func(msg string) fullView {
		return fullView{frameView: frameView{Err: "llmmetrics: stream error: " + msg, streamErrType: "stream_error"}}
	}
	tests := []struct {
		name string
		in   string
		want []fullView
	}{
		{"chat content", line(`"message":{"role":"assistant","content":"Hi"},"done":false}`), []fullView{answerTok}},
		{"chat empty content (a logprobs-only line)", line(`"message":{"role":"assistant","content":""},"done":false}`), []fullView{{}}},
		{"chat thinking", line(`"message":{"role":"assistant","content":"","thinking":"hmm"},"done":false}`), []fullView{thoughtTok}},
		{"chat content and thinking: an answer line", line(`"message":{"role":"assistant","content":"a","thinking":"hmm"},"done":false}`), []fullView{answerTok}},
		{"chat tool_calls", line(`"message":{"role":"assistant","content":"","tool_calls":[{"id":"call_k3v9x2qa","function":{"index":0,"name":"f","arguments":{}}}]},"done":false}`), []fullView{answerTok}},
		{"chat empty tool_calls", line(`"message":{"role":"assistant","content":"","tool_calls":[]},"done":false}`), []fullView{{}}},
		{"message not an object", line(`"message":"Hi","done":false}`), []fullView{{}}},
		{"last duplicate message wins", line(`"message":{"content":"a"},"message":{"content":""}}`), []fullView{{}}},
		{"generate response", line(`"response":"Hi","done":false}`), []fullView{answerTok}},
		{"generate thinking", line(`"response":"","thinking":"hmm","done":false}`), []fullView{thoughtTok}},
		{"escaped text", line(`"response":"\u003c","done":false}`), []fullView{answerTok}},
		{"done with counts", line(`"message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":3,"eval_count":5}`), []fullView{fullView{}.usage(3, 5, 0).done()}},
		{"done with its last text", line(`"response":"!","done":true,"prompt_eval_count":3,"eval_count":5}`), []fullView{answerTok.usage(3, 5, 0).done()}},
		{"done without counts (a model load): 0, as Ollama omits zeros", line(`"message":{"role":"assistant","content":""},"done_reason":"load","done":true}`), []fullView{fullView{}.usage(0, 0, 0).done()}},
		{"counts on a line that is not done are ignored", line(`"response":"a","done":false,"eval_count":5}`), []fullView{answerTok}},
		{"done false", line(`"response":"","done":false}`), []fullView{{}}},
		{"a count that is not an integer is 0", line(`"done":true,"prompt_eval_count":3.5,"eval_count":5}`), []fullView{fullView{}.usage(0, 5, 0).done()}},
		{"error line", `{"error":"model runner has unexpectedly stopped"}` + "\n", []fullView{errFrame("model runner has unexpectedly stopped")}},
		{"error object", `{"error":{"message":"boom","type":"api_error"}}` + "\n", []fullView{{frameView: frameView{Err: "llmmetrics: stream error (api_error): boom", streamErrType: "api_error"}}}},
		{"error null is no error", line(`"response":"a","error":null}`), []fullView{answerTok}},
		{"CRLF and blank lines", "\r\n" + strings.TrimSuffix(line(`"response":"a"}`), "\n") + "\r\n\n \t\r\n" + line(`"response":"b"}`), []fullView{answerTok, answerTok}},
		{"final line without LF: Flush reports it", head + `"response":"","done":true,"eval_count":2}`, []fullView{fullView{}.usage(0, 2, 0).done()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := otelErrors(t)
			d := newOllamaDecoder()
			got := decodeFull(d, []byte(tt.in))
			assert.Equal(t, tt.want, countsOnly(got))
			assert.Equal(t, got, decodeFull(newOllamaDecoder(), bytewise([]byte(tt.in))...), "1-byte pieces")
			assert.Empty(t, errs())
			assert.NoError(t, d.Err())
		})
	}
}

func TestOllamaMalformed(t *testing.T) {
	for _, in := range []string{`{"response":"a"`, `[1]`, `data: {"response":"a"}`, `{"response":"a"} x`} {
		t.Run(in, func(t *testing.T) {
			errs := otelErrors(t)
			d := newOllamaDecoder()
			// The next line is still decoded.
			got := decodeFull(d, []byte(in+"\n"+`{"response":"b"}`+"\n"))
			assert.Equal(t, []fullView{{}, answerTok}, got)
			reported := errs()
			require.Len(t, reported, 1)
			assert.ErrorIs(t, reported[0], ErrMalformedFrame)
			assert.True(t, strings.HasPrefix(reported[0].Error(), "llmmetrics: malformed frame: ollama line is not a JSON object ("), reported[0].Error())
			assert.Equal(t, reported[0], d.Err())
		})
	}
}

func TestNDJSONFraming(t *testing.T) {
	// Frames that echo the line: Tokens = its length, In = its first byte.
	echo := func(line []byte) (Frame, error) { return Frame{Tokens: len(line), InputTokens: int(line[0])}, nil }
	f := func(line string) fullView { return fullView{frameView: frameView{Tokens: len(line), In: int(line[0])}} }
	tests := []struct {
		name string
		in   string
		want []fullView
	}{
		{"LF", "ab\ncde\n", []fullView{f("ab"), f("cde")}},
		{"CRLF", "ab\r\ncde\r\n", []fullView{f("ab"), f("cde")}},
		{"only the CR before LF is dropped", "a\r\r\nb\rc\n", []fullView{f("a\r"), f("b\rc")}},
		{"empty and blank lines skipped", "\n\r\n \t \r\nab\n\n", []fullView{f("ab")}},
		{"spaces inside a line kept", "  ab \n", []fullView{f("  ab ")}},
		{"final line without LF", "ab\ncd", []fullView{f("ab"), f("cd")}},
		{"final CR without LF", "ab\r", []fullView{f("ab")}},
		{"nothing", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := otelErrors(t)
			d := NewNDJSONDecoder(echo)
			got := decodeFull(d, []byte(tt.in))
			assert.Equal(t, tt.want, got)
			assert.Equal(t, got, decodeFull(NewNDJSONDecoder(echo), bytewise([]byte(tt.in))...), "1-byte pieces")
			assert.NoError(t, d.Err())
			assert.Empty(t, errs())
		})
	}
}

func TestNDJSONDecoderNilInterpret(t *testing.T) {
	assert.Equal(t, []fullView{{}, {}}, decodeFull(NewNDJSONDecoder(nil), []byte("a\nb")))
}

func TestNDJSONInterpretErrors(t *testing.T) {
	errBad := errors.New("bad line")
	tests := []struct {
		name    string
		err     error
		wantMsg string
	}{
		{"wrapped in ErrMalformedFrame", errBad, "llmmetrics: malformed frame: ndjson line: bad line"},
		{"already wrapping ErrMalformedFrame", ErrMalformedFrame, "llmmetrics: malformed frame"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := otelErrors(t)
			d := NewNDJSONDecoder(func(line []byte) (Frame, error) {
				if line[0] == 'x' {
					return Frame{Tokens: 7}, tt.err
				}
				return Frame{Tokens: 1}, nil
			})
			got := decodeFull(d, []byte("x\na\n"))
			assert.Equal(t, []fullView{{frameView: frameView{Tokens: 7}}, {frameView: frameView{Tokens: 1}}}, got, "the frame is emitted as returned; decoding goes on")
			require.Len(t, errs(), 1)
			assert.ErrorIs(t, d.Err(), ErrMalformedFrame)
			assert.ErrorIs(t, d.Err(), tt.err)
			assert.Equal(t, tt.wantMsg, d.Err().Error())
		})
	}
}

func TestNDJSONLineTooLarge(t *testing.T) {
	tests := []struct {
		name   string
		pieces []string
		want   []fullView
	}{
		{"a line at the limit", []string{"abcd\nef\n"}, []fullView{{frameView: frameView{Tokens: 4}}, {frameView: frameView{Tokens: 2}}}},
		{"a line over the limit in one piece", []string{"ab\nabcde\nab\n"}, []fullView{{frameView: frameView{Tokens: 2}}}},
		{"a line over the limit across pieces", []string{"ab\nabc", "de", "\nab\n"}, []fullView{{frameView: frameView{Tokens: 2}}}},
		{"an unterminated line over the limit", []string{"abcde"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := otelErrors(t)
			released := 0
			d := newNDJSON("ndjson", &countingLines{released: &released}, []DecoderOption{WithMaxFrameBytes(4)})
			var pieces [][]byte
			for _, p := range tt.pieces {
				pieces = append(pieces, []byte(p))
			}
			assert.Equal(t, tt.want, decodeFull(d, pieces...))
			if len(tt.want) == 2 {
				assert.NoError(t, d.Err())
				assert.Zero(t, released)
				return
			}
			assert.ErrorIs(t, d.Err(), errFrameTooLarge)
			assert.Equal(t, "llmmetrics: malformed frame: too large: ndjson line larger than 4 bytes; decoding of this stream stopped", d.Err().Error())
			assert.Len(t, errs(), 1)
			assert.Nil(t, d.line, "a stopped decoder holds nothing")
			assert.Equal(t, 1, released, "the interpreter is released")
		})
	}
}

// countingLines counts a line's bytes and its releases.
type countingLines struct{ released *int }

func (c *countingLines) interpret(_, line []byte) (Frame, error) {
	return Frame{Tokens: len(line)}, nil
}
func (c *countingLines) release() { *c.released++ }

// A content line allocates nothing once the decoder's buffer has grown,
// whole or split across reads.
func TestOllamaDecodeContentLineAllocs(t *testing.T) {
	lines := map[string]string{
		"chat content":  `{"model":"qwen3:8b","created_at":"2026-08-21T10:15:30.155311208Z","message":{"role":"assistant","content":" 3 \u003c 5."},"done":false}` + "\n",
		"chat thinking": `{"model":"qwen3:8b","created_at":"2026-08-21T10:15:30.118734012Z","message":{"role":"assistant","content":"","thinking":", 3 \u003c 5"},"done":false}` + "\n",
		"generate":      `{"model":"deepseek-r1:8b","created_at":"2026-08-21T10:30:45.236580541Z","response":"Rayleigh","done":false}` + "\r\n",
	}
	for name, line := range lines {
		t.Run(name, func(t *testing.T) {
			ev := []byte(line)
			d := newOllamaDecoder()
			tokens := 0
			emit := func(f Frame) { tokens += f.Tokens }
			half := len(ev) / 2
			d.Decode(ev[:half], emit) // grow the buffer
			d.Decode(ev[half:], emit)
			assert.Zero(t, testing.AllocsPerRun(100, func() { d.Decode(ev, emit) }), "whole")
			assert.Zero(t, testing.AllocsPerRun(100, func() {
				d.Decode(ev[:half], emit)
				d.Decode(ev[half:], emit)
			}), "split")
			require.Equal(t, 1+2*101, tokens, "every line carried its token (AllocsPerRun runs 1 + 100 times)")
			require.NoError(t, d.Err())
		})
	}
}

// ollamaCacheInterp is the Ollama interpreter with a jsonscan.Cache, to
// show why ProtocolOllama.NewDecoder has none.
type ollamaCacheInterp struct {
	j     jsonscan.Scanner
	cache jsonscan.Cache[ollamaFacts]
	hits  int
}

func (o *ollamaCacheInterp) interpret(_, line []byte) (Frame, error) {
	f, hit := o.cache.Walk(&o.j, line, walkOllama)
	if hit {
		o.hits++
	}
	if f == nil {
		return Frame{}, ErrMalformedFrame
	}
	return f.frame(line), nil
}

func (o *ollamaCacheInterp) release() {}

// A scan cache would answer no line of an Ollama stream: each starts with
// its own created_at, before the text.
func TestOllamaScanCacheWouldNotHit(t *testing.T) {
	for _, name := range []string{"ollama_chat_thinking.ndjson", "ollama_generate_thinking.ndjson", "ollama_chat_error.ndjson"} {
		t.Run(name, func(t *testing.T) {
			in := &ollamaCacheInterp{}
			data := readTestdata(t, "ndjson", name)
			got := decodeFull(newNDJSON("ollama", in, nil), data)
			assert.Zero(t, in.hits)
			assert.Equal(t, countsOnly(decodeFull(newOllamaDecoder(), data)), countsOnly(got))
		})
	}
	in := &ollamaCacheInterp{}
	decodeFull(newNDJSON("ollama", in, nil), ollamaStream(1000))
	assert.Zero(t, in.hits, "the benchmark stream")
}
