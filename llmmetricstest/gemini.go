package llmmetricstest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// Gemini's generateContent API, as google.golang.org/genai calls it: the
// client joins its base URL, the API version and
// "models/{model}:streamGenerateContent?alt=sse" or
// "models/{model}:generateContent" (go-genai api_client.go createAPIURL,
// models.go), so a client with HTTPOptions.BaseURL = Server.URL reaches
// /v1beta/models/{model}:… ; /v1/models/… is served too.
//
// A streamed answer (https://ai.google.dev/api/generate-content) is one
// GenerateContentResponse per token:
//
//	{"candidates": [{"content": {"parts": [{"text": …}], "role": "model"},
//	  "index": 0}], "usageMetadata": {"promptTokenCount", "candidatesTokenCount",
//	  "totalTokenCount", "promptTokensDetails"}, "modelVersion", "responseId"}
//
// with candidatesTokenCount cumulative in every chunk, and finishReason
// ("STOP", or "MAX_TOKENS" at generationConfig.maxOutputTokens) on the
// last token's chunk. With ?alt=sse each is an SSE event "data: {…}";
// without it the stream is one JSON array ("[{…}", ",\r\n{…}", …, "]"),
// Content-Type application/json. go-genai splits the SSE body at blank
// lines and reads "data:" chunks; a chunk without "data:" must be an error
// object (api_client.go iterateResponseStream, and its test "Error Response
// with status ok but error stream chunk"; python-genai's
// _iter_response_stream likewise), so an injected error event is
// {"error": {"code": 500, "message": …, "status": "INTERNAL"}} on its own,
// not behind "data:". HTTP errors have the same body.

type geminiRequest struct {
	Contents          json.RawMessage `json:"contents"`
	SystemInstruction json.RawMessage `json:"systemInstruction"`
	SystemSnake       json.RawMessage `json:"system_instruction"`
	GenerationConfig  *geminiConfig   `json:"generationConfig"`
	ConfigSnake       *geminiConfig   `json:"generation_config"`
	// Tools and ToolConfig (tools.go).
	Tools      json.RawMessage `json:"tools"`
	ToolConfig json.RawMessage `json:"toolConfig"`
}

type geminiConfig struct {
	MaxOutputTokens *int `json:"maxOutputTokens"`
	MaxSnake        *int `json:"max_output_tokens"`
}

func (c *geminiConfig) maxOut() int {
	switch {
	case c == nil:
		return 0
	case c.MaxOutputTokens != nil:
		return max(*c.MaxOutputTokens, 0)
	case c.MaxSnake != nil:
		return max(*c.MaxSnake, 0)
	}
	return 0
}

// geminiProtocol serves /v1beta/models/{call} and /v1/models/{call}, where
// call is "{model}:generateContent" or "{model}:streamGenerateContent".
type geminiProtocol struct{}

func (geminiProtocol) parse(r *http.Request, body []byte) (call, encoder, error) {
	model, method, _ := strings.Cut(r.PathValue("call"), ":")
	c := call{model: model}
	enc := &geminiEncoder{}
	switch method {
	case "generateContent":
	case "streamGenerateContent":
		c.stream = true
		enc.sse = r.URL.Query().Get("alt") == "sse"
	default:
		return call{}, nil, &requestError{http.StatusNotFound,
			"llmmetricstest: unknown method " + strconv.Quote(method) + " (this server serves generateContent and streamGenerateContent)"}
	}
	var req geminiRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return call{}, nil, err
	}
	c.setPrompt(req.Tools, req.SystemInstruction, req.SystemSnake, req.Contents)
	c.tools, c.choice = readTools(req.Tools), geminiToolChoice(req.ToolConfig)
	c.maxOut = req.GenerationConfig.maxOut()
	if c.maxOut == 0 {
		c.maxOut = req.ConfigSnake.maxOut()
	}
	return c, enc, nil
}

func (geminiProtocol) writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, "application/json; charset=UTF-8", geminiError(status, msg))
}

// geminiError is Google's error object; the status names are
// google.rpc.Code's (https://ai.google.dev/gemini-api/docs/troubleshooting).
func geminiError(status int, msg string) any {
	name := "INTERNAL"
	switch status {
	case http.StatusBadRequest:
		name = "INVALID_ARGUMENT"
	case http.StatusNotFound:
		name = "NOT_FOUND"
	case http.StatusTooManyRequests:
		name = "RESOURCE_EXHAUSTED"
	case http.StatusServiceUnavailable:
		name = "UNAVAILABLE"
	}
	return obj{{"error", obj{{"code", status}, {"message", msg}, {"status", name}}}}
}

type geminiResponse struct {
	Candidates    []geminiCandidate `json:"candidates"`
	UsageMetadata geminiUsage       `json:"usageMetadata"`
	ModelVersion  string            `json:"modelVersion"`
	ResponseID    string            `json:"responseId"`
}

type geminiCandidate struct {
	Content      geminiContent `json:"content"`
	FinishReason string        `json:"finishReason,omitempty"`
	Index        int           `json:"index"`
}

type geminiContent struct {
	Parts []any  `json:"parts"`
	Role  string `json:"role"`
}

type geminiPart struct {
	Text string `json:"text"`
}

type geminiUsage struct {
	PromptTokenCount     int `json:"promptTokenCount"`
	CandidatesTokenCount int `json:"candidatesTokenCount"`
	TotalTokenCount      int `json:"totalTokenCount"`
	// CachedContentTokenCount is the part of PromptTokenCount read from
	// the cache (sent when the fake server's prefix cache served some).
	CachedContentTokenCount int                 `json:"cachedContentTokenCount,omitempty"`
	PromptTokensDetails     []geminiModalityCnt `json:"promptTokensDetails"`
}

type geminiModalityCnt struct {
	Modality   string `json:"modality"`
	TokenCount int    `json:"tokenCount"`
}

// geminiEncoder writes a generateContent answer.
type geminiEncoder struct {
	sse   bool // SSE (alt=sse), else a JSON array stream
	elems int  // array elements written
}

func (g *geminiEncoder) streamHeader(h http.Header) bool {
	if g.sse {
		h.Set("Content-Type", "text/event-stream")
	} else {
		h.Set("Content-Type", "application/json; charset=UTF-8")
	}
	h.Set("Cache-Control", "no-cache")
	return true
}

func (g *geminiEncoder) response(e *emitter, text string, finish bool) geminiResponse {
	c := geminiCandidate{Content: geminiContent{Parts: []any{geminiPart{Text: text}}, Role: "model"}}
	if e.tool != nil {
		c.Content.Parts = []any{obj{{"functionCall", obj{{"name", e.tool.name}, {"args", e.tool.args(text)}}}}}
	}
	if finish {
		c.FinishReason = "STOP"
		if e.stopped() {
			c.FinishReason = "MAX_TOKENS"
		}
	}
	p := e.j.prompt
	return geminiResponse{
		Candidates: []geminiCandidate{c},
		UsageMetadata: geminiUsage{
			PromptTokenCount: p, CandidatesTokenCount: e.sent, TotalTokenCount: p + e.sent,
			CachedContentTokenCount: e.j.cached,
			PromptTokensDetails:     []geminiModalityCnt{{Modality: "TEXT", TokenCount: p}},
		},
		ModelVersion: e.s.cfg.Model,
		ResponseID:   "llmmetricstest-" + strconv.Itoa(e.id),
	}
}

// element writes one element of the JSON array stream.
func (g *geminiEncoder) element(e *emitter, v any) {
	sep := ",\r\n"
	if g.elems == 0 {
		sep = "["
	}
	g.elems++
	e.write(append([]byte(sep), marshal(v)...))
}

func (g *geminiEncoder) begin(*emitter) {}

func (g *geminiEncoder) token(e *emitter, text string, last bool) {
	if e.tool != nil {
		if !last {
			return // the call goes out whole, with its last token
		}
		text = e.text()
	}
	r := g.response(e, text, last)
	if g.sse {
		e.sse("", r)
	} else {
		g.element(e, r)
	}
}

func (g *geminiEncoder) end(e *emitter) {
	if !g.sse {
		e.write([]byte("]"))
	}
}

func (g *geminiEncoder) fail(e *emitter, msg string) {
	v := geminiError(http.StatusInternalServerError, msg)
	if g.sse {
		e.write(append(marshal(v), "\n\n"...))
		return
	}
	g.element(e, v)
	e.write([]byte("]"))
}

func (g *geminiEncoder) whole(e *emitter, text string) {
	e.answer("application/json; charset=UTF-8", g.response(e, text, true))
}
