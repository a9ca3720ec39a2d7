package workload

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
)

// APIs are the values of -api: every API llmmetrics decodes.
var APIs = []string{"chat", "completions", "responses", "anthropic", "gemini", "ollama"}

// HasIgnoreEOS reports whether the API has an ignore-EOS knob (vLLM's and
// llama.cpp's OpenAI-compatible chat and completions take "ignore_eos").
func HasIgnoreEOS(api string) bool { return api == "chat" || api == "completions" }

// Path returns the request path of api for model, appended to the base URL
// (which carries the version: http://host/v1 for the OpenAI APIs and
// Anthropic, http://host/v1beta for Gemini, http://host for Ollama).
func Path(api, model string) string {
	switch api {
	case "completions":
		return "/completions"
	case "responses":
		return "/responses"
	case "anthropic":
		return "/messages"
	case "gemini":
		return "/models/" + url.PathEscape(model) + ":streamGenerateContent?alt=sse"
	case "ollama":
		return "/api/chat"
	}
	return "/chat/completions"
}

type roleContent struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// The tools of each API (tools.go): OpenAI chat and Ollama {"type":
// "function", "function": {…}}, the Responses API {"type": "function",
// "name", …, "strict": false}, Anthropic {"name", "description",
// "input_schema"}, Gemini {"functionDeclarations": […]}.
type toolFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

type chatTool struct {
	Type     string       `json:"type"`
	Function toolFunction `json:"function"`
}

type responsesTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      bool            `json:"strict"`
}

type anthropicTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type geminiTool struct {
	FunctionDeclarations []toolFunction `json:"functionDeclarations"`
}

func chatTools(ts []Tool) []chatTool {
	out := make([]chatTool, len(ts))
	for i, t := range ts {
		out[i] = chatTool{"function", toolFunction(t)}
	}
	return out
}

// chatMessage is an OpenAI chat message: content null for an assistant's
// call without text; role "tool" with tool_call_id for a result.
type chatMessage struct {
	Role       string     `json:"role"`
	Content    *string    `json:"content"`
	ToolCalls  []chatCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

type chatCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// openAIBody is a chat or completions request (vLLM's ignore_eos included).
type openAIBody struct {
	Model         string        `json:"model"`
	Messages      []chatMessage `json:"messages,omitempty"`
	Prompt        *string       `json:"prompt,omitempty"`
	Stream        bool          `json:"stream"`
	StreamOptions streamOptions `json:"stream_options"`
	MaxTokens     int           `json:"max_tokens,omitempty"`
	IgnoreEOS     bool          `json:"ignore_eos,omitempty"`
	Tools         []chatTool    `json:"tools,omitempty"`
	ToolChoice    string        `json:"tool_choice,omitempty"`
}

type responsesBody struct {
	Model           string          `json:"model"`
	Instructions    string          `json:"instructions,omitempty"`
	Input           []any           `json:"input"`
	Stream          bool            `json:"stream"`
	MaxOutputTokens int             `json:"max_output_tokens,omitempty"`
	Tools           []responsesTool `json:"tools,omitempty"`
	ToolChoice      string          `json:"tool_choice,omitempty"`
}

// Responses API input items of a call and its result.
type responsesCall struct {
	Type      string `json:"type"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type responsesOutput struct {
	Type   string `json:"type"`
	CallID string `json:"call_id"`
	Output string `json:"output"`
}

type anthropicBody struct {
	Model      string             `json:"model"`
	System     string             `json:"system,omitempty"`
	Messages   []anthropicMessage `json:"messages"`
	MaxTokens  int                `json:"max_tokens"`
	Stream     bool               `json:"stream"`
	Tools      []anthropicTool    `json:"tools,omitempty"`
	ToolChoice *struct {
		Type string `json:"type"`
	} `json:"tool_choice,omitempty"`
}

// anthropicMessage's content is a string, or content blocks (text,
// tool_use, tool_result).
type anthropicMessage struct {
	Role    string `json:"role"`
	Content any    `json:"content"`
}

type anthropicText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type anthropicToolUse struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

type anthropicToolResult struct {
	Type      string `json:"type"`
	ToolUseID string `json:"tool_use_id"`
	Content   string `json:"content"`
}

type geminiPart struct {
	Text             *string         `json:"text,omitempty"`
	FunctionCall     *geminiCall     `json:"functionCall,omitempty"`
	FunctionResponse *geminiResponse `json:"functionResponse,omitempty"`
	ThoughtSignature string          `json:"thoughtSignature,omitempty"`
}

type geminiCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

type geminiResponse struct {
	ID       string `json:"id,omitempty"`
	Name     string `json:"name"`
	Response struct {
		Result string `json:"result"`
	} `json:"response"`
}

type geminiContent struct {
	Role  string       `json:"role,omitempty"`
	Parts []geminiPart `json:"parts"`
}

type geminiBody struct {
	Contents          []geminiContent `json:"contents"`
	SystemInstruction *geminiContent  `json:"systemInstruction,omitempty"`
	GenerationConfig  *struct {
		MaxOutputTokens int `json:"maxOutputTokens"`
	} `json:"generationConfig,omitempty"`
	Tools      []geminiTool `json:"tools,omitempty"`
	ToolConfig *struct {
		FunctionCallingConfig struct {
			Mode string `json:"mode"`
		} `json:"functionCallingConfig"`
	} `json:"toolConfig,omitempty"`
}

// ollamaMessage is api.Message of Ollama: tool_calls on an assistant's,
// tool_name and tool_call_id on a tool result's.
type ollamaMessage struct {
	Role       string       `json:"role"`
	Content    string       `json:"content"`
	ToolCalls  []ollamaCall `json:"tool_calls,omitempty"`
	ToolName   string       `json:"tool_name,omitempty"`
	ToolCallID string       `json:"tool_call_id,omitempty"`
}

type ollamaCall struct {
	ID       string `json:"id,omitempty"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

type ollamaBody struct {
	Model    string          `json:"model"`
	Messages []ollamaMessage `json:"messages"`
	Stream   bool            `json:"stream"`
	Options  *struct {
		NumPredict int `json:"num_predict"`
	} `json:"options,omitempty"`
	Tools []chatTool `json:"tools,omitempty"`
}

// Body returns the streaming request body of r in api's format for model,
// asking for r.OutputTokens (when set) and, with ignoreEOS, for exactly
// that many (see HasIgnoreEOS). r's tools and tool choice are sent in the
// API's words: OpenAI "tools" and "tool_choice" ("required", "none"),
// Anthropic {"type": "any"} or {"type": "none"}, Gemini
// toolConfig.functionCallingConfig.mode ANY or NONE; Ollama has no tool
// choice, so its request asking for no call (ChoiceNone) offers no tools.
func Body(api, model string, r Request, ignoreEOS bool) []byte {
	var v any
	switch api {
	case "chat", "completions":
		o := openAIBody{Model: model, Stream: true, StreamOptions: streamOptions{true}, MaxTokens: r.OutputTokens, IgnoreEOS: ignoreEOS}
		if api == "chat" {
			o.Messages = chatMessages(r)
			if len(r.Tools) > 0 {
				o.Tools, o.ToolChoice = chatTools(r.Tools), r.ToolChoice
			}
		} else {
			p := Flatten(r)
			o.Prompt = &p
		}
		v = o
	case "responses":
		v = responsesRequest(model, r)
	case "anthropic":
		v = anthropicRequest(model, r)
	case "gemini":
		v = geminiRequest(r)
	case "ollama":
		v = ollamaRequest(model, r)
	default:
		panic(fmt.Sprintf("workload: unknown API %q", api))
	}
	b, _ := json.Marshal(v) // strings, numbers and valid JSON only: cannot fail
	return b
}

func chatMessages(r Request) []chatMessage {
	m := make([]chatMessage, 0, len(r.Messages)+1)
	if r.System != "" {
		m = append(m, chatMessage{Role: "system", Content: &r.System})
	}
	for _, x := range r.Messages {
		c := chatMessage{Role: x.Role, Content: &x.Content, ToolCallID: x.ToolCallID}
		if len(x.ToolCalls) > 0 {
			if x.Content == "" {
				c.Content = nil
			}
			for _, tc := range x.ToolCalls {
				var cc chatCall
				cc.ID, cc.Type = tc.ID, "function"
				cc.Function.Name, cc.Function.Arguments = tc.Name, tc.argsString()
				c.ToolCalls = append(c.ToolCalls, cc)
			}
		}
		m = append(m, c)
	}
	return m
}

func responsesRequest(model string, r Request) responsesBody {
	b := responsesBody{Model: model, Instructions: r.System, Input: make([]any, 0, len(r.Messages)), Stream: true, MaxOutputTokens: r.OutputTokens}
	for _, m := range r.Messages {
		switch {
		case m.Role == "tool":
			b.Input = append(b.Input, responsesOutput{"function_call_output", m.ToolCallID, m.Content})
		case len(m.ToolCalls) > 0:
			if m.Content != "" {
				b.Input = append(b.Input, roleContent{m.Role, m.Content})
			}
			for _, c := range m.ToolCalls {
				b.Input = append(b.Input, responsesCall{"function_call", c.ID, c.Name, c.argsString()})
			}
		default:
			b.Input = append(b.Input, roleContent{m.Role, m.Content})
		}
	}
	for _, t := range r.Tools {
		b.Tools = append(b.Tools, responsesTool{Type: "function", Name: t.Name, Description: t.Description, Parameters: t.Parameters})
	}
	if len(r.Tools) > 0 {
		b.ToolChoice = r.ToolChoice
	}
	return b
}

func anthropicRequest(model string, r Request) anthropicBody {
	max := r.OutputTokens
	if max == 0 {
		max = 4096 // Anthropic requires max_tokens
	}
	b := anthropicBody{Model: model, System: r.System, Messages: make([]anthropicMessage, 0, len(r.Messages)), MaxTokens: max, Stream: true}
	for i, m := range r.Messages {
		switch {
		case m.Role == "tool":
			// A tool's result is a tool_result block of a user message;
			// the results of one turn's calls share the message.
			res := anthropicToolResult{"tool_result", m.ToolCallID, m.Content}
			if n := len(b.Messages); n > 0 && i > 0 && r.Messages[i-1].Role == "tool" {
				last := &b.Messages[n-1]
				last.Content = append(last.Content.([]any), res)
				continue
			}
			b.Messages = append(b.Messages, anthropicMessage{"user", []any{res}})
		case len(m.ToolCalls) > 0:
			var blocks []any
			if m.Content != "" {
				blocks = append(blocks, anthropicText{"text", m.Content})
			}
			for _, c := range m.ToolCalls {
				blocks = append(blocks, anthropicToolUse{"tool_use", c.ID, c.Name, c.argsObject()})
			}
			b.Messages = append(b.Messages, anthropicMessage{m.Role, blocks})
		default:
			b.Messages = append(b.Messages, anthropicMessage{m.Role, m.Content})
		}
	}
	for _, t := range r.Tools {
		b.Tools = append(b.Tools, anthropicTool{t.Name, t.Description, t.Parameters})
	}
	if len(r.Tools) > 0 && r.ToolChoice != ChoiceAuto {
		typ := "any"
		if r.ToolChoice == ChoiceNone {
			typ = "none"
		}
		b.ToolChoice = &struct {
			Type string `json:"type"`
		}{typ}
	}
	return b
}

func geminiRequest(r Request) geminiBody {
	text := func(s string) geminiPart { return geminiPart{Text: &s} }
	g := geminiBody{Contents: make([]geminiContent, 0, len(r.Messages))}
	for i, m := range r.Messages {
		switch {
		case m.Role == "tool":
			// A result is a functionResponse part of a user turn; the
			// results of one turn's calls share it.
			fr := &geminiResponse{ID: m.ToolCallID, Name: m.ToolName}
			fr.Response.Result = m.Content
			p := geminiPart{FunctionResponse: fr}
			if n := len(g.Contents); n > 0 && i > 0 && r.Messages[i-1].Role == "tool" {
				g.Contents[n-1].Parts = append(g.Contents[n-1].Parts, p)
				continue
			}
			g.Contents = append(g.Contents, geminiContent{"user", []geminiPart{p}})
		case m.Role == "assistant":
			var parts []geminiPart
			if m.Content != "" || len(m.ToolCalls) == 0 {
				parts = append(parts, text(m.Content))
			}
			for _, c := range m.ToolCalls {
				parts = append(parts, geminiPart{FunctionCall: &geminiCall{ID: c.ID, Name: c.Name, Args: c.argsObject()}, ThoughtSignature: c.Signature})
			}
			g.Contents = append(g.Contents, geminiContent{"model", parts})
		default:
			g.Contents = append(g.Contents, geminiContent{"user", []geminiPart{text(m.Content)}})
		}
	}
	if r.System != "" {
		g.SystemInstruction = &geminiContent{Parts: []geminiPart{text(r.System)}}
	}
	if r.OutputTokens > 0 {
		g.GenerationConfig = &struct {
			MaxOutputTokens int `json:"maxOutputTokens"`
		}{r.OutputTokens}
	}
	if len(r.Tools) > 0 {
		decls := make([]toolFunction, len(r.Tools))
		for i, t := range r.Tools {
			decls[i] = toolFunction(t)
		}
		g.Tools = []geminiTool{{decls}}
		if r.ToolChoice != ChoiceAuto {
			g.ToolConfig = &struct {
				FunctionCallingConfig struct {
					Mode string `json:"mode"`
				} `json:"functionCallingConfig"`
			}{}
			g.ToolConfig.FunctionCallingConfig.Mode = map[string]string{ChoiceRequired: "ANY", ChoiceNone: "NONE"}[r.ToolChoice]
		}
	}
	return g
}

func ollamaRequest(model string, r Request) ollamaBody {
	o := ollamaBody{Model: model, Messages: make([]ollamaMessage, 0, len(r.Messages)+1), Stream: true}
	if r.System != "" {
		o.Messages = append(o.Messages, ollamaMessage{Role: "system", Content: r.System})
	}
	for _, m := range r.Messages {
		om := ollamaMessage{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID, ToolName: m.ToolName}
		for _, c := range m.ToolCalls {
			var oc ollamaCall
			oc.ID, oc.Function.Name, oc.Function.Arguments = c.ID, c.Name, c.argsObject()
			om.ToolCalls = append(om.ToolCalls, oc)
		}
		o.Messages = append(o.Messages, om)
	}
	if r.OutputTokens > 0 {
		o.Options = &struct {
			NumPredict int `json:"num_predict"`
		}{r.OutputTokens}
	}
	if len(r.Tools) > 0 && r.ToolChoice != ChoiceNone { // no tool choice: offering none is the only way to ask for an answer
		o.Tools = chatTools(r.Tools)
	}
	return o
}

// Flatten returns r as one prompt for a completions API: the system prompt
// and the messages' contents, one after the other with a newline between.
func Flatten(r Request) string {
	var b strings.Builder
	if r.System != "" {
		b.WriteString(r.System)
	}
	for _, m := range r.Messages {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(m.Content)
	}
	return b.String()
}
