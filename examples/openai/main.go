// Command openai streams a chat completion from the fake server of
// llmmetricstest with each official Go client — github.com/openai/openai-go
// (v3) and github.com/sashabaranov/go-openai — instrumented by the thin
// adapters in adapters.go, and prints what llmmetrics measured.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"strings"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/llmmetricstest"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	goopenai "github.com/sashabaranov/go-openai"
)

func main() {
	srv := llmmetricstest.NewServer(llmmetricstest.ServerConfig{})
	defer srv.Close()
	tracker, err := llmmetrics.NewTracker(llmmetrics.WithRole(llmmetrics.RoleClient))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()

	rec, text, err := streamOfficial(ctx, tracker, srv.Client(), srv.URL+"/v1", srv.Config().Model)
	if err != nil {
		log.Fatal(err)
	}
	report("openai-go", rec, text)

	rec, text, err = streamGoOpenAI(ctx, tracker, srv.Client(), srv.URL+"/v1", srv.Config().Model)
	if err != nil {
		log.Fatal(err)
	}
	report("go-openai", rec, text)
}

func report(client string, rec llmmetrics.Record, text string) {
	ttft, _ := rec.TTFT()
	tpot, _ := rec.TPOT()
	fmt.Printf("%-10s %s: %d tokens in %d chunks, TTFT %v, TPOT %v, %q…\n", client, rec.Outcome,
		rec.OutputTokens, rec.Chunks, ttft.Round(time.Microsecond), tpot.Round(time.Microsecond), text[:min(len(text), 40)])
}

// streamOfficial streams one chat completion with openai-go through hc and
// returns the Record and the text.
func streamOfficial(ctx context.Context, tracker *llmmetrics.Tracker, hc *http.Client, baseURL, model string) (llmmetrics.Record, string, error) {
	client := openai.NewClient(option.WithHTTPClient(hc), option.WithBaseURL(baseURL), option.WithAPIKey("test"), option.WithMaxRetries(0))
	s := NewStreaming(ctx, tracker, client, openai.ChatCompletionNewParams{
		Model:         model,
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Say something about latency.")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	defer s.Close()
	var text strings.Builder
	for s.Next() {
		for _, ch := range s.Current().Choices {
			text.WriteString(ch.Delta.Content)
		}
	}
	return s.Record(), text.String(), s.Err()
}

// streamGoOpenAI does the same with sashabaranov/go-openai.
func streamGoOpenAI(ctx context.Context, tracker *llmmetrics.Tracker, hc *http.Client, baseURL, model string) (llmmetrics.Record, string, error) {
	cfg := goopenai.DefaultConfig("test")
	cfg.BaseURL = baseURL
	cfg.HTTPClient = hc
	s, err := CreateChatCompletionStream(ctx, tracker, goopenai.NewClientWithConfig(cfg), goopenai.ChatCompletionRequest{
		Model:         model,
		Messages:      []goopenai.ChatCompletionMessage{{Role: goopenai.ChatMessageRoleUser, Content: "Say something about latency."}},
		StreamOptions: &goopenai.StreamOptions{IncludeUsage: true},
	})
	if err != nil {
		return llmmetrics.Record{}, "", err
	}
	defer s.Close()
	var text strings.Builder
	for {
		resp, err := s.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return s.Record(), text.String(), err
		}
		for _, ch := range resp.Choices {
			text.WriteString(ch.Delta.Content)
		}
	}
	return s.Record(), text.String(), nil
}
