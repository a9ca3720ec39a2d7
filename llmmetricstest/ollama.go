package llmmetricstest

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// Ollama's /api/chat and /api/generate, as docs/api.md and
// docs/api/streaming.mdx of github.com/ollama/ollama document them and
// its api package (client.go, types.go) reads them: newline-delimited
// JSON, Content-Type application/x-ndjson, one object per token
// ({"model", "created_at", "message": {"role": "assistant", "content"}
// or "response", "done": false}), then a final object with "done": true,
// "done_reason" ("stop", or "length" at options.num_predict) and the
// counts and durations (prompt_eval_count, eval_count, total_duration,
// prompt_eval_duration, eval_duration, in nanoseconds). Ollama streams
// unless the request says "stream": false, which gets that final object
// alone, with the whole text, as application/json. Like Ollama (gin writes
// the headers with the first line), a stream's headers go out with its
// first token. Errors, in a stream too (docs/api/errors.mdx), are
// {"error": "…"}; the api client returns a line with a non-empty "error"
// as an error.
//
// The durations are measured on the server's clock (fake time in a
// testing/synctest bubble): total from the request's arrival,
// prompt_eval_duration from its admission into the batch to its first
// token (the scheduler's prefill time: waiting for the batch is not in it,
// as in Ollama's runner; see prefill.go), eval_duration from the first
// token to the end.

type ollamaRequest struct {
	Model    string          `json:"model"`
	Messages json.RawMessage `json:"messages"` // /api/chat
	Prompt   json.RawMessage `json:"prompt"`   // /api/generate
	System   json.RawMessage `json:"system"`   // /api/generate
	Stream   *bool           `json:"stream"`
	Tools    json.RawMessage `json:"tools"` // /api/chat (tools.go)
	Options  struct {
		NumPredict *int `json:"num_predict"`
	} `json:"options"`
}

// ollamaProtocol serves /api/chat (chat) and /api/generate.
type ollamaProtocol struct{ chat bool }

func (p ollamaProtocol) parse(_ *http.Request, body []byte) (call, encoder, error) {
	var req ollamaRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return call{}, nil, err
	}
	c := call{model: strings.TrimSuffix(req.Model, ":latest"), stream: req.Stream == nil || *req.Stream}
	if p.chat {
		c.setPrompt(req.Tools, req.Messages)
		c.tools = readTools(req.Tools) // Ollama has no tool choice
	} else {
		c.setPrompt(req.System, req.Prompt)
	}
	if n := req.Options.NumPredict; n != nil && *n > 0 { // -1 and -2 mean no cap
		c.maxOut = *n
	}
	return c, ollamaEncoder(p), nil
}

func (ollamaProtocol) writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, "application/json; charset=utf-8", map[string]string{"error": msg})
}

type ollamaLine struct {
	Model              string         `json:"model"`
	CreatedAt          string         `json:"created_at"`
	Message            *ollamaMessage `json:"message,omitempty"`  // /api/chat
	Response           *string        `json:"response,omitempty"` // /api/generate
	Done               bool           `json:"done"`
	DoneReason         string         `json:"done_reason,omitempty"`
	TotalDuration      int64          `json:"total_duration,omitempty"`
	PromptEvalCount    int            `json:"prompt_eval_count,omitempty"`
	PromptEvalDuration int64          `json:"prompt_eval_duration,omitempty"`
	EvalCount          int            `json:"eval_count,omitempty"`
	EvalDuration       int64          `json:"eval_duration,omitempty"`
}

type ollamaMessage struct {
	Role      string           `json:"role"`
	Content   string           `json:"content"`
	ToolCalls []ollamaToolCall `json:"tool_calls,omitempty"`
}

// ollamaToolCall is api.ToolCall: {"id", "function": {"index", "name",
// "arguments"}}.
type ollamaToolCall struct {
	ID       string `json:"id"`
	Function struct {
		Index     int             `json:"index"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// toolCalls returns the answer's call, its arguments from text.
func (ollamaEncoder) toolCalls(e *emitter, text string) []ollamaToolCall {
	c := ollamaToolCall{ID: callID("call_", e.id)}
	c.Function.Name, c.Function.Arguments = e.tool.name, e.tool.args(text)
	return []ollamaToolCall{c}
}

// ollamaEncoder writes an /api/chat or /api/generate answer.
type ollamaEncoder struct{ chat bool }

func (ollamaEncoder) streamHeader(h http.Header) bool {
	h.Set("Content-Type", "application/x-ndjson")
	return false
}

func (o ollamaEncoder) line(e *emitter, text string) ollamaLine {
	l := ollamaLine{Model: e.s.cfg.Model, CreatedAt: time.Now().UTC().Format(time.RFC3339Nano)}
	if o.chat {
		l.Message = &ollamaMessage{Role: "assistant", Content: text}
	} else {
		l.Response = &text
	}
	return l
}

// last returns the final object, with the counts and durations.
func (o ollamaEncoder) last(e *emitter, text string) ollamaLine {
	now := time.Now()
	l := o.line(e, text)
	l.Done, l.DoneReason = true, "stop"
	if e.stopped() {
		l.DoneReason = "length"
	}
	l.TotalDuration = int64(now.Sub(e.start))
	l.PromptEvalCount, l.EvalCount = e.j.prompt, e.sent
	if !e.firstAt.IsZero() {
		l.PromptEvalDuration = int64(e.j.phases.prefill())
		l.EvalDuration = int64(now.Sub(e.firstAt))
	}
	return l
}

func (ollamaEncoder) writeLine(e *emitter, v any) {
	e.write(append(marshal(v), '\n'))
}

func (ollamaEncoder) begin(*emitter) {}

func (o ollamaEncoder) token(e *emitter, text string, last bool) {
	if e.tool != nil {
		if !last {
			return // the call goes out whole, once parsed
		}
		l := o.line(e, "")
		l.Message.ToolCalls = o.toolCalls(e, e.text())
		o.writeLine(e, l)
		return
	}
	o.writeLine(e, o.line(e, text))
}

func (o ollamaEncoder) end(e *emitter) {
	o.writeLine(e, o.last(e, ""))
}

func (o ollamaEncoder) fail(e *emitter, msg string) {
	o.writeLine(e, map[string]string{"error": msg})
}

func (o ollamaEncoder) whole(e *emitter, text string) {
	if e.tool != nil {
		l := o.last(e, "")
		l.Message.ToolCalls = o.toolCalls(e, text)
		e.answer("application/json; charset=utf-8", l)
		return
	}
	e.answer("application/json; charset=utf-8", o.last(e, text))
}
