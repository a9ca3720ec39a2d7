package workload

import (
	"bytes"
	"encoding/json"
)

// Tool is a function tool a request offers: its name, what it does and
// the JSON schema of its arguments (compact JSON, keys in the order
// written).
type Tool struct {
	Name, Description string
	Parameters        json.RawMessage
}

// ToolCall is one call an assistant message makes, as the server returned
// it (or a recorded conversation holds it).
type ToolCall struct {
	// ID names the call for its result ("" where the API gives none:
	// Gemini matches results by name).
	ID   string
	Name string
	// Arguments is the arguments' text: a JSON object where the server
	// sent one, else the text as sent (a call cut by the output cap).
	Arguments string
	// Signature is Gemini's thoughtSignature beside the call, sent back
	// with it as Gemini requires ("" none).
	Signature string
}

// Tool choices of a Request.
const (
	ChoiceAuto     = ""         // the model decides (no tool_choice sent)
	ChoiceRequired = "required" // a call is forced where the API can force one
	ChoiceNone     = "none"     // an answer without a call is asked
)

// AgentTools are the tools of the agent workload: a coding agent's, each
// with one required argument (the first named in "required").
var AgentTools = []Tool{
	{"read_file", "Read a file of the repository and return its text.",
		json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"Path of the file, from the repository's root."}},"required":["path"]}`)},
	{"search_code", "Search the repository for a regular expression and return the matching lines.",
		json.RawMessage(`{"type":"object","properties":{"pattern":{"type":"string","description":"A regular expression."},"path":{"type":"string","description":"A directory to search in."}},"required":["pattern"]}`)},
	{"run_command", "Run a shell command in the repository and return its output.",
		json.RawMessage(`{"type":"object","properties":{"command":{"type":"string","description":"The command line."},"timeout_ms":{"type":"integer","description":"How long it may run."}},"required":["command"]}`)},
	{"edit_file", "Replace a text in a file with another.",
		json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"old_text":{"type":"string"},"new_text":{"type":"string"}},"required":["path","old_text","new_text"]}`)},
	{"list_directory", "List the files of a directory.",
		json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
	{"fetch_url", "Fetch a web page and return its text.",
		json.RawMessage(`{"type":"object","properties":{"url":{"type":"string"}},"required":["url"]}`)},
}

// toolTexts returns the texts a tool definition counts in the prompt: its
// name, description and parameter schema as compact JSON (what a chat
// template renders, and what the fake server counts).
func (t Tool) toolTexts() []string {
	return []string{t.Name, t.Description, compactJSON(t.Parameters)}
}

// argsObject returns the call's arguments as the JSON object the APIs
// that take an object (Anthropic input, Gemini args, Ollama arguments)
// are sent: the arguments when they are a JSON object, else
// {"arguments": text}.
func (c ToolCall) argsObject() json.RawMessage {
	b := bytes.TrimSpace([]byte(c.Arguments))
	if len(b) > 0 && b[0] == '{' && json.Valid(b) {
		return json.RawMessage(compactJSON(b))
	}
	o, _ := json.Marshal(map[string]string{"arguments": c.Arguments})
	return o
}

// argsString returns the arguments as the APIs that take a string
// (OpenAI chat and Responses) are sent: the text as the server sent it.
func (c ToolCall) argsString() string { return c.Arguments }

// callTexts returns the texts a call counts in the prompt of api: its
// name and arguments, compact JSON where they are JSON (see argsObject).
func (c ToolCall) callTexts(api string) []string {
	if stringArgs(api) {
		if json.Valid([]byte(c.Arguments)) {
			return []string{c.Name, compactJSON([]byte(c.Arguments))}
		}
		return []string{c.Name, c.Arguments}
	}
	return []string{c.Name, string(c.argsObject())}
}

// stringArgs reports whether api sends a call's arguments as a string.
func stringArgs(api string) bool { return api == "chat" || api == "responses" }

// HasTools reports whether api can send tools (every API but
// completions).
func HasTools(api string) bool { return api != "completions" }

// CanForceToolCall reports whether api can force a tool call (Ollama has
// no tool_choice: its model decides).
func CanForceToolCall(api string) bool { return HasTools(api) && api != "ollama" }

func compactJSON(raw []byte) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}
