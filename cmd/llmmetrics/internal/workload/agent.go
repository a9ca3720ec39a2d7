package workload

import (
	"math/rand/v2"
	"slices"
	"time"
)

// The agent workload (-workload agent): every session is a task. Its
// first step sends the shared system prompt (Config.PrefixTokens), the
// tools (AgentTools) and the task message (Config.Input) and asks for a
// tool call; each next step sends the whole conversation so far, the
// assistant's tool call as the server returned it and the tool's result
// (AgentConfig.ToolResult tokens), after the tool's time
// (AgentConfig.ToolTime); the last step asks for the final answer
// (AgentConfig.Final tokens) and no call. A step asks for Config.Output
// tokens. docs/agents.md states where each default comes from.

// MaxSteps bounds a task's drawn steps: more than twice the 99th
// percentile (87) of the coding sessions TraceLab recorded.
const MaxSteps = 200

// Defaults of the agent workload's distributions (docs/agents.md derives
// each from its source).
const (
	// DefaultSteps: a lognormal of mean 8.8 steps a task (TraceLab: 8.8
	// model calls a request) and median 2 (its median request has one
	// tool-initiated step).
	DefaultSteps = "lognormal:8.8,37.7"
	// DefaultToolResultTokens: median 251 (TraceLab's median fresh input
	// of a step once the replayed output is removed), mean 1,180 (its
	// mean context growth a step, 1,705, less the mean output, 523).
	DefaultToolResultTokens = "lognormal:1180,5420"
	// DefaultToolTime: median 0.4 s (TraceLab's per-call medians: Claude
	// Code 129 ms, Codex 626 ms), mean 16.8 s (its mean tool latency),
	// which puts 3.3 % of calls over a minute (TraceLab: 4.0 %).
	DefaultToolTime = "lognormal:16.8s,704s"
	// DefaultStepOutputTokens and DefaultFinalTokens: median 214 and mean
	// 523 output tokens a step (TraceLab), for a tool call and the final
	// answer alike.
	DefaultStepOutputTokens = "lognormal:523,1140"
	DefaultFinalTokens      = DefaultStepOutputTokens
	// DefaultTaskTokens is the task message: 811 tokens, TraceLab's mean
	// new input of a user-initiated step (its spread is not published).
	DefaultTaskTokens = "811"
	// DefaultSystemTokens is the shared system prompt: 2,600 tokens,
	// Claude Code's system prompt as its /context command counts it.
	DefaultSystemTokens = 2600
)

// AgentConfig shapes the agent workload's tasks.
type AgentConfig struct {
	// Steps is the number of steps (requests) of a task, clamped to
	// [1, MaxSteps]: 1 is a task answered at once.
	Steps Dist
	// ToolResult is the length of a tool's result, in tokens.
	ToolResult Dist
	// ToolTime is how long a tool runs: the pause between a step's
	// answer and the next step.
	ToolTime DurationDist
	// Final is the output length asked of the last step (the answer).
	Final Dist
	// Tools are the tools offered (default AgentTools).
	Tools []Tool
}

// agentPlan is a task's drawn shape.
type agentPlan struct {
	task  string      // the task message
	steps []agentStep // one per step
	seed  uint64      // of the tools' results
	// missed counts the steps that asked for a call and got text.
	missed int
}

// agentStep is one step's drawn shape.
type agentStep struct {
	output   int           // output tokens asked
	result   int           // tokens of the result of its call (not the last step's)
	toolTime time.Duration // its tool's time (not the last step's)
}

// kindTool is the seeded stream of the tools' results.
const kindTool = kindMain + 1

// newTask draws a task in session order from rng.
func newTask(c *Config, rng *rand.Rand) *agentPlan {
	a := c.Agent
	n := min(max(a.Steps.Draw(rng), 1), MaxSteps)
	in := max(c.Input.Draw(rng)-c.Overhead, 1)
	p := &agentPlan{task: c.Text.Words(rng, in), steps: make([]agentStep, n), seed: rng.Uint64()}
	for i := range p.steps {
		st := &p.steps[i]
		if i == n-1 {
			st.output = a.Final.Draw(rng)
			break
		}
		st.output = drawOutput(c, rng)
		st.result = a.ToolResult.Draw(rng)
		st.toolTime = a.ToolTime.Draw(rng)
	}
	return p
}

// agentSession returns the task of session number n.
func (w *Workload) agentSession(rng *rand.Rand) *Session {
	c := &w.cfg
	s := &Session{group: -1, agent: newTask(c, rng), tools: c.Agent.Tools}
	if c.PrefixTokens > 0 {
		s.group = w.sessions % c.PrefixGroups
		s.system = w.prefix(s.group)
	}
	s.n = len(s.agent.steps)
	return s
}

// Missed returns how many of the task's steps asked for a tool call and
// were answered without one.
func (s *Session) Missed() int {
	if s.agent == nil {
		return 0
	}
	return s.agent.missed
}

// nextStep returns the task's next step.
func (s *Session) nextStep() Request {
	p := s.agent
	if s.sent == 0 {
		s.remember(Message{Role: "user", Content: p.task}, 0)
	}
	st := p.steps[s.sent]
	s.sent++
	choice := ChoiceRequired
	if s.sent == s.n {
		choice = ChoiceNone
	}
	return s.request(slices.Clone(s.history), st.output, choice)
}

// request returns a step of the session.
func (s *Session) request(msgs []Message, out int, choice string) Request {
	return Request{
		System: s.system, Messages: msgs, InputTokens: s.inputTokens(msgs, s.tools, choice),
		OutputTokens: out, PrefixGroup: s.group, Session: s.id, Turn: s.sent,
		Arrival: s.arrival, Origin: s.origin, Tools: s.tools, ToolChoice: choice,
	}
}

// answerStep records the answer to a step: the assistant's message as
// the server returned it, then the result of each of its calls, or, when
// it made none (a model that ignored the tool choice, or one that cannot
// be forced), its text and the result as a user message, so the task
// goes on with the context it would have had.
func (s *Session) answerStep(a Answer, tokens int) {
	p := s.agent
	k := s.sent - 1
	s.remember(Message{Role: "assistant", Content: a.Text, ToolCalls: a.ToolCalls}, tokens)
	if s.sent >= s.n {
		return
	}
	st := p.steps[k]
	s.pause = st.toolTime
	result := func(i int) string {
		return s.w.cfg.Text.Words(seeded(p.seed, kindTool, uint64(k)<<8|uint64(i)), st.result)
	}
	if len(a.ToolCalls) == 0 {
		p.missed++
		s.remember(Message{Role: "user", Content: result(0)}, 0)
		return
	}
	for i, c := range a.ToolCalls {
		s.remember(Message{Role: "tool", Content: result(i), ToolCallID: c.ID, ToolName: c.Name}, 0)
	}
}

// replayConv is a recorded agent conversation (an OpenAI-messages line
// with tool calls): each assistant turn is one request, its input the
// messages before it.
type replayConv struct {
	conv    []Message
	turns   []int // index in conv of each assistant turn
	outputs []int // the output tokens asked of each
}

// nextReplayed returns the conversation's next recorded turn.
func (s *Session) nextReplayed() Request {
	r := s.replay
	k := s.sent
	s.sent++
	msgs := slices.Clone(r.conv[:r.turns[k]])
	choice := ChoiceAuto
	if len(r.conv[r.turns[k]].ToolCalls) > 0 {
		choice = ChoiceRequired
	}
	if len(s.tools) == 0 {
		choice = ChoiceAuto
	}
	return s.request(msgs, r.outputs[k], choice)
}

// checkAgent checks the agent workload's configuration and fills its
// defaults: the tools, and one shared system prompt group.
func checkAgent(c *Config) error {
	switch {
	case c.Dataset != "":
		c.Agent = nil // the dataset's recorded conversations are the tasks
		return nil
	case c.Trace != "":
		return badf("-workload agent sends tasks of its own: drop -trace")
	case c.Turns > 1:
		return badf("-workload agent's tasks have -steps, not -turns")
	case c.ThinkTime > 0:
		return badf("-workload agent pauses for its tools (-tool-time), not -think-time")
	case !HasTools(c.API) && c.API != "":
		return badf("-workload agent needs an API with tools: the %s API has none", c.API)
	}
	a := c.Agent
	for _, d := range []*Dist{&a.Steps, &a.ToolResult, &a.Final} {
		if d.Kind == "" {
			return badf("-workload agent: -steps, -tool-result-tokens and -final-tokens need a distribution")
		}
	}
	a.Steps.Max = MaxSteps
	a.ToolResult.Max, a.Final.Max = c.Context, c.Context
	if a.Tools == nil {
		a.Tools = AgentTools
	}
	return nil
}
