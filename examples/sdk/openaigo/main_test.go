package main

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/examples/internal/sdktest"
	"github.com/llmmetrics/llmmetrics/llmmetricstest"
)

// call sends one chat completion through newClient with the SDK's retries
// off, so an injected 500 or 429 is one failed request.
func call(opts ...llmmetrics.TransportOption) sdktest.Call {
	return func(ctx context.Context, tr *llmmetrics.Tracker, url string, base http.RoundTripper, stream bool) (string, error) {
		client := newClient(tr, url+"/v1", "test", &http.Client{Transport: base}, opts...)
		return chat(ctx, client, llmmetricstest.DefaultModel, "Say something about latency.", stream, option.WithMaxRetries(0))
	}
}

func TestOpenAIGo(t *testing.T) {
	// Without include_usage the stream has no usage chunk: N is the count
	// of token-carrying chunks (exact here: the fake server sends one
	// token per chunk) and the prompt tokens are unknown.
	sdktest.Run(t, call(), sdktest.Options{StreamWithoutInputTokens: true})
}

func TestOpenAIGoIncludeUsage(t *testing.T) {
	// With WithIncludeUsage the server sends the usage chunk, so the
	// Record has the server's exact counts, prompt tokens included.
	sdktest.Run(t, call(llmmetrics.WithIncludeUsage()), sdktest.Options{})
}

// TestOpenAIGoStopped: a stream the caller closes early, or whose context
// is canceled mid-way, is a canceled request, not a failed one.
func TestOpenAIGoStopped(t *testing.T) {
	for _, how := range []string{"close", "cancel"} {
		t.Run(how, func(t *testing.T) {
			srv, base := sdktest.NewServer(t, llmmetricstest.ServerConfig{OutputMin: 200, OutputMax: 200})
			tr, _ := sdktest.NewTracker(t)
			client := newClient(tr, srv.URL+"/v1", "test", &http.Client{Transport: base})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
				Model:    llmmetricstest.DefaultModel,
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
			}, option.WithMaxRetries(0))
			for range 3 {
				require.True(t, s.Next(), "%v", s.Err())
			}
			if how == "cancel" {
				cancel()
				for s.Next() {
				}
				assert.ErrorIs(t, s.Err(), context.Canceled)
			}
			require.NoError(t, s.Close())
			sum := tr.Snapshot()
			assert.Equal(t, 1, sum.Requests)
			assert.Equal(t, 1, sum.Canceled)
			assert.Zero(t, sum.Failed)
		})
	}
}

func TestOpenAIGoResponses(t *testing.T) {
	// The Responses API through the same middleware: usage arrives in
	// response.completed (streamed) or the response's usage (not), so both
	// counts are the server's without WithIncludeUsage.
	sdktest.Run(t, func(ctx context.Context, tr *llmmetrics.Tracker, url string, base http.RoundTripper, stream bool) (string, error) {
		client := newClient(tr, url+"/v1", "test", &http.Client{Transport: base})
		params := responses.ResponseNewParams{
			Model: llmmetricstest.DefaultModel,
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Say something about latency.")},
		}
		if !stream {
			resp, err := client.Responses.New(ctx, params, option.WithMaxRetries(0))
			if err != nil {
				return "", err
			}
			return resp.OutputText(), nil
		}
		s := client.Responses.NewStreaming(ctx, params, option.WithMaxRetries(0))
		defer s.Close()
		var text strings.Builder
		for s.Next() {
			if ev := s.Current(); ev.Type == "response.output_text.delta" {
				text.WriteString(ev.Delta)
			}
		}
		return text.String(), s.Err()
	}, sdktest.Options{})
}

// TestOpenAIGoStreamWithIncludeUsage: with WithIncludeUsage, openai-go's
// README loop (ChatCompletionAccumulator, then chunk.Choices[0] when
// there is one) sees only chunks with choices when the caller did not ask
// for the usage chunk, and the usage chunk when it did; the Record has the
// server's exact usage either way.
func TestOpenAIGoStreamWithIncludeUsage(t *testing.T) {
	for _, callerAsks := range []bool{false, true} {
		t.Run(map[bool]string{false: "library asks", true: "caller asks"}[callerAsks], func(t *testing.T) {
			srv, base := sdktest.NewServer(t, llmmetricstest.ServerConfig{Seed: 3})
			tr, _ := sdktest.NewTracker(t)
			client := newClient(tr, srv.URL+"/v1", "test", &http.Client{Transport: base}, llmmetrics.WithIncludeUsage())
			params := openai.ChatCompletionNewParams{
				Model:    llmmetricstest.DefaultModel,
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Lorem ipsum")},
			}
			if callerAsks {
				params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
			}
			stream := client.Chat.Completions.NewStreaming(context.Background(), params, option.WithMaxRetries(0))
			acc := openai.ChatCompletionAccumulator{}
			var text strings.Builder
			emptyChoices := 0
			for stream.Next() {
				chunk := stream.Current()
				acc.AddChunk(chunk)
				if len(chunk.Choices) == 0 {
					emptyChoices++
					continue
				}
				text.WriteString(chunk.Choices[0].Delta.Content)
			}
			require.NoError(t, stream.Err())
			require.NoError(t, stream.Close())
			assert.NotEmpty(t, text.String())
			st := srv.Stats()
			if callerAsks {
				assert.Equal(t, 1, emptyChoices, "the caller's usage chunk reaches it")
				assert.Equal(t, int64(st.CompletionTokens), acc.Usage.CompletionTokens)
			} else {
				assert.Zero(t, emptyChoices, "the chunk only the library wanted is not shown")
				assert.Zero(t, acc.Usage.CompletionTokens)
			}
			sdktest.AssertCompleted(t, tr, st, false)
		})
	}
}
