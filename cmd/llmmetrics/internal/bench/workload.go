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
	fs.StringVar(&f.profile, "workload", "", "use-case profile setting lengths and SLO together: chat, code, summarize, rag, long")
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
			return usagef("-workload %q: want chat, code, summarize, rag or long", f.profile)
		}
		if !f.set["input-tokens"] && f.promptWords == 0 {
			f.input = p.Input
		}
		if !f.set["output-tokens"] && f.maxTokens == 0 {
			f.output = p.Output
		}
		if !f.set["prefix-tokens"] && p.PrefixTokens > 0 && f.trace == "" {
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
		TimeScale: f.timeScale, Seed: seed}
	if f.trace != "" {
		c.Output = workload.Dist{} // the trace gives each output length
	}
	return c
}

// sharesPrefixes reports whether requests share prefixes (the fake
// server's content prefix cache is then on).
func (f *workloadFlags) sharesPrefixes() bool {
	return f.prefixTokens > 0 || f.turns > 1 || f.trace != "" || f.dataset != ""
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
