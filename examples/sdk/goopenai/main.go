// Command goopenai measures github.com/sashabaranov/go-openai with one
// line: its ClientConfig.HTTPClient gets an *http.Client whose Transport
// is llmmetrics.NewTransport. It sends a streamed and a non-streaming chat
// completion and prints what llmmetrics measured.
//
// Without -url it talks to llmmetricstest's fake server; with -url it
// talks to any OpenAI-compatible API (OPENAI_API_KEY is the key):
//
//	go run ./examples/sdk/goopenai
//	go run ./examples/sdk/goopenai -url https://api.openai.com/v1 -model gpt-4o-mini
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strings"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/llmmetricstest"
)

// newClient returns a go-openai client for the API at baseURL (…/v1),
// measured by tracker over base: the HTTPClient line is all it takes.
// go-openai does not retry.
func newClient(tracker *llmmetrics.Tracker, baseURL, apiKey string, base http.RoundTripper, opts ...llmmetrics.TransportOption) *goopenai.Client {
	cfg := goopenai.DefaultConfig(apiKey)
	cfg.BaseURL = baseURL
	cfg.HTTPClient = &http.Client{Transport: llmmetrics.NewTransport(tracker, base, opts...)}
	return goopenai.NewClientWithConfig(cfg)
}

// chat sends one chat completion, streamed or not, and returns its text.
func chat(ctx context.Context, client *goopenai.Client, model, prompt string, stream bool) (string, error) {
	req := goopenai.ChatCompletionRequest{
		Model:    model,
		Messages: []goopenai.ChatCompletionMessage{{Role: goopenai.ChatMessageRoleUser, Content: prompt}},
	}
	if !stream {
		resp, err := client.CreateChatCompletion(ctx, req)
		if err != nil {
			return "", err
		}
		if len(resp.Choices) == 0 {
			return "", nil
		}
		return resp.Choices[0].Message.Content, nil
	}
	s, err := client.CreateChatCompletionStream(ctx, req)
	if err != nil {
		return "", err
	}
	defer s.Close()
	var text strings.Builder
	for {
		resp, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return text.String(), nil
		}
		if err != nil {
			return text.String(), err
		}
		for _, ch := range resp.Choices {
			text.WriteString(ch.Delta.Content)
		}
	}
}

func main() {
	url := flag.String("url", "", "OpenAI-compatible API base URL, e.g. https://api.openai.com/v1 (default: a fake server)")
	model := flag.String("model", llmmetricstest.DefaultModel, "model")
	flag.Parse()
	key := os.Getenv("OPENAI_API_KEY")
	if *url == "" {
		key = "fake"
		srv := llmmetricstest.NewServer(llmmetricstest.ServerConfig{Speedup: 10})
		defer srv.Close()
		*url = srv.URL + "/v1"
	}
	tracker, err := llmmetrics.NewTracker()
	if err != nil {
		log.Fatal(err)
	}
	// WithIncludeUsage asks streams for their usage chunk (go-openai does
	// not), so N is the server's count, not the number of chunks.
	client := newClient(tracker, *url, key, http.DefaultTransport, llmmetrics.WithIncludeUsage())
	for _, stream := range []bool{true, false} {
		text, err := chat(context.Background(), client, *model, "Say something about latency.", stream)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("stream=%-5v %q…\n", stream, text[:min(len(text), 40)])
	}
	s := tracker.Snapshot()
	fmt.Printf("%d requests, %d completed; tokens in/out %d/%d; median TTFT %v, E2EL %v\n",
		s.Requests, s.Completed, s.InputTokens, s.OutputTokens, s.TTFT.Median, s.E2EL.Median)
}
