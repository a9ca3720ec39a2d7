// Package workload builds the requests "llmmetrics bench" sends: a
// deterministic source (the same Config, Seed included, gives byte-identical
// request bodies) of sessions, each of one or more turns. A turn is a
// Request: its messages (shared prefix, history, prompt), the input and
// output lengths it asks for, its prefix group, session and turn, and, when
// a trace is replayed, its arrival time.
//
// Requests are built as they are asked for: a dataset or trace file is
// read once to check it (Open), then streamed again while the run goes,
// never held whole. A session's next turn carries the earlier turns and the
// answers actually received, which the caller feeds back with
// Session.Answer.
package workload

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// Message is one message of a request: Role "user", "assistant" or
// "tool" (a tool's result).
type Message struct {
	Role    string
	Content string
	// ToolCalls are an assistant message's calls, as the server returned
	// them.
	ToolCalls []ToolCall
	// ToolCallID and ToolName name the call a tool message answers.
	ToolCallID, ToolName string
}

// Request is one request to send (one turn of a session).
type Request struct {
	// System is the system prompt ("" none): the shared prefix of
	// -prefix-tokens, or a dataset's system message.
	System string
	// Messages are the earlier turns (user and assistant, as answered)
	// then the prompt, a user message, last.
	Messages []Message
	// InputTokens is the input length asked for, as the server counts it
	// (system, history and prompt, template overhead included).
	InputTokens int
	// OutputTokens is the output length asked for (max tokens); 0: none
	// (the server decides).
	OutputTokens int
	// PrefixGroup is the shared prefix's group (0…G−1), or −1 for none.
	PrefixGroup int
	// Session numbers the session from 0 in the order sessions start;
	// Turn numbers its turns from 1.
	Session, Turn int
	// Arrival is when to send the request, from the start of the run
	// (trace replay only, see Workload.Replay).
	Arrival time.Duration
	// Origin names a dataset or trace entry ("file:line"), "" otherwise.
	Origin string
	// Tools are the tools offered (nil: none); ToolChoice says whether a
	// call is forced (ChoiceRequired), refused (ChoiceNone) or left to
	// the model (ChoiceAuto).
	Tools      []Tool
	ToolChoice string
}

// Config is what a Workload is built from. The zero value of each field is
// documented; Open checks the combination.
type Config struct {
	// Input and Output are the synthetic lengths in tokens (Output also
	// the max tokens of datasets' entries that give none). Input counts
	// the prompt after the shared prefix. Output's zero value (no Kind)
	// asks for no max tokens.
	Input, Output Dist
	// Dataset is a local file of prompts ("": synthetic): ShareGPT JSON,
	// JSONL of OpenAI chat requests, AIPerf single- or multi-turn JSONL,
	// or prompts one per line, detected from the content.
	Dataset string
	// PrefixTokens is the length of the shared system prompts (0: none);
	// PrefixGroups how many distinct ones (default 1). Session n uses
	// group n mod PrefixGroups.
	PrefixTokens, PrefixGroups int
	// Turns is the number of turns of a session (default 1); a dataset
	// with sessions of its own (ShareGPT conversations, AIPerf multi-turn)
	// gives up to Turns of them (0: a ShareGPT conversation's first, all
	// of an AIPerf session).
	Turns int
	// ThinkTime is the pause between an answer and the session's next turn.
	ThinkTime time.Duration
	// Trace is a Mooncake trace to replay ("": none); TimeScale multiplies
	// its timestamps (default 1; 0.5 replays twice as fast).
	Trace     string
	TimeScale float64
	// Seed seeds every drawn length and word.
	Seed uint64
	// Context is the model's context length in tokens (0: unknown). Drawn
	// lengths are clamped to it; a dataset or trace prompt longer than it
	// is an error.
	Context int
	// Text turns token lengths into text (CharsPerToken 0: 4).
	Text Text
	// Overhead is the tokens the server adds to every request's input
	// (its chat template), subtracted from the synthetic prompt so that
	// the server counts the length asked for.
	Overhead int
	// SystemOverhead is the tokens the template adds for a system message
	// beyond its text (negative when the message replaces a default system
	// prompt); TurnOverhead those it adds for each earlier exchange (an
	// answer and the user message after it) beyond their text;
	// ToolsOverhead those it adds for the tools offered beyond their
	// definitions' text; ToolCallOverhead those it adds for each tool call
	// and its result beyond their text. All count in Request.InputTokens.
	SystemOverhead, TurnOverhead, ToolsOverhead, ToolCallOverhead int
	// API is the -api the requests are sent in: what a request asks for
	// no call and how a call's arguments are sent change what the server
	// counts (Body).
	API string
	// Agent, when set, makes every session an agent's task (agent.go).
	Agent *AgentConfig
}

// Info describes the workload for results.json.
type Info struct {
	Source       string   `json:"source"`            // "synthetic", "dataset" or "trace"
	Format       string   `json:"format,omitempty"`  // the detected file format
	Path         string   `json:"path,omitempty"`    // the dataset or trace file
	SHA256       string   `json:"sha256,omitempty"`  // of the file's content
	Entries      int      `json:"entries,omitempty"` // usable entries in the file
	Skipped      []string `json:"skipped,omitempty"` // entries that cannot be sent (the first 20), each "file:line: why"
	SkippedCount int      `json:"skipped_count,omitempty"`
	// Span is the trace's duration at the time scale.
	Span time.Duration `json:"span_ns,omitempty"`
	// ToolConversations counts the entries replayed as agents' tasks
	// (conversations with tool calls, each assistant turn a request).
	ToolConversations int `json:"tool_conversations,omitempty"`
}

// Workload is a source of sessions. Next is safe for concurrent use.
type Workload struct {
	cfg  Config
	info Info

	mu       sync.Mutex
	src      source
	sessions int            // started so far
	prefixes map[int]string // the shared system prompts made so far, by group
}

// source yields the turns of the next session; io.EOF at the end of a trace.
type source interface {
	next(w *Workload) (*Session, error)
	close()
}

// ErrBadInput wraps every error about the user's input (flags, files): the
// command exits 2 on it.
var ErrBadInput = errors.New("bad input")

func badf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrBadInput}, args...)...)
}

// Open checks cfg and its files (reading them through once, without
// holding them) and returns the workload.
func Open(cfg Config) (*Workload, error) {
	if cfg.Text.CharsPerToken <= 0 {
		cfg.Text.CharsPerToken = 4
	}
	if cfg.TimeScale == 0 {
		cfg.TimeScale = 1
	}
	if cfg.Turns == 0 && cfg.Dataset == "" {
		cfg.Turns = 1
	}
	if cfg.PrefixTokens > 0 && cfg.PrefixGroups == 0 {
		cfg.PrefixGroups = 1
	}
	if cfg.Input.Kind == "" {
		cfg.Input = Dist{Kind: "fixed", A: 170}
	}
	switch {
	case cfg.Turns < 0, cfg.PrefixTokens < 0, cfg.PrefixGroups < 0, cfg.ThinkTime < 0, cfg.Context < 0:
		return nil, badf("-turns, -prefix-tokens, -prefix-groups, -think-time must be ≥ 0")
	case cfg.TimeScale < 0 || cfg.TimeScale != cfg.TimeScale:
		return nil, badf("-time-scale must be > 0")
	case cfg.Trace != "" && cfg.Dataset != "":
		return nil, badf("give -trace or -dataset, not both")
	case cfg.Trace != "" && (cfg.PrefixTokens > 0 || cfg.Turns > 1):
		return nil, badf("-trace carries its own shared prefixes (hash_ids) and has no sessions: drop -prefix-tokens and -turns")
	case cfg.PrefixGroups > 0 && cfg.PrefixTokens == 0:
		return nil, badf("-prefix-groups needs -prefix-tokens")
	}
	if cfg.Agent != nil {
		if err := checkAgent(&cfg); err != nil {
			return nil, err
		}
	}
	cfg.Input.Max = cfg.Context
	cfg.Output.Max = cfg.Context
	w := &Workload{cfg: cfg, info: Info{Source: "synthetic"}}
	var err error
	switch {
	case cfg.Trace != "":
		w.src, err = openTrace(w)
	case cfg.Dataset != "":
		w.src, err = openDataset(w)
	default:
		w.src = &synthetic{rng: seeded(cfg.Seed, kindMain, 0)}
	}
	if err != nil {
		return nil, err
	}
	return w, nil
}

// Info returns what the workload is, for results.json.
func (w *Workload) Info() Info { return w.info }

// Agent reports whether the sessions are agents' tasks: the agent
// workload's, or a dataset's recorded conversations with tool calls.
func (w *Workload) Agent() bool { return w.cfg.Agent != nil || w.info.ToolConversations > 0 }

// Replay reports whether requests carry arrival times (a trace).
func (w *Workload) Replay() bool { return w.cfg.Trace != "" }

// Config returns the configuration in use, defaults applied.
func (w *Workload) Config() Config { return w.cfg }

// Next returns the next session; io.EOF when a trace is done (a dataset
// starts again from its first entry).
func (w *Workload) Next() (*Session, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s, err := w.src.next(w)
	if err != nil {
		return nil, err
	}
	s.id = w.sessions
	w.sessions++
	s.w = w
	return s, nil
}

// Close releases the files the workload reads.
func (w *Workload) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.src.close()
}

// prefix returns the shared system prompt of group g (made once; the
// caller holds w.mu).
func (w *Workload) prefix(g int) string {
	if p, ok := w.prefixes[g]; ok {
		return p
	}
	if w.prefixes == nil {
		w.prefixes = map[int]string{}
	}
	p := w.cfg.Text.Words(seeded(w.cfg.Seed, kindPrefix, uint64(g)), w.cfg.PrefixTokens)
	w.prefixes[g] = p
	return p
}

// turn is one turn of a session as its source gives it.
type turn struct {
	prompt string // the user message
	output int    // asked output tokens (0: none)
}

// Session is one conversation: its turns are sent one after the other,
// each with the earlier turns and their answers. An agent session (a task,
// agent.go) sends steps: each the whole conversation so far, with the
// tools. A Session is used by one goroutine at a time.
type Session struct {
	w       *Workload
	id      int
	system  string
	group   int
	turns   []turn
	gen     func(i int) turn // synthetic turns, made when needed (turns nil)
	n       int              // number of turns
	arrival time.Duration
	origin  string

	history []Message
	known   []int // tokens of history[i] the server reported (0: not known)
	sent    int   // turns made so far

	agent  *agentPlan  // a synthetic agent task (nil: none)
	replay *replayConv // a recorded agent conversation (nil: none)
	tools  []Tool      // the tools offered (agent and replay)
	pause  time.Duration
}

// Len returns the number of turns of the session.
func (s *Session) Len() int { return s.n }

// Agent reports whether the session is an agent's task (synthetic or
// replayed): its turns are steps.
func (s *Session) Agent() bool { return s.agent != nil || s.replay != nil }

// ThinkTime returns the pause between the last answer and the next turn:
// -think-time, or, for an agent's task, the drawn time of the tool its
// last step called.
func (s *Session) ThinkTime() time.Duration {
	if s.agent != nil {
		return s.pause
	}
	return s.w.cfg.ThinkTime
}

// ToolTime returns the time a synthetic task's tools take in all (0 for
// other sessions).
func (s *Session) ToolTime() time.Duration {
	if s.agent == nil {
		return 0
	}
	var d time.Duration
	for _, st := range s.agent.steps[:len(s.agent.steps)-1] {
		d += st.toolTime
	}
	return d
}

// Next returns the session's next turn, false when the session is done.
// Call Answer with the answer to a turn before asking for the next one.
func (s *Session) Next() (Request, bool) {
	if s.sent >= s.n {
		return Request{}, false
	}
	switch {
	case s.agent != nil:
		return s.nextStep(), true
	case s.replay != nil:
		return s.nextReplayed(), true
	}
	var t turn
	if s.turns != nil {
		t = s.turns[s.sent]
	} else {
		t = s.gen(s.sent)
	}
	s.sent++
	msgs := make([]Message, 0, len(s.history)+1)
	msgs = append(append(msgs, s.history...), Message{Role: "user", Content: t.prompt})
	s.history = append(s.history, Message{Role: "user", Content: t.prompt})
	return Request{
		System: s.system, Messages: msgs, InputTokens: s.inputTokens(msgs, nil, ChoiceAuto),
		OutputTokens: t.output, PrefixGroup: s.group, Session: s.id, Turn: s.sent,
		Arrival: s.arrival, Origin: s.origin,
	}, true
}

// inputTokens is what the server counts for the system prompt, the tools
// and msgs: their text (tool definitions and calls as tools.go says), the
// template's overhead, its overhead for a system message, for each
// earlier exchange and for the tools, and, with a counted Text, the
// answers' output tokens the server reported in place of their text's
// count.
func (s *Session) inputTokens(msgs []Message, tools []Tool, choice string) int {
	c := &s.w.cfg
	n := c.Overhead
	texts := make([]string, 0, len(msgs)+1)
	if s.system != "" {
		texts = append(texts, s.system)
		n += c.SystemOverhead
	}
	if len(tools) > 0 && (c.API != "ollama" || choice != ChoiceNone) { // Ollama's request asking for no call offers none
		n += c.ToolsOverhead
		for _, t := range tools {
			texts = append(texts, t.toolTexts()...)
		}
	}
	for i, m := range msgs {
		if i < len(s.known) && s.known[i] > 0 && c.Text.Counted() {
			n += s.known[i]
		} else {
			texts = append(texts, m.Content)
			for _, tc := range m.ToolCalls {
				texts = append(texts, tc.callTexts(c.API)...)
			}
		}
		if m.Role == "assistant" {
			n += c.TurnOverhead + c.ToolCallOverhead*len(m.ToolCalls)
		}
	}
	return n + c.Text.Count(texts...)
}

// Answer records the answer to the last turn, sent with the next turns,
// and the output tokens the server reported for it (0: not known). An
// empty answer (a failed request) ends the session: the next turn would
// not be the conversation asked for.
func (s *Session) Answer(text string, tokens int) { s.AnswerWith(Answer{Text: text}, tokens) }

// AnswerWith is Answer with the answer's tool calls: an agent's step
// sends them back with their results in the next step. A replayed
// conversation sends its recorded turns whatever the answers.
func (s *Session) AnswerWith(a Answer, tokens int) {
	switch {
	case s.replay != nil:
		return
	case a.Text == "" && len(a.ToolCalls) == 0:
		s.n = s.sent
		return
	case s.agent != nil:
		s.answerStep(a, tokens)
		return
	}
	s.remember(Message{Role: "assistant", Content: a.Text}, tokens)
}

// remember appends m to the history with the tokens the server reported
// for it (0: not known).
func (s *Session) remember(m Message, tokens int) {
	for len(s.known) < len(s.history) {
		s.known = append(s.known, 0)
	}
	s.history = append(s.history, m)
	s.known = append(s.known, max(tokens, 0))
}

// synthetic draws lengths from Config.Input and Output.
type synthetic struct{ rng *rand.Rand }

func (g *synthetic) next(w *Workload) (*Session, error) {
	c := &w.cfg
	if c.Agent != nil {
		return w.agentSession(g.rng), nil
	}
	s := &Session{n: max(c.Turns, 1), group: -1}
	if c.PrefixTokens > 0 {
		s.group = w.sessions % c.PrefixGroups
		s.system = w.prefix(s.group)
	}
	// The turns' lengths and words are drawn now, in session order, so the
	// bodies do not depend on which session's turn goes first.
	s.turns = make([]turn, s.n)
	for i := range s.turns {
		in := c.Input.Draw(g.rng)
		if i == 0 {
			in = max(in-c.Overhead, 1)
		}
		s.turns[i] = turn{prompt: c.Text.Words(g.rng, in), output: drawOutput(c, g.rng)}
	}
	return s, nil
}

func drawOutput(c *Config, rng *rand.Rand) int {
	if c.Output.Kind == "" {
		return 0
	}
	return c.Output.Draw(rng)
}

func (*synthetic) close() {}
