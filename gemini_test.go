package llmmetrics

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/llmmetrics/llmmetrics/internal/jsonscan"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

func gemini() Decoder { return newGeminiDecoder() }

func geminiArray() Decoder { return newGeminiArrayDecoder() }

// The fixtures' frames, read by hand from the files: token frames
// (reasoning or answer), usage In / Out (candidates + thoughts) / reasoning
// (thoughts), who answered, why it ended, and the end.
func TestGeminiFixtures(t *testing.T) {
	tests := []struct {
		file string
		dec  func() Decoder
		want []fullView
	}{
		{"stream_thinking.sse", gemini, []fullView{
			thoughtTok.usage(9, 64, 64).answering("gemini-2.5-flash", "Vx3ZaPqLKb2m7tMPw5rS8Qk"),
			thoughtTok.usage(9, 211, 211),
			thoughtTok.usage(9, 305, 305),
			answerTok.usage(9, 14+305, 305),
			answerTok.usage(9, 27+305, 305).done().finish("STOP"),
		}},
		{"stream_basic.sse", gemini, []fullView{
			answerTok.input(7).answering("gemini-2.0-flash", ""), // candidatesTokenCount absent: no output count yet
			answerTok.input(7),
			answerTok.usage(7, 10, 0).done().finish("STOP"),
		}},
		{"stream_function_call.sse", gemini, []fullView{
			thoughtTok.usage(38, 71, 71).answering("gemini-2.5-flash", "Kq9sUx1bNf4pHtM7c2dLwRz"),
			answerTok.usage(38, 6+71, 71).done().finish("STOP"), // the functionCall part
		}},
		{"stream_prompt_blocked.sse", gemini, []fullView{
			{frameView: frameView{Err: "llmmetrics: stream error (SAFETY): prompt blocked", streamErrType: "SAFETY", Done: true}},
		}},
		{"stream_error.sse", gemini, []fullView{
			answerTok.input(6).answering("gemini-2.0-flash", ""),
			answerTok.input(6),
			{frameView: frameView{Err: "llmmetrics: stream error (UNAVAILABLE, code 503): The model is overloaded. Please try again later.", streamErrType: "UNAVAILABLE"}},
		}},
		{"stream_error_multiline.sse", gemini, []fullView{
			answerTok.input(6).answering("gemini-2.5-flash", ""),
			answerTok.input(6),
			{frameView: frameView{Err: "llmmetrics: stream error (RESOURCE_EXHAUSTED, code 429): " + quotaMessage, streamErrType: "RESOURCE_EXHAUSTED"}},
		}},
		{"stream_cached.sse", gemini, []fullView{
			answerTok.input(2071).cached(2048).answering("gemini-2.5-flash", ""),
			answerTok.usage(2071, 6, 0).cached(2048).done().finish("STOP"),
		}},
		{"stream_vertex.sse", gemini, []fullView{
			answerTok.answering("gemini-3.1-flash-lite-preview", "pR7dWkMz2QhLs9TfYx4bNcE"), // usageMetadata {"trafficType": …} only: no usage
			answerTok,
			answerTok,
			fullView{}.usage(1, 9, 0).done().finish("STOP"), // its only part is "" + thoughtSignature
		}},
		{"stream_array.json", geminiArray, []fullView{
			answerTok.usage(9, 8+305, 305).answering("gemini-2.5-flash", "Vx3ZaPqLKb2m7tMPw5rS8Qk"),
			answerTok.usage(9, 16+305, 305),
			answerTok.usage(9, 22+305, 305).done().finish("STOP"),
			doneFrame, // the closing ']'
		}},
		{"generate_content_function_call.json", geminiArray, []fullView{
			// One object, not an array: a thought and a functionCall part.
			answerTok.usage(41, 7+412, 412).done().answering("gemini-2.5-pro", "Ja2lRbN8Dq5fUc0WkYs3TgP").finish("STOP"),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			checkFixture(t, tt.dec, readTestdata(t, "gemini", tt.file), tt.want)
		})
	}
	t.Run("json/gemini_generate_content.json", func(t *testing.T) {
		// promptTokenCount 2071 includes the 2048 cached tokens; 306 thoughts
		// beside 25 candidates tokens.
		checkFixture(t, geminiArray, readTestdata(t, "json", "gemini_generate_content.json"),
			[]fullView{answerTok.usage(2071, 25+306, 306).cached(2048).done().answering("gemini-2.5-flash", "Wm4pQr7TzKc2nV9sLx1dHfA").finish("STOP")})
	})
}

const quotaMessage = "You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits."

// gchunk wraps a GenerateContentResponse as one SSE event, as Gemini frames it.
func gchunk(payload string) string { return "data: " + payload + "\r\n\r\n" }

// gparts is a chunk whose candidate has the given parts.
func gparts(parts string) string {
	return gchunk(`{"candidates": [{"content": {"parts": [` + parts + `],"role": "model"},"index": 0}]}`)
}

func TestGeminiDecoderFrames(t *testing.T) {
	blocked := func(reason string) fullView {
		return fullView{frameView: frameView{Err: "llmmetrics: stream error (" + reason + "): prompt blocked", streamErrType: reason, Done: true}}
	}
	tests := []struct {
		name string
		in   string
		want []fullView
	}{
		{"text", gparts(`{"text": "Hi"}`), []fullView{answerTok}},
		{"empty text", gparts(`{"text": ""}`), []fullView{{}}},
		{"empty text with a thoughtSignature", gparts(`{"text": "","thoughtSignature": "Ab3k"}`), []fullView{{}}},
		{"thought", gparts(`{"text": "hmm","thought": true}`), []fullView{thoughtTok}},
		{"thought false is an answer", gparts(`{"text": "a","thought": false}`), []fullView{answerTok}},
		{"an empty thought carries nothing", gparts(`{"text": "","thought": true}`), []fullView{{}}},
		{"thought and answer parts: an answer frame", gparts(`{"text": "hmm","thought": true},{"text": "Hi"}`), []fullView{answerTok}},
		{"two thought parts", gparts(`{"text": "a","thought": true},{"text": "b","thought": true}`), []fullView{thoughtTok}},
		{"functionCall", gparts(`{"functionCall": {"name": "now","args": {}}}`), []fullView{answerTok}},
		{"empty functionCall", gparts(`{"functionCall": {}}`), []fullView{{}}},
		{"executableCode", gparts(`{"executableCode": {"language": "PYTHON","code": "print(1)"}}`), []fullView{answerTok}},
		{"inlineData (a generated image)", gparts(`{"inlineData": {"mimeType": "image/png","data": "iVBORw0K"}}`), []fullView{answerTok}},
		{"codeExecutionResult is the tool's, not the model's", gparts(`{"codeExecutionResult": {"outcome": "OUTCOME_OK","output": "1"}}`), []fullView{{}}},
		{"last duplicate text wins", gparts(`{"text": "a","text": ""}`), []fullView{{}}},
		{"escaped member name", gparts(`{"\u0074ext": "a"}`), []fullView{answerTok}},
		{"two candidates carry: 1 token each", gchunk(`{"candidates": [{"content": {"parts": [{"text": "a"}]},"index": 0},{"content": {"parts": [{"text": "b"}]},"index": 1}]}`),
			[]fullView{{frameView: frameView{Tokens: 2}}}},
		{"no candidates", gchunk(`{"candidates": [],"usageMetadata": {"promptTokenCount": 4}}`), []fullView{fullView{}.input(4)}},
		{"finishReason without content", gchunk(`{"candidates": [{"finishReason": "MAX_TOKENS","index": 0}]}`), []fullView{doneFrame}},
		{"empty finishReason is not the end", gchunk(`{"candidates": [{"content": {"parts": [{"text": "a"}]},"finishReason": ""}]}`), []fullView{answerTok}},
		{"usage sums candidates and thoughts, input and tool-use input",
			gchunk(`{"usageMetadata": {"promptTokenCount": 100,"cachedContentTokenCount": 64,"toolUsePromptTokenCount": 20,"candidatesTokenCount": 7,"thoughtsTokenCount": 30,"totalTokenCount": 157}}`),
			[]fullView{fullView{}.usage(120, 37, 30).cached(64)}},
		{"a cached count above the prompt count is not believed",
			gchunk(`{"usageMetadata": {"promptTokenCount": 10,"cachedContentTokenCount": 64,"candidatesTokenCount": 7}}`),
			[]fullView{fullView{}.usage(10, 7, 0)}},
		{"usage with only trafficType is not usage", gchunk(`{"usageMetadata": {"trafficType": "ON_DEMAND"}}`), []fullView{{}}},
		{"usage null", gchunk(`{"usageMetadata": null}`), []fullView{{}}},
		{"promptFeedback without blockReason", gchunk(`{"promptFeedback": {"safetyRatings": []},"candidates": [{"content": {"parts": [{"text": "a"}]}}]}`), []fullView{answerTok}},
		{"blocked prompt", gchunk(`{"promptFeedback": {"blockReason": "OTHER"}}`), []fullView{blocked("OTHER")}},
		{"blocked prompt with usage", gchunk(`{"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"},"usageMetadata": {"promptTokenCount": 12,"totalTokenCount": 12}}`),
			[]fullView{blocked("PROHIBITED_CONTENT").input(12)}},
		{"error object in an event's data", gchunk(`{"error": {"code": 500,"message": "Internal error","status": "INTERNAL"}}`),
			[]fullView{{frameView: frameView{Err: "llmmetrics: stream error (INTERNAL, code 500): Internal error", streamErrType: "INTERNAL"}}}},
		{"error as a string", gchunk(`{"error": "boom"}`), []fullView{{frameView: frameView{Err: "llmmetrics: stream error: boom", streamErrType: "stream_error"}}}},
		{"error null is no error", gchunk(`{"error": null,"candidates": [{"content": {"parts": [{"text": "a"}]}}]}`), []fullView{answerTok}},
		{"bare error line after events (LF)", "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"a\"}]}}]}\n\n{\"error\": {\"code\": 429, \"message\": \"Resource exhausted\", \"status\": \"RESOURCE_EXHAUSTED\"}}\n",
			[]fullView{answerTok, {frameView: frameView{Err: "llmmetrics: stream error (RESOURCE_EXHAUSTED, code 429): Resource exhausted", streamErrType: "RESOURCE_EXHAUSTED"}}}},
		{"bare error line without a line end", `{"error": {"code": 503, "status": "UNAVAILABLE"}}`,
			[]fullView{{frameView: frameView{Err: "llmmetrics: stream error (UNAVAILABLE, code 503)", streamErrType: "UNAVAILABLE"}}}},
		{"multi-line error object, CRLF, a blank line and braces inside strings",
			gparts(`{"text": "a"}`) + "{\r\n  \"error\": {\r\n\r\n    \"code\": 429,\r\n    \"message\": \"quota } { [\\\" exceeded\",\r\n    \"status\": \"RESOURCE_EXHAUSTED\"\r\n  }\r\n}\r\n",
			[]fullView{answerTok, {frameView: frameView{Err: "llmmetrics: stream error (RESOURCE_EXHAUSTED, code 429): quota } { [\" exceeded", streamErrType: "RESOURCE_EXHAUSTED"}}}},
		{"multi-line error object without a final line end", "{\n  \"error\": {\"code\": 503, \"status\": \"UNAVAILABLE\"}\n}",
			[]fullView{{frameView: frameView{Err: "llmmetrics: stream error (UNAVAILABLE, code 503)", streamErrType: "UNAVAILABLE"}}}},
		{"a multi-line object does not touch the event being built", "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"a\"}]}}]}\n{\n\"error\": {\"status\": \"UNAVAILABLE\"}\n}\n\n",
			[]fullView{{frameView: frameView{Err: "llmmetrics: stream error (UNAVAILABLE)", streamErrType: "UNAVAILABLE"}}, answerTok}},
		{"a bare line does not touch the event being built", "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"a\"}]}}]}\n{\"error\": {\"status\": \"UNAVAILABLE\"}}\n\n",
			[]fullView{{frameView: frameView{Err: "llmmetrics: stream error (UNAVAILABLE)", streamErrType: "UNAVAILABLE"}}, answerTok}},
		{"comments and other fields are still ignored", ": keep-alive\r\nid: 7\r\n" + gparts(`{"text": "a"}`), []fullView{answerTok}},
		{"no final blank line: Flush reports the frame", `data: {"candidates": [{"content": {"parts": [{"text": "a"}]},"finishReason": "STOP"}]}`, []fullView{answerTok.done()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := otelErrors(t)
			d := newGeminiDecoder()
			got := decodeFull(d, []byte(tt.in))
			assert.Equal(t, tt.want, countsOnly(got))
			assert.Equal(t, got, decodeFull(newGeminiDecoder(), bytewise([]byte(tt.in))...), "1-byte pieces")
			assert.Empty(t, errs())
			assert.NoError(t, d.Err())
		})
	}
}

func TestGeminiMalformed(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []fullView
	}{
		{"data not JSON", "data: {\"candidates\": [\r\n\r\n", []fullView{{}}},
		{"data an array", "data: [1]\r\n\r\n", []fullView{{}}},
		{"bare line that is not an error object", `{"candidates": [{"content": {"parts": [{"text": "a"}]}}]}` + "\n", []fullView{{}}},
		{"bare line that is not JSON", "{oops\n", []fullView{{}}},
		{"bare line with error null", `{"error": null}` + "\n", []fullView{{}}},
		{"bare object cut by a data line", "{\n  \"error\": {\n    \"code\": 429,\n", []fullView{{}}},
		{"bare object whose string runs to the end of its line", "{\n  \"error\": \"a\n}\n", []fullView{{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := otelErrors(t)
			d := newGeminiDecoder()
			// The next event is still decoded.
			got := decodeFull(d, []byte(tt.in+gparts(`{"text": "a"}`)))
			assert.Equal(t, append(tt.want, answerTok), got)
			reported := errs()
			require.Len(t, reported, 1)
			assert.ErrorIs(t, reported[0], ErrMalformedFrame)
			assert.True(t, strings.HasPrefix(reported[0].Error(), "llmmetrics: "), reported[0].Error())
			assert.Equal(t, reported[0], d.Err())
		})
	}
}

// Only the Gemini decoder reads bare lines: for the other SSE decoders a
// line starting with '{' is still an unknown field, ignored.
func TestBareLinesOnlyForGemini(t *testing.T) {
	in := []byte("{\"error\": {\"code\": 503, \"status\": \"UNAVAILABLE\"}}\ndata: [DONE]\n\n")
	tests := []struct {
		name string
		dec  Decoder
		want []fullView
	}{
		{"openai", newOpenAIDecoder(), []fullView{doneFrame}},
		{"anthropic", newAnthropicDecoder(), []fullView{{}}}, // [DONE] is not JSON: malformed, nothing
		{"sse", NewSSEDecoder(func(_, data []byte) (Frame, error) { return Frame{Tokens: len(data)}, nil }), []fullView{{frameView: frameView{Tokens: 6}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			otelErrors(t)
			assert.Equal(t, tt.want, decodeFull(tt.dec, in))
		})
	}
}

func TestGeminiArrayFraming(t *testing.T) {
	const (
		a = `{"candidates": [{"content": {"parts": [{"text": "a"}]}}]}`
		b = `{"candidates": [{"content": {"parts": [{"text": "b}\"]{["}]},"finishReason": "STOP"}]}`
	)
	tests := []struct {
		name string
		in   string
		want []fullView
	}{
		{"compact", "[" + a + "," + b + "]", []fullView{answerTok, answerTok.done(), doneFrame}},
		{"whitespace and extra commas", " \r\n[ \t\n" + a + "\n,\r\n,, " + b + "\n]\n ", []fullView{answerTok, answerTok.done(), doneFrame}},
		{"empty array", "[]", []fullView{doneFrame}},
		{"one object, not an array", a, []fullView{answerTok.done()}},
		{"nested arrays and objects", `[{"candidates": [{"content": {"parts": [{"text": "x"}],"z": [[{}],[]]}}]}]`, []fullView{answerTok, doneFrame}},
		{"cut between elements", "[" + a + ",", []fullView{answerTok}},
		{"nothing", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := otelErrors(t)
			d := newGeminiArrayDecoder()
			got := decodeFull(d, []byte(tt.in))
			assert.Equal(t, tt.want, countsOnly(got))
			assert.Equal(t, got, decodeFull(newGeminiArrayDecoder(), bytewise([]byte(tt.in))...), "1-byte pieces")
			assert.Empty(t, errs())
			assert.NoError(t, d.Err())
		})
	}
}

func TestGeminiArrayProblems(t *testing.T) {
	const a = `{"candidates": [{"content": {"parts": [{"text": "a"}]}}]}`
	tests := []struct {
		name string
		in   string
		opts []DecoderOption
		want []fullView
		is   error
	}{
		{"junk before the array stops", "x[" + a + "]", nil, nil, ErrMalformedFrame},
		{"junk between elements stops", "[" + a + " 7 " + a + "]", nil, []fullView{answerTok}, ErrMalformedFrame},
		{"a scalar element stops", "[1," + a + "]", nil, nil, ErrMalformedFrame},
		{"junk after the end stops", "[" + a + "] x " + a, nil, []fullView{answerTok, doneFrame}, ErrMalformedFrame},
		{"a second object after a single object", a + a, nil, []fullView{answerTok.done()}, ErrMalformedFrame},
		{"an invalid element is skipped", `[{"candidates": [1 2]}, ` + a + "]", nil, []fullView{{}, answerTok, doneFrame}, ErrMalformedFrame},
		{"the body ends inside an element", "[" + a + `, {"candidates": [`, nil, []fullView{answerTok, {}}, ErrMalformedFrame},
		{"an element over the limit stops", "[" + a + "," + a + "]", []DecoderOption{WithMaxFrameBytes(len(a) - 1)}, nil, errFrameTooLarge},
		{"an element at the limit is fine, split or not", "[" + a + "]", []DecoderOption{WithMaxFrameBytes(len(a))}, []fullView{answerTok, doneFrame}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := otelErrors(t)
			d := newGeminiArrayDecoder(tt.opts...)
			got := decodeFull(d, []byte(tt.in))
			assert.Equal(t, tt.want, got)
			assert.Equal(t, got, decodeFull(newGeminiArrayDecoder(tt.opts...), bytewise([]byte(tt.in))...), "1-byte pieces")
			if tt.is == nil {
				assert.NoError(t, d.Err())
				assert.Empty(t, errs())
				return
			}
			require.Error(t, d.Err())
			assert.ErrorIs(t, d.Err(), tt.is)
			assert.True(t, strings.HasPrefix(d.Err().Error(), "llmmetrics: "), d.Err().Error())
			assert.NotEmpty(t, errs())
			assert.Equal(t, d.Err(), errs()[0])
		})
	}
}

// A stopped array decoder holds nothing and ignores the rest of the body.
func TestGeminiArrayTooLargeReleases(t *testing.T) {
	otelErrors(t)
	d := newGeminiArrayDecoder(WithMaxFrameBytes(64)).(*jsonArrayDecoder)
	var frames []fullView
	emit := func(f Frame) { frames = append(frames, fullViewOf(f)) }
	d.Decode([]byte(`[{"candidates": [{"content": {"parts": [{"text": "a"}]}}]}, {"candidates": [{"cont`), emit)
	require.Len(t, frames, 1, "the first element fits")
	d.Decode([]byte(strings.Repeat("x", 100)+`"}]}]`), emit)
	assert.ErrorIs(t, d.Err(), errFrameTooLarge)
	assert.Nil(t, d.buf)
	assert.Equal(t, jsonscan.Cache[geminiFacts]{}, d.in.(*geminiInterp).cache, "the scan cache is released")
	d.Decode([]byte(`,{"candidates": [{"content": {"parts": [{"text": "a"}]}}]}]`), emit)
	d.Flush(emit)
	assert.Len(t, frames, 1)
}

// A content event allocates nothing once the decoder's buffers have grown,
// whole or split across reads, in both framings.
func TestGeminiDecodeContentEventAllocs(t *testing.T) {
	const payload = `{"candidates": [{"content": {"parts": [{"text": "Sunlight is scattered by the gas molecules of the air, and blue light"}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 9,"candidatesTokenCount": 14,"totalTokenCount": 328,"promptTokensDetails": [{"modality": "TEXT","tokenCount": 9}],"thoughtsTokenCount": 305},"modelVersion": "gemini-2.5-flash","responseId": "Vx3ZaPqLKb2m7tMPw5rS8Qk"}`
	thought := strings.Replace(payload, `"text": "Sunlight`, `"thought": true,"text": "Sunlight`, 1)
	tests := []struct {
		name   string
		dec    Decoder
		warmup string
		event  string
	}{
		{"sse answer", newGeminiDecoder(), "", gchunk(payload)},
		{"sse thought", newGeminiDecoder(), "", gchunk(thought)},
		{"array element", newGeminiArrayDecoder(), "[", payload + "\n,\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := []byte(tt.event)
			tokens := 0
			emit := func(f Frame) { tokens += f.Tokens }
			half := len(ev) / 2
			tt.dec.Decode([]byte(tt.warmup), emit)
			tt.dec.Decode(ev[:half], emit) // grow the buffers
			tt.dec.Decode(ev[half:], emit)
			assert.Zero(t, testing.AllocsPerRun(100, func() { tt.dec.Decode(ev, emit) }), "whole")
			assert.Zero(t, testing.AllocsPerRun(100, func() {
				tt.dec.Decode(ev[:half], emit)
				tt.dec.Decode(ev[half:], emit)
			}), "split")
			require.Equal(t, 1+2*101, tokens, "every event carried its token (AllocsPerRun runs 1 + 100 times)")
			require.NoError(t, tt.dec.Err())
		})
	}
}

// The scan cache answers the chunks that differ from the previous one only
// in their text: on Gemini 2.0 and Vertex AI streams, whose early chunks
// repeat the same usageMetadata, but not on Gemini 2.5 streams, whose
// cumulative counts change on every chunk. Either way it changes no frame
// (FuzzGeminiDecoder).
func TestGeminiScanCache(t *testing.T) {
	tests := []struct {
		file string
		hits int
	}{
		{"stream_basic.sse", 1},  // chunk 1 repeats chunk 0 but for its text
		{"stream_vertex.sse", 2}, // chunks 1 and 2
		{"stream_thinking.sse", 0},
		{"stream_error.sse", 1},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data := readTestdata(t, "gemini", tt.file)
			hits := 0
			got := decodeFull(newGeminiTestDecoder(true, false, &hits), data)
			assert.Equal(t, tt.hits, hits)
			assert.Equal(t, decodeFull(newGeminiTestDecoder(false, false, nil), data), got)
		})
	}
}

// A bare object is bounded: past 64 KiB its lines are dropped, not kept,
// until its brackets balance, and it is one malformed frame; the stream goes
// on. One cut by the end of the stream is a malformed frame too.
func TestGeminiBareObjectBounds(t *testing.T) {
	t.Run("larger than 64 KiB", func(t *testing.T) {
		errs := otelErrors(t)
		line := `    "x": "` + strings.Repeat("a", 1000) + `",` + "\n"
		big := "{\n  \"error\": {\n" + strings.Repeat(line, 200) + "  \"status\": \"UNAVAILABLE\"}\n}\n"
		d := newGeminiDecoder()
		var got []fullView
		emit := func(f Frame) { got = append(got, fullViewOf(f)) }
		d.Decode([]byte(big[:len(big)/2]), emit)
		sd := d.(*sseDecoder)
		assert.True(t, sd.obj.skipping)
		assert.Zero(t, cap(sd.obj.buf), "nothing is kept past the bound")
		d.Decode([]byte(big[len(big)/2:]+gparts(`{"text": "a"}`)), emit)
		d.Flush(emit)
		assert.Equal(t, []fullView{{}, answerTok}, got)
		reported := errs()
		require.Len(t, reported, 1)
		assert.ErrorIs(t, reported[0], ErrMalformedFrame)
		assert.Contains(t, reported[0].Error(), "larger than 65536 bytes")
	})
	t.Run("cut by the end of the stream", func(t *testing.T) {
		errs := otelErrors(t)
		d := newGeminiDecoder()
		got := decodeFull(d, []byte(gparts(`{"text": "a"}`)+"{\n  \"error\": {\n    \"code\": 429,\n"))
		assert.Equal(t, []fullView{answerTok, {}}, got)
		reported := errs()
		require.Len(t, reported, 1)
		assert.ErrorIs(t, reported[0], ErrMalformedFrame)
		assert.Contains(t, reported[0].Error(), "cut by the end of the stream")
	})
}

// Read through NewReader, a Gemini error object spread
// over several lines after HTTP 200 ends the request as an error with
// error.type RESOURCE_EXHAUSTED, whatever the Reads' sizes, and the caller
// reads the bytes unchanged.
func TestReaderGeminiMultilineError(t *testing.T) {
	data := readTestdata(t, "gemini", "stream_error_multiline.sse")
	tr, metrics := newTestTracker(t)
	errs := otelErrors(t)
	reads := 0
	read := func(r io.Reader) {
		req := tr.Start(context.Background())
		got, err := io.ReadAll(NewReader(req, r, newGeminiDecoder()))
		require.NoError(t, err)
		require.Equal(t, data, got, "bytes out == bytes in")
		rec := req.End(nil)
		reads++
		require.Equal(t, OutcomeError, rec.Outcome)
		require.Equal(t, 2, rec.Chunks)
		require.Equal(t, 6, rec.InputTokens)
	}
	for cut := 0; cut <= len(data); cut++ {
		read(io.MultiReader(bytes.NewReader(data[:cut]), bytes.NewReader(data[cut:])))
	}
	read(iotest.OneByteReader(bytes.NewReader(data)))
	assert.Empty(t, errs())
	errTypes := map[string]int64{}
	m, ok := collect(t, metrics)[metricRequests]
	require.True(t, ok)
	for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
		if v, ok := p.Attributes.Value(semconv.ErrorTypeKey); ok {
			errTypes[v.AsString()] += p.Value
		}
	}
	assert.Equal(t, map[string]int64{"RESOURCE_EXHAUSTED": int64(reads)}, errTypes)
}
