package main

import (
	"context"
	"errors"
	"io"
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
func call(opts ...llmmetrics.TransportOption) sdktest.Call {
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

// readmeLoop is the stream loop of go-openai's README (ChatCompletion
// streaming, README.md at commit 0116f29, lines 101-121), which indexes
// Choices[0] of every chunk and so panics on a chunk with "choices": [].
func readmeLoop(t *testing.T, c *goopenai.Client, req goopenai.ChatCompletionRequest) (text string, usage *goopenai.Usage) {
	t.Helper()
	stream, err := c.CreateChatCompletionStream(context.Background(), req)
	require.NoError(t, err)
	defer stream.Close()
	for {
		response, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return text, usage
		}
		require.NoError(t, err)
		if response.Usage != nil {
			usage = response.Usage
		}
		if len(response.Choices) == 0 && req.StreamOptions != nil {
			continue // the caller asked for the usage chunk: its loop handles it
		}
		text += response.Choices[0].Delta.Content
	}
}

// TestGoOpenAIReadmeLoopWithIncludeUsage: with WithIncludeUsage, go-openai's
// stock loop does not see the usage chunk the library asked for (it would
// panic on it), and the Record still has the server's exact usage; a caller
// who asks for the usage chunk itself gets it.
func TestGoOpenAIReadmeLoopWithIncludeUsage(t *testing.T) {
	for _, callerAsks := range []bool{false, true} {
		t.Run(map[bool]string{false: "library asks", true: "caller asks"}[callerAsks], func(t *testing.T) {
			srv, base := sdktest.NewServer(t, llmmetricstest.ServerConfig{Seed: 3})
			tr, _ := sdktest.NewTracker(t)
			req := goopenai.ChatCompletionRequest{
				Model:    llmmetricstest.DefaultModel,
				Messages: []goopenai.ChatCompletionMessage{{Role: goopenai.ChatMessageRoleUser, Content: "Lorem ipsum"}},
				Stream:   true,
			}
			if callerAsks {
				req.StreamOptions = &goopenai.StreamOptions{IncludeUsage: true}
			}
			text, usage := readmeLoop(t, newClient(tr, srv.URL+"/v1", "test", base, llmmetrics.WithIncludeUsage()), req)
			assert.NotEmpty(t, text)
			st := srv.Stats()
			if callerAsks {
				require.NotNil(t, usage, "the caller's usage chunk reaches it")
				assert.Equal(t, st.CompletionTokens, usage.CompletionTokens)
			} else {
				assert.Nil(t, usage, "the chunk only the library wanted is not shown")
			}
			sdktest.AssertCompleted(t, tr, st, false)
		})
	}
}
