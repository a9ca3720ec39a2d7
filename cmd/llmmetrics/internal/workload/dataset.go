package workload

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// Dataset formats, as Info.Format names them.
const (
	FormatShareGPT     = "sharegpt"      // JSON array (or JSONL) of {"conversations": [{"from", "value"}…]}
	FormatOpenAI       = "openai"        // JSONL of chat requests {"messages": […], "max_tokens"?}
	FormatAIPerfSingle = "aiperf-single" // JSONL {"text" | "texts", "output_length"?}
	FormatAIPerfMulti  = "aiperf-multi"  // JSONL {"session_id", "turns": […]}
	FormatPrompts      = "prompts"       // text, one prompt per non-blank line
	FormatMooncake     = "mooncake"      // JSONL {"timestamp", "input_length", "output_length", "hash_ids"}
)

// maxLine bounds one line of a JSONL or text file.
const maxLine = 64 << 20

// entry is one dataset entry, parsed.
type entry struct {
	system  string
	history []Message // messages before the first turn, sent as they are
	turns   []turn
	origin  string // file:line, or file: entry N
	skip    string // why it cannot be sent ("": it can)
	replay  *replayConv
	tools   []Tool
}

// entryReader reads a dataset's entries in order; io.EOF at the end. An
// error other than io.EOF is malformed input, with file:line.
type entryReader interface {
	next() (entry, error)
	close()
}

// detect returns the format of the file at path from its first non-blank
// bytes: '[' is a ShareGPT array, '{' a JSONL file told apart by the keys
// of its first object, anything else prompts one per line.
func detect(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", badf("%v", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<16)
	for {
		c, err := br.ReadByte()
		if err == io.EOF {
			return "", badf("%s: empty dataset", path)
		}
		if err != nil {
			return "", badf("%s: %v", path, err)
		}
		switch c {
		case ' ', '\t', '\r', '\n', 0xef, 0xbb, 0xbf: // blanks and a UTF-8 BOM
			continue
		case '[':
			return FormatShareGPT, nil
		case '{':
			_ = br.UnreadByte()
			line, _ := br.ReadBytes('\n')
			var keys map[string]json.RawMessage
			if json.Unmarshal(line, &keys) != nil {
				return "", badf("%s:1: a line starting with '{' that is not one JSON object (JSONL needs one object per line)", path)
			}
			switch {
			case keys["conversations"] != nil:
				return FormatShareGPT, nil
			case keys["messages"] != nil:
				return FormatOpenAI, nil
			case keys["turns"] != nil:
				return FormatAIPerfMulti, nil
			case keys["text"] != nil || keys["texts"] != nil:
				return FormatAIPerfSingle, nil
			case keys["hash_ids"] != nil || keys["input_length"] != nil:
				return FormatMooncake, nil
			}
			return "", badf("%s:1: unknown JSONL dataset: no \"conversations\", \"messages\", \"turns\", \"text\" or \"texts\"", path)
		default:
			return FormatPrompts, nil
		}
	}
}

// fileSHA256 returns the hex SHA-256 of the file's content.
func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// newReader opens a reader of format over path.
func newReader(path, format string) (entryReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, badf("%v", err)
	}
	if format == FormatShareGPT {
		br := bufio.NewReaderSize(f, 1<<16)
		if c, _ := peekNonBlank(br); c == '[' {
			return newArrayReader(f, br, path)
		}
		return &lineReader{f: f, sc: newScanner(br), path: path, parse: parseShareGPTLine}, nil
	}
	parse := map[string]func([]byte, string) (entry, error){
		FormatOpenAI: parseOpenAI, FormatAIPerfSingle: parseAIPerfSingle,
		FormatAIPerfMulti: parseAIPerfMulti, FormatPrompts: parsePrompt,
	}[format]
	return &lineReader{f: f, sc: newScanner(f), path: path, parse: parse, text: format == FormatPrompts}, nil
}

func newScanner(r io.Reader) *bufio.Scanner {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), maxLine)
	return sc
}

func peekNonBlank(br *bufio.Reader) (byte, error) {
	for i := 1; ; i++ {
		b, err := br.Peek(i)
		if err != nil {
			return 0, err
		}
		if c := b[i-1]; !strings.ContainsRune(" \t\r\n\xef\xbb\xbf", rune(c)) {
			return c, nil
		}
	}
}

// lineReader reads one entry per non-blank line.
type lineReader struct {
	f     *os.File
	sc    *bufio.Scanner
	path  string
	line  int
	text  bool // prompts: the line is the entry (a trailing \r dropped)
	parse func(line []byte, origin string) (entry, error)
}

func (r *lineReader) next() (entry, error) {
	for r.sc.Scan() {
		r.line++
		b := r.sc.Bytes()
		if r.line == 1 {
			b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
		}
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		origin := fmt.Sprintf("%s:%d", r.path, r.line)
		e, err := r.parse(b, origin)
		if err != nil {
			return e, badf("%s: %v", origin, err)
		}
		e.origin = origin
		return e, nil
	}
	if err := r.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return entry{}, badf("%s:%d: line longer than %d MiB", r.path, r.line+1, maxLine>>20)
		}
		return entry{}, badf("%s:%d: %v", r.path, r.line+1, err)
	}
	return entry{}, io.EOF
}

func (r *lineReader) close() { r.f.Close() }

// parsePrompt reads one line of a prompts file.
func parsePrompt(line []byte, _ string) (entry, error) {
	return entry{turns: []turn{{prompt: strings.TrimRight(string(line), "\r")}}}, nil
}

// text returns the text of a message content: a string, or the "text" of
// an array's parts; ok is false for content with no text (images, audio).
func contentText(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] == 'n' {
		return "", true
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return "", false
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type != "" && p.Type != "text" {
			return "", false
		}
		b.WriteString(p.Text)
	}
	return b.String(), true
}

// openAIMessage is one message of an OpenAI chat request.
type openAIMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  json.RawMessage `json:"tool_calls"`
	ToolCallID *string         `json:"tool_call_id"`
}

// parseOpenAI reads one OpenAI chat request: its system messages make the
// system prompt, the messages up to the last user message are sent as
// they are, and the last must be the user's. A conversation with tool
// calls (an assistant's tool_calls, a "tool" message, or a "tools" list)
// is an agent's, replayed turn by turn (parseToolConversation).
func parseOpenAI(line []byte, _ string) (entry, error) {
	var req struct {
		Messages            []openAIMessage `json:"messages"`
		Tools               json.RawMessage `json:"tools"`
		MaxTokens           *int            `json:"max_tokens"`
		MaxCompletionTokens *int            `json:"max_completion_tokens"`
	}
	if err := json.Unmarshal(line, &req); err != nil {
		return entry{}, fmt.Errorf("not a JSON chat request: %v", err)
	}
	if hasTools(req.Tools, req.Messages) {
		return parseToolConversation(req.Messages, req.Tools)
	}
	var e entry
	for _, m := range req.Messages {
		text, ok := contentText(m.Content)
		switch {
		case !ok:
			e.skip = "a " + m.Role + " message with non-text content"
		case m.Role == "system" || m.Role == "developer":
			e.system += text
		case m.Role == "user" || m.Role == "assistant":
			e.history = append(e.history, Message{Role: m.Role, Content: text})
		default:
			e.skip = "a message of role " + fmt.Sprintf("%q", m.Role)
		}
	}
	out := 0
	for _, p := range []*int{req.MaxCompletionTokens, req.MaxTokens} {
		if p != nil && *p > 0 && out == 0 {
			out = *p
		}
	}
	n := len(e.history)
	switch {
	case e.skip != "":
	case n == 0 || e.history[n-1].Role != "user" || e.history[n-1].Content == "":
		e.skip = "no user message last"
	default:
		e.turns = []turn{{prompt: e.history[n-1].Content, output: out}}
		e.history = e.history[:n-1]
	}
	return e, nil
}

// hasTools reports whether a chat request is an agent's conversation: it
// lists tools, or a message calls one or gives a tool's result.
func hasTools(tools json.RawMessage, msgs []openAIMessage) bool {
	if t := bytes.TrimSpace(tools); len(t) > 0 && string(t) != "null" && string(t) != "[]" {
		return true
	}
	for _, m := range msgs {
		if m.Role == "tool" || m.ToolCallID != nil {
			return true
		}
		if t := bytes.TrimSpace(m.ToolCalls); len(t) > 0 && string(t) != "null" && string(t) != "[]" {
			return true
		}
	}
	return false
}

// parseToolConversation reads an agent's recorded conversation: tools
// [{"type": "function", "function": {"name", "description",
// "parameters"}}], then messages where an assistant's tool_calls
// [{"id", "type": "function", "function": {"name", "arguments"}}] are each
// answered by a "tool" message with its tool_call_id before the next
// assistant or user message. Each assistant message is one request (its
// input the messages before it, its output length its own at 4
// characters a token). What breaks these rules is an error (the file is
// malformed); content that is not text makes the entry skipped.
func parseToolConversation(msgs []openAIMessage, rawTools json.RawMessage) (entry, error) {
	var e entry
	tools, err := parseTools(rawTools)
	if err != nil {
		return e, err
	}
	r := &replayConv{}
	open := map[string]string{} // calls not yet answered: id → name
	var order []string          // their ids, in order
	for i, m := range msgs {
		text, ok := contentText(m.Content)
		if !ok {
			e.skip = "a " + m.Role + " message with non-text content"
			return e, nil
		}
		if m.Role != "tool" && len(order) > 0 {
			return e, fmt.Errorf("message %d (%s): the tool call %q has no result before it", i+1, m.Role, order[0])
		}
		switch m.Role {
		case "system", "developer":
			e.system += text
		case "user":
			r.conv = append(r.conv, Message{Role: "user", Content: text})
		case "assistant":
			calls, err := parseToolCalls(m.ToolCalls)
			if err != nil {
				return e, fmt.Errorf("message %d (assistant): %v", i+1, err)
			}
			for _, c := range calls {
				if c.ID == "" {
					return e, fmt.Errorf("message %d (assistant): a tool call without an id", i+1)
				}
				if _, dup := open[c.ID]; dup {
					return e, fmt.Errorf("message %d (assistant): two tool calls with the id %q", i+1, c.ID)
				}
				open[c.ID] = c.Name
				order = append(order, c.ID)
			}
			if len(r.conv) == 0 {
				return e, fmt.Errorf("message %d (assistant): an assistant turn with no message before it to send", i+1)
			}
			chars := len(text)
			for _, c := range calls {
				chars += len(c.Name) + len(c.Arguments)
			}
			r.turns = append(r.turns, len(r.conv))
			r.outputs = append(r.outputs, Text{CharsPerToken: 4}.Tokens(max(chars, 1)))
			r.conv = append(r.conv, Message{Role: "assistant", Content: text, ToolCalls: calls})
		case "tool":
			id := ""
			if m.ToolCallID != nil {
				id = *m.ToolCallID
			}
			name, ok := open[id]
			if !ok {
				return e, fmt.Errorf("message %d (tool): tool_call_id %q answers no earlier call awaiting a result", i+1, id)
			}
			delete(open, id)
			order = slices.DeleteFunc(order, func(x string) bool { return x == id })
			r.conv = append(r.conv, Message{Role: "tool", Content: text, ToolCallID: id, ToolName: name})
		default:
			return e, fmt.Errorf("message %d: unknown role %q", i+1, m.Role)
		}
	}
	if len(r.turns) == 0 {
		e.skip = "no assistant turn to replay"
		return e, nil
	}
	e.replay, e.tools = r, tools
	e.turns = make([]turn, len(r.turns)) // one per request; their text is the conversation's
	return e, nil
}

// parseTools reads a chat request's "tools".
func parseTools(raw json.RawMessage) ([]Tool, error) {
	if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
		return nil, nil
	}
	var ts []struct {
		Type     string `json:"type"`
		Function *struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &ts); err != nil {
		return nil, fmt.Errorf("tools: not an array of function tools: %v", err)
	}
	var out []Tool
	for i, t := range ts {
		if t.Function == nil || t.Function.Name == "" {
			return nil, fmt.Errorf("tools[%d]: a tool without function.name", i)
		}
		params := t.Function.Parameters
		if len(bytes.TrimSpace(params)) == 0 || string(bytes.TrimSpace(params)) == "null" {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		out = append(out, Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: json.RawMessage(compactJSON(params))})
	}
	return out, nil
}

// parseToolCalls reads an assistant's tool_calls (absent, null or an
// array of {"id", "type": "function", "function": {"name", "arguments"}},
// arguments a string, or an object as some logs keep it).
func parseToolCalls(raw json.RawMessage) ([]ToolCall, error) {
	if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
		return nil, nil
	}
	var cs []struct {
		ID       string `json:"id"`
		Function *struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &cs); err != nil {
		return nil, fmt.Errorf("tool_calls: not an array of calls: %v", err)
	}
	out := make([]ToolCall, 0, len(cs))
	for k, c := range cs {
		if c.Function == nil || c.Function.Name == "" {
			return nil, fmt.Errorf("tool_calls[%d]: a call without function.name", k)
		}
		args := bytes.TrimSpace(c.Function.Arguments)
		var s string
		switch {
		case len(args) == 0 || string(args) == "null":
			s = "{}"
		case args[0] == '"':
			if err := json.Unmarshal(args, &s); err != nil {
				return nil, fmt.Errorf("tool_calls[%d]: arguments: %v", k, err)
			}
		case args[0] == '{':
			s = compactJSON(args)
		default:
			return nil, fmt.Errorf("tool_calls[%d]: arguments must be a string (or an object), not %s", k, args)
		}
		out = append(out, ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: s})
	}
	return out, nil
}

// aiperfTexts reads AIPerf's "text" or "texts" (strings, or
// {"name", "contents": [strings]}).
func aiperfTexts(text *string, texts json.RawMessage) string {
	if text != nil {
		return *text
	}
	var ss []string
	if json.Unmarshal(texts, &ss) == nil {
		return strings.Join(ss, " ")
	}
	ss = nil // a failed Unmarshal may have filled some
	var named []struct {
		Contents []string `json:"contents"`
	}
	_ = json.Unmarshal(texts, &named)
	for _, n := range named {
		ss = append(ss, n.Contents...)
	}
	return strings.Join(ss, " ")
}

type aiperfTurn struct {
	Role         string          `json:"role"`
	Text         *string         `json:"text"`
	Texts        json.RawMessage `json:"texts"`
	OutputLength int             `json:"output_length"`
}

// parseAIPerfSingle reads one line of AIPerf's single_turn custom dataset.
func parseAIPerfSingle(line []byte, _ string) (entry, error) {
	var t aiperfTurn
	if err := json.Unmarshal(line, &t); err != nil {
		return entry{}, fmt.Errorf("not a JSON object: %v", err)
	}
	e := entry{turns: []turn{{prompt: aiperfTexts(t.Text, t.Texts), output: max(t.OutputLength, 0)}}}
	if e.turns[0].prompt == "" {
		e.skip = "no text"
	}
	return e, nil
}

// parseAIPerfMulti reads one session of AIPerf's multi_turn custom
// dataset: its user turns are sent; its assistant turns are replaced by
// the answers received.
func parseAIPerfMulti(line []byte, _ string) (entry, error) {
	var s struct {
		Turns []aiperfTurn `json:"turns"`
	}
	if err := json.Unmarshal(line, &s); err != nil {
		return entry{}, fmt.Errorf("not a JSON object: %v", err)
	}
	var e entry
	for _, t := range s.Turns {
		if t.Role == "assistant" {
			continue
		}
		p := aiperfTexts(t.Text, t.Texts)
		if p == "" {
			e.skip = "a turn with no text"
		}
		e.turns = append(e.turns, turn{prompt: p, output: max(t.OutputLength, 0)})
	}
	if len(e.turns) == 0 {
		e.skip = "no user turn"
	}
	return e, nil
}

// shareGPT is one ShareGPT conversation.
type shareGPT struct {
	ID            string `json:"id"`
	Conversations []struct {
		From  string `json:"from"`
		Value string `json:"value"`
	} `json:"conversations"`
}

// toEntry makes the entry of a conversation: its human turns are the
// prompts, and each reply's length (at 4 characters a token, as its text
// is not sent) the output length asked for.
func (c shareGPT) toEntry(t Text) entry {
	var e entry
	for _, m := range c.Conversations {
		switch m.From {
		case "system":
			e.system += m.Value
		case "human", "user":
			e.turns = append(e.turns, turn{prompt: m.Value})
		case "gpt", "assistant", "chatgpt", "bing", "bard":
			if len(e.turns) > 0 && e.turns[len(e.turns)-1].output == 0 {
				e.turns[len(e.turns)-1].output = t.Tokens(len(m.Value))
			}
		}
	}
	switch {
	case len(e.turns) == 0:
		e.skip = "no human turn"
	case e.turns[0].prompt == "":
		e.skip = "an empty human turn"
	}
	for i, tt := range e.turns {
		if tt.prompt == "" { // keep the turns before an empty one
			e.turns = e.turns[:i]
			break
		}
	}
	return e
}

func parseShareGPTLine(line []byte, _ string) (entry, error) {
	var c shareGPT
	if err := json.Unmarshal(line, &c); err != nil {
		return entry{}, fmt.Errorf("not a ShareGPT conversation: %v", err)
	}
	return c.toEntry(Text{CharsPerToken: 4}), nil
}

// arrayReader streams a ShareGPT JSON array, one conversation at a time.
type arrayReader struct {
	f    *os.File
	dec  *json.Decoder
	path string
	n    int
}

func newArrayReader(f *os.File, br *bufio.Reader, path string) (*arrayReader, error) {
	r := &arrayReader{f: f, dec: json.NewDecoder(br), path: path}
	if _, err := r.dec.Token(); err != nil { // [
		f.Close()
		return nil, r.errorAt(err)
	}
	return r, nil
}

func (r *arrayReader) next() (entry, error) {
	if !r.dec.More() {
		if _, err := r.dec.Token(); err != nil { // ]
			return entry{}, r.errorAt(err)
		}
		return entry{}, io.EOF
	}
	r.n++
	var c shareGPT
	if err := r.dec.Decode(&c); err != nil {
		return entry{}, r.errorAt(err)
	}
	e := c.toEntry(Text{CharsPerToken: 4})
	e.origin = fmt.Sprintf("%s: entry %d (id %q)", r.path, r.n, c.ID)
	return e, nil
}

// errorAt names the line of the decoder's position.
func (r *arrayReader) errorAt(err error) error {
	off := r.dec.InputOffset()
	line := 1
	if f, e := os.Open(r.path); e == nil {
		defer f.Close()
		br := bufio.NewReader(io.LimitReader(f, off))
		for {
			b, e := br.ReadByte()
			if e != nil {
				break
			}
			if b == '\n' {
				line++
			}
		}
	}
	return badf("%s:%d: not a JSON array of ShareGPT conversations: %v", r.path, line, err)
}

func (r *arrayReader) close() { r.f.Close() }
