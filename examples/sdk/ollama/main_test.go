package main

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/examples/internal/sdktest"
	"github.com/llmmetrics/llmmetrics/llmmetricstest"
)

func TestOllama(t *testing.T) {
	// The final line (done: true) carries prompt_eval_count and
	// eval_count, so both counts are the server's. The Ollama client does
	// not retry: an injected 500 or 429 is one failed request.
	sdktest.Run(t, func(ctx context.Context, tr *llmmetrics.Tracker, raw string, base http.RoundTripper, stream bool) (string, error) {
		u, err := url.Parse(raw)
		if err != nil {
			return "", err
		}
		return chat(ctx, newClient(tr, u, base), llmmetricstest.DefaultModel, "Say something about latency.", stream)
	}, sdktest.Options{})
}

func TestOllamaGenerate(t *testing.T) {
	// /api/generate: the same one-liner, another endpoint.
	sdktest.Run(t, func(ctx context.Context, tr *llmmetrics.Tracker, raw string, base http.RoundTripper, stream bool) (string, error) {
		u, err := url.Parse(raw)
		if err != nil {
			return "", err
		}
		var text strings.Builder
		err = newClient(tr, u, base).Generate(ctx, &api.GenerateRequest{
			Model: llmmetricstest.DefaultModel, Prompt: "Say something about latency.", Stream: &stream,
		}, func(r api.GenerateResponse) error {
			text.WriteString(r.Response)
			return nil
		})
		return text.String(), err
	}, sdktest.Options{})
}
