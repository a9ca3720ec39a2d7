package bench

import (
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"
	"strings"
	"time"

	"github.com/llmmetrics/llmmetrics"
)

// Lengths compares a level's asked and actual lengths (results.json).
type Lengths struct {
	// Requests counts the completed requests compared.
	Requests int `json:"requests"`
	// Asked and actual input and output lengths, in tokens: the actual
	// ones are what the server reported in its usage.
	AskedInput   Spread `json:"asked_input_tokens"`
	ActualInput  Spread `json:"actual_input_tokens"`
	AskedOutput  Spread `json:"asked_output_tokens"`
	ActualOutput Spread `json:"actual_output_tokens"`
	// InputWithin is the fraction of requests whose actual input length is
	// within ±2 % or ±2 tokens (the larger) of the asked one.
	InputWithin float64 `json:"input_within"`
	// OutputShort is the fraction of requests asking for an output length
	// that got fewer tokens (the server stopped early); OutputLong those
	// that got more (the server ignored the max tokens).
	OutputShort float64 `json:"output_short"`
	OutputLong  float64 `json:"output_long"`
	// TTFTByInput breaks TTFT down by actual input length, in buckets of
	// powers of two.
	TTFTByInput []Bucket `json:"ttft_by_input"`

	samples []lengthSample
}

// Spread is a length distribution's summary.
type Spread struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
}

// Bucket is the TTFT of the requests whose input length is in [Min, Max].
type Bucket struct {
	Min, Max int           `json:"-"`
	Range    string        `json:"input_tokens"`
	Requests int           `json:"requests"`
	P50      time.Duration `json:"ttft_p50_ns"`
	P99      time.Duration `json:"ttft_p99_ns"`
}

type lengthSample struct {
	askedIn, in, askedOut, out int
	ttft                       time.Duration
	hasTTFT                    bool
}

// withinBound reports whether actual is within ±2 % or ±2 tokens of asked.
func withinBound(asked, actual int) bool {
	tol := max(2, 0.02*float64(asked))
	return math.Abs(float64(actual-asked)) <= tol
}

// noteLengths adds a repeat's completed requests to the level's Lengths
// and warns (once a run) when the server's counts differ from the asked.
func (b *bench) noteLengths(l *Level, recs []llmmetrics.Record, metas []reqMeta) error {
	if l.Lengths == nil {
		l.Lengths = &Lengths{}
	}
	for i, r := range recs {
		if r.Outcome != llmmetrics.OutcomeOK || r.InputTokens == 0 {
			continue
		}
		ttft, ok := r.TTFT()
		l.Lengths.samples = append(l.Lengths.samples, lengthSample{metas[i].askedIn, r.InputTokens, metas[i].askedOut, r.OutputTokens, ttft, ok})
	}
	l.Lengths.compute()
	b.warnLengths(l.Lengths)
	return nil
}

func (ls *Lengths) compute() {
	s := ls.samples
	ls.Requests = len(s)
	if len(s) == 0 {
		return
	}
	get := func(f func(lengthSample) int) Spread {
		xs := make([]float64, len(s))
		sum := 0.0
		for i, x := range s {
			xs[i] = float64(f(x))
			sum += xs[i]
		}
		p50, _ := llmmetrics.Percentile(xs, 50)
		p99, _ := llmmetrics.Percentile(xs, 99)
		return Spread{Mean: sum / float64(len(xs)), P50: p50, P99: p99}
	}
	ls.AskedInput = get(func(x lengthSample) int { return x.askedIn })
	ls.ActualInput = get(func(x lengthSample) int { return x.in })
	ls.AskedOutput = get(func(x lengthSample) int { return x.askedOut })
	ls.ActualOutput = get(func(x lengthSample) int { return x.out })
	within, asking, short, long := 0, 0, 0, 0
	buckets := map[int][]float64{}
	for _, x := range s {
		if withinBound(x.askedIn, x.in) {
			within++
		}
		if x.askedOut > 0 {
			asking++
			if x.out < x.askedOut {
				short++
			} else if x.out > x.askedOut {
				long++
			}
		}
		if x.hasTTFT {
			k := bits.Len(uint(x.in)) // bucket [2^(k−1), 2^k − 1]
			buckets[k] = append(buckets[k], float64(x.ttft))
		}
	}
	ls.InputWithin = float64(within) / float64(len(s))
	if asking > 0 {
		ls.OutputShort, ls.OutputLong = float64(short)/float64(asking), float64(long)/float64(asking)
	}
	ls.TTFTByInput = ls.TTFTByInput[:0]
	keys := make([]int, 0, len(buckets))
	for k := range buckets {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		xs := buckets[k]
		p50, _ := llmmetrics.Percentile(xs, 50)
		p99, _ := llmmetrics.Percentile(xs, 99)
		lo, hi := 1<<(k-1), 1<<k-1
		ls.TTFTByInput = append(ls.TTFTByInput, Bucket{Min: lo, Max: hi, Range: fmt.Sprintf("%d-%d", lo, hi),
			Requests: len(xs), P50: time.Duration(p50), P99: time.Duration(p99)})
	}
}

// warnLengths warns, once a run each, when fewer than 95 % of inputs are
// within the bound, when answers are shorter than asked (with -ignore-eos:
// more than 5 % of them; without: on average less than half), or longer.
func (b *bench) warnLengths(ls *Lengths) {
	if ls.Requests == 0 {
		return
	}
	if ls.InputWithin < 0.95 && !b.warnedIn {
		b.warnedIn = true
		fmt.Fprintf(b.e.stderr, "llmmetrics bench: warning: the server counted input lengths other than asked: %.0f%% within ±2%% or ±2 tokens (asked mean %.0f, counted %.0f; token counting: %s)\n",
			100*ls.InputWithin, ls.AskedInput.Mean, ls.ActualInput.Mean, b.counting)
	}
	// Without -ignore-eos a model may end before the max tokens: warn when
	// answers average less than half the length asked.
	short := ls.OutputShort > 0.05 && (b.o.wl.ignoreEOS || ls.ActualOutput.Mean < ls.AskedOutput.Mean/2)
	if short && !b.warnedOut {
		b.warnedOut = true
		why := "the model ended them; -ignore-eos asks for exactly the length (chat and completions)"
		if b.o.wl.ignoreEOS {
			why = "the server stops early despite -ignore-eos"
		}
		fmt.Fprintf(b.e.stderr, "llmmetrics bench: warning: %.0f%% of answers are shorter than the output length asked (asked mean %.0f, received %.0f): %s\n",
			100*ls.OutputShort, ls.AskedOutput.Mean, ls.ActualOutput.Mean, why)
	}
	if ls.OutputLong > 0 && !b.warnedLong {
		b.warnedLong = true
		fmt.Fprintf(b.e.stderr, "llmmetrics bench: warning: %.0f%% of answers are longer than the max tokens asked\n", 100*ls.OutputLong)
	}
}

// writeWorkload prints the lengths and cache table, and TTFT by input
// length for levels with more than one length bucket.
func writeWorkload(w io.Writer, r Results) {
	if r.Workload == nil || len(r.Levels) == 0 {
		return
	}
	fmt.Fprintf(w, "Workload: %s (%s API; token counting: %s).\n", describeWorkload(r.Workload), r.Workload.API, r.Workload.TokenCounting)
	fmt.Fprintf(w, "%8s %11s %11s %8s %11s %11s %8s %8s\n", "load", "in asked", "in actual", "within", "out asked", "out actual", "hit", "srv hit")
	for _, l := range r.Levels {
		ls := l.Lengths
		if ls == nil || ls.Requests == 0 {
			continue
		}
		srv := "-"
		if l.Server != nil && l.Server.PrefixCacheHitRate != nil {
			srv = fmt.Sprintf("%.0f%%", 100**l.Server.PrefixCacheHitRate)
		}
		fmt.Fprintf(w, "%8g %11.0f %11.0f %7.0f%% %11.0f %11.0f %7.0f%% %8s\n", l.Load, ls.AskedInput.Mean, ls.ActualInput.Mean,
			100*ls.InputWithin, ls.AskedOutput.Mean, ls.ActualOutput.Mean, 100*l.Summary.PrefixCacheHitRate, srv)
	}
	fmt.Fprintln(w, "(mean tokens per request; within: inputs the server counted within ±2% or ±2 tokens of the asked; hit: prefix-cache hit rate from the usage's cached tokens; srv hit: from /metrics)")
	for _, l := range r.Levels {
		if l.Lengths == nil || len(l.Lengths.TTFTByInput) < 2 {
			continue
		}
		var parts []string
		for _, bk := range l.Lengths.TTFTByInput {
			parts = append(parts, fmt.Sprintf("%s: %s/%s ms (%d)", bk.Range, ms(bk.P50, true), ms(bk.P99, true), bk.Requests))
		}
		fmt.Fprintf(w, "TTFT p50/p99 by input tokens at %g: %s\n", l.Load, strings.Join(parts, ", "))
	}
}

func describeWorkload(wl *Workload) string {
	switch wl.Source {
	case "trace":
		return fmt.Sprintf("trace %s (%d requests over %v)", wl.Path, wl.Entries, wl.Span.Round(time.Millisecond))
	case "dataset":
		s := fmt.Sprintf("dataset %s (%s, %d entries", wl.Path, wl.Format, wl.Entries)
		if wl.SkippedCount > 0 {
			s += fmt.Sprintf(", %d cannot be sent", wl.SkippedCount)
		}
		if wl.ToolConversations > 0 {
			s += fmt.Sprintf(", %d agents' conversations replayed turn by turn", wl.ToolConversations)
		}
		return s + ")"
	}
	if st := wl.Flags["steps"]; st != "" {
		s := fmt.Sprintf("agents' tasks: steps %s, task %s tokens, each step's output %s, tool results %s tokens, tools %s, final answer %s",
			st, wl.Flags["input-tokens"], wl.Flags["output-tokens"], wl.Flags["tool-result-tokens"], wl.Flags["tool-time"], wl.Flags["final-tokens"])
		if p := wl.Flags["prefix-tokens"]; p != "" {
			s += fmt.Sprintf(", shared prefix %s tokens × %s", p, wl.Flags["prefix-groups"])
		}
		return s
	}
	parts := []string{"input " + wl.Flags["input-tokens"], "output " + wl.Flags["output-tokens"]}
	if p := wl.Flags["prefix-tokens"]; p != "" {
		parts = append(parts, fmt.Sprintf("shared prefix %s tokens × %s", p, wl.Flags["prefix-groups"]))
	}
	if t := wl.Flags["turns"]; t != "" && t != "1" {
		parts = append(parts, t+" turns")
	}
	return "synthetic, " + strings.Join(parts, ", ")
}
