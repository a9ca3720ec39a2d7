// Command openaigo measures github.com/openai/openai-go (v3) with one
// line: option.WithMiddleware(llmmetrics.Middleware(tracker)). It sends a
// streamed and a non-streaming chat completion and prints what llmmetrics
// measured.
//
// Without -url it talks to llmmetricstest's fake server; with -url it
// talks to any OpenAI-compatible API (OPENAI_API_KEY is the key):
//
//	go run ./examples/sdk/openaigo
//	go run ./examples/sdk/openaigo -url https://api.openai.com/v1 -model gpt-4o-mini
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/llmmetricstest"
)

// newClient returns an openai-go client for the API at baseURL (…/v1),
// measured by tracker: the WithMiddleware line is all it takes. The SDK
// runs middleware once per attempt, so each retry is its own request.
func newClient(tracker *llmmetrics.Tracker, baseURL, apiKey string, hc *http.Client, opts ...llmmetrics.TransportOption) openai.Client {
	return openai.NewClient(
		option.WithBaseURL(baseURL), option.WithAPIKey(apiKey), option.WithHTTPClient(hc),
		option.WithMiddleware(llmmetrics.Middleware(tracker, opts...)),
	)
}

// chat sends one chat completion, streamed or not, and returns its text.
// opts apply to this call only.
func chat(ctx context.Context, client openai.Client, model, prompt string, stream bool, opts ...option.RequestOption) (string, error) {
	params := openai.ChatCompletionNewParams{
		Model:    model,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
	}
	if !stream {
		resp, err := client.Chat.Completions.New(ctx, params, opts...)
		if err != nil {
			return "", err
		}
		if len(resp.Choices) == 0 {
			return "", nil
		}
		return resp.Choices[0].Message.Content, nil
	}
	s := client.Chat.Completions.NewStreaming(ctx, params, opts...)
	defer s.Close()
	var text strings.Builder
	for s.Next() {
		for _, ch := range s.Current().Choices {
			text.WriteString(ch.Delta.Content)
		}
	}
	return text.String(), s.Err()
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
	// WithIncludeUsage asks streams for their usage chunk (openai-go does
	// not), so N is the server's count, not the number of chunks.
	client := newClient(tracker, *url, key, &http.Client{}, llmmetrics.WithIncludeUsage())
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
