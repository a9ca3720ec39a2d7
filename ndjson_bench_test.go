package llmmetrics

import (
	"bytes"
	"fmt"
	"testing"
)

// ollamaStream returns a realistic Ollama /api/chat stream of n lines
// (ollama_chat_thinking.ndjson's shape): n/10 thinking lines, answer lines,
// each with its own created_at, and the done line with the counts.
func ollamaStream(n int) []byte {
	var b bytes.Buffer
	for i := range n - 1 {
		text := " " + benchWords[i%len(benchWords)]
		msg := fmt.Sprintf(`"content":%q`, text)
		if i < n/10 {
			msg = fmt.Sprintf(`"content":"","thinking":%q`, text)
		}
		fmt.Fprintf(&b, `{"model":"qwen3:8b","created_at":"2026-08-21T10:15:%02d.%09dZ","message":{"role":"assistant",%s},"done":false}`+"\n", 30+i/1000, (i*18308263)%1000000000, msg)
	}
	fmt.Fprintf(&b, `{"model":"qwen3:8b","created_at":"2026-08-21T10:15:49.210236997Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","total_duration":1532418750,"load_duration":41295167,"prompt_eval_count":19,"prompt_eval_duration":24573166,"eval_count":%d,"eval_duration":162838875}`+"\n", n)
	return b.Bytes()
}

// BenchmarkOllamaDecode feeds a 1,000-line Ollama chat stream in 4 KiB
// pieces to the decoder, next to bufio.Scanner splitting the same bytes
// into lines.
func BenchmarkOllamaDecode(b *testing.B) {
	stream := ollamaStream(1000)
	b.Run("decoder", benchDecode(stream, func() Decoder { return newOllamaDecoder() }))
	b.Run("bufio.Scanner", benchScanLines(stream))
}

// The benchmark streams decode to what they say.
func TestBenchStreams(t *testing.T) {
	s := summarizeFull(decodeFull(newOllamaDecoder(), ollamaStream(1000)))
	if s != (fullSummary{frames: 1000, tokens: 999, reasoning: 100, in: 19, out: 1000, done: true}) {
		t.Errorf("ollama: %+v", s)
	}
	p := geminiPayloads(1000)
	want := fullSummary{frames: 1000, tokens: 1000, reasoning: 100, in: 9, out: 900*4 + 100*40, reasoningTokens: 4000, done: true}
	if s := summarizeFull(decodeFull(newGeminiDecoder(), geminiSSE(p))); s != want {
		t.Errorf("gemini sse: %+v", s)
	}
	want.frames++ // the closing ']'
	if s := summarizeFull(decodeFull(newGeminiArrayDecoder(), geminiArrayBody(p))); s != want {
		t.Errorf("gemini array: %+v", s)
	}
}

type fullSummary struct {
	frames, tokens, reasoning, in, out, reasoningTokens int
	done                                                bool
}

func summarizeFull(frames []fullView) fullSummary {
	s := fullSummary{frames: len(frames)}
	for _, f := range frames {
		s.tokens += f.Tokens
		if f.Reasoning {
			s.reasoning += f.Tokens
		}
		if f.HasUsage {
			s.in, s.out, s.reasoningTokens = f.In, f.Out, f.ReasoningTokens
		}
		s.done = s.done || f.Done
	}
	return s
}
