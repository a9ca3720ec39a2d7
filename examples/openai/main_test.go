package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/llmmetricstest"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	goopenai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// client names a way to stream one completion with one of the SDKs.
type client struct {
	name   string
	stream func(ctx context.Context, tr *llmmetrics.Tracker, hc *http.Client, baseURL, model string) (llmmetrics.Record, string, error)
}

var clients = []client{{"openai-go", streamOfficial}, {"go-openai", streamGoOpenAI}}

func newTracker(t *testing.T) *llmmetrics.Tracker {
	t.Helper()
	mp, _ := llmmetricstest.NewMeterProvider()
	tr, err := llmmetrics.NewTracker(llmmetrics.WithMeterProvider(mp), llmmetrics.WithRole(llmmetrics.RoleClient))
	require.NoError(t, err)
	return tr
}

func TestRecordMatchesWhatTheServerSent(t *testing.T) {
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			srv := llmmetricstest.NewServer(llmmetricstest.ServerConfig{OutputMin: 12, OutputMax: 30, Seed: 3})
			defer srv.Close()
			rec, text, err := c.stream(context.Background(), newTracker(t), srv.Client(), srv.URL+"/v1", srv.Config().Model)
			require.NoError(t, err)
			st := srv.Stats()
			require.Equal(t, 1, st.OK)
			assert.Equal(t, llmmetrics.OutcomeOK, rec.Outcome)
			assert.Equal(t, st.CompletionTokens, rec.OutputTokens, "N is the server's usage")
			assert.Equal(t, st.PromptTokens, rec.InputTokens)
			assert.Equal(t, st.CompletionTokens, rec.Chunks, "the fake server sends one token per chunk")
			assert.Len(t, rec.ITL, st.CompletionTokens-1)
			ttft, ok := rec.TTFT()
			require.True(t, ok)
			e2el, _ := rec.E2EL()
			assert.Positive(t, ttft)
			assert.Less(t, ttft, e2el)
			assert.NotEmpty(t, text)
		})
	}
}

func TestInterruptedStreamIsError(t *testing.T) {
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			srv := llmmetricstest.NewServer(llmmetricstest.ServerConfig{CutRate: 1, OutputMin: 20, OutputMax: 20})
			defer srv.Close()
			rec, _, err := c.stream(context.Background(), newTracker(t), srv.Client(), srv.URL+"/v1", srv.Config().Model)
			assert.Error(t, err)
			assert.Equal(t, llmmetrics.OutcomeError, rec.Outcome)
			assert.Less(t, rec.OutputTokens, 20, "the stream was cut before its end")
		})
	}
}

func TestCanceledContextIsCanceled(t *testing.T) {
	srv := llmmetricstest.NewServer(llmmetricstest.ServerConfig{OutputMin: 200, OutputMax: 200})
	defer srv.Close()
	t.Run("openai-go", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		client := openai.NewClient(option.WithHTTPClient(srv.Client()), option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey("k"), option.WithMaxRetries(0))
		s := NewStreaming(ctx, newTracker(t), client, openai.ChatCompletionNewParams{
			Model: srv.Config().Model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
		defer s.Close()
		chunks := 0
		for s.Next() {
			if chunks++; chunks == 3 {
				cancel()
			}
		}
		rec := s.Record()
		assert.ErrorIs(t, s.Err(), context.Canceled)
		assert.Equal(t, llmmetrics.OutcomeCanceled, rec.Outcome)
		assert.Less(t, rec.OutputTokens, 200)
	})
	t.Run("go-openai", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cfg := goopenai.DefaultConfig("k")
		cfg.BaseURL = srv.URL + "/v1"
		cfg.HTTPClient = srv.Client()
		s, err := CreateChatCompletionStream(ctx, newTracker(t), goopenai.NewClientWithConfig(cfg), goopenai.ChatCompletionRequest{
			Model: srv.Config().Model, Messages: []goopenai.ChatCompletionMessage{{Role: "user", Content: "hi"}}})
		require.NoError(t, err)
		defer s.Close()
		var recvErr error
		for chunks := 1; ; chunks++ {
			if _, recvErr = s.Recv(); recvErr != nil {
				break
			}
			if chunks == 3 {
				cancel()
			}
		}
		assert.False(t, errors.Is(recvErr, io.EOF))
		assert.Equal(t, llmmetrics.OutcomeCanceled, s.Record().Outcome)
	})
}

func TestStoppingEarlyIsCanceled(t *testing.T) {
	srv := llmmetricstest.NewServer(llmmetricstest.ServerConfig{OutputMin: 50, OutputMax: 50})
	defer srv.Close()
	client := openai.NewClient(option.WithHTTPClient(srv.Client()), option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey("k"), option.WithMaxRetries(0))
	s := NewStreaming(context.Background(), newTracker(t), client, openai.ChatCompletionNewParams{
		Model: srv.Config().Model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	require.True(t, s.Next())
	require.NoError(t, s.Close())
	assert.Equal(t, llmmetrics.OutcomeCanceled, s.Record().Outcome)
}
