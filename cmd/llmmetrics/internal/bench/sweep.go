package bench

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/cmd/llmmetrics/internal/servermetrics"
	"github.com/llmmetrics/llmmetrics/cmd/llmmetrics/internal/workload"
	"github.com/llmmetrics/llmmetrics/llmmetricstest"
	"github.com/llmmetrics/llmmetrics/saturation"
	"go.opentelemetry.io/otel/sdk/metric"
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

// bench is one run of the subcommand.
type bench struct {
	o       options
	e       env
	hc      *http.Client // measures through llmmetrics.NewTransport
	fresh   *http.Client // the same, on a new connection per request: for a retry
	url     string       // the chat completions endpoint
	model   string
	apiKey  string
	target  string // what the table calls the endpoint
	fake    *llmmetricstest.Server
	records *os.File // records.jsonl, appended after each repeat
	written []string
	args    []string // the command line after "bench", for report.html
	prog    progress

	levels []*Level // measured levels, in the order they ran

	holds      bool               // open-loop writes are held until their time (see hold)
	wl         *workload.Workload // what each request is
	counting   string             // how prompts are sized (calibration.how)
	warnedIn   bool               // the input-length warning was given
	warnedOut  bool               // the short-output warning was given
	warnedLong bool               // the long-output warning was given

	watcher  *servermetrics.Watcher // nil: no -server-metrics and no fake server
	warnMu   sync.Mutex             // guards warnings (the watcher's goroutine adds)
	warnings []string
	slots    int // the requests the engine runs at once, as it says (0: unknown; servertime.go)
}

// slotKey is the context key of a request's Record slot: the Tracker's
// WithOnEnd hook stores the ended Record there.
type slotKey struct{}

func newBench(o options, e env) (*bench, error) {
	b := &bench{o: o, e: e, model: o.model, apiKey: os.Getenv(o.keyEnv), prog: progress{w: e.stderr, live: e.live}}
	// Without export, the Tracker's measurements go to an SDK provider of
	// its own with no reader (the cost of measuring stays that of a real
	// one); with export, to the global providers startTelemetry set.
	trackerOpts := []llmmetrics.Option{llmmetrics.WithoutWindow()}
	if !e.exporting {
		trackerOpts = append(trackerOpts, llmmetrics.WithMeterProvider(metric.NewMeterProvider()))
	}
	tracker, err := llmmetrics.NewTracker(append(trackerOpts,
		llmmetrics.WithOnEnd(func(ctx context.Context, r llmmetrics.Record) {
			if slot, ok := ctx.Value(slotKey{}).(*llmmetrics.Record); ok {
				rt, _ := ctx.Value(timingKey{}).(*reqTiming)
				*slot = sentStart(r, rt)
			}
		}))...)
	if err != nil {
		return nil, err
	}
	var base, freshBase http.RoundTripper = newHTTPTransport(), newHTTPTransport()
	dialed := true // bench's transports dial the connections (see stampedDialer)
	freshBase.(*http.Transport).DisableKeepAlives = true
	// A closed loop's next request waits for its client's connection to
	// come back to the pool (net/http puts it back on another goroutine,
	// just after the answer's end) instead of dialing another beside it:
	// a dial mid-level costs the client and the server a handshake.
	base.(*http.Transport).MaxConnsPerHost = o.maxStreams()
	b.target = o.url
	b.url = apiURL(o.url, o.wl.api, o.model, false)
	if o.url == "" {
		// The fake server's default KV budget (4,096 tokens) starts
		// preempting right at 16 requests of this size (~300 tokens each),
		// which puts the 8 → 16 step on the knee threshold. 6,144 tokens
		// holds 16 requests and not 32, so the knee shows where throughput
		// turns; a batch slowdown of 2 % per request (default 4 %) keeps
		// the steps below it well above the knee threshold (8 → 16 gains
		// ~75 % of linear scaling, not ~52 %), so CPU contention on the
		// client cannot move the verdict to 16.
		cfg := llmmetricstest.ServerConfig{Speedup: o.speedup, Seed: o.seed, KVBudget: 6144, BatchSlowdown: 0.02}
		if o.wl.sharesPrefixes() {
			// Its prefix cache follows the prompts' content, as vLLM's.
			cfg.PrefixCacheBlocks = fakePrefixCacheBlocks
		}
		if o.wl.isAgent() {
			// Agents' contexts grow to tens of thousands of tokens: a KV
			// cache of 1M tokens holds dozens of tasks, where 6,144 would
			// run each step alone.
			cfg.KVBudget = fakeAgentKVBudget
		}
		b.fake = e.newFake(cfg)
		b.target = "llmmetricstest fake server"
		if e.inMemory {
			// Only its own transport reaches it; its connections keep
			// their writes' times, as bench's own do.
			base, dialed = stampWrites(b.fake.Client().Transport)
			freshBase = base
		}
		if b.model == "" {
			b.model = b.fake.Config().Model
		}
		b.url = apiURL(b.fake.URL, o.wl.api, b.model, true)
	}
	if e.wrap != nil {
		base, freshBase = e.wrap(base), e.wrap(freshBase)
	}
	// Writes can be held until their time on the connections bench
	// dials (plain HTTP/1.1); through TLS they cannot.
	b.holds = dialed && strings.HasPrefix(b.url, "http://")
	b.hc = &http.Client{Transport: llmmetrics.NewTransport(tracker, arrivalTransport{base})}
	b.fresh = &http.Client{Transport: llmmetrics.NewTransport(tracker, arrivalTransport{freshBase})}
	b.newWatcher()
	return b, nil
}

// checkOut makes the -out directory and checks that a file can be written
// in it, before any request is sent (a bad -out is a usage error).
func checkOut(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return usagef("-out: %v", err)
	}
	f, err := os.CreateTemp(dir, ".llmmetrics-check-*")
	if err != nil {
		return usagef("-out: %v", err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// openRecords creates records.jsonl (after the preflight: a run that
// cannot start leaves the previous run's files alone).
func (b *bench) openRecords() error {
	path := filepath.Join(b.o.out, "records.jsonl")
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	b.records = f
	b.written = append(b.written, path)
	return nil
}

// closeRecords closes records.jsonl, reporting a failed final write.
func (b *bench) closeRecords() error {
	if b.records == nil {
		return nil
	}
	f := b.records
	b.records = nil
	return f.Close()
}

// newWatcher watches -server-metrics, or the fake server's own /metrics
// (scraped more often: its levels last seconds).
func (b *bench) newWatcher() {
	urls, client, interval := b.o.serverMetrics, (*http.Client)(nil), servermetrics.DefaultInterval
	if len(urls) == 0 && b.fake != nil {
		urls, client, interval = []string{b.fake.URL + "/metrics"}, b.fake.Client(), 200*time.Millisecond
	}
	if len(urls) == 0 {
		return
	}
	b.watcher = servermetrics.NewWatcher(urls, client, interval, func(msg string) {
		b.warnMu.Lock()
		b.warnings = append(b.warnings, msg)
		b.warnMu.Unlock()
	})
}

// flushWarnings prints the watcher's warnings (from the run's goroutine,
// between levels, so they do not cut the progress line).
func (b *bench) flushWarnings() {
	b.warnMu.Lock()
	ws := b.warnings
	b.warnings = nil
	b.warnMu.Unlock()
	for _, w := range ws {
		fmt.Fprintf(b.e.stderr, "llmmetrics bench: warning: %s\n", w)
	}
}

// close releases what the run holds; the error of records.jsonl was
// reported by closeRecords on the run's own path.
func (b *bench) close() {
	_ = b.closeRecords()
	if b.fake != nil {
		b.fake.Close()
	}
	b.hc.CloseIdleConnections()
	b.fresh.CloseIdleConnections()
}

// run measures the levels (a sweep, or the search) and analyzes them. On
// an error or interruption it returns what was measured so far.
func (b *bench) run(ctx context.Context) (Results, error) {
	o := b.o
	fmt.Fprintf(b.e.stderr, "llmmetrics bench of %s (model %q): %s %s, SLO %v%s\n", b.target, b.model, o.mode, b.describeLoads(), o.slo, b.describeObjectives())
	var err error
	var maxGood *float64
	if o.search {
		var best float64
		var found bool
		best, found, err = search(ctx, searchConfig{Start: o.loads[0], Integer: o.mode == ModeConcurrency,
			Precision: o.searchPrecision, Max: maxAutoConcurrency * max(1, o.loads[0])}, b.searchStep)
		if found {
			maxGood = &best
		} else if err == nil {
			zero := 0.0
			maxGood = &zero
		}
	} else {
		for _, load := range o.loads {
			if _, err = b.measure(ctx, load); err != nil {
				break
			}
			if o.auto && pastTheKnee(b.analysis()) {
				break
			}
		}
	}
	res := b.results()
	res.MaxLoadUnderSLO = maxGood
	return res, err
}

// searchStep measures load for the search: whether it meets the SLO and
// objectives, and whether the sweep is past the saturation point.
func (b *bench) searchStep(ctx context.Context, load float64) (pass, past bool, err error) {
	if _, err := b.measure(ctx, load); err != nil {
		return false, false, err
	}
	sat := b.analysis()
	return levelReport(sat, load).MeetsSLO, pastTheKnee(sat), nil
}

// levelReport returns the verdict on load (the zero LevelReport when load
// was not measured).
func levelReport(sat saturation.Result, load float64) saturation.LevelReport {
	for _, r := range sat.Levels {
		if r.Load == load {
			return r
		}
	}
	return saturation.LevelReport{}
}

// measure runs a level: its repeats until the throughput is known (see
// enoughRepeats) or -repeats times. A level whose repeat completes no
// request ends the run with an error that says why they failed.
func (b *bench) measure(ctx context.Context, load float64) (*Level, error) {
	l := &Level{Load: load}
	if b.watcher != nil {
		// The server is watched over the whole level, warm-up included.
		b.watcher.Begin(ctx)
		defer func() {
			srv := b.watcher.End()
			servermetrics.SetOutputRate(&srv, l.Summary.OutputThroughput)
			if srv != (saturation.Server{}) {
				l.Server = &srv
			}
			l.WaitingBeforeEngine = waitingBeforeEngine(l.ClientInFlight, l.Server)
			b.notePhases(l)
			b.flushWarnings()
		}()
	}
	var all []llmmetrics.Record
	var metas []reqMeta
	var msgs []string
	var total time.Duration
	for r := 0; ; r++ {
		rep, err := b.runRepeat(ctx, load, r)
		if err != nil {
			if len(l.RepeatThroughput) > 0 { // keep the finished repeats
				b.finishLevel(l, all, metas, msgs, total)
			}
			return l, err
		}
		if err := b.writeRecords(load, r, rep); err != nil {
			return l, err
		}
		b.noteLengths(l, rep.records, rep.metas)
		s := llmmetrics.Summarize(rep.records, llmmetrics.SummaryOptions{SLO: b.o.slo})
		all, msgs, metas = append(all, rep.records...), append(msgs, rep.msgs...), append(metas, rep.metas...)
		total += s.Duration
		l.Retries += rep.retries
		for i, rec := range rep.records {
			l.timing.add(rec, &rep.timings[i])
		}
		l.RepeatThroughput = append(l.RepeatThroughput, s.OutputThroughput)
		l.repeats = append(l.repeats, s)
		if s.Requests > 0 && s.Completed == 0 {
			b.finishLevel(l, all, metas, msgs, total)
			b.prog.levelDone(b.o.mode, l)
			return l, allFailed(b.o.mode, l)
		}
		if b.enoughRepeats(l) {
			break
		}
	}
	b.finishLevel(l, all, metas, msgs, total)
	b.prog.levelDone(b.o.mode, l)
	return l, nil
}

// taskSLO is what a good task meets: the SLO at every step and
// -task-latency.
func (b *bench) taskSLO() taskSLO {
	return taskSLO{slo: b.o.slo, latency: b.o.wl.agent.taskLatency}
}

// enoughRepeats applies the repeat rule: -repeats N exactly; else at least
// minRepeats, until the throughput's interval is within relPrecision, at
// most maxRepeats — or up to maxRepeatsFailing while the level has failed
// requests and the knee at its load is undecided (failures make repeats
// noisy; more of them decide the interval).
func (b *bench) enoughRepeats(l *Level) bool {
	n := len(l.RepeatThroughput)
	switch {
	case b.o.repeats > 0:
		return n >= b.o.repeats
	case n < minRepeats:
		return false
	case !needsRepeat(l.RepeatThroughput, relPrecision):
		return true
	case n < maxRepeats:
		return false
	}
	return n >= maxRepeatsFailing || !b.failuresKeepUndecided(l)
}

// failuresKeepUndecided reports whether l (not yet added) has failed
// requests and the knee at its load is undecided with its repeats so far.
func (b *bench) failuresKeepUndecided(l *Level) bool {
	failed := 0
	for _, s := range l.repeats {
		failed += s.Failed
	}
	if failed == 0 {
		return false
	}
	in := b.satLevels()
	in = append(in, saturation.Level{Load: l.Load, Summary: l.repeats[0], Repeats: l.repeats})
	sat, _ := saturation.Find(in, b.satOptions())
	for _, r := range levelReport(sat, l.Load).Reasons {
		if r.Signal == saturation.SignalKnee && r.Undecided {
			return true
		}
	}
	return false
}

// allFailed is the error that ends a run at a level where no request of a
// repeat completed: the failures by type and the first one's message.
func allFailed(m Mode, l *Level) error {
	return fmt.Errorf("every request failed at %s %g (%s): %s", m, l.Load, failureList(l.Failures), l.FirstError)
}

// finishLevel pools the repeats' records into the level's Summary (rates
// over the sum of the repeats' durations), counts its failures by
// error_type, and adds the level.
func (b *bench) finishLevel(l *Level, all []llmmetrics.Record, metas []reqMeta, msgs []string, total time.Duration) {
	l.Summary = llmmetrics.Summarize(all, llmmetrics.SummaryOptions{SLO: b.o.slo, Duration: total})
	if b.wl.Agent() {
		l.Tasks = computeTasks(all, metas, b.taskSLO(), total)
	}
	var busy time.Duration
	for i, r := range all {
		busy += r.End.Sub(r.Start)
		if r.Outcome == llmmetrics.OutcomeOK {
			continue
		}
		if l.Failures == nil {
			l.Failures = map[string]int{}
		}
		l.Failures[cmp.Or(r.ErrorType, "unknown")]++
		if l.FirstError == "" {
			l.FirstError = cmp.Or(msgs[i], r.ErrorType)
		}
	}
	b.finishTiming(l)
	if total > 0 {
		// Little's law: the mean number of requests in flight is the time
		// they spent in flight over the time the repeats took.
		l.ClientInFlight = busy.Seconds() / total.Seconds()
	}
	b.noteServer(l, all)
	b.levels = append(b.levels, l)
}

// waitingBeforeEngine is the client's mean in-flight requests minus the
// server's mean running and waiting ones (nil: the server does not report
// running requests), at least 0.
func waitingBeforeEngine(inFlight float64, srv *saturation.Server) *float64 {
	if srv == nil || srv.RequestsRunning == nil || inFlight <= 0 {
		return nil
	}
	w := inFlight - *srv.RequestsRunning
	if srv.RequestsWaiting != nil {
		w -= *srv.RequestsWaiting
	}
	w = max(w, 0)
	return &w
}

// requests returns how many requests a repeat of load measures.
func (b *bench) requests(load float64) int {
	if b.o.mode == ModeReplay {
		n := b.wl.Info().Entries
		if b.o.requests > 0 {
			n = min(n, b.o.requests)
		}
		return n
	}
	if b.o.requests > 0 {
		return b.o.requests
	}
	if b.o.mode == ModeRate {
		return max(16, int(10*load))
	}
	return max(16, int(3*load))
}

// warmups returns how many warm-up requests a repeat of load runs first.
func (b *bench) warmups(load float64) int {
	switch {
	case b.o.mode == ModeReplay:
		return 0 // the trace is replayed once, from its start
	case b.o.warmup >= 0:
		return b.o.warmup
	case b.o.mode == ModeRate:
		return max(1, int(load+0.5)) // one second of arrivals
	}
	return int(load) // one per client: the wave that starts together
}

// repeatResult is what one repeat measured.
type repeatResult struct {
	records []llmmetrics.Record // the measured requests (warm-up excluded), in the order sent
	msgs    []string            // why each failed ("" for an OK one)
	retries int                 // measured requests sent twice (see send)
	metas   []reqMeta           // what each asked for
	timings []reqTiming         // each measured request's schedule and lags, in step with metas
}

// recordLine is one line of records.jsonl (docs/command.md).
type recordLine struct {
	Mode   Mode    `json:"mode"`
	Load   float64 `json:"load"`
	Repeat int     `json:"repeat"`
	// What the request asked for (workload.Request).
	AskedInputTokens  int  `json:"asked_input_tokens"`
	AskedOutputTokens int  `json:"asked_output_tokens,omitempty"`
	PrefixGroup       *int `json:"prefix_group,omitempty"`
	Session           int  `json:"session"`
	Turn              int  `json:"turn"`
	// An agent's task (-workload agent, a dataset of agent
	// conversations): the request's step (1-based, its turn), the task's
	// steps, the tool choice it sent ("required", "none"; absent: the
	// model's) and the tool calls its answer made.
	Step       int               `json:"step,omitempty"`
	TaskSteps  int               `json:"task_steps,omitempty"`
	ToolChoice string            `json:"tool_choice,omitempty"`
	ToolCalls  *int              `json:"tool_calls,omitempty"`
	Record     llmmetrics.Record `json:"record"`
	// Scheduled is when the request was meant to leave: its arrival
	// (open loop), or the end of the client's previous request (closed
	// loop). Record.Start minus Scheduled is its send lag.
	Scheduled time.Time `json:"scheduled,omitzero"`
	// Error says why a failed request failed, in a few words (the
	// record's error_type is its short, stable name).
	Error string `json:"error,omitempty"`
}

// recordLineBytes is a little more than a line of records.jsonl for a
// short request without ITL gaps (about 450 bytes); longer lines grow the
// buffer as before.
const recordLineBytes = 512

// writeRecords appends a repeat's records to records.jsonl.
func (b *bench) writeRecords(load float64, repeat int, rep repeatResult) error {
	var buf bytes.Buffer
	buf.Grow(recordLineBytes * len(rep.records)) // one allocation, not a doubling series of copies
	enc := json.NewEncoder(&buf)
	for i, r := range rep.records {
		m := rep.metas[i]
		line := recordLine{Mode: b.o.mode, Load: load, Repeat: repeat, Record: r, Error: rep.msgs[i], AskedInputTokens: m.askedIn,
			AskedOutputTokens: m.askedOut, Session: m.session, Turn: m.turn, Scheduled: rep.timings[i].scheduled}
		if m.group >= 0 {
			line.PrefixGroup = &m.group
		}
		if m.agent {
			calls := m.calls
			line.Step, line.TaskSteps, line.ToolChoice, line.ToolCalls = m.turn, m.steps, m.choice, &calls
		}
		if err := enc.Encode(line); err != nil {
			return err
		}
	}
	_, err := b.records.Write(buf.Bytes())
	return err
}

func (b *bench) describeLoads() string {
	switch {
	case b.o.mode == ModeReplay:
		return fmt.Sprintf("at %g× the recorded times", b.o.wl.timeScale)
	case b.o.search:
		return fmt.Sprintf("search from %g (doubling, then bisection to %g%%)", b.o.loads[0], 100*b.o.searchPrecision)
	case b.o.auto:
		return "levels 1, 2, 4, … (until past the knee)"
	}
	parts := make([]string, len(b.o.loads))
	for i, l := range b.o.loads {
		parts[i] = fmt.Sprint(l)
	}
	return "levels " + strings.Join(parts, ", ")
}

func (b *bench) describeObjectives() string {
	var parts []string
	for _, o := range b.o.objectives {
		parts = append(parts, o.String())
	}
	if len(parts) == 0 {
		return ""
	}
	return ", objectives " + strings.Join(parts, ", ")
}

// sortedLevels returns the measured levels in increasing load.
func (b *bench) sortedLevels() []*Level {
	ls := slices.Clone(b.levels)
	slices.SortStableFunc(ls, func(x, y *Level) int {
		switch {
		case x.Load < y.Load:
			return -1
		case x.Load > y.Load:
			return 1
		}
		return 0
	})
	return ls
}
