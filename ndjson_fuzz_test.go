package llmmetrics

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/llmmetrics/llmmetrics/internal/jsonscan"
)

// ndjsonSeeds returns the NDJSON fixtures and the Ollama JSON answers.
func ndjsonSeeds(tb testing.TB) [][]byte {
	tb.Helper()
	a, _ := filepath.Glob(filepath.Join("testdata", "ndjson", "*.ndjson"))
	b, _ := filepath.Glob(filepath.Join("testdata", "json", "ollama_*.json"))
	if len(a) == 0 || len(b) == 0 {
		tb.Fatal("no NDJSON fixtures")
	}
	var seeds [][]byte
	for _, n := range append(a, b...) {
		data, err := os.ReadFile(n)
		if err != nil {
			tb.Fatal(err)
		}
		seeds = append(seeds, data)
	}
	return seeds
}

func FuzzOllamaDecoder(f *testing.F) {
	for _, s := range ndjsonSeeds(f) {
		f.Add(s, []byte{10, 200, 7})
	}
	f.Add([]byte("{\"response\":\"a\"}\r\n\r\n \t\n{\"error\":\"x\"}\r\r\n{\"done\":true,\"eval_count\":3}"), []byte{1, 2})
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		quietOtel(t)
		checkSplitFull(t, func() Decoder { return newOllamaDecoder() }, data, cuts)
		// The framing alone, with frames that echo each line: a split that
		// changed a line would change the frames.
		echo := func() Decoder {
			return NewNDJSONDecoder(func(line []byte) (Frame, error) {
				return Frame{Tokens: len(line), OutputTokens: int(crc(nil, line))}, nil
			})
		}
		checkSplitFull(t, echo, data, cuts)
		d := newOllamaDecoder(WithMaxFrameBytes(64)).(*ndjsonDecoder)
		for _, p := range splitAt(data, []byte{3, 17, 64}) {
			d.Decode(p, func(Frame) {})
			if cap(d.line) > 10*d.max+64 {
				t.Fatalf("NDJSON decoder holds %d bytes with a limit of %d", cap(d.line), d.max)
			}
		}
		d.Flush(func(Frame) {})
	})
}

// refOllamaFacts is the reference for walkOllama, built on encoding/json
// (see refOpenAIFacts).
func refOllamaFacts(data []byte) (ollamaFacts, [2]string, bool) {
	m, ok := refObject(data)
	if !ok {
		return ollamaFacts{}, [2]string{}, false
	}
	var f ollamaFacts
	str := func(m map[string]any, k string) bool { s, _ := m[k].(string); return s != "" }
	if msg, ok := m["message"].(map[string]any); ok {
		f.content, f.thinking = str(msg, "content"), str(msg, "thinking")
		calls, _ := msg["tool_calls"].([]any)
		f.toolCalls = len(calls) > 0
	}
	f.response, f.genThinking = str(m, "response"), str(m, "thinking")
	f.done = m["done"] == true
	if e, ok := m["error"]; ok && e != nil {
		f.err = true
	}
	counts := refInts(m, []string{"prompt_eval_count", "eval_count", "prompt_eval_duration", "eval_duration"})
	f.promptEval, f.eval, f.promptEvalNS, f.evalNS = counts.Val[0], counts.Val[1], counts.Val[2], counts.Val[3]
	return f, [2]string{refString(m["model"]), refString(m["done_reason"])}, true
}

// FuzzOllamaFacts cross-checks walkOllama against encoding/json (see
// FuzzOpenAIFacts).
func FuzzOllamaFacts(f *testing.F) {
	for _, s := range ndjsonSeeds(f) {
		decodePieces(NewNDJSONDecoder(func(line []byte) (Frame, error) {
			f.Add(append([]byte(nil), line...))
			return Frame{}, nil
		}), s)
	}
	for _, s := range []string{
		`{"message":{"content":"a","content":"","tool_calls":[{}]},"message":{"thinking":"\u003c"}}`,
		`{"done":true,"done":false,"prompt_eval_count":1e2,"eval_count":-1}`,
		`{"done":true,"eval_count":9223372036854775808,"error":null,"response":7}`,
		`{"model":"a","model":"q\u0077en","done_reason":"length","done_reason":7}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var j jsonscan.Scanner
		var got ollamaFacts
		ok := jsonscan.Walk(&j, data, &got, walkOllama)
		want, wantStr, refOK := refOllamaFacts(data)
		if ok != refOK {
			t.Fatalf("scanner valid=%v, encoding/json valid=%v", ok, refOK)
		}
		if !ok {
			return
		}
		gotStr := [2]string{spanText(data, got.model), spanText(data, got.doneReason)}
		got.model, got.doneReason = strSpan{}, strSpan{}
		if gotStr != wantStr {
			t.Fatalf("strings differ\nscanner: %q\nencoding/json: %q", gotStr, wantStr)
		}
		if got != want {
			t.Fatalf("facts differ\nscanner: %+v\nencoding/json: %+v", got, want)
		}
	})
}
