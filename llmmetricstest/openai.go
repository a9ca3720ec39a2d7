package llmmetricstest

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// OpenAI's Chat Completions and Completions APIs, as OpenAI and vLLM
// stream them: https://platform.openai.com/docs/api-reference/chat-streaming
// (the role chunk, content deltas, a finish chunk, the usage chunk with
// empty choices only under stream_options.include_usage, then
// data: [DONE]; vLLM's continuous_usage_stats puts usage in every chunk).
// Errors are {"error": {"message", "type", "param", "code"}}, vLLM's
// shape; go-openai (stream_reader.go) and openai-go (ssestream.go) both
// detect an in-stream error by its top-level "error" key.

// openAIRequest holds the fields of a chat or text completion request that
// the fake server reads.
type openAIRequest struct {
	Model         string          `json:"model"`
	Messages      json.RawMessage `json:"messages"`
	Prompt        json.RawMessage `json:"prompt"`
	Stream        bool            `json:"stream"`
	StreamOptions *struct {
		IncludeUsage         bool `json:"include_usage"`
		ContinuousUsageStats bool `json:"continuous_usage_stats"`
	} `json:"stream_options"`
	MaxTokens           *int `json:"max_tokens"`
	MaxCompletionTokens *int `json:"max_completion_tokens"`
	// IgnoreEOS is vLLM's and llama.cpp's extension: generate max_tokens
	// tokens, whatever the model would have ended on.
	IgnoreEOS bool `json:"ignore_eos"`
	// Tools and ToolChoice (chat; tools.go).
	Tools      json.RawMessage `json:"tools"`
	ToolChoice json.RawMessage `json:"tool_choice"`
}

// openAIProtocol serves /v1/chat/completions (chat) and /v1/completions.
type openAIProtocol struct{ chat bool }

func (p openAIProtocol) parse(_ *http.Request, body []byte) (call, encoder, error) {
	var req openAIRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return call{}, nil, err
	}
	c := call{model: req.Model, stream: req.Stream}
	if p.chat {
		c.setPrompt(req.Tools, req.Messages)
		c.tools, c.choice = readTools(req.Tools), openAIToolChoice(req.ToolChoice)
	} else {
		c.setPrompt(req.Prompt)
	}
	if req.MaxCompletionTokens != nil && *req.MaxCompletionTokens > 0 {
		c.maxOut = *req.MaxCompletionTokens
	} else if req.MaxTokens != nil && *req.MaxTokens > 0 {
		c.maxOut = *req.MaxTokens
	}
	c.exact = req.IgnoreEOS && c.maxOut > 0
	enc := &openAIEncoder{chat: p.chat}
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		enc.includeUsage = true
		enc.continuous = req.StreamOptions.ContinuousUsageStats
	}
	return c, enc, nil
}

func (openAIProtocol) writeError(w http.ResponseWriter, status int, msg string) {
	writeOpenAIError(w, status, msg)
}

// writeOpenAIError writes an OpenAI-style error response.
func writeOpenAIError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, "application/json", openAIError(status, msg))
}

func openAIError(status int, msg string) any {
	typ := "server_error"
	switch status {
	case http.StatusBadRequest, http.StatusNotFound:
		typ = "invalid_request_error"
	case http.StatusTooManyRequests:
		typ = "rate_limit_exceeded"
	}
	return obj{{"error", obj{{"message", msg}, {"type", typ}, {"param", nil}, {"code", status}}}}
}

type usage struct {
	PromptTokens        int            `json:"prompt_tokens"`
	CompletionTokens    int            `json:"completion_tokens"`
	TotalTokens         int            `json:"total_tokens"`
	PromptTokensDetails *promptDetails `json:"prompt_tokens_details,omitempty"`
}

// promptDetails is usage.prompt_tokens_details (OpenAI; vLLM sends it
// with cached_tokens when prefix caching is on). Sent only when the fake
// server's prefix cache is on.
type promptDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

func newUsage(e *emitter) *usage {
	u := &usage{PromptTokens: e.j.prompt, CompletionTokens: e.sent, TotalTokens: e.j.prompt + e.sent}
	if e.s.cfg.prefixCache() {
		u.PromptTokensDetails = &promptDetails{CachedTokens: e.j.cached}
	}
	return u
}

type delta struct {
	Role      string         `json:"role,omitempty"`
	Content   *string        `json:"content,omitempty"`
	ToolCalls []chatToolCall `json:"tool_calls,omitempty"`
}

// chatToolCall is a call in a chat message, or a fragment of one in a
// delta (Index set, the other fields on its first fragment only).
type chatToolCall struct {
	Index    *int         `json:"index,omitempty"`
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function chatFunction `json:"function"`
}

type chatFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type choice struct {
	Index        int             `json:"index"`
	Delta        *delta          `json:"delta,omitempty"`   // chat chunks
	Message      *message        `json:"message,omitempty"` // chat responses
	Text         *string         `json:"text,omitempty"`    // completions
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
}

type message struct {
	Role      string         `json:"role"`
	Content   *string        `json:"content"`
	ToolCalls []chatToolCall `json:"tool_calls,omitempty"`
}

// chunk is a streamed event or a whole response. Usage is any so that it
// can be omitted (nil), null (jsonNull) or an object.
type chunk struct {
	ID                string   `json:"id"`
	Object            string   `json:"object"`
	Created           int64    `json:"created"`
	Model             string   `json:"model"`
	SystemFingerprint string   `json:"system_fingerprint,omitempty"`
	Choices           []choice `json:"choices"`
	Usage             any      `json:"usage,omitempty"`
}

var jsonNull = json.RawMessage("null")

// openAIEncoder writes a chat or text completion.
type openAIEncoder struct {
	chat         bool
	includeUsage bool
	continuous   bool
}

func (o *openAIEncoder) streamHeader(h http.Header) bool {
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	return true
}

func (o *openAIEncoder) base(e *emitter) chunk {
	c := chunk{Created: e.created.Unix(), Model: e.s.cfg.Model}
	if o.chat {
		c.ID, c.Object = "chatcmpl-"+strconv.Itoa(e.id), "chat.completion.chunk"
		c.SystemFingerprint = "fp_llmmetricstest"
	} else {
		c.ID, c.Object = "cmpl-"+strconv.Itoa(e.id), "text_completion"
	}
	if o.continuous {
		c.Usage = newUsage(e)
	} else if o.includeUsage {
		c.Usage = jsonNull
	}
	return c
}

func (o *openAIEncoder) tokenChunk(e *emitter, text string, role bool, finish *string) chunk {
	c := o.base(e)
	ch := choice{Logprobs: jsonNull, FinishReason: finish}
	if o.chat {
		ch.Delta = &delta{}
		if role {
			ch.Delta.Role = "assistant"
		}
		if (role && e.tool == nil) || (finish == nil && !role) {
			ch.Delta.Content = &text
		}
	} else {
		ch.Text = &text
	}
	c.Choices = []choice{ch}
	return c
}

func (o *openAIEncoder) finishReason(e *emitter) *string {
	fr := "stop"
	switch {
	case e.stopped():
		fr = "length"
	case e.tool != nil:
		fr = "tool_calls"
	}
	return &fr
}

// begin writes the chat role chunk ({"role":"assistant","content":""}, as
// OpenAI sends it; {"role":"assistant"} before a tool call), with the
// first token like vLLM.
func (o *openAIEncoder) begin(e *emitter) {
	if o.chat {
		e.sse("", o.tokenChunk(e, "", true, nil))
	}
}

func (o *openAIEncoder) token(e *emitter, text string, last bool) {
	if o.chat && e.tool != nil {
		i := e.sent - 1
		c := o.tokenChunk(e, "", false, nil)
		d := &c.Choices[0].Delta
		*d = &delta{ToolCalls: []chatToolCall{{Index: new(int), Function: chatFunction{Arguments: e.tool.fragment(i, text, last && !e.stopped())}}}}
		if i == 0 {
			tc := &(*d).ToolCalls[0]
			tc.ID, tc.Type, tc.Function.Name = callID("call_", e.id), "function", e.tool.name
		}
		e.sse("", c)
		return
	}
	e.sse("", o.tokenChunk(e, text, false, nil))
}

func (o *openAIEncoder) end(e *emitter) {
	e.sse("", o.tokenChunk(e, "", false, o.finishReason(e)))
	if o.includeUsage {
		u := o.base(e)
		u.Choices = []choice{}
		u.Usage = newUsage(e)
		e.sse("", u)
	}
	e.write([]byte("data: [DONE]\n\n"))
}

func (o *openAIEncoder) fail(e *emitter, msg string) {
	e.sse("", openAIError(http.StatusInternalServerError, msg))
	e.write([]byte("data: [DONE]\n\n"))
}

func (o *openAIEncoder) whole(e *emitter, text string) {
	c := o.base(e)
	c.Usage = newUsage(e)
	ch := choice{Logprobs: jsonNull, FinishReason: o.finishReason(e)}
	if o.chat {
		c.Object = "chat.completion"
		ch.Message = &message{Role: "assistant", Content: &text}
		if e.tool != nil {
			ch.Message.Content = nil
			ch.Message.ToolCalls = []chatToolCall{{ID: callID("call_", e.id), Type: "function",
				Function: chatFunction{Name: e.tool.name, Arguments: e.tool.argsText(e, !e.stopped())}}}
		}
	} else {
		ch.Text = &text
	}
	c.Choices = []choice{ch}
	e.answer("application/json", c)
}

// The Responses API (/v1/responses), streamed as
// https://platform.openai.com/docs/api-reference/responses-streaming
// documents it (and as testdata/sse/openai_responses.sse records it):
// response.created, response.in_progress, response.output_item.added,
// response.content_part.added, response.output_text.delta per token, then
// response.output_text.done, response.content_part.done,
// response.output_item.done and response.completed, whose response
// carries usage {input_tokens, output_tokens, total_tokens}; at
// max_output_tokens the status is "incomplete" and the last event
// response.incomplete. There is no data: [DONE]. An injected error event
// is response.failed (status "failed", error {code, message}).

type responsesRequest struct {
	Model           string          `json:"model"`
	Input           json.RawMessage `json:"input"`
	Instructions    json.RawMessage `json:"instructions"`
	Stream          bool            `json:"stream"`
	MaxOutputTokens *int            `json:"max_output_tokens"`
	Tools           json.RawMessage `json:"tools"`
	ToolChoice      json.RawMessage `json:"tool_choice"`
}

// responsesProtocol serves /v1/responses.
type responsesProtocol struct{}

func (responsesProtocol) parse(_ *http.Request, body []byte) (call, encoder, error) {
	var req responsesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return call{}, nil, err
	}
	c := call{model: req.Model, stream: req.Stream}
	c.setPrompt(req.Tools, req.Instructions, req.Input)
	c.tools, c.choice = readTools(req.Tools), openAIToolChoice(req.ToolChoice)
	if req.MaxOutputTokens != nil && *req.MaxOutputTokens > 0 {
		c.maxOut = *req.MaxOutputTokens
	}
	return c, &responsesEncoder{maxOut: req.MaxOutputTokens}, nil
}

func (responsesProtocol) writeError(w http.ResponseWriter, status int, msg string) {
	writeOpenAIError(w, status, msg)
}

// response is a Responses API response object.
type response struct {
	ID                string          `json:"id"`
	Object            string          `json:"object"`
	CreatedAt         int64           `json:"created_at"`
	Status            string          `json:"status"`
	Error             *responseError  `json:"error"`
	IncompleteDetails *incomplete     `json:"incomplete_details"`
	Instructions      json.RawMessage `json:"instructions"`
	MaxOutputTokens   *int            `json:"max_output_tokens"`
	Model             string          `json:"model"`
	Output            []any           `json:"output"`
	ParallelToolCalls bool            `json:"parallel_tool_calls"`
	ToolChoice        string          `json:"tool_choice"`
	Tools             []any           `json:"tools"`
	Usage             *responseUsage  `json:"usage"`
}

type responseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type incomplete struct {
	Reason string `json:"reason"`
}

type outputItem struct {
	ID      string       `json:"id"`
	Type    string       `json:"type"`
	Status  string       `json:"status"`
	Role    string       `json:"role"`
	Content []outputText `json:"content"`
}

type outputText struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations []any  `json:"annotations"`
}

type responseUsage struct {
	InputTokens         int            `json:"input_tokens"`
	InputTokensDetails  map[string]int `json:"input_tokens_details"`
	OutputTokens        int            `json:"output_tokens"`
	OutputTokensDetails map[string]int `json:"output_tokens_details"`
	TotalTokens         int            `json:"total_tokens"`
}

// responsesEncoder writes a Responses API answer.
type responsesEncoder struct {
	maxOut *int
	seq    int // next sequence_number
}

func (r *responsesEncoder) streamHeader(h http.Header) bool {
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	return true
}

func (r *responsesEncoder) itemID(e *emitter) string {
	if e.tool != nil {
		return "fc_" + strconv.Itoa(e.id)
	}
	return "msg_" + strconv.Itoa(e.id)
}

// response returns the response object; status "in_progress" has no
// output and no usage yet.
func (r *responsesEncoder) response(e *emitter, status string) *response {
	resp := &response{
		ID: "resp_" + strconv.Itoa(e.id), Object: "response", CreatedAt: e.created.Unix(), Status: status,
		Instructions: jsonNull, MaxOutputTokens: r.maxOut, Model: e.s.cfg.Model, Output: []any{},
		ParallelToolCalls: true, ToolChoice: "auto", Tools: []any{},
	}
	if status == "in_progress" {
		return resp
	}
	if status != "failed" {
		resp.Output = []any{r.item(e, status)}
	}
	if status == "incomplete" {
		resp.IncompleteDetails = &incomplete{Reason: "max_output_tokens"}
	}
	resp.Usage = &responseUsage{
		InputTokens: e.j.prompt, InputTokensDetails: map[string]int{"cached_tokens": e.j.cached},
		OutputTokens: e.sent, OutputTokensDetails: map[string]int{"reasoning_tokens": 0},
		TotalTokens: e.j.prompt + e.sent,
	}
	return resp
}

func (r *responsesEncoder) item(e *emitter, status string) any {
	if e.tool != nil {
		args := ""
		if status != "in_progress" {
			args = e.tool.argsText(e, status == "completed")
		}
		return obj{{"id", r.itemID(e)}, {"type", "function_call"}, {"status", status}, {"arguments", args},
			{"call_id", callID("call_", e.id)}, {"name", e.tool.name}}
	}
	it := outputItem{ID: r.itemID(e), Type: "message", Status: status, Role: "assistant", Content: []outputText{}}
	if status != "in_progress" {
		it.Content = []outputText{r.part(e.text())}
	}
	return it
}

func (r *responsesEncoder) part(text string) outputText {
	return outputText{Type: "output_text", Text: text, Annotations: []any{}}
}

func (r *responsesEncoder) status(e *emitter) string {
	if e.stopped() {
		return "incomplete"
	}
	return "completed"
}

// event writes one event: its type is both the SSE event name and the
// data's "type", and every event has the next sequence_number.
func (r *responsesEncoder) event(e *emitter, typ string, fields obj) {
	o := append(obj{{"type", typ}, {"sequence_number", r.seq}}, fields...)
	r.seq++
	e.sse(typ, o)
}

func (r *responsesEncoder) begin(e *emitter) {
	r.event(e, "response.created", obj{{"response", r.response(e, "in_progress")}})
	r.event(e, "response.in_progress", obj{{"response", r.response(e, "in_progress")}})
	r.event(e, "response.output_item.added", obj{{"output_index", 0}, {"item", r.item(e, "in_progress")}})
	if e.tool == nil {
		r.event(e, "response.content_part.added", obj{{"item_id", r.itemID(e)}, {"output_index", 0}, {"content_index", 0}, {"part", r.part("")}})
	}
}

func (r *responsesEncoder) token(e *emitter, text string, last bool) {
	if e.tool != nil {
		r.event(e, "response.function_call_arguments.delta", obj{{"item_id", r.itemID(e)}, {"output_index", 0},
			{"delta", e.tool.fragment(e.sent-1, text, last && !e.stopped())}})
		return
	}
	r.event(e, "response.output_text.delta", obj{{"item_id", r.itemID(e)}, {"output_index", 0}, {"content_index", 0}, {"delta", text}, {"logprobs", []any{}}})
}

func (r *responsesEncoder) end(e *emitter) {
	text, status := e.text(), r.status(e)
	if e.tool != nil {
		r.event(e, "response.function_call_arguments.done", obj{{"item_id", r.itemID(e)}, {"output_index", 0},
			{"arguments", e.tool.argsText(e, status == "completed")}})
		r.event(e, "response.output_item.done", obj{{"output_index", 0}, {"item", r.item(e, status)}})
		r.event(e, "response."+status, obj{{"response", r.response(e, status)}})
		return
	}
	r.event(e, "response.output_text.done", obj{{"item_id", r.itemID(e)}, {"output_index", 0}, {"content_index", 0}, {"text", text}, {"logprobs", []any{}}})
	r.event(e, "response.content_part.done", obj{{"item_id", r.itemID(e)}, {"output_index", 0}, {"content_index", 0}, {"part", r.part(text)}})
	r.event(e, "response.output_item.done", obj{{"output_index", 0}, {"item", r.item(e, status)}})
	r.event(e, "response."+status, obj{{"response", r.response(e, status)}})
}

func (r *responsesEncoder) fail(e *emitter, msg string) {
	resp := r.response(e, "failed")
	resp.Error = &responseError{Code: "server_error", Message: msg}
	r.event(e, "response.failed", obj{{"response", resp}})
}

func (r *responsesEncoder) whole(e *emitter, _ string) {
	e.answer("application/json", r.response(e, r.status(e)))
}
