package main

import (
	"context"
	"net/http"
	"testing"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/examples/internal/sdktest"
	"github.com/llmmetrics/llmmetrics/llmmetricstest"
)

// call sends one chat completion through newClient (go-openai does not
// retry, so an injected 500 or 429 is one failed request).
func call(opts ...llmmetrics.HTTPOption) sdktest.Call {
	return func(ctx context.Context, tr *llmmetrics.Tracker, url string, base http.RoundTripper, stream bool) (string, error) {
		return chat(ctx, newClient(tr, url+"/v1", "test", base, opts...), llmmetricstest.DefaultModel, "Say something about latency.", stream)
	}
}

func TestGoOpenAI(t *testing.T) {
	// Without include_usage the stream has no usage chunk: N is the count
	// of token-carrying chunks (exact here: the fake server sends one
	// token per chunk) and the prompt tokens are unknown.
	sdktest.Run(t, call(), sdktest.Options{StreamWithoutInputTokens: true})
}

func TestGoOpenAIIncludeUsage(t *testing.T) {
	// With WithIncludeUsage the server sends the usage chunk, so the
	// Record has the server's exact counts, prompt tokens included.
	sdktest.Run(t, call(llmmetrics.WithIncludeUsage()), sdktest.Options{})
}
