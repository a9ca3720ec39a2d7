// Package chat sends streaming chat completions to an OpenAI-compatible
// endpoint and measures each one with llmmetrics' reader wrapper. It is
// shared by the example programs.
package chat

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/llmmetrics/llmmetrics"
)

// Client sends chat completions. Its fields are read-only once in use; a
// Client is safe for concurrent use when its HTTP client and Tracker are.
type Client struct {
	// HTTP is the client requests go through (nil: http.DefaultClient).
	HTTP *http.Client
	// BaseURL is the API root including its version, as the official SDKs
	// take it: "https://api.openai.com/v1", "http://127.0.0.1:8000/v1".
	BaseURL string
	// Model is the "model" of each request.
	Model string
	// APIKey, when set, is sent as a bearer token.
	APIKey string
	// Tracker measures every request.
	Tracker *llmmetrics.Tracker
}

// request is the body of a streaming chat completion.
type request struct {
	Model         string    `json:"model"`
	Messages      []message `json:"messages"`
	Stream        bool      `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens int `json:"max_tokens,omitempty"`
}

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Stream sends one streaming chat completion of prompt (maxTokens 0: the
// server's default) and reads the answer to its end through
// llmmetrics.NewReader, so the Tracker sees every chunk as it arrives. The
// request starts before the HTTP call, so TTFT includes connecting and
// queueing. It returns the request's Record and the error that ended it, if
// any (an HTTP error status, a transport error, a cut stream, an error
// event in the stream, or ctx being done).
func (c *Client) Stream(ctx context.Context, prompt string, maxTokens int) (llmmetrics.Record, error) {
	body := request{Model: c.Model, Messages: []message{{Role: "user", Content: prompt}}, Stream: true, MaxTokens: maxTokens}
	body.StreamOptions.IncludeUsage = true
	b, err := json.Marshal(body)
	if err != nil {
		return llmmetrics.Record{}, err
	}
	req := c.Tracker.StartClient(ctx)
	httpReq, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(c.BaseURL, "/")+"/chat/completions", bytes.NewReader(b))
	if err != nil {
		return req.End(err), err
	}
	httpReq.Header.Set("Content-Type", "application/json")
	httpReq.Header.Set("Accept", "text/event-stream")
	if c.APIKey != "" {
		httpReq.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(httpReq)
	if err != nil {
		return req.End(err), err
	}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		resp.Body.Close()
		err := fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(msg))
		return req.End(err), err
	}
	stream := llmmetrics.NewReader(req, resp.Body, llmmetrics.ProtocolOpenAI.NewDecoder())
	_, err = io.Copy(io.Discard, stream)
	closeErr := stream.Close()
	rec := req.End(nil) // already ended by the reader: returns its Record
	if err == nil && rec.Outcome != llmmetrics.OutcomeOK {
		err = fmt.Errorf("stream ended with outcome %s", rec.Outcome)
	}
	if err == nil {
		err = closeErr
	}
	return rec, err
}
