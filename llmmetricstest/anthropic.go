package llmmetricstest

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// Anthropic's Messages API (/v1/messages), streamed as
// https://docs.anthropic.com/en/docs/build-with-claude/streaming documents
// it (and as testdata/sse/anthropic_*.sse record it): every event has an
// event: line naming its data's "type" (anthropic-sdk-go's
// packages/ssestream dispatches on that line):
//
//	message_start        message.usage {input_tokens, output_tokens: 1}
//	content_block_start  index 0, {"type": "text", "text": ""}
//	ping
//	content_block_delta  index 0, {"type": "text_delta", "text": …} per token
//	content_block_stop
//	message_delta        delta.stop_reason "end_turn" or "max_tokens",
//	                     usage.output_tokens: the cumulative output count
//	message_stop
//
// The first four come with the first token. An injected error event is
// event: error, data {"type": "error", "error": {"type": "api_error",
// "message": …}}, and ends the stream (no message_stop). HTTP errors have
// the same body, with the error type of the status
// (https://docs.anthropic.com/en/api/errors).

type anthropicRequest struct {
	Model     string          `json:"model"`
	System    json.RawMessage `json:"system"`
	Messages  json.RawMessage `json:"messages"`
	MaxTokens *int            `json:"max_tokens"`
	Stream    bool            `json:"stream"`
	// Tools and ToolChoice (tools.go).
	Tools      json.RawMessage `json:"tools"`
	ToolChoice json.RawMessage `json:"tool_choice"`
}

// anthropicProtocol serves /v1/messages.
type anthropicProtocol struct{}

func (anthropicProtocol) parse(_ *http.Request, body []byte) (call, encoder, error) {
	var req anthropicRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return call{}, nil, err
	}
	c := call{model: req.Model, stream: req.Stream}
	c.setPrompt(req.Tools, req.System, req.Messages)
	c.tools, c.choice = readTools(req.Tools), anthropicToolChoice(req.ToolChoice)
	if req.MaxTokens != nil && *req.MaxTokens > 0 {
		c.maxOut = *req.MaxTokens
	}
	return c, anthropicEncoder{}, nil
}

func (anthropicProtocol) writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, "application/json", anthropicError(status, msg))
}

func anthropicError(status int, msg string) any {
	typ := "api_error"
	switch status {
	case http.StatusBadRequest:
		typ = "invalid_request_error"
	case http.StatusNotFound:
		typ = "not_found_error"
	case http.StatusTooManyRequests:
		typ = "rate_limit_error"
	}
	return obj{{"type", "error"}, {"error", obj{{"type", typ}, {"message", msg}}}}
}

type anthropicMessage struct {
	ID           string         `json:"id"`
	Type         string         `json:"type"`
	Role         string         `json:"role"`
	Model        string         `json:"model"`
	Content      []any          `json:"content"`
	StopReason   *string        `json:"stop_reason"`
	StopSequence *string        `json:"stop_sequence"`
	Usage        anthropicUsage `json:"usage"`
}

type anthropicBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// anthropicToolUse is a tool_use content block.
type anthropicToolUse struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// anthropicUsage is a message's usage. Anthropic's input_tokens excludes
// the tokens read from the cache (cache_read_input_tokens), sent only when
// the fake server's prefix cache is on.
type anthropicUsage struct {
	InputTokens          int  `json:"input_tokens"`
	CacheReadInputTokens *int `json:"cache_read_input_tokens,omitempty"`
	OutputTokens         int  `json:"output_tokens"`
}

// anthropicEncoder writes a Messages API answer.
type anthropicEncoder struct{}

func (anthropicEncoder) streamHeader(h http.Header) bool {
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	return true
}

func (anthropicEncoder) message(e *emitter) anthropicMessage {
	u := anthropicUsage{InputTokens: e.j.prompt, OutputTokens: e.sent}
	if e.s.cfg.prefixCache() {
		cached := e.j.cached
		u.InputTokens -= cached
		u.CacheReadInputTokens = &cached
	}
	return anthropicMessage{
		ID: "msg_" + strconv.Itoa(e.id), Type: "message", Role: "assistant", Model: e.s.cfg.Model,
		Content: []any{}, Usage: u,
	}
}

func (anthropicEncoder) stopReason(e *emitter) *string {
	r := "end_turn"
	switch {
	case e.stopped():
		r = "max_tokens"
	case e.tool != nil:
		r = "tool_use"
	}
	return &r
}

// toolUse returns the answer's tool_use block with input (Anthropic
// starts the block with an empty input, {}).
func (anthropicEncoder) toolUse(e *emitter, input json.RawMessage) anthropicToolUse {
	return anthropicToolUse{Type: "tool_use", ID: callID("toolu_", e.id), Name: e.tool.name, Input: input}
}

func (a anthropicEncoder) begin(e *emitter) {
	m := a.message(e)
	m.Usage.OutputTokens = 1 // a placeholder, as Anthropic sends it
	e.sse("message_start", obj{{"type", "message_start"}, {"message", m}})
	var block any = anthropicBlock{Type: "text"}
	if e.tool != nil {
		block = a.toolUse(e, json.RawMessage("{}"))
	}
	e.sse("content_block_start", obj{{"type", "content_block_start"}, {"index", 0}, {"content_block", block}})
	e.sse("ping", obj{{"type", "ping"}})
}

func (anthropicEncoder) token(e *emitter, text string, last bool) {
	if e.tool != nil {
		e.sse("content_block_delta", obj{{"type", "content_block_delta"}, {"index", 0},
			{"delta", obj{{"type", "input_json_delta"}, {"partial_json", e.tool.fragment(e.sent-1, text, last && !e.stopped())}}}})
		return
	}
	e.sse("content_block_delta", obj{{"type", "content_block_delta"}, {"index", 0}, {"delta", obj{{"type", "text_delta"}, {"text", text}}}})
}

func (a anthropicEncoder) end(e *emitter) {
	e.sse("content_block_stop", obj{{"type", "content_block_stop"}, {"index", 0}})
	e.sse("message_delta", obj{{"type", "message_delta"}, {"delta", obj{{"stop_reason", a.stopReason(e)}, {"stop_sequence", nil}}}, {"usage", obj{{"output_tokens", e.sent}}}})
	e.sse("message_stop", obj{{"type", "message_stop"}})
}

func (anthropicEncoder) fail(e *emitter, msg string) {
	e.sse("error", anthropicError(http.StatusInternalServerError, msg))
}

func (a anthropicEncoder) whole(e *emitter, text string) {
	m := a.message(e)
	m.Content = []any{anthropicBlock{Type: "text", Text: text}}
	if e.tool != nil {
		m.Content = []any{a.toolUse(e, e.tool.args(text))}
	}
	m.StopReason = a.stopReason(e)
	e.answer("application/json", m)
}
