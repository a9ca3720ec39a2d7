package llmmetricstest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// This file reads every protocol back as a client would: each event parsed
// with encoding/json into the shape its provider documents, the tokens
// and usage it reports compared with Stats.

// wire is one API as a test client sees it.
type wire struct {
	name string
	// path returns the endpoint of a streaming or non-streaming request.
	path func(stream bool) string
	// body returns a request of 100 prompt tokens (200 + 200 characters,
	// split between the API's system and user fields where it has both),
	// with maxOut > 0 as the API's output cap.
	body func(stream bool, maxOut int) string
	// stream decodes a streaming answer; whole a non-streaming one.
	stream func(t *testing.T, a *answer)
	whole  func(t *testing.T, a *answer)
	// errorOf decodes the API's error object: its type (or status name;
	// "" where the API has none) and message.
	errorOf func(t *testing.T, data []byte) (kind, msg string)
	// kinds are the error kinds of HTTP 429 and 500.
	kinds [2]string
}

// answer is what a test client read of one response.
type answer struct {
	status      int
	contentType string
	raw         []byte
	events      []event // a stream's events (SSE events, NDJSON lines or array elements)
	readErr     error   // the body ended with an error (a cut stream)

	// Decoded by the wire.
	types      []string // event types, in order
	tokens     int      // token-carrying events (or tokens of a whole answer)
	text       string
	in, out    int    // the last usage reported
	finish     string // finish reason, in the API's words
	complete   bool   // the API's end marker arrived
	errKind    string // an error object in the stream
	errMsg     string
	tokenTimes []time.Time
	durations  []time.Duration // Ollama's prompt_eval, eval and total durations
}

// event is one stream event: its SSE event name (or "" ), its data, and
// whether it came without "data:" (a bare line).
type event struct {
	name string
	data []byte
	bare bool
	at   time.Time
}

const (
	half = "word word word word word word word word word word word word word word word word word word word word " +
		"word word word word word word word word word word word word word word word word word word word word " // 200 chars: 50 tokens
	fullPrompt = half + half
)

func capField(maxOut int, format string) string {
	if maxOut <= 0 {
		return ""
	}
	return fmt.Sprintf(format, maxOut)
}

func streamField(stream bool) string {
	if stream {
		return `,"stream":true`
	}
	return `,"stream":false`
}

var wires = []wire{
	{
		name: "openai chat",
		path: func(bool) string { return "/v1/chat/completions" },
		body: func(stream bool, maxOut int) string {
			b := `{"model":"` + DefaultModel + `","messages":[{"role":"system","content":"` + half + `"},{"role":"user","content":[{"type":"text","text":"` + half + `"}]}]` + streamField(stream)
			if stream {
				b += `,"stream_options":{"include_usage":true}`
			}
			return b + capField(maxOut, `,"max_completion_tokens":%d`) + `}`
		},
		stream: readOpenAIStream, whole: readOpenAIWhole, errorOf: openAIErrorOf,
		kinds: [2]string{"rate_limit_exceeded", "server_error"},
	},
	{
		name: "openai completions",
		path: func(bool) string { return "/v1/completions" },
		body: func(stream bool, maxOut int) string {
			b := `{"model":"` + DefaultModel + `","prompt":"` + fullPrompt + `"` + streamField(stream)
			if stream {
				b += `,"stream_options":{"include_usage":true}`
			}
			return b + capField(maxOut, `,"max_tokens":%d`) + `}`
		},
		stream: readOpenAIStream, whole: readOpenAIWhole, errorOf: openAIErrorOf,
		kinds: [2]string{"rate_limit_exceeded", "server_error"},
	},
	{
		name: "openai responses",
		path: func(bool) string { return "/v1/responses" },
		body: func(stream bool, maxOut int) string {
			return `{"model":"` + DefaultModel + `","instructions":"` + half + `","input":[{"role":"user","content":[{"type":"input_text","text":"` + half + `"}]}]` +
				streamField(stream) + capField(maxOut, `,"max_output_tokens":%d`) + `}`
		},
		stream: readResponsesStream, whole: readResponsesWhole, errorOf: openAIErrorOf,
		kinds: [2]string{"rate_limit_exceeded", "server_error"},
	},
	{
		name: "anthropic messages",
		path: func(bool) string { return "/v1/messages" },
		body: func(stream bool, maxOut int) string {
			if maxOut <= 0 {
				maxOut = 1024 // required by Anthropic; above every answer here
			}
			return `{"model":"` + DefaultModel + `","system":[{"type":"text","text":"` + half + `"}],"messages":[{"role":"user","content":"` + half + `"}]` +
				streamField(stream) + fmt.Sprintf(`,"max_tokens":%d`, maxOut) + `}`
		},
		stream: readAnthropicStream, whole: readAnthropicWhole, errorOf: anthropicErrorOf,
		kinds: [2]string{"rate_limit_error", "api_error"},
	},
	{
		name: "gemini sse",
		path: func(stream bool) string {
			if stream {
				return "/v1beta/models/" + DefaultModel + ":streamGenerateContent?alt=sse"
			}
			return "/v1beta/models/" + DefaultModel + ":generateContent"
		},
		body:   geminiBody,
		stream: readGeminiSSE, whole: readGeminiWhole, errorOf: geminiErrorOf,
		kinds: [2]string{"RESOURCE_EXHAUSTED", "INTERNAL"},
	},
	{
		name: "gemini json array",
		path: func(stream bool) string {
			if stream {
				return "/v1/models/" + DefaultModel + ":streamGenerateContent"
			}
			return "/v1/models/" + DefaultModel + ":generateContent"
		},
		body:   geminiBody,
		stream: readGeminiArray, whole: readGeminiWhole, errorOf: geminiErrorOf,
		kinds: [2]string{"RESOURCE_EXHAUSTED", "INTERNAL"},
	},
	{
		name: "ollama chat",
		path: func(bool) string { return "/api/chat" },
		body: func(stream bool, maxOut int) string {
			b := `{"model":"` + DefaultModel + `:latest","messages":[{"role":"system","content":"` + half + `"},{"role":"user","content":"` + half + `"}]`
			if !stream {
				b += `,"stream":false` // Ollama streams unless told not to
			}
			return b + capField(maxOut, `,"options":{"num_predict":%d}`) + `}`
		},
		stream: readOllamaStream, whole: readOllamaWhole, errorOf: ollamaErrorOf,
	},
	{
		name: "ollama generate",
		path: func(bool) string { return "/api/generate" },
		body: func(stream bool, maxOut int) string {
			b := `{"model":"` + DefaultModel + `","system":"` + half + `","prompt":"` + half + `"`
			if !stream {
				b += `,"stream":false`
			}
			return b + capField(maxOut, `,"options":{"num_predict":%d}`) + `}`
		},
		stream: readOllamaStream, whole: readOllamaWhole, errorOf: ollamaErrorOf,
	},
}

func geminiBody(_ bool, maxOut int) string {
	return `{"systemInstruction":{"parts":[{"text":"` + half + `"}]},"contents":[{"role":"user","parts":[{"text":"` + half + `"}]}]` +
		capField(maxOut, `,"generationConfig":{"maxOutputTokens":%d}`) + `}`
}

// post sends body to the server and reads the whole response, splitting a
// stream into events by its Content-Type, each stamped with the time it
// arrived.
func post(ctx context.Context, t *testing.T, s *Server, path, body string) *answer {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.Client().Do(req)
	if err != nil {
		return &answer{readErr: err}
	}
	defer resp.Body.Close()
	a := &answer{status: resp.StatusCode, contentType: resp.Header.Get("Content-Type")}
	switch {
	case a.contentType == "text/event-stream":
		a.events, a.readErr = readSSE(resp.Body)
	case a.contentType == "application/x-ndjson":
		a.events, a.readErr = readLines(resp.Body)
	case strings.Contains(path, ":streamGenerateContent") && resp.StatusCode == http.StatusOK:
		a.events, a.readErr = readArray(resp.Body)
	default:
		a.raw, a.readErr = io.ReadAll(resp.Body)
	}
	return a
}

// readSSE splits an SSE body into events (data on one line each, as every
// server here writes them); a line that is not a field is a bare event.
func readSSE(r io.Reader) ([]event, error) {
	br := bufio.NewReader(r)
	var evs []event
	var cur event
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			if err == io.EOF && line == "" {
				err = nil
			} else if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return evs, err
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if cur.data != nil {
				cur.at = time.Now()
				evs = append(evs, cur)
			}
			cur = event{}
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = []byte(strings.TrimPrefix(line, "data: "))
		default:
			cur.data, cur.bare = []byte(line), true
		}
	}
}

// readLines splits an NDJSON body into lines.
func readLines(r io.Reader) ([]event, error) {
	br := bufio.NewReader(r)
	var evs []event
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			if err == io.EOF && len(line) > 0 {
				err = io.ErrUnexpectedEOF
			} else if err == io.EOF {
				err = nil
			}
			return evs, err
		}
		evs = append(evs, event{data: bytes.TrimSuffix(line, []byte("\n")), at: time.Now()})
	}
}

// readArray reads a streamed JSON array element by element; an array
// without its closing bracket is an error.
func readArray(r io.Reader) ([]event, error) {
	dec := json.NewDecoder(r)
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, fmt.Errorf("not a JSON array: %v %v", tok, err)
	}
	var evs []event
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return evs, err
		}
		evs = append(evs, event{data: raw, at: time.Now()})
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim(']') {
		return evs, fmt.Errorf("unterminated JSON array: %v %v", tok, err)
	}
	return evs, nil
}

func (a *answer) addToken(text string, at time.Time) {
	a.tokens++
	a.text += text
	a.tokenTimes = append(a.tokenTimes, at)
}

// decodeStrict decodes data into v, which must describe every field.
func decodeStrict(t *testing.T, data []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(v), "%s", data)
}

// --- OpenAI chat and completions

func readOpenAIStream(t *testing.T, a *answer) {
	for i, ev := range a.events {
		require.False(t, ev.bare, "%s", ev.data)
		assert.Empty(t, ev.name, "no event: lines")
		if string(ev.data) == "[DONE]" {
			require.Equal(t, len(a.events)-1, i, "[DONE] ends the stream")
			a.types = append(a.types, "[DONE]")
			a.complete = a.finish != ""
			continue
		}
		if bytes.HasPrefix(ev.data, []byte(`{"error":`)) {
			a.types = append(a.types, "error")
			a.errKind, a.errMsg = openAIErrorOf(t, ev.data)
			continue
		}
		var c struct {
			ID                string `json:"id"`
			Object            string `json:"object"`
			Created           int64  `json:"created"`
			Model             string `json:"model"`
			SystemFingerprint string `json:"system_fingerprint"`
			Choices           []struct {
				Index int `json:"index"`
				Delta *struct {
					Role    string  `json:"role"`
					Content *string `json:"content"`
				} `json:"delta"`
				Text         *string         `json:"text"`
				Logprobs     json.RawMessage `json:"logprobs"`
				FinishReason *string         `json:"finish_reason"`
			} `json:"choices"`
			Usage *usage `json:"usage"`
		}
		decodeStrict(t, ev.data, &c)
		assert.Contains(t, []string{"chat.completion.chunk", "text_completion"}, c.Object)
		assert.Equal(t, DefaultModel, c.Model)
		if c.Usage != nil {
			a.in, a.out = c.Usage.PromptTokens, c.Usage.CompletionTokens
			assert.Equal(t, c.Usage.PromptTokens+c.Usage.CompletionTokens, c.Usage.TotalTokens)
		}
		if len(c.Choices) == 0 {
			a.types = append(a.types, "usage")
			continue
		}
		require.Len(t, c.Choices, 1)
		ch := c.Choices[0]
		var text string
		switch {
		case ch.Delta != nil && ch.Delta.Role == "assistant":
			a.types = append(a.types, "role")
			continue
		case ch.Delta != nil && ch.Delta.Content != nil:
			text = *ch.Delta.Content
		case ch.Text != nil:
			text = *ch.Text
		}
		if ch.FinishReason != nil {
			a.types = append(a.types, "finish")
			a.finish = *ch.FinishReason
			assert.Empty(t, text)
			continue
		}
		a.types = append(a.types, "token")
		a.addToken(text, ev.at)
	}
}

func readOpenAIWhole(t *testing.T, a *answer) {
	var c struct {
		Object  string `json:"object"`
		Choices []struct {
			Message *struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"message"`
			Text         *string `json:"text"`
			FinishReason string  `json:"finish_reason"`
		} `json:"choices"`
		Usage usage `json:"usage"`
	}
	require.NoError(t, json.Unmarshal(a.raw, &c))
	require.Len(t, c.Choices, 1)
	if c.Choices[0].Message != nil {
		assert.Equal(t, "chat.completion", c.Object)
		assert.Equal(t, "assistant", c.Choices[0].Message.Role)
		a.text = c.Choices[0].Message.Content
	} else {
		require.NotNil(t, c.Choices[0].Text)
		a.text = *c.Choices[0].Text
	}
	a.finish, a.in, a.out, a.tokens = c.Choices[0].FinishReason, c.Usage.PromptTokens, c.Usage.CompletionTokens, c.Usage.CompletionTokens
}

func openAIErrorOf(t *testing.T, data []byte) (string, string) {
	var e struct {
		Error struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Param   json.RawMessage `json:"param"`
			Code    int             `json:"code"`
		} `json:"error"`
	}
	decodeStrict(t, data, &e)
	assert.Equal(t, "null", string(e.Error.Param))
	assert.NotZero(t, e.Error.Code)
	return e.Error.Type, e.Error.Message
}

// --- OpenAI Responses

type responsesUsage struct {
	InputTokens         int            `json:"input_tokens"`
	InputTokensDetails  map[string]int `json:"input_tokens_details"`
	OutputTokens        int            `json:"output_tokens"`
	OutputTokensDetails map[string]int `json:"output_tokens_details"`
	TotalTokens         int            `json:"total_tokens"`
}

type responsesObject struct {
	ID                string          `json:"id"`
	Object            string          `json:"object"`
	CreatedAt         int64           `json:"created_at"`
	Status            string          `json:"status"`
	Error             *responseError  `json:"error"`
	IncompleteDetails *incomplete     `json:"incomplete_details"`
	Instructions      json.RawMessage `json:"instructions"`
	MaxOutputTokens   *int            `json:"max_output_tokens"`
	Model             string          `json:"model"`
	Output            []struct {
		ID      string `json:"id"`
		Type    string `json:"type"`
		Status  string `json:"status"`
		Role    string `json:"role"`
		Content []struct {
			Type        string `json:"type"`
			Text        string `json:"text"`
			Annotations []any  `json:"annotations"`
		} `json:"content"`
	} `json:"output"`
	ParallelToolCalls bool            `json:"parallel_tool_calls"`
	ToolChoice        string          `json:"tool_choice"`
	Tools             []any           `json:"tools"`
	Usage             *responsesUsage `json:"usage"`
}

func (a *answer) responseObject(t *testing.T, r *responsesObject) {
	assert.Equal(t, "response", r.Object)
	assert.Equal(t, DefaultModel, r.Model)
	if r.Usage != nil {
		a.in, a.out = r.Usage.InputTokens, r.Usage.OutputTokens
		assert.Equal(t, r.Usage.InputTokens+r.Usage.OutputTokens, r.Usage.TotalTokens)
	}
	a.finish = r.Status
	if r.Status == "incomplete" {
		require.NotNil(t, r.IncompleteDetails)
		assert.Equal(t, "max_output_tokens", r.IncompleteDetails.Reason)
	}
	if r.Error != nil {
		a.errKind, a.errMsg = r.Error.Code, r.Error.Message
	}
}

func readResponsesStream(t *testing.T, a *answer) {
	for i, ev := range a.events {
		require.False(t, ev.bare, "%s", ev.data)
		var e struct {
			Type           string           `json:"type"`
			SequenceNumber int              `json:"sequence_number"`
			Response       *responsesObject `json:"response"`
			OutputIndex    *int             `json:"output_index"`
			ContentIndex   *int             `json:"content_index"`
			ItemID         string           `json:"item_id"`
			Item           json.RawMessage  `json:"item"`
			Part           json.RawMessage  `json:"part"`
			Delta          *string          `json:"delta"`
			Text           *string          `json:"text"`
			Logprobs       []any            `json:"logprobs"`
		}
		decodeStrict(t, ev.data, &e)
		assert.Equal(t, ev.name, e.Type, "the event: line names the data's type")
		assert.Equal(t, i, e.SequenceNumber)
		a.types = append(a.types, e.Type)
		if e.Response != nil {
			a.responseObject(t, e.Response)
		}
		switch e.Type {
		case "response.output_text.delta":
			require.NotNil(t, e.Delta)
			a.addToken(*e.Delta, ev.at)
		case "response.output_text.done":
			require.NotNil(t, e.Text)
			assert.Equal(t, a.text, *e.Text, "the done event repeats the text")
		case "response.completed", "response.incomplete":
			a.complete = true
			require.Len(t, e.Response.Output, 1)
			assert.Equal(t, a.text, e.Response.Output[0].Content[0].Text)
		}
	}
}

func readResponsesWhole(t *testing.T, a *answer) {
	var r responsesObject
	decodeStrict(t, a.raw, &r)
	a.responseObject(t, &r)
	require.Len(t, r.Output, 1)
	assert.Equal(t, "message", r.Output[0].Type)
	assert.Equal(t, "assistant", r.Output[0].Role)
	require.Len(t, r.Output[0].Content, 1)
	assert.Equal(t, "output_text", r.Output[0].Content[0].Type)
	a.text, a.tokens = r.Output[0].Content[0].Text, a.out
}

// --- Anthropic

type anthropicUsageJSON struct {
	InputTokens  *int `json:"input_tokens"`
	OutputTokens int  `json:"output_tokens"`
}

type anthropicMessageJSON struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Role    string `json:"role"`
	Model   string `json:"model"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StopReason   *string            `json:"stop_reason"`
	StopSequence *string            `json:"stop_sequence"`
	Usage        anthropicUsageJSON `json:"usage"`
}

func readAnthropicStream(t *testing.T, a *answer) {
	for _, ev := range a.events {
		require.False(t, ev.bare, "%s", ev.data)
		var e struct {
			Type         string                `json:"type"`
			Message      *anthropicMessageJSON `json:"message"`
			Index        *int                  `json:"index"`
			ContentBlock *struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content_block"`
			Delta *struct {
				Type         string  `json:"type"`
				Text         string  `json:"text"`
				StopReason   *string `json:"stop_reason"`
				StopSequence *string `json:"stop_sequence"`
			} `json:"delta"`
			Usage *anthropicUsageJSON `json:"usage"`
			Error *struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}
		decodeStrict(t, ev.data, &e)
		assert.Equal(t, ev.name, e.Type, "the event: line names the data's type")
		a.types = append(a.types, e.Type)
		switch e.Type {
		case "message_start":
			require.NotNil(t, e.Message)
			require.NotNil(t, e.Message.Usage.InputTokens)
			assert.Equal(t, "message", e.Message.Type)
			assert.Equal(t, 1, e.Message.Usage.OutputTokens, "a placeholder")
			assert.Nil(t, e.Message.StopReason)
			a.in = *e.Message.Usage.InputTokens
		case "content_block_start":
			require.NotNil(t, e.ContentBlock)
			assert.Equal(t, "text", e.ContentBlock.Type)
		case "content_block_delta":
			require.NotNil(t, e.Delta)
			assert.Equal(t, "text_delta", e.Delta.Type)
			a.addToken(e.Delta.Text, ev.at)
		case "message_delta":
			require.NotNil(t, e.Usage)
			require.NotNil(t, e.Delta.StopReason)
			a.out, a.finish = e.Usage.OutputTokens, *e.Delta.StopReason
		case "message_stop":
			a.complete = true
		case "error":
			require.NotNil(t, e.Error)
			a.errKind, a.errMsg = anthropicErrorOf(t, ev.data)
		}
	}
}

func readAnthropicWhole(t *testing.T, a *answer) {
	var m anthropicMessageJSON
	decodeStrict(t, a.raw, &m)
	assert.Equal(t, "message", m.Type)
	assert.Equal(t, "assistant", m.Role)
	require.Len(t, m.Content, 1)
	require.NotNil(t, m.StopReason)
	require.NotNil(t, m.Usage.InputTokens)
	a.text, a.finish, a.in, a.out, a.tokens = m.Content[0].Text, *m.StopReason, *m.Usage.InputTokens, m.Usage.OutputTokens, m.Usage.OutputTokens
}

func anthropicErrorOf(t *testing.T, data []byte) (string, string) {
	var e struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	decodeStrict(t, data, &e)
	assert.Equal(t, "error", e.Type)
	return e.Error.Type, e.Error.Message
}

// --- Gemini

type geminiResponseJSON struct {
	Candidates []struct {
		Content struct {
			Parts []struct {
				Text string `json:"text"`
			} `json:"parts"`
			Role string `json:"role"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
		Index        int    `json:"index"`
	} `json:"candidates"`
	UsageMetadata struct {
		PromptTokenCount     int `json:"promptTokenCount"`
		CandidatesTokenCount int `json:"candidatesTokenCount"`
		TotalTokenCount      int `json:"totalTokenCount"`
		PromptTokensDetails  []struct {
			Modality   string `json:"modality"`
			TokenCount int    `json:"tokenCount"`
		} `json:"promptTokensDetails"`
	} `json:"usageMetadata"`
	ModelVersion string `json:"modelVersion"`
	ResponseID   string `json:"responseId"`
}

// geminiDecode decodes and checks one GenerateContentResponse.
func geminiDecode(t *testing.T, data []byte) (r geminiResponseJSON) {
	decodeStrict(t, data, &r)
	require.Len(t, r.Candidates, 1)
	c := r.Candidates[0]
	assert.Equal(t, "model", c.Content.Role)
	require.Len(t, c.Content.Parts, 1)
	u := r.UsageMetadata
	assert.Equal(t, u.PromptTokenCount+u.CandidatesTokenCount, u.TotalTokenCount)
	assert.Equal(t, []struct {
		Modality   string `json:"modality"`
		TokenCount int    `json:"tokenCount"`
	}{{"TEXT", u.PromptTokenCount}}, u.PromptTokensDetails)
	assert.Equal(t, DefaultModel, r.ModelVersion)
	return r
}

func (a *answer) geminiChunk(t *testing.T, data []byte, at time.Time) {
	if bytes.HasPrefix(data, []byte(`{"error":`)) {
		a.types = append(a.types, "error")
		a.errKind, a.errMsg = geminiErrorOf(t, data)
		return
	}
	r := geminiDecode(t, data)
	c, u := r.Candidates[0], r.UsageMetadata
	a.types = append(a.types, "chunk")
	a.addToken(c.Content.Parts[0].Text, at)
	assert.Equal(t, a.tokens, u.CandidatesTokenCount, "candidatesTokenCount is cumulative")
	a.in, a.out = u.PromptTokenCount, u.CandidatesTokenCount
	if c.FinishReason != "" {
		a.finish, a.complete = c.FinishReason, true
	}
}

func readGeminiSSE(t *testing.T, a *answer) {
	for _, ev := range a.events {
		assert.Empty(t, ev.name, "no event: lines")
		assert.Equal(t, bytes.HasPrefix(ev.data, []byte(`{"error":`)), ev.bare, "only an error comes without data: %s", ev.data)
		a.geminiChunk(t, ev.data, ev.at)
	}
}

func readGeminiArray(t *testing.T, a *answer) {
	for _, ev := range a.events {
		a.geminiChunk(t, ev.data, ev.at)
	}
	a.complete = a.complete && a.readErr == nil
}

func readGeminiWhole(t *testing.T, a *answer) {
	r := geminiDecode(t, a.raw)
	c, u := r.Candidates[0], r.UsageMetadata
	a.text, a.finish, a.in, a.out, a.tokens = c.Content.Parts[0].Text, c.FinishReason, u.PromptTokenCount, u.CandidatesTokenCount, u.CandidatesTokenCount
}

func geminiErrorOf(t *testing.T, data []byte) (string, string) {
	var e struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Status  string `json:"status"`
		} `json:"error"`
	}
	decodeStrict(t, data, &e)
	assert.NotZero(t, e.Error.Code)
	return e.Error.Status, e.Error.Message
}

// --- Ollama

type ollamaLineJSON struct {
	Model     string `json:"model"`
	CreatedAt string `json:"created_at"`
	Message   *struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"message"`
	Response           *string `json:"response"`
	Done               bool    `json:"done"`
	DoneReason         string  `json:"done_reason"`
	TotalDuration      int64   `json:"total_duration"`
	PromptEvalCount    int     `json:"prompt_eval_count"`
	PromptEvalDuration int64   `json:"prompt_eval_duration"`
	EvalCount          int     `json:"eval_count"`
	EvalDuration       int64   `json:"eval_duration"`
}

func (l *ollamaLineJSON) text(t *testing.T) string {
	if l.Message != nil {
		assert.Equal(t, "assistant", l.Message.Role)
		return l.Message.Content
	}
	require.NotNil(t, l.Response, "message or response")
	return *l.Response
}

func readOllamaStream(t *testing.T, a *answer) {
	for _, ev := range a.events {
		if bytes.HasPrefix(ev.data, []byte(`{"error":`)) {
			a.types = append(a.types, "error")
			a.errKind, a.errMsg = ollamaErrorOf(t, ev.data)
			continue
		}
		var l ollamaLineJSON
		decodeStrict(t, ev.data, &l)
		assert.Equal(t, DefaultModel, l.Model)
		_, err := time.Parse(time.RFC3339Nano, l.CreatedAt)
		assert.NoError(t, err)
		if l.Done {
			a.types = append(a.types, "done")
			assert.Empty(t, l.text(t))
			a.complete, a.finish, a.in, a.out = true, l.DoneReason, l.PromptEvalCount, l.EvalCount
			a.durations = l.durations()
			continue
		}
		a.types = append(a.types, "token")
		assert.Zero(t, l.EvalCount, "counts come with done")
		a.addToken(l.text(t), ev.at)
	}
}

func (l *ollamaLineJSON) durations() []time.Duration {
	return []time.Duration{time.Duration(l.PromptEvalDuration), time.Duration(l.EvalDuration), time.Duration(l.TotalDuration)}
}

// checkDurations: Ollama reports durations, which on fake time for a lone
// request with exact timing are the prefill (20ms) and one 10ms step per
// token after the first.
func (a *answer) checkDurations(t *testing.T, name string) {
	if !strings.HasPrefix(name, "ollama") {
		assert.Nil(t, a.durations)
		return
	}
	prefill := 20 * time.Millisecond
	decode := time.Duration(a.out-1) * 10 * time.Millisecond
	assert.Equal(t, []time.Duration{prefill, decode, prefill + decode}, a.durations, "prompt_eval, eval and total durations")
}

func readOllamaWhole(t *testing.T, a *answer) {
	var l ollamaLineJSON
	decodeStrict(t, a.raw, &l)
	assert.True(t, l.Done)
	a.text, a.finish, a.in, a.out, a.tokens = l.text(t), l.DoneReason, l.PromptEvalCount, l.EvalCount, l.EvalCount
	a.durations = l.durations()
}

func ollamaErrorOf(t *testing.T, data []byte) (string, string) {
	var e struct {
		Error string `json:"error"`
	}
	decodeStrict(t, data, &e)
	return "", e.Error
}

// --- Tests

// wantTypes returns each wire's event types for a complete answer of n
// tokens.
func wantTypes(name string, n int, length bool) []string {
	rep := func(s string) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = s
		}
		return out
	}
	cat := func(parts ...[]string) []string {
		var out []string
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	switch name {
	case "openai chat":
		return cat([]string{"role"}, rep("token"), []string{"finish", "usage", "[DONE]"})
	case "openai completions":
		return cat(rep("token"), []string{"finish", "usage", "[DONE]"})
	case "openai responses":
		last := "response.completed"
		if length {
			last = "response.incomplete"
		}
		return cat([]string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"},
			rep("response.output_text.delta"),
			[]string{"response.output_text.done", "response.content_part.done", "response.output_item.done", last})
	case "anthropic messages":
		return cat([]string{"message_start", "content_block_start", "ping"}, rep("content_block_delta"),
			[]string{"content_block_stop", "message_delta", "message_stop"})
	case "gemini sse", "gemini json array":
		return rep("chunk")
	case "ollama chat", "ollama generate":
		return cat(rep("token"), []string{"done"})
	}
	panic(name)
}

// finishes are each wire's finish reasons: stop, then length.
var finishes = map[string][2]string{
	"openai chat":        {"stop", "length"},
	"openai completions": {"stop", "length"},
	"openai responses":   {"completed", "incomplete"},
	"anthropic messages": {"end_turn", "max_tokens"},
	"gemini sse":         {"STOP", "MAX_TOKENS"},
	"gemini json array":  {"STOP", "MAX_TOKENS"},
	"ollama chat":        {"stop", "length"},
	"ollama generate":    {"stop", "length"},
}

var contentTypes = map[string]string{
	"openai chat":        "text/event-stream",
	"openai completions": "text/event-stream",
	"openai responses":   "text/event-stream",
	"anthropic messages": "text/event-stream",
	"gemini sse":         "text/event-stream",
	"gemini json array":  "application/json; charset=UTF-8",
	"ollama chat":        "application/x-ndjson",
	"ollama generate":    "application/x-ndjson",
}

func TestProtocolsStream(t *testing.T) {
	for _, w := range wires {
		for _, maxOut := range []int{0, 2} { // exact answers have 3 tokens; 2 cuts them
			t.Run(fmt.Sprintf("%s/max %d", w.name, maxOut), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					s := NewInMemoryServer(exact)
					defer s.Close()
					start := time.Now()
					a := post(context.Background(), t, s, w.path(true), w.body(true, maxOut))
					require.NoError(t, a.readErr)
					require.Equal(t, http.StatusOK, a.status)
					assert.Equal(t, contentTypes[w.name], a.contentType)
					w.stream(t, a)

					n, length := 3, maxOut > 0
					if length {
						n = 2
					}
					assert.Equal(t, wantTypes(w.name, n, length), a.types)
					assert.True(t, a.complete, "the end marker arrived")
					assert.Equal(t, finishes[w.name][map[bool]int{false: 0, true: 1}[length]], a.finish)
					synctest.Wait() // the scheduler finishes its step before Stats is read
					st := s.Stats()
					assert.Equal(t, Stats{Requests: 1, OK: 1, PromptTokens: 100, CompletionTokens: n, Steps: n, MaxRunning: 1}, st)
					assert.Equal(t, st.CompletionTokens, a.tokens, "token events")
					assert.Equal(t, st.CompletionTokens, a.out, "reported output tokens")
					assert.Equal(t, st.PromptTokens, a.in, "reported input tokens")
					assert.Equal(t, expectedText(t, result{text: a.text, tokens: a.tokens}), a.text)
					a.checkDurations(t, w.name)
					// One scheduler, one timing: prefill of 100 tokens = 20ms, then 10ms per token.
					require.Len(t, a.tokenTimes, n)
					for i, at := range a.tokenTimes {
						assert.Equal(t, 20*time.Millisecond+time.Duration(i)*10*time.Millisecond, at.Sub(start), "token %d", i)
					}
				})
			})
		}
	}
}

func TestProtocolsNonStreaming(t *testing.T) {
	for _, w := range wires {
		for _, maxOut := range []int{0, 2} {
			t.Run(fmt.Sprintf("%s/max %d", w.name, maxOut), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					s := NewInMemoryServer(exact)
					defer s.Close()
					start := time.Now()
					a := post(context.Background(), t, s, w.path(false), w.body(false, maxOut))
					elapsed := time.Since(start)
					require.NoError(t, a.readErr)
					require.Equal(t, http.StatusOK, a.status, "%s", a.raw)
					assert.True(t, strings.HasPrefix(a.contentType, "application/json"), a.contentType)
					assert.Empty(t, a.events)
					require.True(t, json.Valid(a.raw))
					w.whole(t, a)

					n, length := 3, maxOut > 0
					if length {
						n = 2
					}
					assert.Equal(t, finishes[w.name][map[bool]int{false: 0, true: 1}[length]], a.finish)
					synctest.Wait() // the scheduler finishes its step before Stats is read
					st := s.Stats()
					assert.Equal(t, Stats{Requests: 1, OK: 1, PromptTokens: 100, CompletionTokens: n, Steps: n, MaxRunning: 1}, st)
					assert.Equal(t, st.CompletionTokens, a.out, "usage output tokens")
					assert.Equal(t, st.PromptTokens, a.in, "usage input tokens")
					assert.Equal(t, expectedText(t, result{text: a.text, tokens: n}), a.text)
					assert.Equal(t, n, len(strings.Fields(a.text)), "one word per token")
					a.checkDurations(t, w.name)
					assert.Equal(t, 20*time.Millisecond+time.Duration(n-1)*10*time.Millisecond, elapsed, "answered when the last token is ready")
				})
			})
		}
	}
}

func TestProtocolsRejected(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			tests := []struct {
				name   string
				cfg    ServerConfig
				stream bool
				status int
				kind   string
				stats  Stats
			}{
				{"injected 500, stream", ServerConfig{FailureRate: 1}, true, 500, w.kinds[1], Stats{Requests: 1, Failed: 1}},
				{"injected 500", ServerConfig{FailureRate: 1}, false, 500, w.kinds[1], Stats{Requests: 1, Failed: 1}},
				{"injected 429, stream", ServerConfig{RateLimitRate: 1}, true, 429, w.kinds[0], Stats{Requests: 1, RateLimited: 1}},
				{"injected 429", ServerConfig{RateLimitRate: 1}, false, 429, w.kinds[0], Stats{Requests: 1, RateLimited: 1}},
				{"error event, not streaming", ServerConfig{ErrorEventRate: 1}, false, 500, w.kinds[1], Stats{Requests: 1, ErrorEvents: 1, PromptTokens: 100, Steps: 128, MaxRunning: 1}},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						cfg := tt.cfg
						cfg.Jitter, cfg.OutputMin, cfg.OutputMax = -1, 128, 128
						s := NewInMemoryServer(cfg)
						defer s.Close()
						a := post(context.Background(), t, s, w.path(tt.stream), w.body(tt.stream, 0))
						require.NoError(t, a.readErr)
						assert.Equal(t, tt.status, a.status)
						assert.True(t, strings.HasPrefix(a.contentType, "application/json"), a.contentType)
						kind, msg := w.errorOf(t, a.raw)
						assert.Equal(t, tt.kind, kind)
						assert.True(t, strings.HasPrefix(msg, "llmmetricstest: "), msg)
						synctest.Wait() // the scheduler finishes its step before Stats is read
						assert.Equal(t, tt.stats, s.Stats())
					})
				})
			}
		})
	}
}

func TestProtocolsBadRequests(t *testing.T) {
	kinds := map[string][2]string{ // 400, 404
		"openai chat": {"invalid_request_error", "invalid_request_error"}, "openai completions": {"invalid_request_error", "invalid_request_error"},
		"openai responses":   {"invalid_request_error", "invalid_request_error"},
		"anthropic messages": {"invalid_request_error", "not_found_error"},
		"gemini sse":         {"INVALID_ARGUMENT", "NOT_FOUND"}, "gemini json array": {"INVALID_ARGUMENT", "NOT_FOUND"},
		"ollama chat": {"", ""}, "ollama generate": {"", ""},
	}
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := NewInMemoryServer(exact)
				defer s.Close()
				a := post(context.Background(), t, s, w.path(true), `{"contents":`)
				assert.Equal(t, http.StatusBadRequest, a.status)
				kind, msg := w.errorOf(t, a.raw)
				assert.Equal(t, kinds[w.name][0], kind)
				assert.True(t, strings.HasPrefix(msg, "llmmetricstest: invalid JSON body: "), msg)

				path, body := w.path(true), strings.ReplaceAll(w.body(true, 0), DefaultModel, "other-model")
				if strings.HasPrefix(w.name, "gemini") {
					path = strings.Replace(path, DefaultModel, "other-model", 1)
				}
				a = post(context.Background(), t, s, path, body)
				assert.Equal(t, http.StatusNotFound, a.status)
				kind, msg = w.errorOf(t, a.raw)
				assert.Equal(t, kinds[w.name][1], kind)
				assert.Contains(t, msg, `"other-model" does not exist`)
				synctest.Wait() // the scheduler finishes its step before Stats is read
				assert.Equal(t, Stats{Requests: 2, BadRequests: 2}, s.Stats())
			})
		})
	}
	t.Run("gemini unknown method", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := NewInMemoryServer(exact)
			defer s.Close()
			a := post(context.Background(), t, s, "/v1beta/models/"+DefaultModel+":countTokens", geminiBody(false, 0))
			assert.Equal(t, http.StatusNotFound, a.status)
			kind, msg := geminiErrorOf(t, a.raw)
			assert.Equal(t, "NOT_FOUND", kind)
			assert.Contains(t, msg, `"countTokens"`)
		})
	})
}

func TestProtocolsStreamFaults(t *testing.T) {
	// lastTypes are the events an injected error event ends a stream with.
	lastTypes := map[string][]string{
		"openai chat": {"error", "[DONE]"}, "openai completions": {"error", "[DONE]"},
		"openai responses":   {"response.failed"},
		"anthropic messages": {"error"},
		"gemini sse":         {"error"}, "gemini json array": {"error"},
		"ollama chat": {"error"}, "ollama generate": {"error"},
	}
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				for seed := range uint64(4) { // the fault comes at a random token
					for _, cut := range []bool{false, true} {
						cfg := ServerConfig{Seed: seed, OutputMin: 20, OutputMax: 20}
						if cut {
							cfg.CutRate = 1
						} else {
							cfg.ErrorEventRate = 1
						}
						s := NewInMemoryServer(cfg)
						a := post(context.Background(), t, s, w.path(true), w.body(true, 0))
						s.Close()
						synctest.Wait() // the scheduler finishes its step before Stats is read
						st := s.Stats()
						if cut && a.status == 0 {
							// Ollama's headers come with the first token: a cut
							// before it fails the round trip.
							require.Error(t, a.readErr)
							assert.True(t, strings.HasPrefix(w.name, "ollama"), w.name)
							assert.Equal(t, Stats{Requests: 1, Cut: 1, PromptTokens: 100, Steps: st.Steps, MaxRunning: 1}, st)
							continue
						}
						require.Equal(t, http.StatusOK, a.status)
						w.stream(t, a)
						assert.False(t, a.complete, "no end marker")
						assert.Less(t, a.tokens, 20, "stopped before the end")
						assert.Equal(t, st.CompletionTokens, a.tokens, "the server counts what it sent")
						assert.Zero(t, st.OK)
						if cut {
							assert.Error(t, a.readErr, "the connection closed mid-stream")
							assert.Equal(t, 1, st.Cut)
							assert.Empty(t, a.errMsg)
							continue
						}
						require.NoError(t, a.readErr)
						assert.Equal(t, 1, st.ErrorEvents)
						last := lastTypes[w.name]
						require.GreaterOrEqual(t, len(a.types), len(last))
						assert.Equal(t, last, a.types[len(a.types)-len(last):])
						assert.Equal(t, w.kinds[1], a.errKind)
						assert.Equal(t, "llmmetricstest: injected error event", a.errMsg)
					}
				}
			})
		})
	}
}

func TestProtocolsShareOneScheduler(t *testing.T) {
	t.Run("one queue", func(t *testing.T) {
		// With a batch of one, every request waits for the ones before it,
		// whatever their protocols: request k (0-based) gets its first
		// token at 40ms × k + 20ms (each takes 20ms of prefill and two
		// 10ms steps).
		synctest.Test(t, func(t *testing.T) {
			cfg := exact
			cfg.MaxBatch = 1
			s := NewInMemoryServer(cfg)
			defer s.Close()
			start := time.Now()
			answers := make([]chan *answer, len(wires))
			for i, w := range wires {
				answers[i] = make(chan *answer, 1)
				go func() { answers[i] <- post(context.Background(), t, s, w.path(true), w.body(true, 0)) }()
				synctest.Wait() // queued in this order
			}
			tokens := 0
			for i, w := range wires {
				a := <-answers[i]
				require.NoError(t, a.readErr, w.name)
				w.stream(t, a)
				require.Len(t, a.tokenTimes, 3, w.name)
				assert.Equal(t, time.Duration(i)*40*time.Millisecond+20*time.Millisecond, a.tokenTimes[0].Sub(start), w.name)
				tokens += a.tokens
			}
			synctest.Wait() // the scheduler finishes its step before Stats is read
			st := s.Stats()
			assert.Equal(t, tokens, st.CompletionTokens)
			assert.Equal(t, len(wires)*100, st.PromptTokens)
			assert.Equal(t, len(wires), st.OK)
			assert.Equal(t, 1, st.MaxRunning)
		})
	})
	t.Run("one batch", func(t *testing.T) {
		// Every protocol's request joins the same batch, and a batch of b
		// decodes each step in 10ms × (1 + 0.04 × (b − 1)).
		synctest.Test(t, func(t *testing.T) {
			cfg := exact
			cfg.OutputMin, cfg.OutputMax = 20, 20
			s := NewInMemoryServer(cfg)
			defer s.Close()
			answers := make([]chan *answer, len(wires))
			for i, w := range wires {
				answers[i] = make(chan *answer, 1)
				go func() { answers[i] <- post(context.Background(), t, s, w.path(true), w.body(true, 0)) }()
			}
			step := time.Duration(float64(10*time.Millisecond) * (1 + 0.04*float64(len(wires)-1)))
			for i, w := range wires {
				a := <-answers[i]
				require.NoError(t, a.readErr, w.name)
				w.stream(t, a)
				require.Len(t, a.tokenTimes, 20, w.name)
				// The 9th and 10th tokens come from steps where all the requests decode
				// (each joined the batch at its first or second step).
				assert.Equal(t, step, a.tokenTimes[9].Sub(a.tokenTimes[8]), "%s: a step decodes the whole batch", w.name)
			}
			synctest.Wait() // the scheduler finishes its step before Stats is read
			st := s.Stats()
			assert.Equal(t, len(wires), st.MaxRunning)
			assert.Equal(t, len(wires)*20, st.CompletionTokens)
		})
	})
	t.Run("close", func(t *testing.T) {
		// Close aborts every protocol's stream: no client sees an end marker.
		synctest.Test(t, func(t *testing.T) {
			s := NewInMemoryServer(ServerConfig{OutputMin: 10000, OutputMax: 10000})
			answers := make([]chan *answer, len(wires))
			for i, w := range wires {
				answers[i] = make(chan *answer, 1)
				go func() { answers[i] <- post(context.Background(), t, s, w.path(true), w.body(true, 0)) }()
			}
			time.Sleep(time.Second)
			s.Close()
			for i, w := range wires {
				a := <-answers[i]
				assert.Error(t, a.readErr, w.name)
				w.stream(t, a)
				assert.False(t, a.complete, w.name)
				assert.Positive(t, a.tokens, w.name)
			}
		})
	})
}
