package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/llmmetrics/llmmetrics/cmd/llmmetrics/internal/workload"
)

// ModeReplay: a trace's requests sent open-loop at their recorded times
// (-trace); the level's load is the replay speed (1 / -time-scale).
const ModeReplay Mode = "replay"

// workloadFlags are the flags of DESIGN §8: what each request is.
type workloadFlags struct {
	api          string
	profile      string
	input        string
	output       string
	ignoreEOS    bool
	dataset      string
	prefixTokens int
	prefixGroups int
	turns        int
	thinkTime    time.Duration
	trace        string
	timeScale    float64
	promptWords  int // older spelling of -input-tokens
	maxTokens    int // older spelling of -output-tokens
	set          map[string]bool
	agent        agentFlags
}

// agentFlags shape -workload agent's tasks (docs/agents.md).
type agentFlags struct {
	steps, toolResult, toolTime, final string
	// taskLatency bounds a good task's latency (0: no bound).
	taskLatency time.Duration
	// goodputBy is what the saturation verdict and -search judge the SLO
	// by: "task" (every step of a task met it) or "request".
	goodputBy string
}

// defaultInput and defaultOutput are the lengths of the default run: about
// the 100 words and 128-token cap the fake server's defaults are tuned for
// (its knee at 32 concurrent requests).
const (
	defaultInput  = "170"
	defaultOutput = "128"
)

func (f *workloadFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.api, "api", "chat", "API to load: "+strings.Join(workload.APIs, ", "))
	fs.StringVar(&f.profile, "workload", "", "use-case profile setting lengths and SLO together: chat, code, summarize, rag, long, or agent (tasks of tool-calling steps, docs/agents.md)")
	fs.StringVar(&f.input, "input-tokens", defaultInput, "prompt length in tokens (after the shared prefix): N, uniform:MIN-MAX, normal:MEAN,SD or lognormal:MEAN,SD")
	fs.StringVar(&f.output, "output-tokens", defaultOutput, "output length asked (max tokens): N or a distribution as -input-tokens")
	fs.BoolVar(&f.ignoreEOS, "ignore-eos", false, "ask for exactly the output length (chat and completions: ignore_eos, as vLLM and llama.cpp take it)")
	fs.StringVar(&f.dataset, "dataset", "", "local file of prompts: ShareGPT JSON, OpenAI-messages JSONL, AIPerf JSONL or prompts one per line")
	fs.IntVar(&f.prefixTokens, "prefix-tokens", 0, "shared system prompt length in tokens (0: none)")
	fs.IntVar(&f.prefixGroups, "prefix-groups", 0, "number of distinct shared system prompts (default 1 with -prefix-tokens)")
	fs.IntVar(&f.turns, "turns", 0, "turns per session, each sending the earlier turns and answers (default 1; a dataset's sessions: all)")
	fs.DurationVar(&f.thinkTime, "think-time", 0, "pause between an answer and the session's next turn")
	fs.StringVar(&f.trace, "trace", "", "Mooncake JSONL trace to replay open-loop at its recorded times")
	fs.Float64Var(&f.timeScale, "time-scale", 1, "with -trace: multiply the recorded times by this (0.5: twice as fast)")
	fs.IntVar(&f.promptWords, "prompt-words", 0, "older spelling of -input-tokens N")
	fs.IntVar(&f.maxTokens, "max-tokens", 0, "older spelling of -output-tokens N")
	a := &f.agent
	fs.StringVar(&a.steps, "steps", workload.DefaultSteps, "with -workload agent: steps (requests) of a task, a distribution as -input-tokens")
	fs.StringVar(&a.toolResult, "tool-result-tokens", workload.DefaultToolResultTokens, "with -workload agent: tokens of a tool's result, a distribution as -input-tokens")
	fs.StringVar(&a.toolTime, "tool-time", workload.DefaultToolTime, "with -workload agent: how long a tool runs before the next step: D, uniform:MIN-MAX, normal:MEAN,SD or lognormal:MEAN,SD of durations (at most "+workload.MaxToolTime.String()+")")
	fs.StringVar(&a.final, "final-tokens", workload.DefaultFinalTokens, "with -workload agent: output tokens asked of a task's last step (its answer), a distribution as -input-tokens")
	fs.DurationVar(&a.taskLatency, "task-latency", 0, "with -workload agent or a dataset of agent conversations: the longest a good task may take, first send to final answer (0: no limit)")
	fs.StringVar(&a.goodputBy, "goodput-by", "", "what the saturation verdict and -search judge the SLO by: task (every step of a task met it; the default for agents' tasks) or request")
}

// agentFlagNames are the flags only agents' tasks take.
var agentFlagNames = []string{"steps", "tool-result-tokens", "tool-time", "final-tokens"}

// isAgent reports whether the workload is -workload agent.
func (f *workloadFlags) isAgent() bool { return f.profile == "agent" }

// validateAgent checks the agent flags.
func (f *workloadFlags) validateAgent() error {
	a := &f.agent
	for _, n := range agentFlagNames {
		if f.set[n] && !f.isAgent() {
			return usagef("-%s needs -workload agent", n)
		}
		if f.set[n] && f.dataset != "" {
			return usagef("-%s: the dataset's recorded conversations give the tasks' shape; drop it", n)
		}
	}
	switch a.goodputBy {
	case "", "task", "request":
	default:
		return usagef("-goodput-by %q: want task or request", a.goodputBy)
	}
	if a.taskLatency < 0 {
		return usagef("-task-latency must be ≥ 0")
	}
	if !f.isAgent() {
		return nil
	}
	switch {
	case !workload.HasTools(f.api):
		return usagef("-workload agent needs an API with tools: the %s API has none (use chat, responses, anthropic, gemini or ollama)", f.api)
	case f.set["think-time"]:
		return usagef("-workload agent pauses for its tools: give -tool-time, not -think-time")
	case f.set["turns"]:
		return usagef("-workload agent's tasks have -steps, not -turns")
	case f.trace != "":
		return usagef("-workload agent sends its own tasks: drop -trace")
	}
	for _, d := range []struct{ name, v string }{{"steps", a.steps}, {"tool-result-tokens", a.toolResult}, {"final-tokens", a.final}} {
		if _, err := workload.ParseDist(d.v); err != nil {
			return usagef("-%s: %v", d.name, err)
		}
	}
	if _, err := workload.ParseDurationDist(a.toolTime); err != nil {
		return usagef("-tool-time: %v", err)
	}
	return nil
}

// agentConfig returns the agent workload's configuration (nil: not one).
func (f *workloadFlags) agentConfig() *workload.AgentConfig {
	if !f.isAgent() || f.dataset != "" {
		return nil
	}
	a := &f.agent
	steps, _ := workload.ParseDist(a.steps)
	result, _ := workload.ParseDist(a.toolResult)
	final, _ := workload.ParseDist(a.final)
	toolTime, _ := workload.ParseDurationDist(a.toolTime)
	return &workload.AgentConfig{Steps: steps, ToolResult: result, ToolTime: toolTime, Final: final}
}

// validate checks the workload flags and applies the profile (flags set
// explicitly win) to f and o's SLO.
func (f *workloadFlags) validate(fs *flag.FlagSet, o *options) error {
	f.set = map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })
	if !slices.Contains(workload.APIs, f.api) {
		return usagef("-api %q: want one of %s", f.api, strings.Join(workload.APIs, ", "))
	}
	if f.ignoreEOS && !workload.HasIgnoreEOS(f.api) {
		return usagef("-ignore-eos: the %s API has no ignore-EOS setting (chat and completions have)", f.api)
	}
	if f.promptWords < 0 || f.maxTokens < 0 {
		return usagef("-prompt-words and -max-tokens must be ≥ 1")
	}
	if f.promptWords > workload.MaxLength {
		return usagef("-prompt-words must be ≤ %d", workload.MaxLength)
	}
	if f.promptWords != 0 {
		if f.set["input-tokens"] {
			return usagef("give -input-tokens or -prompt-words, not both")
		}
		f.input = fmt.Sprint(f.promptWords)
	}
	if f.maxTokens != 0 {
		if f.set["output-tokens"] {
			return usagef("give -output-tokens or -max-tokens, not both")
		}
		f.output = fmt.Sprint(f.maxTokens)
	}
	if f.profile != "" {
		p, ok := workload.ProfileNamed(f.profile)
		if !ok {
			return usagef("-workload %q: want chat, code, summarize, rag, long or agent", f.profile)
		}
		if !f.set["input-tokens"] && f.promptWords == 0 {
			f.input = p.Input
		}
		if !f.set["output-tokens"] && f.maxTokens == 0 {
			f.output = p.Output
		}
		if !f.set["prefix-tokens"] && p.PrefixTokens > 0 && f.trace == "" && !(f.isAgent() && f.dataset != "") { // a recorded conversation keeps its own system prompt
			f.prefixTokens, f.prefixGroups = p.PrefixTokens, max(f.prefixGroups, p.PrefixGroups)
		}
		if !f.set["slo"] {
			o.slo = p.SLO
		}
	}
	if _, err := workload.ParseDist(f.input); err != nil {
		return usagef("-input-tokens: %v", err)
	}
	if _, err := workload.ParseDist(f.output); err != nil {
		return usagef("-output-tokens: %v", err)
	}
	if f.trace != "" {
		if f.set["concurrency"] || f.set["rates"] || o.search {
			return usagef("-trace sets the arrival times: drop -concurrency, -rates and -search")
		}
		if !(f.timeScale > 0) {
			return usagef("-time-scale must be > 0")
		}
	} else if f.set["time-scale"] {
		return usagef("-time-scale needs -trace")
	}
	if err := f.validateAgent(); err != nil {
		return err
	}
	if f.set["think-time"] && f.turns < 2 && f.dataset == "" {
		return usagef("-think-time needs -turns ≥ 2 (or a dataset of sessions)")
	}
	return nil
}

// config returns the workload configuration of the flags.
func (f *workloadFlags) config(seed uint64) workload.Config {
	in, _ := workload.ParseDist(f.input)
	out, _ := workload.ParseDist(f.output)
	c := workload.Config{Input: in, Output: out, Dataset: f.dataset, PrefixTokens: f.prefixTokens,
		PrefixGroups: f.prefixGroups, Turns: f.turns, ThinkTime: f.thinkTime, Trace: f.trace,
		TimeScale: f.timeScale, Seed: seed, API: f.api, Agent: f.agentConfig()}
	if f.trace != "" {
		c.Output = workload.Dist{} // the trace gives each output length
	}
	return c
}

// sharesPrefixes reports whether requests share prefixes (the fake
// server's content prefix cache is then on).
func (f *workloadFlags) sharesPrefixes() bool {
	return f.prefixTokens > 0 || f.turns > 1 || f.trace != "" || f.dataset != "" || f.isAgent()
}

// Workload is the workload section of results.json.
type Workload struct {
	API string `json:"api"`
	// Flags are the workload flags as given (profile applied).
	Flags map[string]string `json:"flags"`
	workload.Info
	// TokenCounting says how prompts are sized to the server's count.
	TokenCounting string `json:"token_counting"`
}

// workloadResults describes the workload for results.json.
func (b *bench) workloadResults() *Workload {
	f := &b.o.wl
	flags := map[string]string{"input-tokens": f.input, "output-tokens": f.output}
	add := func(name string, ok bool, v any) {
		if ok {
			flags[name] = fmt.Sprint(v)
		}
	}
	add("workload", f.profile != "", f.profile)
	add("ignore-eos", f.ignoreEOS, f.ignoreEOS)
	add("dataset", f.dataset != "", f.dataset)
	add("prefix-tokens", f.prefixTokens > 0, f.prefixTokens)
	add("prefix-groups", f.prefixTokens > 0, max(f.prefixGroups, 1))
	add("turns", f.turns > 0, f.turns)
	add("think-time", f.thinkTime > 0, f.thinkTime)
	add("trace", f.trace != "", f.trace)
	add("time-scale", f.trace != "", f.timeScale)
	add("seed", true, b.o.seed)
	if f.isAgent() && f.dataset == "" {
		a := &f.agent
		add("steps", true, a.steps)
		add("tool-result-tokens", true, a.toolResult)
		add("tool-time", true, a.toolTime)
		add("final-tokens", true, a.final)
	}
	add("task-latency", f.agent.taskLatency > 0, f.agent.taskLatency)
	if f.trace != "" {
		delete(flags, "input-tokens")
		delete(flags, "output-tokens")
	}
	return &Workload{API: f.api, Flags: flags, Info: b.wl.Info(), TokenCounting: b.counting}
}

// isBadInput reports whether err is the user's (exit 2).
func isBadInput(err error) bool { return errors.Is(err, workload.ErrBadInput) }

// checkWorkload checks the workload's flags and files before any request
// is sent: with the fake server it opens the workload; with a real one,
// whose context and token counting are not known yet, it reads the files
// through once.
func (b *bench) checkWorkload(ctx context.Context) error {
	if b.fake != nil {
		return b.openWorkload(ctx)
	}
	wl, err := workload.Open(b.o.wl.config(b.o.seed))
	if err != nil {
		return err
	}
	wl.Close()
	return nil
}

// openWorkload opens the run's workload once the server is known: its
// context length bounds the lengths, its token counting sizes the prompts.
func (b *bench) openWorkload(ctx context.Context) error {
	if b.wl != nil {
		return nil
	}
	cfg := b.o.wl.config(b.o.seed)
	cal := b.calibrate(ctx, cfg)
	cfg.Text, cfg.Overhead, cfg.Context = cal.text, cal.overhead, cal.context
	cfg.SystemOverhead, cfg.TurnOverhead = cal.systemOverhead, cal.turnOverhead
	cfg.ToolsOverhead, cfg.ToolCallOverhead = cal.toolsOverhead, cal.toolCallOverhead
	b.counting = cal.how
	wl, err := workload.Open(cfg)
	if err != nil {
		return err
	}
	b.wl = wl
	info := wl.Info()
	fmt.Fprintf(b.e.stderr, "llmmetrics bench: workload: %s; token counting: %s\n", describeWorkload(b.workloadResults()), b.counting)
	if info.SkippedCount > 0 {
		fmt.Fprintf(b.e.stderr, "llmmetrics bench: warning: %d dataset entries cannot be sent and are skipped, e.g. %s\n", info.SkippedCount, info.Skipped[0])
	}
	return nil
}

// fakePrefixCacheBlocks is the fake server's prefix cache when the
// workload shares prefixes: 65,536 blocks of 16 tokens (1M tokens), room
// for every prefix of a demo run.
const fakePrefixCacheBlocks = 1 << 16

// fakeAgentKVBudget is the fake server's KV cache with -workload agent,
// in tokens.
const fakeAgentKVBudget = 1 << 20
