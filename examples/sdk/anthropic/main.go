// Command anthropic measures github.com/anthropics/anthropic-sdk-go with
// one line: option.WithMiddleware(llmmetrics.Middleware(tracker)). It
// sends a streamed and a non-streaming message and prints what llmmetrics
// measured.
//
// Without -url it talks to llmmetricstest's fake server; with -url it
// talks to the Anthropic API (ANTHROPIC_API_KEY is the key):
//
//	go run ./examples/sdk/anthropic
//	go run ./examples/sdk/anthropic -url https://api.anthropic.com -model claude-sonnet-4-5
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/llmmetricstest"
)

// newClient returns an Anthropic client for the API at baseURL (without
// /v1), measured by tracker: the WithMiddleware line is all it takes. The
// SDK runs middleware once per attempt, so each retry is its own request.
func newClient(tracker *llmmetrics.Tracker, baseURL, apiKey string, hc *http.Client) anthropic.Client {
	return anthropic.NewClient(
		option.WithBaseURL(baseURL), option.WithAPIKey(apiKey), option.WithHTTPClient(hc),
		option.WithMiddleware(llmmetrics.Middleware(tracker)),
	)
}

// message sends one message, streamed or not, and returns the answer's
// text. opts apply to this call only.
func message(ctx context.Context, client anthropic.Client, model, prompt string, stream bool, opts ...option.RequestOption) (string, error) {
	params := anthropic.MessageNewParams{
		Model:     anthropic.Model(model),
		MaxTokens: 1024,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))},
	}
	if !stream {
		msg, err := client.Messages.New(ctx, params, opts...)
		if err != nil {
			return "", err
		}
		return text(msg), nil
	}
	s := client.Messages.NewStreaming(ctx, params, opts...)
	defer s.Close()
	var msg anthropic.Message
	for s.Next() {
		if err := msg.Accumulate(s.Current()); err != nil {
			return "", err
		}
	}
	return text(&msg), s.Err()
}

// text joins the text blocks of msg.
func text(msg *anthropic.Message) string {
	var b strings.Builder
	for _, c := range msg.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

func main() {
	url := flag.String("url", "", "Anthropic API base URL, e.g. https://api.anthropic.com (default: a fake server)")
	model := flag.String("model", llmmetricstest.DefaultModel, "model")
	flag.Parse()
	key := os.Getenv("ANTHROPIC_API_KEY")
	if *url == "" {
		key = "fake"
		srv := llmmetricstest.NewServer(llmmetricstest.ServerConfig{Speedup: 10})
		defer srv.Close()
		*url = srv.URL
	}
	tracker, err := llmmetrics.NewTracker()
	if err != nil {
		log.Fatal(err)
	}
	client := newClient(tracker, *url, key, &http.Client{})
	for _, stream := range []bool{true, false} {
		text, err := message(context.Background(), client, *model, "Say something about latency.", stream)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("stream=%-5v %q…\n", stream, text[:min(len(text), 40)])
	}
	s := tracker.Snapshot()
	fmt.Printf("%d requests, %d completed; tokens in/out %d/%d; median TTFT %v, E2EL %v\n",
		s.Requests, s.Completed, s.InputTokens, s.OutputTokens, s.TTFT.Median, s.E2EL.Median)
}
