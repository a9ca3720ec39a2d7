// Command genai measures google.golang.org/genai with one line: its
// ClientConfig.HTTPClient gets an *http.Client whose Transport is
// llmmetrics.NewTransport. It sends a streamed
// (:streamGenerateContent?alt=sse) and a non-streaming (:generateContent)
// request and prints what llmmetrics measured.
//
// Without -url it talks to llmmetricstest's fake server, through
// HTTPOptions.BaseURL (the SDK adds /v1beta/models/{model}:…); with -url
// it talks to the Gemini API (GEMINI_API_KEY is the key):
//
//	go run ./examples/sdk/genai
//	go run ./examples/sdk/genai -url https://generativelanguage.googleapis.com -model gemini-2.5-flash
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"strings"

	"google.golang.org/genai"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/llmmetricstest"
)

// newClient returns a Gemini API client for the API at baseURL (without
// the version), measured by tracker over base: the HTTPClient line is all
// it takes. genai does not retry unless HTTPOptions.RetryOptions is set
// (then each attempt is its own request).
func newClient(ctx context.Context, tracker *llmmetrics.Tracker, baseURL, apiKey string, base http.RoundTripper) (*genai.Client, error) {
	return genai.NewClient(ctx, &genai.ClientConfig{
		APIKey:      apiKey,
		Backend:     genai.BackendGeminiAPI,
		HTTPClient:  &http.Client{Transport: llmmetrics.NewTransport(tracker, base)},
		HTTPOptions: genai.HTTPOptions{BaseURL: baseURL},
	})
}

// generate sends one request, streamed or not, and returns the answer's
// text.
func generate(ctx context.Context, client *genai.Client, model, prompt string, stream bool) (string, error) {
	contents := genai.Text(prompt)
	if !stream {
		resp, err := client.Models.GenerateContent(ctx, model, contents, nil)
		if err != nil {
			return "", err
		}
		return resp.Text(), nil
	}
	var text strings.Builder
	for resp, err := range client.Models.GenerateContentStream(ctx, model, contents, nil) {
		if err != nil {
			return text.String(), err
		}
		text.WriteString(resp.Text())
	}
	return text.String(), nil
}

func main() {
	url := flag.String("url", "", "Gemini API base URL, e.g. https://generativelanguage.googleapis.com (default: a fake server)")
	model := flag.String("model", llmmetricstest.DefaultModel, "model")
	flag.Parse()
	key := os.Getenv("GEMINI_API_KEY")
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
	ctx := context.Background()
	client, err := newClient(ctx, tracker, *url, key, http.DefaultTransport)
	if err != nil {
		log.Fatal(err)
	}
	for _, stream := range []bool{true, false} {
		text, err := generate(ctx, client, *model, "Say something about latency.", stream)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("stream=%-5v %q…\n", stream, text[:min(len(text), 40)])
	}
	s := tracker.Snapshot()
	fmt.Printf("%d requests, %d completed; tokens in/out %d/%d; median TTFT %v, E2EL %v\n",
		s.Requests, s.Completed, s.InputTokens, s.OutputTokens, s.TTFT.Median, s.E2EL.Median)
}
