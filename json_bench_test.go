package llmmetrics

import (
	"encoding/json"
	"strings"
	"testing"
)

// BenchmarkJSONDecoder reads the usage of a non-streaming chat answer with
// 16 KB of content: ProtocolJSON.NewDecoder in 4 KiB pieces, as the caller's Reads
// give it, against json.Unmarshal of the whole answer into a struct holding
// only the usage (which a caller would have to buffer first).
func BenchmarkJSONDecoder(b *testing.B) {
	answer := []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1756000000,"model":"gpt-4o-mini",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"` + strings.Repeat(`tokens \"quoted\" and more `, 600) +
		`","refusal":null},"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":1180,"completion_tokens":4200,"total_tokens":5380,"completion_tokens_details":{"reasoning_tokens":256}}}`)
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(answer)))
		var v struct {
			Usage struct {
				PromptTokens     int `json:"prompt_tokens"`
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		for b.Loop() {
			if err := json.Unmarshal(answer, &v); err != nil {
				b.Fatal(err)
			}
		}
		if v.Usage.CompletionTokens != 4200 {
			b.Fatal(v.Usage)
		}
	})
	b.Run("ProtocolJSON.NewDecoder", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(answer)))
		var f Frame
		emit := func(fr Frame) { f = fr }
		for b.Loop() {
			d := newUsageDecoder()
			for p := answer; len(p) > 0; p = p[min(len(p), 4096):] {
				d.Decode(p[:min(len(p), 4096)], emit)
			}
		}
		if f.OutputTokens != 4200 {
			b.Fatal(f)
		}
	})
}
