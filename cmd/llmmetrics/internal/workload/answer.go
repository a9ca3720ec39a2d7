package workload

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"strconv"
	"strings"
)

// Answer is what a streamed answer said: its text and its tool calls.
type Answer struct {
	Text      string
	ToolCalls []ToolCall
}

// AnswerText reads a streaming answer of api to its end and returns its
// text (the concatenated deltas), for the session's next turn.
func AnswerText(api string, body io.Reader) (string, error) {
	a, err := ReadAnswer(api, body)
	return a.Text, err
}

// ReadAnswer reads a streaming answer of api to its end and returns its
// text and tool calls, as each API streams them:
//
//   - OpenAI chat: delta.content, and delta.tool_calls fragments joined by
//     their index (id, function.name and the concatenated
//     function.arguments);
//   - completions: choices[0].text;
//   - Responses: response.output_text.delta, and each function_call item
//     (call_id, name, arguments) of response.output_item.done, or, when a
//     stream ends before it, of response.output_item.added and the
//     response.function_call_arguments.delta events of its item;
//   - Anthropic: text_delta, and each tool_use block of
//     content_block_start (id, name) with its input_json_delta fragments
//     (the input an empty object when none came);
//   - Gemini: the parts' text, and each functionCall part (name, args,
//     id when given) with the thoughtSignature beside it;
//   - Ollama: message.content, and message.tool_calls (id,
//     function.name, function.arguments).
//
// Events it does not know are skipped; a call's arguments are kept as
// the server sent them (compact JSON where it sent an object).
func ReadAnswer(api string, body io.Reader) (Answer, error) {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 1<<16), 16<<20)
	r := answerReader{api: api}
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
		r.event(line)
	}
	return r.answer(), sc.Err()
}

// partialCall is a call being assembled from fragments.
type partialCall struct {
	key  string // what its fragments name it by (index, item id)
	call ToolCall
	args strings.Builder
	done bool // its arguments came whole (args holds them)
}

type answerReader struct {
	api   string
	text  strings.Builder
	calls []*partialCall
}

func (r *answerReader) callBy(key string) *partialCall {
	for _, c := range r.calls {
		if c.key == key {
			return c
		}
	}
	c := &partialCall{key: key}
	r.calls = append(r.calls, c)
	return c
}

func (r *answerReader) answer() Answer {
	a := Answer{Text: r.text.String()}
	for _, c := range r.calls {
		tc := c.call
		tc.Arguments = c.args.String()
		if r.api == "anthropic" && tc.Arguments == "" {
			tc.Arguments = "{}" // a tool_use block with no input_json_delta: its input is {}
		}
		a.ToolCalls = append(a.ToolCalls, tc)
	}
	return a
}

// rawString decodes a JSON string ("" for anything else).
func rawString(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

// event reads one event of the answer.
func (r *answerReader) event(ev []byte) {
	switch r.api {
	case "chat", "completions":
		r.openAI(ev)
	case "responses":
		r.responses(ev)
	case "anthropic":
		r.anthropic(ev)
	case "gemini":
		r.gemini(ev)
	case "ollama":
		r.ollama(ev)
	}
}

func (r *answerReader) openAI(ev []byte) {
	var e struct {
		Choices []struct {
			Text  string `json:"text"`
			Delta struct {
				Content   string `json:"content"`
				ToolCalls []struct {
					Index    json.RawMessage `json:"index"`
					ID       string          `json:"id"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"delta"`
		} `json:"choices"`
	}
	if json.Unmarshal(ev, &e) != nil || len(e.Choices) == 0 {
		return
	}
	ch := e.Choices[0]
	if r.api == "completions" {
		r.text.WriteString(ch.Text)
		return
	}
	r.text.WriteString(ch.Delta.Content)
	for k, tc := range ch.Delta.ToolCalls {
		key := string(tc.Index)
		if key == "" { // a server that sends whole calls without an index
			key = "#" + strconv.Itoa(k)
		}
		c := r.callBy(key)
		if tc.ID != "" {
			c.call.ID = tc.ID
		}
		if tc.Function.Name != "" {
			c.call.Name = tc.Function.Name
		}
		c.args.WriteString(tc.Function.Arguments)
	}
}

type responsesItem struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

func (r *answerReader) responses(ev []byte) {
	var e struct {
		Type   string          `json:"type"`
		Delta  json.RawMessage `json:"delta"`
		ItemID string          `json:"item_id"`
		Item   responsesItem   `json:"item"`
	}
	if json.Unmarshal(ev, &e) != nil {
		return
	}
	switch e.Type {
	case "response.output_text.delta":
		r.text.WriteString(rawString(e.Delta))
	case "response.output_item.added", "response.output_item.done":
		if e.Item.Type != "function_call" {
			return
		}
		c := r.callBy(e.Item.ID)
		c.call.ID, c.call.Name = e.Item.CallID, e.Item.Name
		if e.Type == "response.output_item.done" { // the whole arguments
			c.args.Reset()
			c.args.WriteString(e.Item.Arguments)
			c.done = true
		}
	case "response.function_call_arguments.delta":
		if c := r.callBy(e.ItemID); !c.done {
			c.args.WriteString(rawString(e.Delta))
		}
	}
}

func (r *answerReader) anthropic(ev []byte) {
	var e struct {
		Type         string          `json:"type"`
		Index        json.RawMessage `json:"index"`
		ContentBlock struct {
			Type  string          `json:"type"`
			ID    string          `json:"id"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		} `json:"content_block"`
		Delta struct {
			Type        string `json:"type"`
			Text        string `json:"text"`
			PartialJSON string `json:"partial_json"`
		} `json:"delta"`
	}
	if json.Unmarshal(ev, &e) != nil {
		return
	}
	switch {
	case e.Type == "content_block_start" && e.ContentBlock.Type == "tool_use":
		c := r.callBy(string(e.Index))
		c.call.ID, c.call.Name = e.ContentBlock.ID, e.ContentBlock.Name
	case e.Type == "content_block_delta" && e.Delta.Type == "text_delta":
		r.text.WriteString(e.Delta.Text)
	case e.Type == "content_block_delta" && e.Delta.Type == "input_json_delta":
		if slices.ContainsFunc(r.calls, func(c *partialCall) bool { return c.key == string(e.Index) }) {
			r.callBy(string(e.Index)).args.WriteString(e.Delta.PartialJSON)
		}
	}
}

func (r *answerReader) gemini(ev []byte) {
	var e struct {
		Candidates []struct {
			Content struct {
				Parts []struct {
					Text         string `json:"text"`
					Thought      bool   `json:"thought"`
					FunctionCall *struct {
						ID   string          `json:"id"`
						Name string          `json:"name"`
						Args json.RawMessage `json:"args"`
					} `json:"functionCall"`
					ThoughtSignature string `json:"thoughtSignature"`
				} `json:"parts"`
			} `json:"content"`
		} `json:"candidates"`
	}
	if json.Unmarshal(ev, &e) != nil {
		return
	}
	for _, c := range e.Candidates {
		for _, p := range c.Content.Parts {
			if !p.Thought {
				r.text.WriteString(p.Text)
			}
			if f := p.FunctionCall; f != nil {
				pc := r.callBy("#" + strconv.Itoa(len(r.calls))) // each part is a whole call
				pc.call = ToolCall{ID: f.ID, Name: f.Name, Signature: p.ThoughtSignature}
				args := f.Args
				if len(bytes.TrimSpace(args)) == 0 {
					args = json.RawMessage("{}")
				}
				pc.args.WriteString(compactJSON(args))
			}
		}
	}
}

func (r *answerReader) ollama(ev []byte) {
	var e struct {
		Message struct {
			Content   string `json:"content"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string          `json:"name"`
					Arguments json.RawMessage `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
	}
	if json.Unmarshal(ev, &e) != nil {
		return
	}
	r.text.WriteString(e.Message.Content)
	for _, tc := range e.Message.ToolCalls {
		pc := r.callBy("#" + strconv.Itoa(len(r.calls)))
		pc.call = ToolCall{ID: tc.ID, Name: tc.Function.Name}
		args := tc.Function.Arguments
		if len(bytes.TrimSpace(args)) == 0 || string(bytes.TrimSpace(args)) == "null" {
			args = json.RawMessage("{}")
		}
		pc.args.WriteString(compactJSON(args))
	}
}
