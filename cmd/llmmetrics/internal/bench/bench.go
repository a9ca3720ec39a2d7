// Package bench is the "llmmetrics bench" subcommand: a load sweep of an
// OpenAI-compatible streaming endpoint (by default the in-process fake
// server of llmmetricstest), measured through llmmetrics.NewTransport, that
// finds the saturation point and says why, and writes results.json,
// records.jsonl and charts.
package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/llmmetricstest"
)

// Exit statuses of Main.
const (
	exitOK          = 0
	exitFailed      = 1 // the run could not be done (e.g. the endpoint is unreachable)
	exitUsage       = 2 // bad flags
	exitInterrupted = 130
)

// maxAutoConcurrency caps the automatic concurrency sweep and the search.
const maxAutoConcurrency = 256

// Defaults of the repeat rule: a level runs at least minRepeats times and
// repeats until its output throughput is known to ±relPrecision at
// confidence (or maxRepeats runs, or -repeats N exactly).
// While a level has failed requests and the knee at its load is still
// undecided, it repeats up to maxRepeatsFailing times.
const (
	minRepeats        = 2
	maxRepeats        = 5
	maxRepeatsFailing = 10
	relPrecision      = 0.05
	confidence        = 0.95
)

// Main runs "llmmetrics bench" with args (the flags after the subcommand)
// and returns the exit status: 0 done, 1 the run failed, 2 bad flags, 130
// interrupted (ctx canceled; what was measured so far is written).
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	live := false
	if f, ok := stderr.(*os.File); ok {
		live = isTerminal(f)
	}
	if os.Getenv("GOGC") == "" {
		// A load generator holds thousands of streams on few cores, where
		// the collector's CPU is taken from the streams being timed, and
		// each cycle shrinks the stacks of parked workers that the next
		// burst of requests grows again. Collect 4× less often (at 2,000
		// streams: half the collector's CPU); the live heap is ~40 KB per
		// stream, so 2,000 streams peak at a few hundred MB. GOGC in the
		// environment overrides this.
		debug.SetGCPercent(400)
	}
	return run(ctx, args, env{stdout: stdout, stderr: stderr, live: live, newFake: llmmetricstest.NewServer, newPacer: newPacer})
}

// env is what run needs from the process; tests replace newFake with
// llmmetricstest.NewInMemoryServer to run inside testing/synctest.
type env struct {
	stdout, stderr io.Writer
	live           bool // stderr is a terminal: one progress line rewritten in place
	newFake        func(llmmetricstest.ServerConfig) *llmmetricstest.Server
	inMemory       bool // newFake makes in-memory servers: reach them through their own Client
	// wrap, when set, wraps the measured clients' base transports (tests
	// see there what the server receives).
	wrap func(http.RoundTripper) http.RoundTripper
	// newPacer makes the open loop's pacer (nil: the runtime's timers,
	// which a testing/synctest bubble fakes).
	newPacer func() pacer
	// exporting: the OpenTelemetry environment asks for bench's metrics
	// and spans (see startTelemetry), so the Tracker uses the global
	// providers instead of a MeterProvider of its own.
	exporting bool
}

// isTerminal reports whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// usageError is a bad flag or flag combination (exit status 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// options are the parsed flags.
type options struct {
	url, model, keyEnv string
	mode               Mode
	loads              []float64
	auto               bool
	search             bool
	searchPrecision    float64
	requests           int
	warmup             int // -1: one wave (the concurrency, or one second of arrivals)
	repeats            int // 0: until confident
	burstiness         float64
	wl                 workloadFlags
	timeout            time.Duration
	slo                llmmetrics.SLO
	objectives         []llmmetrics.Objective
	serverMetrics      []string
	hourlyCost         float64
	out                string
	speedup            float64
	seed               uint64
}

// DefaultTimeout bounds each request unless -timeout says otherwise: long
// enough for a long answer from a loaded server (128 tokens at one token a
// second take about two minutes), short enough that a server that never
// answers cannot stall a run for good.
const DefaultTimeout = 5 * time.Minute

// rawFlags are the flags that parseFlags turns into options after parsing.
type rawFlags struct{ concurrency, rates, serverMetrics string }

// parseFlags parses args; the error is a usageError or flag.ErrHelp.
func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("llmmetrics bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o, raw := defineFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return *o, err
		}
		return *o, usageError{err.Error()} // the flag package has printed the usage
	}
	if fs.NArg() > 0 {
		return *o, usagef("unexpected arguments: %v", fs.Args())
	}
	if err := o.wl.validate(fs, o); err != nil {
		return *o, err
	}
	if err := o.check(raw); err != nil {
		return *o, err
	}
	if err := o.setLoads(raw); err != nil {
		return *o, err
	}
	return *o, o.setServerMetrics(raw.serverMetrics)
}

// defineFlags declares every flag of bench on fs, with its default.
func defineFlags(fs *flag.FlagSet) (*options, *rawFlags) {
	o := &options{slo: llmmetrics.SLO{TTFT: 200 * time.Millisecond, TPOT: 50 * time.Millisecond}}
	raw := &rawFlags{}
	fs.StringVar(&o.url, "url", "", "base URL of an OpenAI-compatible API, with its version (e.g. http://127.0.0.1:8000/v1); empty: an in-process fake server")
	fs.StringVar(&o.model, "model", "", "model name (default: the fake server's)")
	fs.StringVar(&o.keyEnv, "api-key-env", "OPENAI_API_KEY", "environment variable holding the API key")
	fs.StringVar(&raw.concurrency, "concurrency", "", "comma-separated concurrency levels (default: 1,2,4,… until past the knee)")
	fs.StringVar(&raw.rates, "rates", "", "comma-separated request rates per second (open loop) instead of concurrency")
	fs.BoolVar(&o.search, "search", false, "find the highest load that meets the SLO and objectives: double from the first load until a level fails, then bisect")
	fs.Float64Var(&o.searchPrecision, "search-precision", 0.1, "with -search: stop bisecting when the interval is narrower than this fraction of its lower end (and, for concurrency, 1)")
	fs.Float64Var(&o.burstiness, "burstiness", 1, "with -rates: gamma shape of the arrival gaps (1 = Poisson, < 1 burstier)")
	fs.IntVar(&o.requests, "requests", 0, "measured requests per level and repeat (default: max(16, 3×concurrency), or max(16, 10×rate))")
	fs.IntVar(&o.warmup, "warmup", -1, "warm-up requests per level and repeat, run but not counted (default: one per concurrent client, or one second of arrivals)")
	fs.IntVar(&o.repeats, "repeats", 0, fmt.Sprintf("runs per level (default: %d to %d, until output throughput is known to ±%g%% at %g%% confidence; up to %d while failures keep the knee undecided)", minRepeats, maxRepeats, 100*relPrecision, 100*confidence, maxRepeatsFailing))
	o.wl.register(fs)
	fs.DurationVar(&o.timeout, "timeout", DefaultTimeout, "longest time a request may take, from sending to its last byte; a request cut by it fails with error_type timeout")
	fs.StringVar(&raw.serverMetrics, "server-metrics", "", "comma-separated Prometheus /metrics URLs of the model server (default with the fake server: its own)")
	fs.Float64Var(&o.hourlyCost, "hourly-cost", 0, "hourly cost of the deployment in dollars, for the cost per million tokens")
	fs.StringVar(&o.out, "out", "out", "directory for results.json, records.jsonl and the charts")
	fs.Float64Var(&o.speedup, "speedup", 5, "fake server only: divide its simulated times by this")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of prompts, arrivals and the fake server")
	fs.Var(&o.slo, "slo", "SLO each request is checked against, e.g. ttft=200ms,tpot=50ms,e2el=5s")
	fs.Func("objective", "percentile objective a level must pass, e.g. 'p95 ttft<=200ms' (repeatable)", func(s string) error {
		obj, err := llmmetrics.ParseObjective(s)
		if err != nil {
			return err
		}
		o.objectives = append(o.objectives, obj)
		return nil
	})
	return o, raw
}

// finite reports whether v is a number other than ±Inf.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// check rejects values out of range, NaN and Inf included, and flags that
// do not go together.
func (o *options) check(raw *rawFlags) error {
	switch {
	case raw.concurrency != "" && raw.rates != "":
		return usagef("give -concurrency or -rates, not both")
	case !(o.burstiness > 0) || !finite(o.burstiness):
		return usagef("-burstiness must be a number > 0, not %v", o.burstiness)
	case o.requests < 0:
		return usagef("-requests must be ≥ 0")
	case o.warmup < -1:
		return usagef("-warmup must be ≥ 0")
	case o.repeats < 0:
		return usagef("-repeats must be ≥ 0")
	case !(o.searchPrecision > 0 && o.searchPrecision < 1):
		return usagef("-search-precision must be in (0, 1), not %v", o.searchPrecision)
	case !(o.hourlyCost >= 0) || !finite(o.hourlyCost):
		return usagef("-hourly-cost must be a number ≥ 0, not %v", o.hourlyCost)
	case !(o.speedup > 0) || !finite(o.speedup):
		return usagef("-speedup must be a number > 0, not %v", o.speedup)
	case o.timeout <= 0:
		return usagef("-timeout must be > 0")
	case o.out == "":
		return usagef("-out must name a directory")
	case o.url != "" && o.model == "":
		return usagef("-url needs -model")
	}
	if o.url != "" {
		if u, err := url.Parse(o.url); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usagef("-url: %q is not an http(s) URL", o.url)
		}
	}
	if err := o.slo.Validate(); err != nil {
		return usageError{err.Error()}
	}
	return nil
}

// setLoads fills mode and loads from -concurrency or -rates (default: the
// automatic concurrency sweep).
func (o *options) setLoads(raw *rawFlags) error {
	var err error
	o.mode = ModeConcurrency
	switch {
	case o.wl.trace != "":
		o.mode, o.loads, o.repeats = ModeReplay, []float64{1 / o.wl.timeScale}, 1
	case raw.rates != "":
		o.mode = ModeRate
		o.loads, err = parseLoads(raw.rates, false)
	case raw.concurrency != "":
		o.loads, err = parseLoads(raw.concurrency, true)
	default:
		o.auto = true
		for c := 1; c <= maxAutoConcurrency; c *= 2 {
			o.loads = append(o.loads, float64(c))
		}
	}
	if err != nil {
		return err
	}
	if o.search && len(o.loads) > 1 && !o.auto {
		return usagef("-search starts from one load: give one -concurrency or -rates value (or none: 1)")
	}
	return nil
}

// setServerMetrics parses -server-metrics.
func (o *options) setServerMetrics(list string) error {
	for _, u := range strings.Split(list, ",") {
		if u = strings.TrimSpace(u); u != "" {
			if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
				return usagef("-server-metrics: %q is not an http(s) URL", u)
			}
			o.serverMetrics = append(o.serverMetrics, u)
		}
	}
	return nil
}

// parseLoads parses a comma-separated list of increasing positive loads.
func parseLoads(s string, integers bool) ([]float64, error) {
	var loads []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		switch {
		case err != nil:
			return nil, usagef("bad load %q: not a number", f)
		case !(v > 0) || v > 1e6:
			return nil, usagef("bad load %q: must be > 0 and ≤ 1e6", f)
		case integers && v != float64(int(v)):
			return nil, usagef("bad concurrency %q: must be a whole number", f)
		case len(loads) > 0 && v <= loads[len(loads)-1]:
			return nil, usagef("loads must increase: %q after %g", f, loads[len(loads)-1])
		}
		loads = append(loads, v)
	}
	return loads, nil
}

// run is the whole subcommand: flags, checks, the preflight request, the
// levels, then the table and the files.
func run(ctx context.Context, args []string, e env) int {
	o, err := parseFlags(args, e.stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err == nil {
		err = checkOpenFiles(o, openFileLimit)
	}
	if err == nil {
		err = checkOut(o.out)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "llmmetrics bench: %v\n", err)
		return exitUsage
	}
	tel, err := startTelemetry(ctx, os.Getenv, e.stderr)
	if err != nil {
		// A bad OTEL_* variable (an unknown protocol or exporter).
		fmt.Fprintf(e.stderr, "llmmetrics bench: %v\n", err)
		return exitUsage
	}
	if tel != nil {
		e.exporting = true
		defer func() {
			if err := tel.shutdown(); err != nil {
				fmt.Fprintf(e.stderr, "llmmetrics bench: telemetry export at exit: %v\n", err)
			}
		}()
	}
	b, err := newBench(o, e)
	if err != nil {
		fmt.Fprintf(e.stderr, "llmmetrics bench: %v\n", err)
		return exitFailed
	}
	defer b.close()
	b.args = args
	if err := b.checkWorkload(ctx); err != nil {
		fmt.Fprintf(e.stderr, "llmmetrics bench: %v\n", err)
		return exitUsage
	}
	if err := b.preflight(ctx); err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(e.stderr, "llmmetrics bench: interrupted before the first level: nothing written")
			return exitInterrupted
		}
		fmt.Fprintf(e.stderr, "llmmetrics bench: %v\n", err)
		return exitFailed
	}
	if err := b.openWorkload(ctx); err != nil {
		fmt.Fprintf(e.stderr, "llmmetrics bench: %v\n", err)
		if isBadInput(err) {
			return exitUsage
		}
		return exitFailed
	}
	if err := b.openRecords(); err != nil {
		fmt.Fprintf(e.stderr, "llmmetrics bench: %v\n", err)
		return exitFailed
	}
	return b.finish(ctx)
}

// finish runs the levels, prints the table and writes the files.
func (b *bench) finish(ctx context.Context) int {
	e := b.e
	res, runErr := b.run(ctx)
	interrupted := ctx.Err() != nil
	res.Interrupted = interrupted
	if len(res.Levels) > 0 || runErr == nil {
		fmt.Fprintln(e.stdout)
		writeTable(e.stdout, res)
		writeWorkload(e.stdout, res)
	}
	err := b.closeRecords()
	if err == nil {
		err = b.writeFiles(res)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "llmmetrics bench: %v\n", err)
		return exitFailed
	}
	fmt.Fprintf(e.stdout, "\nWrote %s.\n", strings.Join(b.written, ", "))
	switch {
	case interrupted:
		fmt.Fprintf(e.stderr, "llmmetrics bench: interrupted: wrote the %d level(s) measured so far\n", len(res.Levels))
		return exitInterrupted
	case runErr != nil:
		fmt.Fprintf(e.stderr, "llmmetrics bench: %v\n", runErr)
		return exitFailed
	}
	return exitOK
}

// spareFiles is what a run needs open besides its streams' connections
// (one per stream, two with the in-process fake server, whose end is in
// the same process): listeners, the output files, the scrapes, the
// runtime's own.
const spareFiles = 64

// checkOpenFiles checks the limit on open files against the highest
// concurrency before anything starts: past it, connections fail with "too
// many open files" in the middle of a level. Rates have no fixed number
// of streams; they are not checked.
func checkOpenFiles(o options, openFiles func() (uint64, bool)) error {
	limit, ok := openFiles()
	if !ok || o.maxStreams() == 0 {
		return nil
	}
	streams := uint64(o.maxStreams())
	perStream := uint64(1)
	if o.url == "" {
		perStream = 2
	}
	need := streams*perStream + spareFiles
	if need <= limit {
		return nil
	}
	return usagef("concurrency %d needs about %d open files, and the limit is %d: raise it (ulimit -n %d) or lower the concurrency", streams, need, limit, need)
}

// maxStreams is the most streams a run holds at once: its highest
// concurrency (with -search, 256× its start); 0 with rates, which have no
// fixed number of streams.
func (o options) maxStreams() int {
	switch {
	case o.mode != ModeConcurrency || len(o.loads) == 0:
		return 0
	case o.search:
		return int(maxAutoConcurrency * max(1, o.loads[0]))
	}
	return int(o.loads[len(o.loads)-1])
}

// newHTTPTransport returns the base transport of the measured client: one
// connection per concurrent stream, kept and reused (no connection set-up
// per request once warm), no compression (token streams are not
// compressed by model servers, and a gzip reader would delay chunks).
func newHTTPTransport() *http.Transport {
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           stampedDialer, // chunks timed by their arrival (timing.go)
		MaxIdleConns:          0,             // no global cap
		MaxIdleConnsPerHost:   100_000,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
		ForceAttemptHTTP2:     true,
	}
}
