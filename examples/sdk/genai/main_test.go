package main

import (
	"context"
	"net/http"
	"testing"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/examples/internal/sdktest"
	"github.com/llmmetrics/llmmetrics/llmmetricstest"
)

func TestGenAI(t *testing.T) {
	// Every chunk carries usageMetadata (cumulative), so both counts are
	// the server's. genai does not retry by default: an injected 500 or
	// 429 is one failed request.
	sdktest.Run(t, func(ctx context.Context, tr *llmmetrics.Tracker, url string, base http.RoundTripper, stream bool) (string, error) {
		client, err := newClient(ctx, tr, url, "test", base)
		if err != nil {
			return "", err
		}
		return generate(ctx, client, llmmetricstest.DefaultModel, "Say something about latency.", stream)
	}, sdktest.Options{})
}
