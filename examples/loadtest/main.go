// Command loadtest finds the saturation point of an OpenAI-compatible
// streaming endpoint: it sweeps load, measures every request through
// llmmetrics' reader wrapper, prints a table per level, names the
// saturation point and why, the best-goodput level, the highest load that
// meets the SLO and (with -hourly-cost) the cost per million tokens, and
// writes results.json and saturation.svg.
//
// With no flags it starts llmmetricstest's fake server in-process and
// sweeps concurrency 1, 2, 4, … until past the knee:
//
//	go run ./examples/loadtest
//
// Against a real endpoint (the API key is read from the environment
// variable named by -api-key-env):
//
//	OPENAI_API_KEY=... go run ./examples/loadtest -url https://api.example.com/v1 -model my-model -concurrency 1,4,16
//	go run ./examples/loadtest -url http://127.0.0.1:8000/v1 -model m -rates 1,2,4,8 -burstiness 0.5 -requests 200
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/examples/internal/chat"
	"github.com/llmmetrics/llmmetrics/llmmetricstest"
	"go.opentelemetry.io/otel/sdk/metric"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr, isTerminal(os.Stderr), llmmetricstest.NewServer); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "loadtest:", err)
		}
		os.Exit(2)
	}
}

// isTerminal reports whether f is a character device (a terminal), where
// progress is one line rewritten in place.
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// maxAutoConcurrency caps the automatic concurrency sweep.
const maxAutoConcurrency = 256

// run is the whole program; main only wires it to the process. newFake
// starts the fake server used without -url (tests pass
// llmmetricstest.NewInMemoryServer to run on testing/synctest's fake time).
func run(ctx context.Context, args []string, stdout, stderr io.Writer, live bool, newFake func(llmmetricstest.ServerConfig) *llmmetricstest.Server) error {
	fs := flag.NewFlagSet("loadtest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		url         = fs.String("url", "", "base URL of an OpenAI-compatible API, with its version (e.g. http://127.0.0.1:8000/v1); empty: an in-process fake server")
		model       = fs.String("model", "", "model name (default: the fake server's)")
		keyEnv      = fs.String("api-key-env", "OPENAI_API_KEY", "environment variable holding the API key")
		concurrency = fs.String("concurrency", "", "comma-separated concurrency levels (default: 1,2,4,… until past the knee)")
		rates       = fs.String("rates", "", "comma-separated request rates per second (open loop) instead of concurrency")
		burstiness  = fs.Float64("burstiness", 1, "with -rates: gamma shape of the arrival gaps (1 = Poisson, < 1 burstier)")
		requests    = fs.Int("requests", 0, "requests per level (default: max(16, 3×concurrency), or max(16, 10×rate))")
		promptWords = fs.Int("prompt-words", 100, "words per prompt")
		maxTokens   = fs.Int("max-tokens", 128, "max_tokens of each request")
		hourlyCost  = fs.Float64("hourly-cost", 0, "hourly cost of the deployment in dollars, for the cost per million tokens")
		out         = fs.String("out", "out", "directory for results.json and saturation.svg")
		speedup     = fs.Float64("speedup", 5, "fake server only: divide its simulated times by this")
		seed        = fs.Uint64("seed", 1, "seed of prompts, arrivals and the fake server")
		slo         = llmmetrics.SLO{TTFT: 200e6, TPOT: 50e6}
	)
	fs.Var(&slo, "slo", "SLO each request is checked against, e.g. ttft=200ms,tpot=50ms,e2el=5s")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if *concurrency != "" && *rates != "" {
		return errors.New("give -concurrency or -rates, not both")
	}
	if *burstiness <= 0 {
		return errors.New("-burstiness must be > 0")
	}

	cfg := config{Mode: ModeConcurrency, Burstiness: *burstiness, PromptWords: *promptWords, MaxTokens: *maxTokens,
		SLO: slo, Seed: *seed, Progress: stderr, Live: live}
	var err error
	switch {
	case *rates != "":
		cfg.Mode = ModeRate
		cfg.Loads, err = parseLoads(*rates, false)
	case *concurrency != "":
		cfg.Loads, err = parseLoads(*concurrency, true)
	default:
		cfg.Auto = true
		for c := 1; c <= maxAutoConcurrency; c *= 2 {
			cfg.Loads = append(cfg.Loads, float64(c))
		}
	}
	if err != nil {
		return err
	}
	cfg.Requests = func(load float64) int {
		if *requests > 0 {
			return *requests
		}
		if cfg.Mode == ModeRate {
			return max(16, int(10*load))
		}
		return max(16, int(3*load))
	}

	tracker, err := llmmetrics.NewTracker(llmmetrics.WithRole(llmmetrics.RoleClient),
		llmmetrics.WithMeterProvider(metric.NewMeterProvider()), llmmetrics.WithWindow(0, 0))
	if err != nil {
		return err
	}
	client := &chat.Client{BaseURL: *url, Model: *model, APIKey: os.Getenv(*keyEnv), Tracker: tracker,
		HTTP: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024}}}
	target := *url
	if *url == "" {
		// The fake server's default KV budget (4,096 tokens) starts
		// preempting right at 16 requests of this size (~300 tokens each),
		// which puts the 8 → 16 step on the knee threshold and lets run-to-run
		// noise flip the verdict between 16 and 32. 6,144 tokens holds 16
		// requests and not 32, so the knee shows where throughput turns.
		srv := newFake(llmmetricstest.ServerConfig{Speedup: *speedup, Seed: *seed, KVBudget: 6144})
		defer srv.Close()
		client.BaseURL, client.HTTP, target = srv.URL+"/v1", srv.Client(), "llmmetricstest fake server"
		if client.Model == "" {
			client.Model = srv.Config().Model
		}
	}
	cfg.Client = client
	fmt.Fprintf(stderr, "load test of %s (model %q): %s levels %s, SLO %v\n", target, client.Model, cfg.Mode, describeLoads(cfg), slo)

	levels, sat, err := sweep(ctx, cfg)
	if err != nil {
		return err
	}
	res := Results{Schema: "llmmetrics.loadtest/v1", Target: target, Model: client.Model, Mode: cfg.Mode, SLO: slo,
		AttainmentTarget: llmmetrics.DefaultAttainmentTarget, Levels: levels, Saturation: sat,
		Cost: costAt(*hourlyCost, levels, sat)}
	fmt.Fprintln(stdout)
	writeTable(stdout, res)
	if err := writeFiles(*out, res); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nWrote %s and %s.\n", filepath.Join(*out, "results.json"), filepath.Join(*out, "saturation.svg"))
	return nil
}

// parseLoads parses a comma-separated list of increasing positive loads.
func parseLoads(s string, integers bool) ([]float64, error) {
	var loads []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		switch {
		case err != nil:
			return nil, fmt.Errorf("bad load %q: %v", f, err)
		case v <= 0:
			return nil, fmt.Errorf("bad load %q: must be > 0", f)
		case integers && v != float64(int(v)):
			return nil, fmt.Errorf("bad concurrency %q: must be a whole number", f)
		case len(loads) > 0 && v <= loads[len(loads)-1]:
			return nil, fmt.Errorf("loads must increase: %q after %g", f, loads[len(loads)-1])
		}
		loads = append(loads, v)
	}
	return loads, nil
}

func describeLoads(cfg config) string {
	if cfg.Auto {
		return "1, 2, 4, … (until past the knee)"
	}
	parts := make([]string, len(cfg.Loads))
	for i, l := range cfg.Loads {
		parts[i] = strconv.FormatFloat(l, 'g', -1, 64)
	}
	return strings.Join(parts, ", ")
}
