package llmmetrics

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// benchWords are the texts of the benchmark streams' chunks.
var benchWords = strings.Fields("the quick brown fox jumps over a lazy dog while streaming tokens arrive at irregular intervals, some short and some rather longer than others; metrics")

// geminiPayloads returns the GenerateContentResponse chunks of a realistic
// Gemini 2.5 stream of n chunks (stream_thinking.sse's shape): n/10 thought
// summaries, then answer text, every chunk with its cumulative
// usageMetadata, the last with finishReason STOP.
func geminiPayloads(n int) []string {
	out := make([]string, 0, n)
	thoughts, cands := 0, 0
	for i := range n {
		text := ""
		for w := range 3 + i%5 {
			text += " " + benchWords[(i*7+w)%len(benchWords)]
		}
		part := fmt.Sprintf(`{"text": %q}`, text)
		if i < n/10 {
			part = fmt.Sprintf(`{"text": %q,"thought": true}`, text)
			thoughts += 40
		} else {
			cands += 4
		}
		finish := ""
		if i == n-1 {
			finish = `,"finishReason": "STOP"`
		}
		usage := fmt.Sprintf(`{"promptTokenCount": 9,"candidatesTokenCount": %d,"totalTokenCount": %d,"promptTokensDetails": [{"modality": "TEXT","tokenCount": 9}],"thoughtsTokenCount": %d}`, cands, 9+cands+thoughts, thoughts)
		out = append(out, `{"candidates": [{"content": {"parts": [`+part+`],"role": "model"}`+finish+`,"index": 0}],"usageMetadata": `+usage+`,"modelVersion": "gemini-2.5-flash","responseId": "Vx3ZaPqLKb2m7tMPw5rS8Qk"}`)
	}
	return out
}

// geminiSSE frames the payloads as streamGenerateContent?alt=sse does.
func geminiSSE(payloads []string) []byte {
	var b bytes.Buffer
	for _, p := range payloads {
		b.WriteString("data: " + p + "\r\n\r\n")
	}
	return b.Bytes()
}

// geminiArrayBody frames the payloads as streamGenerateContent without
// alt=sse does (stream_array.json's layout: 2-space indented elements).
func geminiArrayBody(payloads []string) []byte {
	var b bytes.Buffer
	b.WriteString("[")
	for i, p := range payloads {
		if i > 0 {
			b.WriteString("\n,\r\n")
		}
		if err := json.Indent(&b, []byte(p), "", "  "); err != nil {
			panic(err)
		}
	}
	b.WriteString("\n]")
	return b.Bytes()
}

// benchDecode feeds stream in 4 KiB pieces to a new decoder per iteration.
func benchDecode(stream []byte, newDecoder func() Decoder) func(b *testing.B) {
	const piece = 4096
	return func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(stream)))
		tokens := 0
		emit := func(f Frame) { tokens += f.Tokens }
		for b.Loop() {
			d := newDecoder()
			for p := stream; len(p) > 0; {
				n := min(piece, len(p))
				d.Decode(p[:n], emit)
				p = p[n:]
			}
			d.Flush(emit)
		}
		if tokens == 0 {
			b.Fatal("no tokens")
		}
	}
}

// benchScanLines is the baseline: bufio.Scanner only splitting the same
// bytes into lines.
func benchScanLines(stream []byte) func(b *testing.B) {
	return func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(stream)))
		lines := 0
		for b.Loop() {
			s := bufio.NewScanner(bytes.NewReader(stream))
			s.Buffer(make([]byte, 4096), 1<<20)
			for s.Scan() {
				lines++
			}
		}
		if lines == 0 {
			b.Fatal("no lines")
		}
	}
}

// BenchmarkGeminiDecode feeds a 1,000-chunk Gemini stream in 4 KiB pieces
// to the decoders, in both framings, next to bufio.Scanner splitting the
// same bytes into lines.
func BenchmarkGeminiDecode(b *testing.B) {
	payloads := geminiPayloads(1000)
	sse, array := geminiSSE(payloads), geminiArrayBody(payloads)
	b.Run("sse/decoder", benchDecode(sse, func() Decoder { return newGeminiDecoder() }))
	b.Run("sse/bufio.Scanner", benchScanLines(sse))
	b.Run("array/decoder", benchDecode(array, func() Decoder { return newGeminiArrayDecoder() }))
	b.Run("array/bufio.Scanner", benchScanLines(array))
}
