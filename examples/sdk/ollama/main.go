// Command ollama measures github.com/ollama/ollama/api with one line: the
// *http.Client given to api.NewClient has llmmetrics.NewTransport as its
// Transport. It sends a streamed and a non-streaming /api/chat request and
// prints what llmmetrics measured.
//
// Without -url it talks to llmmetricstest's fake server; with -url it
// talks to an Ollama server:
//
//	go run ./examples/sdk/ollama
//	go run ./examples/sdk/ollama -url http://localhost:11434 -model llama3.2
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"net/url"
	"strings"

	"github.com/ollama/ollama/api"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/llmmetricstest"
)

// newClient returns an Ollama client for the server at base URL u,
// measured by tracker over base: the *http.Client line is all it takes
// (api.ClientFromEnvironment would use http.DefaultClient instead). The
// Ollama client does not retry.
func newClient(tracker *llmmetrics.Tracker, u *url.URL, base http.RoundTripper) *api.Client {
	return api.NewClient(u, &http.Client{Transport: llmmetrics.NewTransport(tracker, base)})
}

// chat sends one /api/chat request, streamed (NDJSON) or not, and returns
// the answer's text. The callback sees every line, or the one response.
func chat(ctx context.Context, client *api.Client, model, prompt string, stream bool) (string, error) {
	var text strings.Builder
	err := client.Chat(ctx, &api.ChatRequest{
		Model:    model,
		Messages: []api.Message{{Role: "user", Content: prompt}},
		Stream:   &stream,
	}, func(r api.ChatResponse) error {
		text.WriteString(r.Message.Content)
		return nil
	})
	return text.String(), err
}

func main() {
	raw := flag.String("url", "", "Ollama server URL, e.g. http://localhost:11434 (default: a fake server)")
	model := flag.String("model", llmmetricstest.DefaultModel, "model")
	flag.Parse()
	if *raw == "" {
		srv := llmmetricstest.NewServer(llmmetricstest.ServerConfig{Speedup: 10})
		defer srv.Close()
		*raw = srv.URL
	}
	u, err := url.Parse(*raw)
	if err != nil {
		log.Fatal(err)
	}
	tracker, err := llmmetrics.NewTracker()
	if err != nil {
		log.Fatal(err)
	}
	client := newClient(tracker, u, http.DefaultTransport)
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
