package main

import (
	"context"
	"net/http"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/examples/internal/sdktest"
	"github.com/llmmetrics/llmmetrics/llmmetricstest"
)

func TestAnthropic(t *testing.T) {
	// Streams carry the input tokens (message_start) and the cumulative
	// output tokens (message_delta), so both are the server's.
	sdktest.Run(t, func(ctx context.Context, tr *llmmetrics.Tracker, url string, base http.RoundTripper, stream bool) (string, error) {
		client := newClient(tr, url, "test", &http.Client{Transport: base})
		// Retries off: an injected 500 or 429 is one failed request.
		return message(ctx, client, llmmetricstest.DefaultModel, "Say something about latency.", stream, option.WithMaxRetries(0))
	}, sdktest.Options{})
}
