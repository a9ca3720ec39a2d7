package llmmetricstest

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// Tool calls. A request that offers tools (OpenAI chat and Ollama "tools",
// the Responses API's function tools, Anthropic "tools", Gemini
// "functionDeclarations") is answered with one call of one of them, in the
// API's own shape, unless its tool choice says none (OpenAI "none",
// Anthropic {"type": "none"}, Gemini mode NONE; Ollama has no tool
// choice) or the server draws it to answer with text (SkipToolCallRate).
// A forced tool (OpenAI {"type": "function", "function": {"name"}} or
// the Responses API's {"type": "function", "name"}, Anthropic
// {"type": "tool", "name"}, Gemini allowedFunctionNames) is the one
// called; otherwise the tools are taken in turn, by the request's number.
// The call's arguments are one JSON object whose only member is the
// tool's first required parameter ("input" when it names none), a string
// of the answer's words: {"query": "The model streams …"}.
//
// The arguments are generated like text, one token a step, and streamed
// as each API streams them:
//
//   - OpenAI chat: delta.tool_calls, the first carrying the call's index,
//     id, type and name with the first fragment of arguments, the others
//     {"index": 0, "function": {"arguments": fragment}}; finish_reason
//     "tool_calls";
//   - Responses: response.output_item.added with a function_call item
//     (id, call_id, name, empty arguments), then
//     response.function_call_arguments.delta per token,
//     response.function_call_arguments.done and
//     response.output_item.done;
//   - Anthropic: content_block_start with a tool_use block (id, name,
//     input {}), content_block_delta input_json_delta per token
//     (partial_json), stop_reason "tool_use";
//   - Gemini: one chunk holding the whole call, {"functionCall": {"name",
//     "args"}}, when the last token is generated (Gemini does not stream a
//     call's arguments; its usage counts every token);
//   - Ollama: one line holding the whole call, message.tool_calls [{"id",
//     "function": {"index", "name", "arguments"}}], when the last token is
//     generated (Ollama parses a call from the model's text before it
//     sends it), then the final line.
//
// Tool definitions, calls and results count in the prompt like text (see
// promptText): a definition its name, description and parameter schema
// (as compact JSON), a call its name and arguments (compact JSON), a
// result its text.

// toolChoice is what a request's tool choice asks.
type toolChoice struct {
	none  bool   // answer with text
	named string // call this tool ("": any)
}

// toolCall is the call an answer makes.
type toolCall struct {
	name  string
	param string // the argument it fills
}

// toolDef is one offered tool.
type toolDef struct {
	Name        string          `json:"name"`
	InputSchema json.RawMessage `json:"input_schema"` // Anthropic
	Parameters  json.RawMessage `json:"parameters"`   // the others
	Function    *struct {       // OpenAI chat and Ollama
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	} `json:"function"`
	FunctionDeclarations []toolDef `json:"functionDeclarations"` // Gemini
}

// readTools returns the tools of raw (a "tools" array of any API) as
// (name, schema) pairs, in order.
func readTools(raw json.RawMessage) []toolDef {
	var defs []toolDef
	if json.Unmarshal(raw, &defs) != nil {
		return nil
	}
	var out []toolDef
	for _, d := range defs {
		switch {
		case len(d.FunctionDeclarations) > 0:
			out = append(out, readTools(mustMarshal(d.FunctionDeclarations))...)
		case d.Function != nil && d.Function.Name != "":
			out = append(out, toolDef{Name: d.Function.Name, Parameters: d.Function.Parameters})
		case d.Name != "":
			if d.Parameters == nil {
				d.Parameters = d.InputSchema
			}
			out = append(out, toolDef{Name: d.Name, Parameters: d.Parameters})
		}
	}
	return out
}

func mustMarshal(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// firstRequired returns the first required parameter of a JSON schema
// ("input" when it has none).
func firstRequired(schema json.RawMessage) string {
	var s struct {
		Required []string `json:"required"`
	}
	if json.Unmarshal(schema, &s) == nil && len(s.Required) > 0 && s.Required[0] != "" {
		return s.Required[0]
	}
	return "input"
}

// pickTool returns the call a request with tools and choice makes (nil:
// it is answered with text).
func pickTool(tools []toolDef, choice toolChoice, id int) *toolCall {
	if len(tools) == 0 || choice.none {
		return nil
	}
	t := tools[id%len(tools)]
	if choice.named != "" {
		for _, d := range tools {
			if d.Name == choice.named {
				t = d
				break
			}
		}
	}
	return &toolCall{name: t.Name, param: firstRequired(t.Parameters)}
}

// openAIToolChoice reads OpenAI's tool_choice: "none", "auto",
// "required", {"type": "function", "function": {"name"}} (chat) or
// {"type": "function", "name"} (Responses).
func openAIToolChoice(raw json.RawMessage) toolChoice {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return toolChoice{none: s == "none"}
	}
	var o struct {
		Name     string `json:"name"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(raw, &o) == nil {
		return toolChoice{named: cmpOr(o.Function.Name, o.Name)}
	}
	return toolChoice{}
}

// anthropicToolChoice reads {"type": "auto" | "any" | "tool" | "none",
// "name"}.
func anthropicToolChoice(raw json.RawMessage) toolChoice {
	var o struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if json.Unmarshal(raw, &o) != nil {
		return toolChoice{}
	}
	if o.Type == "tool" {
		return toolChoice{named: o.Name}
	}
	return toolChoice{none: o.Type == "none"}
}

// geminiToolChoice reads toolConfig.functionCallingConfig: mode AUTO,
// ANY, NONE or VALIDATED, and allowedFunctionNames (the first is called).
func geminiToolChoice(raw json.RawMessage) toolChoice {
	var o struct {
		FunctionCallingConfig struct {
			Mode    string   `json:"mode"`
			Allowed []string `json:"allowedFunctionNames"`
		} `json:"functionCallingConfig"`
	}
	if json.Unmarshal(raw, &o) != nil {
		return toolChoice{}
	}
	c := toolChoice{none: strings.EqualFold(o.FunctionCallingConfig.Mode, "NONE")}
	if len(o.FunctionCallingConfig.Allowed) > 0 {
		c.named = o.FunctionCallingConfig.Allowed[0]
	}
	return c
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// argsPrefix and argsSuffix wrap the words of a call's arguments.
func (c *toolCall) argsPrefix() string { return `{"` + c.param + `": "` }

const argsSuffix = `"}`

// fragment returns the arguments' text that token i (of text) adds; the
// last token of a complete answer closes the object (an answer cut by its
// output cap leaves it open, as a model's would be).
func (c *toolCall) fragment(i int, text string, last bool) string {
	if i == 0 {
		text = c.argsPrefix() + text
	}
	if last {
		text += argsSuffix
	}
	return text
}

// args returns the arguments of the tokens answered so far as a JSON
// object: {"param": "words"}.
func (c *toolCall) args(words string) json.RawMessage {
	return mustMarshal(obj{{c.param, words}})
}

// argsText returns the arguments as streamed: the fragments of n tokens,
// closed when complete.
func (c *toolCall) argsText(e *emitter, complete bool) string {
	var b strings.Builder
	for i := range e.sent {
		b.WriteString(c.fragment(i, tokenText(e.id, i), complete && i == e.sent-1))
	}
	return b.String()
}

// callID is the call's id in the API's style.
func callID(prefix string, id int) string { return prefix + strconv.Itoa(id) }

// toolText returns the texts a tool definition, call or result counts in
// the prompt (see promptText), from one JSON object: ok is false when the
// object is none of them.
//
//   - a definition (a "name" with "parameters" or "input_schema"): its
//     name, description and schema as compact JSON;
//   - a call (a "name" with "arguments", "args" or "input"): its name and
//     arguments as compact JSON (a string of arguments is compacted when
//     it is JSON, else counted as it is).
func toolText(raw json.RawMessage) (texts []string, ok bool) {
	var o struct {
		Name        *string         `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		InputSchema json.RawMessage `json:"input_schema"`
		Arguments   json.RawMessage `json:"arguments"`
		Args        json.RawMessage `json:"args"`
		Input       json.RawMessage `json:"input"`
	}
	if json.Unmarshal(raw, &o) != nil || o.Name == nil {
		return nil, false
	}
	schema := cmpRaw(o.Parameters, o.InputSchema)
	if schema != nil {
		return []string{*o.Name, o.Description, compactJSON(schema)}, true
	}
	args := cmpRaw(o.Arguments, cmpRaw(o.Args, o.Input))
	if args == nil {
		return nil, false
	}
	var s string
	if json.Unmarshal(args, &s) == nil {
		if json.Valid([]byte(s)) {
			return []string{*o.Name, compactJSON([]byte(s))}, true
		}
		return []string{*o.Name, s}, true
	}
	return []string{*o.Name, compactJSON(args)}, true
}

func cmpRaw(a, b json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(a)) > 0 {
		return a
	}
	if len(bytes.TrimSpace(b)) > 0 {
		return b
	}
	return nil
}

// compactJSON returns raw without insignificant white space.
func compactJSON(raw []byte) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}
