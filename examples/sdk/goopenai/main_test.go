package main

import (
	"context"
	"net/http"
	"testing"

	goopenai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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

// TestGoOpenAIStopped: a stream the caller closes early, or whose context
// is canceled mid-way, is a canceled request, not a failed one.
func TestGoOpenAIStopped(t *testing.T) {
	for _, how := range []string{"close", "cancel"} {
		t.Run(how, func(t *testing.T) {
			srv, base := sdktest.NewServer(t, llmmetricstest.ServerConfig{OutputMin: 200, OutputMax: 200})
			tr, _ := sdktest.NewTracker(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s, err := newClient(tr, srv.URL+"/v1", "test", base).CreateChatCompletionStream(ctx, goopenai.ChatCompletionRequest{
				Model:    llmmetricstest.DefaultModel,
				Messages: []goopenai.ChatCompletionMessage{{Role: goopenai.ChatMessageRoleUser, Content: "hi"}},
			})
			require.NoError(t, err)
			for range 3 {
				_, err := s.Recv()
				require.NoError(t, err)
			}
			if how == "cancel" {
				cancel()
				for err == nil {
					_, err = s.Recv()
				}
				assert.ErrorIs(t, err, context.Canceled)
			}
			require.NoError(t, s.Close())
			sum := tr.Snapshot()
			assert.Equal(t, 1, sum.Requests)
			assert.Equal(t, 1, sum.Canceled)
			assert.Zero(t, sum.Failed)
		})
	}
}
