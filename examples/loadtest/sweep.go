package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/examples/internal/chat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Mode says what a level's load is.
type Mode string

const (
	// ModeConcurrency: a closed loop of Load clients, each sending its next
	// request when the previous one ends.
	ModeConcurrency Mode = "concurrency"
	// ModeRate: an open loop of requests arriving at Load per second, with
	// gamma-distributed gaps (burstiness 1 = Poisson), as vllm bench serve.
	ModeRate Mode = "rate"
)

// config is one load test.
type config struct {
	Client      *chat.Client
	Mode        Mode
	Loads       []float64 // the levels, in increasing order
	Auto        bool      // with ModeConcurrency: stop once past the knee
	Requests    func(load float64) int
	Burstiness  float64
	PromptWords int
	MaxTokens   int
	SLO         llmmetrics.SLO
	Saturation  llmmetrics.SaturationOptions
	Seed        uint64
	Progress    io.Writer
	Live        bool // rewrite one progress line (a terminal) instead of printing plain lines
}

// sweep runs every level (or, with Auto, until past the knee) and returns
// them with the saturation analysis.
func sweep(ctx context.Context, cfg config) ([]llmmetrics.LoadLevel, llmmetrics.Saturation, error) {
	var levels []llmmetrics.LoadLevel
	var sat llmmetrics.Saturation
	// Invalid options fail before the first level runs, not after it.
	if err := cfg.Saturation.Validate(); err != nil {
		return nil, sat, err
	}
	for _, load := range cfg.Loads {
		records, err := runLevel(ctx, cfg, load)
		if err != nil {
			return levels, sat, err
		}
		s := llmmetrics.Summarize(records, llmmetrics.SummaryOptions{SLO: cfg.SLO})
		levels = append(levels, llmmetrics.LoadLevel{Load: load, Summary: s})
		if sat, err = llmmetrics.FindSaturation(levels, cfg.Saturation); err != nil {
			return levels, sat, err
		}
		progressDone(cfg, load, s)
		if cfg.Auto && pastTheKnee(levels, sat) {
			break
		}
	}
	return levels, sat, nil
}

// pastTheKnee reports whether the sweep has shown the saturation point and
// what lies beyond it: throughput fell below its peak, or two more levels
// ran after the saturation level.
func pastTheKnee(levels []llmmetrics.LoadLevel, sat llmmetrics.Saturation) bool {
	if !sat.Found {
		return false
	}
	for _, r := range sat.Reasons {
		if r.Signal == llmmetrics.SignalThroughputDrop {
			return true
		}
	}
	return len(levels)-1 >= sat.Level+2
}

// runLevel sends the level's requests and returns their Records.
func runLevel(ctx context.Context, cfg config, load float64) ([]llmmetrics.Record, error) {
	n := cfg.Requests(load)
	records := make([]llmmetrics.Record, n)
	var done, tokens atomic.Int64
	rng := rand.New(rand.NewPCG(cfg.Seed, uint64(load*1000)))
	prompts := make([]string, n)
	for i := range prompts {
		prompts[i] = prompt(rng, cfg.PromptWords)
	}
	send := func(i int) {
		rec, _ := cfg.Client.Stream(ctx, prompts[i], cfg.MaxTokens) // the Record says how it ended
		records[i] = rec
		tokens.Add(int64(rec.OutputTokens))
		done.Add(1)
	}

	stopProgress := progressLive(cfg, load, n, &done, &tokens)
	defer stopProgress()
	var wg sync.WaitGroup
	switch cfg.Mode {
	case ModeRate:
		gaps := distuv.Gamma{Alpha: cfg.Burstiness, Beta: cfg.Burstiness * load, Src: rng}
		next := time.Now()
		for i := range n {
			if i > 0 {
				next = next.Add(time.Duration(gaps.Rand() * float64(time.Second)))
			}
			select {
			case <-time.After(time.Until(next)):
			case <-ctx.Done():
				wg.Wait()
				return nil, ctx.Err()
			}
			wg.Go(func() { send(i) })
		}
	default:
		var next atomic.Int64
		for range int(load) {
			wg.Go(func() {
				for i := int(next.Add(1) - 1); i < n && ctx.Err() == nil; i = int(next.Add(1) - 1) {
					send(i)
				}
			})
		}
	}
	wg.Wait()
	return records, ctx.Err()
}

// words is the vocabulary of generated prompts.
var words = strings.Fields(`the a service model token latency stream queue batch cache prefill decode
	user answer request server budget tail median throughput goodput cost saturation`)

// prompt returns n words of filler text.
func prompt(rng *rand.Rand, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[rng.IntN(len(words))])
	}
	return b.String()
}

// progressLive rewrites one status line every 200 ms while a level runs
// (only on a terminal); the returned function stops it.
func progressLive(cfg config, load float64, n int, done, tokens *atomic.Int64) func() {
	if !cfg.Live || cfg.Progress == nil {
		return func() {}
	}
	start := time.Now()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				el := time.Since(start)
				fmt.Fprintf(cfg.Progress, "\r\033[K%s %-5g %4d/%d requests  %6.0f output tok/s  %5.1fs",
					cfg.Mode, load, done.Load(), n, float64(tokens.Load())/el.Seconds(), el.Seconds())
			}
		}
	})
	return func() {
		close(stop)
		wg.Wait()
		fmt.Fprint(cfg.Progress, "\r\033[K")
	}
}

// progressDone prints one line when a level has finished.
func progressDone(cfg config, load float64, s llmmetrics.Summary) {
	if cfg.Progress == nil {
		return
	}
	p99, _ := s.TTFT.Percentile(99)
	fmt.Fprintf(cfg.Progress, "%s %-5g done: %d requests (%d failed) in %v, %.0f output tok/s, p99 TTFT %v\n",
		cfg.Mode, load, s.Requests, s.Failed+s.Canceled, s.Duration.Round(time.Millisecond), s.OutputThroughput, p99.Round(time.Millisecond))
}
