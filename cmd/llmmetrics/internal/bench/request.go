package bench

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
)

// This file is what bench sends: the one place that builds request bodies.
// A request's body depends only on the seed, its level, its repeat and its
// index, so bodies are built as they are sent (not all before the first)
// and the same flags send the same bytes.

// maxPromptWords bounds -prompt-words: a million words (about 7 MB of JSON
// per request body) is past every model's context.
const maxPromptWords = 1_000_000

// requestBody returns the body of request i of a repeat of load.
func (b *bench) requestBody(load float64, repeat, i int) []byte {
	rng := rand.New(rand.NewPCG(b.o.seed^uint64(i)*0x9e3779b97f4a7c15, uint64(load*1000)<<8|uint64(repeat)))
	return b.body(prompt(rng, b.o.promptWords))
}

// chatRequest is the body of a streaming chat completion.
type chatRequest struct {
	Model         string        `json:"model"`
	Messages      []chatMessage `json:"messages"`
	Stream        bool          `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens int `json:"max_tokens,omitempty"`
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

func (b *bench) body(prompt string) []byte {
	req := chatRequest{Model: b.model, Messages: []chatMessage{{Role: "user", Content: prompt}}, Stream: true, MaxTokens: b.o.maxTokens}
	req.StreamOptions.IncludeUsage = true
	out, _ := json.Marshal(req) // plain strings and numbers: cannot fail
	return out
}

// words is the vocabulary of generated prompts.
var words = strings.Fields(`the a service model token latency stream queue batch cache prefill decode
	user answer request server budget tail median throughput goodput cost saturation`)

// prompt returns n words of filler text.
func prompt(rng *rand.Rand, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[rng.IntN(len(words))])
	}
	return b.String()
}
