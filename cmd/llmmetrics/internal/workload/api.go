package workload

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
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

// openAIBody is a chat or completions request (vLLM's ignore_eos included).
type openAIBody struct {
	Model         string        `json:"model"`
	Messages      []roleContent `json:"messages,omitempty"`
	Prompt        *string       `json:"prompt,omitempty"`
	Stream        bool          `json:"stream"`
	StreamOptions streamOptions `json:"stream_options"`
	MaxTokens     int           `json:"max_tokens,omitempty"`
	IgnoreEOS     bool          `json:"ignore_eos,omitempty"`
}

type responsesBody struct {
	Model           string        `json:"model"`
	Instructions    string        `json:"instructions,omitempty"`
	Input           []roleContent `json:"input"`
	Stream          bool          `json:"stream"`
	MaxOutputTokens int           `json:"max_output_tokens,omitempty"`
}

type anthropicBody struct {
	Model     string        `json:"model"`
	System    string        `json:"system,omitempty"`
	Messages  []roleContent `json:"messages"`
	MaxTokens int           `json:"max_tokens"`
	Stream    bool          `json:"stream"`
}

type geminiPart struct {
	Text string `json:"text"`
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
}

type ollamaBody struct {
	Model    string        `json:"model"`
	Messages []roleContent `json:"messages"`
	Stream   bool          `json:"stream"`
	Options  *struct {
		NumPredict int `json:"num_predict"`
	} `json:"options,omitempty"`
}

// Body returns the streaming request body of r in api's format for model,
// asking for r.OutputTokens (when set) and, with ignoreEOS, for exactly
// that many (see HasIgnoreEOS).
func Body(api, model string, r Request, ignoreEOS bool) []byte {
	msgs := func(system bool) []roleContent {
		m := make([]roleContent, 0, len(r.Messages)+1)
		if system && r.System != "" {
			m = append(m, roleContent{"system", r.System})
		}
		for _, x := range r.Messages {
			m = append(m, roleContent(x))
		}
		return m
	}
	var v any
	switch api {
	case "chat", "completions":
		o := openAIBody{Model: model, Stream: true, StreamOptions: streamOptions{true}, MaxTokens: r.OutputTokens, IgnoreEOS: ignoreEOS}
		if api == "chat" {
			o.Messages = msgs(true)
		} else {
			p := Flatten(r)
			o.Prompt = &p
		}
		v = o
	case "responses":
		v = responsesBody{Model: model, Instructions: r.System, Input: msgs(false), Stream: true, MaxOutputTokens: r.OutputTokens}
	case "anthropic":
		max := r.OutputTokens
		if max == 0 {
			max = 4096 // Anthropic requires max_tokens
		}
		v = anthropicBody{Model: model, System: r.System, Messages: msgs(false), MaxTokens: max, Stream: true}
	case "gemini":
		g := geminiBody{Contents: make([]geminiContent, 0, len(r.Messages))}
		for _, m := range r.Messages {
			role := "user"
			if m.Role == "assistant" {
				role = "model"
			}
			g.Contents = append(g.Contents, geminiContent{role, []geminiPart{{m.Content}}})
		}
		if r.System != "" {
			g.SystemInstruction = &geminiContent{Parts: []geminiPart{{r.System}}}
		}
		if r.OutputTokens > 0 {
			g.GenerationConfig = &struct {
				MaxOutputTokens int `json:"maxOutputTokens"`
			}{r.OutputTokens}
		}
		v = g
	case "ollama":
		o := ollamaBody{Model: model, Messages: msgs(true), Stream: true}
		if r.OutputTokens > 0 {
			o.Options = &struct {
				NumPredict int `json:"num_predict"`
			}{r.OutputTokens}
		}
		v = o
	default:
		panic(fmt.Sprintf("workload: unknown API %q", api))
	}
	b, _ := json.Marshal(v) // strings and numbers only: cannot fail
	return b
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

// AnswerText reads a streaming answer of api to its end and returns its
// text (the concatenated deltas), for the session's next turn. Events it
// does not know are skipped.
func AnswerText(api string, body io.Reader) (string, error) {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 1<<16), 16<<20)
	var out strings.Builder
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if api != "ollama" {
			var ok bool
			if line, ok = bytes.CutPrefix(line, []byte("data:")); !ok {
				continue
			}
			line = bytes.TrimSpace(line)
		}
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		out.WriteString(deltaText(api, line))
	}
	return out.String(), sc.Err()
}

// deltaText returns the text one event of api adds to the answer.
func deltaText(api string, ev []byte) string {
	var e struct {
		Type    string `json:"type"`
		Delta   json.RawMessage
		Choices []struct {
			Text  string `json:"text"`
			Delta struct {
				Content string `json:"content"`
			} `json:"delta"`
		} `json:"choices"`
		Candidates []struct {
			Content struct {
				Parts []struct {
					Text string `json:"text"`
				} `json:"parts"`
			} `json:"content"`
		} `json:"candidates"`
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
	}
	if json.Unmarshal(ev, &e) != nil {
		return ""
	}
	switch api {
	case "chat":
		if len(e.Choices) > 0 {
			return e.Choices[0].Delta.Content
		}
	case "completions":
		if len(e.Choices) > 0 {
			return e.Choices[0].Text
		}
	case "responses":
		var s string
		if e.Type == "response.output_text.delta" && json.Unmarshal(e.Delta, &s) == nil {
			return s
		}
	case "anthropic":
		var d struct {
			Text string `json:"text"`
		}
		if e.Type == "content_block_delta" && json.Unmarshal(e.Delta, &d) == nil {
			return d.Text
		}
	case "gemini":
		var b strings.Builder
		for _, c := range e.Candidates {
			for _, p := range c.Content.Parts {
				b.WriteString(p.Text)
			}
		}
		return b.String()
	case "ollama":
		return e.Message.Content
	}
	return ""
}
