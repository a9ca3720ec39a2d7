package bench

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/saturation"
)

// Schema is the "schema" of results.json.
const Schema = "llmmetrics.bench/v1"

// Level is one measured load level of results.json.
type Level struct {
	// Load is the offered load (concurrency, or requests per second).
	Load float64 `json:"load"`
	// Summary pools the measured requests of every repeat; its rates are
	// over the sum of the repeats' durations.
	Summary llmmetrics.Summary `json:"summary"`
	// RepeatThroughput is each repeat's output throughput (tokens/s).
	RepeatThroughput []float64 `json:"repeat_output_throughput"`
	// MeetsSLO: SLO attainment reaches the target and every objective
	// passes (saturation.LevelReport.MeetsSLO, the one definition).
	MeetsSLO bool `json:"meets_slo"`
	// Retries counts measured requests sent a second time because their
	// first attempt failed on a reused connection before any byte of the
	// answer (their Record is the second attempt's).
	Retries int `json:"retries"`
	// Failures counts the failed measured requests by error_type.
	Failures map[string]int `json:"failures,omitempty"`
	// FirstError is the first failed request's message.
	FirstError string `json:"first_error,omitempty"`
	// ClientInFlight is the mean number of measured requests in flight:
	// their summed durations over the repeats' durations.
	ClientInFlight float64 `json:"client_in_flight"`
	// WaitingBeforeEngine is ClientInFlight minus the server's mean running
	// and waiting requests, at least 0: requests that wait in front of the
	// engine where its metrics cannot count them (absent: the server does
	// not report running requests).
	WaitingBeforeEngine *float64 `json:"waiting_before_engine,omitempty"`
	// Server is what the model server's Prometheus endpoints reported
	// during the level (absent: no endpoint, or nothing recognised).
	Server *saturation.Server `json:"server,omitempty"`
	// ServerTime is where TTFT goes, in the server's own words
	// (servertime.go; absent: the server said nothing of it).
	ServerTime *ServerTime `json:"server_time,omitempty"`
	// Answers counts why the answers ended (absent: none said).
	Answers *Answers `json:"answers,omitempty"`
	// PrefillStalls counts the long gaps between tokens and those that
	// overlapped another request's prefill (saturation.CountStalls;
	// absent: no gap was kept).
	PrefillStalls *saturation.Stalls `json:"prefill_stalls,omitempty"`
	// Lengths compares the asked and the actual lengths.
	Lengths *Lengths `json:"lengths,omitempty"`
	// ClientTiming is the level's timing error budget (timing.go).
	ClientTiming *ClientTiming `json:"client_timing,omitempty"`
	// Tasks is what agents' tasks measured (tasks.go; absent: the
	// workload sends no tasks).
	Tasks *Tasks `json:"tasks,omitempty"`

	repeats []llmmetrics.Summary // each repeat's own Summary, for the saturation analysis
	timing  timingSamples        // the measured requests' lags, for ClientTiming
}

// Results is the content of results.json (docs/command.md).
type Results struct {
	Schema           string                 `json:"schema"`
	Target           string                 `json:"target"`
	Model            string                 `json:"model"`
	Mode             Mode                   `json:"mode"`
	Workload         *Workload              `json:"workload,omitempty"`
	SLO              llmmetrics.SLO         `json:"slo"`
	Objectives       []llmmetrics.Objective `json:"objectives,omitempty"`
	AttainmentTarget float64                `json:"attainment_target"`
	Levels           []*Level               `json:"levels"`
	Saturation       saturation.Result      `json:"saturation"`
	// MaxLoadUnderSLO is the highest load found that meets the SLO and
	// objectives (with -search; 0 when even the lowest tried fails).
	MaxLoadUnderSLO *float64 `json:"max_load_under_slo,omitempty"`
	Cost            *Cost    `json:"cost,omitempty"`
	// ClientTiming pools every level's timing error budget.
	ClientTiming *ClientTiming `json:"client_timing,omitempty"`
	// Interrupted: the run was stopped (Ctrl-C) before its end; the levels
	// are those measured so far.
	Interrupted bool `json:"interrupted,omitempty"`
	// SLOBy is "task" when SLO attainment (the verdict, meets_slo, -search)
	// is the share of good tasks (agents' tasks, unless -goodput-by
	// request), absent when it is the share of requests.
	SLOBy string `json:"slo_by,omitempty"`
}

// Cost is the cost section of results.json, at the best-goodput level.
type Cost struct {
	HourlyCost             float64  `json:"hourly_cost"`
	Load                   float64  `json:"load"`
	PerMillionOutputTokens float64  `json:"per_million_output_tokens"`
	PerMillionGoodTokens   *float64 `json:"per_million_good_tokens,omitempty"`
}

// results assembles Results from the measured levels.
func (b *bench) results() Results {
	ls := b.sortedLevels()
	r := Results{Schema: Schema, Target: b.target, Model: b.model, Mode: b.o.mode, SLO: b.o.slo, Objectives: b.o.objectives,
		AttainmentTarget: saturation.DefaultAttainmentTarget, Levels: ls, Saturation: b.analysis()}
	if r.Levels == nil {
		r.Levels = []*Level{}
	}
	for _, l := range ls {
		l.MeetsSLO = levelReport(r.Saturation, l.Load).MeetsSLO
	}
	r.Cost = costAt(b.o.hourlyCost, ls)
	if b.byTask() {
		r.SLOBy = "task"
	}
	r.ClientTiming = overallTiming(ls, b.o.mode)
	if b.wl != nil {
		r.Workload = b.workloadResults()
	}
	return r
}

// bestGoodput returns the level with the highest token goodput, or nil.
func bestGoodput(ls []*Level) *Level {
	var best *Level
	for _, l := range ls {
		if l.Summary.Goodput.TokensPerSecond > 0 && (best == nil || l.Summary.Goodput.TokensPerSecond > best.Summary.Goodput.TokensPerSecond) {
			best = l
		}
	}
	return best
}

// costAt prices the level with the best goodput (where a service would
// run), or nil without an hourly cost.
func costAt(hourly float64, ls []*Level) *Cost {
	l := bestGoodput(ls)
	if hourly <= 0 || l == nil {
		return nil
	}
	perM, err := llmmetrics.CostPerMillionTokens(hourly, l.Summary.OutputThroughput)
	if err != nil {
		return nil
	}
	c := &Cost{HourlyCost: hourly, Load: l.Load, PerMillionOutputTokens: perM}
	if good, err := llmmetrics.CostPerMillionTokens(hourly, l.Summary.Goodput.TokensPerSecond); err == nil {
		c.PerMillionGoodTokens = &good
	}
	return c
}

func ms(d time.Duration, ok bool) string {
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond))
}

// unit names a load.
func unit(m Mode) string {
	switch m {
	case ModeRate:
		return "requests/s"
	case ModeReplay:
		return "× the trace's speed"
	}
	return "concurrent requests"
}

// writeTable prints one row per level, then the findings. The retries
// column is shown when some level retried a request.
func writeTable(w io.Writer, r Results) {
	retries := slices.ContainsFunc(r.Levels, func(l *Level) bool { return l.Retries > 0 })
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head, units := "load\truns\tRPS\tout tok/s\t±95%\tTTFT p50\tTTFT p99\tTPOT p50\tTPOT p99\tITL p99\tE2EL p99\tgood tok/s\tattain\tfailed\t",
		"\t\t\t\t\tms\tms\tms\tms\tms\tms\t\t\t\t"
	if retries {
		head, units = head+"retried\t", units+"\t"
	}
	fmt.Fprintln(tw, head+"KV\twaiting\t")
	fmt.Fprintln(tw, units+"mean\tmean\t")
	for _, l := range r.Levels {
		s := l.Summary
		fmt.Fprintf(tw, "%g\t%d\t%.2f\t%.0f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.0f\t%.0f%%\t%d\t",
			l.Load, len(l.RepeatThroughput), s.RequestThroughput, s.OutputThroughput, halfWidth(l.RepeatThroughput),
			ms(s.TTFT.Percentile(50)), ms(s.TTFT.Percentile(99)), ms(s.TPOT.Percentile(50)), ms(s.TPOT.Percentile(99)),
			ms(s.ITL.Percentile(99)), ms(s.E2EL.Percentile(99)),
			s.Goodput.TokensPerSecond, 100*s.Goodput.Attainment, s.Failed+s.Canceled)
		if retries {
			fmt.Fprintf(tw, "%d\t", l.Retries)
		}
		fmt.Fprintf(tw, "%s\t%s\t\n",
			serverCol(l.Server, func(v saturation.Server) *float64 { return v.KVCacheUsage }, "%.0f%%", 100),
			serverCol(l.Server, func(v saturation.Server) *float64 { return v.RequestsWaiting }, "%.1f", 1))
	}
	tw.Flush()
	fmt.Fprintln(w)
	writeTasks(w, r)
	writeTiming(w, r.ClientTiming)
	writeServerTime(w, r)
	writeFindings(w, r)
}

// serverCol formats one server figure for the table ("-": not reported).
func serverCol(s *saturation.Server, get func(saturation.Server) *float64, format string, scale float64) string {
	if s == nil || get(*s) == nil {
		return "-"
	}
	return fmt.Sprintf(format, *get(*s)*scale)
}

// halfWidth formats the 95 % interval half-width of the repeats' mean.
func halfWidth(xs []float64) string {
	if len(xs) < 2 {
		return "-"
	}
	_, h := saturation.MeanCI(xs)
	return fmt.Sprintf("%.0f", h)
}

func writeFindings(w io.Writer, r Results) {
	sat := r.Saturation
	u := unit(r.Mode)
	if sat.Found {
		fmt.Fprintf(w, "Saturation point: %g %s. Why:\n", sat.Load, u)
		for _, reason := range sat.Reasons {
			fmt.Fprintf(w, "  - %s\n", reason.Message)
		}
	} else if len(sat.KneeBetween) == 2 {
		fmt.Fprintf(w, "Saturation point undecided: the knee lies between %g and %g %s (the gain's 95%% interval straddles the threshold); run more repeats (-repeats) or a level between them.\n",
			sat.KneeBetween[0], sat.KneeBetween[1], u)
	} else {
		fmt.Fprintln(w, "No saturation point found in these levels: add higher loads.")
	}
	for _, n := range sat.Notes {
		fmt.Fprintf(w, "Note: %s.\n", n)
	}
	writeLevelFindings(w, r)
	if best := bestGoodput(r.Levels); best != nil {
		fmt.Fprintf(w, "Best goodput: %.0f good output tok/s (%.2f good req/s) at %g %s.\n",
			best.Summary.Goodput.TokensPerSecond, best.Summary.Goodput.RequestsPerSecond, best.Load, u)
	}
	if r.MaxLoadUnderSLO != nil {
		if *r.MaxLoadUnderSLO > 0 {
			fmt.Fprintf(w, "Highest load meeting the SLO (%v, ≥ %.0f%% of %s)%s (search): %g %s.\n",
				r.SLO, 100*r.AttainmentTarget, sloUnit(r), objectivesText(r.Objectives), *r.MaxLoadUnderSLO, u)
		} else {
			fmt.Fprintf(w, "No load tried meets the SLO (%v)%s.\n", r.SLO, objectivesText(r.Objectives))
		}
	} else {
		var maxGood *Level
		for _, l := range r.Levels {
			if l.MeetsSLO {
				maxGood = l
			}
		}
		if maxGood != nil {
			fmt.Fprintf(w, "Highest level meeting the SLO (%v, ≥ %.0f%% of %s)%s: %g %s (use -search to bisect).\n",
				r.SLO, 100*r.AttainmentTarget, sloUnit(r), objectivesText(r.Objectives), maxGood.Load, u)
		} else {
			fmt.Fprintf(w, "No level meets the SLO (%v)%s.\n", r.SLO, objectivesText(r.Objectives))
		}
	}
	if c := r.Cost; c != nil {
		fmt.Fprintf(w, "Cost at %g %s and $%.2f/h: $%.3f per million output tokens", c.Load, u, c.HourlyCost, c.PerMillionOutputTokens)
		if c.PerMillionGoodTokens != nil {
			fmt.Fprintf(w, ", $%.3f per million good tokens", *c.PerMillionGoodTokens)
		}
		fmt.Fprintln(w, ".")
	}
	if r.Interrupted {
		fmt.Fprintln(w, "Interrupted: these are the levels measured before the stop.")
	}
}

// failureList formats failures by error_type, most frequent first:
// "12 eof, 3 timeout".
func failureList(f map[string]int) string {
	types := slices.Collect(maps.Keys(f))
	slices.SortFunc(types, func(a, b string) int { return cmp.Or(cmp.Compare(f[b], f[a]), cmp.Compare(a, b)) })
	parts := make([]string, len(types))
	for i, t := range types {
		parts[i] = fmt.Sprintf("%d %s", f[t], t)
	}
	return strings.Join(parts, ", ")
}

// writeLevelFindings names, per level, why requests failed, which levels
// are untrusted, and the requests waiting in front of the engine where the
// saturation point's reasons do not already say so.
func writeLevelFindings(w io.Writer, r Results) {
	sat := r.Saturation
	u := unit(r.Mode)
	for _, l := range r.Levels {
		rep := levelReport(sat, l.Load)
		if len(l.Failures) > 0 {
			trust := ""
			if rep.Untrusted {
				trust = fmt.Sprintf(", above the %.0f%% a trusted level allows", 100*saturation.DefaultMaxFailureRate)
			}
			fmt.Fprintf(w, "Failed at %g %s: %.1f%% of requests (%s)%s; first: %s.\n",
				l.Load, u, 100*rep.FailureRate, failureList(l.Failures), trust, l.FirstError)
		}
		if l.Retries > 0 {
			fmt.Fprintf(w, "Retried at %g %s: %d request(s) whose reused connection was closed before any answer, sent again on a fresh one.\n", l.Load, u, l.Retries)
		}
		if sat.Found && l.Load == sat.Load {
			continue // its reasons are printed above
		}
		for _, reason := range rep.Reasons {
			if reason.Signal&(saturation.SignalQueueBeforeEngine|saturation.SignalComputeBound|saturation.SignalPrefillStall) != 0 {
				fmt.Fprintf(w, "At %g %s: %s.\n", l.Load, u, reason.Message)
			}
		}
	}
	writeAnswers(w, r) // servertime.go
}

// sloUnit names what SLO attainment counts: "requests", or "tasks
// (every step met it)".
func sloUnit(r Results) string {
	if r.SLOBy == "task" {
		s := "tasks, every step meeting it"
		for _, l := range r.Levels {
			if lim := l.taskLimit(); lim > 0 {
				s += fmt.Sprintf(", in at most %v", lim)
				break
			}
		}
		return s
	}
	return "requests"
}

func objectivesText(objs []llmmetrics.Objective) string {
	s := ""
	for _, o := range objs {
		s += ", " + o.String()
	}
	return s
}

// writeFiles writes results.json and the charts into the -out directory
// (records.jsonl is written as the run goes).
func (b *bench) writeFiles(r Results) error {
	dir := b.o.out
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	p := filepath.Join(dir, "results.json")
	if err := os.WriteFile(p, append(js, '\n'), 0o644); err != nil {
		return err
	}
	b.written = append(b.written, p)
	if !slices.ContainsFunc(r.Levels, func(l *Level) bool { return l.Summary.Completed > 0 }) {
		return nil // no chart from nothing
	}
	charts, err := writeCharts(dir, r)
	b.written = append(b.written, charts...)
	if err != nil {
		return err
	}
	return b.writePage(r)
}
