package main

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"strings"
	"time"

	"github.com/llmmetrics/llmmetrics"
)

// Generate is the model: it yields the tokens of the answer to prompt, one
// at a time, and stops early when ctx is done or the consumer stops.
type Generate func(ctx context.Context, prompt string) iter.Seq[string]

// NewModelServer returns the handler of an OpenAI-compatible model server
// (POST /v1/chat/completions, streamed as server-sent events with
// "stream": true, else one JSON answer) serving model with gen, measured
// with tracker in the server role: TTFT from the moment the request
// arrived to the flush of the first token's event. Only model is recorded
// as gen_ai.request.model (others are "_OTHER").
func NewModelServer(tracker *llmmetrics.Tracker, model string, gen Generate) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST /v1/chat/completions", chat{model: model, gen: gen})
	return llmmetrics.NewHandler(tracker, mux, llmmetrics.WithModels(model))
}

type chat struct {
	model string
	gen   Generate
}

// chatRequest is the part of an OpenAI chat completions request this
// server reads.
type chatRequest struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Messages []struct {
		Content string `json:"content"`
	} `json:"messages"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

type delta struct {
	Role    string `json:"role,omitempty"`
	Content string `json:"content"`
}

type choice struct {
	Index        int     `json:"index"`
	Delta        *delta  `json:"delta,omitempty"`
	Message      *delta  `json:"message,omitempty"`
	FinishReason *string `json:"finish_reason"`
}

type completion struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"`
	Created int64    `json:"created"`
	Model   string   `json:"model"`
	Choices []choice `json:"choices"`
	Usage   *usage   `json:"usage,omitempty"`
}

func (c chat) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"error":{"message":"invalid JSON body","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	if req.Model != c.model {
		http.Error(w, `{"error":{"message":"model not found","type":"invalid_request_error"}}`, http.StatusNotFound)
		return
	}
	var prompt strings.Builder
	for _, m := range req.Messages {
		prompt.WriteString(m.Content)
		prompt.WriteByte('\n')
	}
	u := usage{PromptTokens: len(strings.Fields(prompt.String()))}
	base := completion{ID: "chatcmpl-1", Created: time.Now().Unix(), Model: c.model}
	tokens := c.gen(r.Context(), prompt.String())
	stop := "stop"

	if !req.Stream {
		var text strings.Builder
		for tok := range tokens {
			text.WriteString(tok)
			u.CompletionTokens++
		}
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
		base.Object = "chat.completion"
		base.Choices = []choice{{Message: &delta{Role: "assistant", Content: text.String()}, FinishReason: &stop}}
		base.Usage = &u
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(base)
		return
	}

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	rc := http.NewResponseController(w) // reaches Flush through NewHandler's wrapper
	base.Object = "chat.completion.chunk"
	send := func(chunk completion) bool {
		b, _ := json.Marshal(chunk)
		if _, err := w.Write(append(append([]byte("data: "), b...), "\n\n"...)); err != nil {
			return false
		}
		return rc.Flush() == nil // each event reaches the client now
	}
	first := base
	first.Choices = []choice{{Delta: &delta{Role: "assistant"}}}
	if !send(first) {
		return
	}
	for tok := range tokens {
		chunk := base
		chunk.Choices = []choice{{Delta: &delta{Content: tok}}}
		if !send(chunk) {
			return // the client went away: NewHandler counts it as canceled
		}
		u.CompletionTokens++
	}
	last := base
	last.Choices = []choice{{Delta: &delta{}, FinishReason: &stop}}
	send(last)
	if req.StreamOptions.IncludeUsage {
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
		final := base
		final.Choices = []choice{}
		final.Usage = &u
		send(final)
	}
	_, _ = w.Write([]byte("data: [DONE]\n\n"))
}

// Words is a toy model: it answers with the words of prompt, one token
// every perToken, and stops when ctx is done.
func Words(perToken time.Duration) Generate {
	return func(ctx context.Context, prompt string) iter.Seq[string] {
		return func(yield func(string) bool) {
			t := time.NewTicker(perToken)
			defer t.Stop()
			for i, w := range strings.Fields(prompt) {
				if i > 0 {
					w = " " + w
				}
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
				if !yield(w) {
					return
				}
			}
		}
	}
}
