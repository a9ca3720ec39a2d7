package llmmetrics

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// chatStream returns a realistic OpenAI chat completions stream of n events:
// a role chunk, n−4 content chunks (1–3 words of varying length), a finish
// chunk, the include_usage chunk and [DONE].
func chatStream(n int) []byte {
	var b bytes.Buffer
	const head = `data: {"id":"chatcmpl-AZ9kQ2mVb1rT7xY3wQ8e","object":"chat.completion.chunk","created":1731511200,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_0ba0d124f1","choices":[{"index":0,"delta":`
	const tail = `,"logprobs":null,"finish_reason":%s}],"usage":null}` + "\n\n"
	fmt.Fprintf(&b, head+`{"role":"assistant","content":"","refusal":null}`+tail, "null")
	words := strings.Fields("the quick brown fox jumps over a lazy dog while streaming tokens arrive at irregular intervals, some short and some rather longer than others; metrics")
	for i := range n - 4 {
		w := " " + words[i%len(words)]
		if i%5 == 0 {
			w += " " + words[(i*7)%len(words)]
		}
		fmt.Fprintf(&b, head+`{"content":%q}`+tail, w, "null")
	}
	fmt.Fprintf(&b, head+`{}`+tail, `"stop"`)
	fmt.Fprintf(&b, `data: {"id":"chatcmpl-AZ9kQ2mVb1rT7xY3wQ8e","object":"chat.completion.chunk","created":1731511200,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_0ba0d124f1","choices":[],"usage":{"prompt_tokens":31,"completion_tokens":%d,"total_tokens":%d}}`+"\n\n", n+n/5, n+n/5+31)
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes()
}

// thinkingStream returns a Mistral Magistral-shaped chat stream of n events
// (mistral_magistral_thinking.sse): a role chunk, (n−4)/2 content chunks of
// thinking parts with nested text parts, as many of text parts, a finish
// chunk with usage and [DONE].
func thinkingStream(n int) []byte {
	var b bytes.Buffer
	const head = `data: {"id":"7c1f0e5b9a2d4c3e8f6a1b2c3d4e5f60","object":"chat.completion.chunk","created":1756300000,"model":"magistral-medium-2509","choices":[{"index":0,"delta":`
	const tail = `,"finish_reason":%s}]}` + "\n\n"
	fmt.Fprintf(&b, head+`{"role":"assistant","content":""}`+tail, "null")
	words := strings.Fields("okay the user asks for seventeen times twenty three so twenty times seventeen is three hundred forty plus fifty one")
	for i := range n - 4 {
		w := " " + words[i%len(words)]
		if i < (n-4)/2 {
			fmt.Fprintf(&b, head+`{"content":[{"type":"thinking","thinking":[{"type":"text","text":%q}]}]}`+tail, w, "null")
		} else {
			fmt.Fprintf(&b, head+`{"content":[{"type":"text","text":%q}]}`+tail, w, "null")
		}
	}
	fmt.Fprintf(&b, head+`{"content":""}`+`,"finish_reason":"stop"}],"usage":{"prompt_tokens":18,"total_tokens":%d,"completion_tokens":%d}}`+"\n\n", n+18, n)
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes()
}

// BenchmarkOpenAIDecodeThinking is BenchmarkOpenAIDecode on a stream of
// typed content parts (thinking, then text), next to the same baseline.
func BenchmarkOpenAIDecodeThinking(b *testing.B) {
	stream := thinkingStream(1000)
	const piece = 4096
	b.Run("decoder", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(stream)))
		reasoning, answer := 0, 0
		emit := func(f Frame) {
			if f.Reasoning {
				reasoning += f.Tokens
			} else {
				answer += f.Tokens
			}
		}
		for b.Loop() {
			d := newOpenAIDecoder()
			for p := stream; len(p) > 0; {
				n := min(piece, len(p))
				d.Decode(p[:n], emit)
				p = p[n:]
			}
			d.Flush(emit)
		}
		if reasoning == 0 || answer == 0 {
			b.Fatal("no reasoning or no answer tokens")
		}
	})
	b.Run("bufio.Scanner", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(stream)))
		lines := 0
		for b.Loop() {
			s := bufio.NewScanner(bytes.NewReader(stream))
			s.Buffer(make([]byte, piece), 1<<20)
			for s.Scan() {
				lines++
			}
		}
		if lines == 0 {
			b.Fatal("no lines")
		}
	})
}

// BenchmarkOpenAIDecode feeds a ~1,000-event chat stream in 4 KiB pieces to
// the OpenAI decoder, next to a baseline that only splits the same bytes
// into lines with bufio.Scanner.
func BenchmarkOpenAIDecode(b *testing.B) {
	stream := chatStream(1000)
	const piece = 4096 // benchDecode's piece size, for the baseline's buffer
	decode := func(newDecoder func() Decoder) func(b *testing.B) { return benchDecode(stream, newDecoder) }
	b.Run("decoder", decode(func() Decoder { return newOpenAIDecoder() }))
	// The same without the scan cache: every event gets a full JSON scan
	// (the cost when consecutive events differ in more than their text).
	b.Run("decoder-nocache", decode(func() Decoder { return newOpenAITestDecoder(false, nil) }))
	// The same without the SSE framing's one-line-event fast path: every
	// event's data is copied before it is interpreted.
	b.Run("decoder-nofastpath", decode(func() Decoder { return noFastPath{newOpenAIDecoder().(*sseDecoder)} }))
	b.Run("bufio.Scanner", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(stream)))
		lines := 0
		for b.Loop() {
			s := bufio.NewScanner(bytes.NewReader(stream))
			s.Buffer(make([]byte, piece), 1<<20)
			for s.Scan() {
				lines++
			}
		}
		if lines == 0 {
			b.Fatal("no lines")
		}
	})
}
