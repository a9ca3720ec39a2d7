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

// kv keeps a JSON object's keys in the order written.
type kv struct {
	k string
	v any
}
type obj []kv

func (o obj) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.k)
		v, err := json.Marshal(f.v)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

type roleContent struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}


// Body returns the streaming request body of r in api's format for model,
// asking for r.OutputTokens (when set) and, with ignoreEOS, for exactly
// that many (see HasIgnoreEOS).
func Body(api, model string, r Request, ignoreEOS bool) []byte {
	var o obj
	msgs := func(system bool) []roleContent {
		var m []roleContent
		if system && r.System != "" {
			m = append(m, roleContent{"system", r.System})
		}
		for _, x := range r.Messages {
			m = append(m, roleContent(x))
		}
		return m
	}
	max := r.OutputTokens
	switch api {
	case "chat", "completions":
		o = obj{{"model", model}}
		if api == "chat" {
			o = append(o, kv{"messages", msgs(true)})
		} else {
			o = append(o, kv{"prompt", Flatten(r)})
		}
		o = append(o, kv{"stream", true}, kv{"stream_options", obj{{"include_usage", true}}})
		if max > 0 {
			o = append(o, kv{"max_tokens", max})
		}
		if ignoreEOS {
			o = append(o, kv{"ignore_eos", true})
		}
	case "responses":
		o = obj{{"model", model}}
		if r.System != "" {
			o = append(o, kv{"instructions", r.System})
		}
		o = append(o, kv{"input", msgs(false)}, kv{"stream", true})
		if max > 0 {
			o = append(o, kv{"max_output_tokens", max})
		}
	case "anthropic":
		o = obj{{"model", model}}
		if r.System != "" {
			o = append(o, kv{"system", r.System})
		}
		if max == 0 {
			max = 4096 // Anthropic requires max_tokens
		}
		o = append(o, kv{"messages", msgs(false)}, kv{"max_tokens", max}, kv{"stream", true})
	case "gemini":
		type part struct {
			Text string `json:"text"`
		}
		type content struct {
			Role  string `json:"role,omitempty"`
			Parts []part `json:"parts"`
		}
		var cs []content
		for _, m := range r.Messages {
			role := "user"
			if m.Role == "assistant" {
				role = "model"
			}
			cs = append(cs, content{role, []part{{m.Content}}})
		}
		o = obj{{"contents", cs}}
		if r.System != "" {
			o = append(o, kv{"systemInstruction", content{Parts: []part{{r.System}}}})
		}
		if max > 0 {
			o = append(o, kv{"generationConfig", obj{{"maxOutputTokens", max}}})
		}
	case "ollama":
		o = obj{{"model", model}, {"messages", msgs(true)}, {"stream", true}}
		if max > 0 {
			o = append(o, kv{"options", obj{{"num_predict", max}}})
		}
	default:
		panic(fmt.Sprintf("workload: unknown API %q", api))
	}
	b, _ := json.Marshal(o) // strings and numbers only: cannot fail
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
