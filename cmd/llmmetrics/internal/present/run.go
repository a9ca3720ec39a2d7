package present

import (
	"fmt"
	"strings"
	"time"

	"github.com/llmmetrics/llmmetrics"
)

// Unknown says which figures of a Summary its files did not give: they
// are printed "unknown", never as the 0 the Summary holds.
type Unknown struct {
	// Input: some completed request has no input count.
	Input bool
	// Cached: no file says cached input tokens.
	Cached bool
	// Concurrency: requests without start times (no peak concurrency).
	Concurrency bool
	// Duration: no run duration, so no rate.
	Duration bool
}

// RunLevel is one load level of a run read from files.
type RunLevel struct {
	// Label names the level ("rate 2 (Poisson arrivals)"; "" for a file
	// that names no load).
	Label   string
	Summary llmmetrics.Summary
	// TTFT and ITL are the samples of the CDFs (every completed request's
	// TTFT, every gap; nil: no chart).
	TTFT, ITL []time.Duration
	Unknown   Unknown
}

// RunPage returns the report page of a run read from files ("llmmetrics
// report -html"): per level its counts and latency tables and its CDFs of
// TTFT and ITL, and the notes.
func RunPage(title, command string, levels []RunLevel, notes []string) Page {
	p := Page{Title: title, Command: command, Notes: notes}
	for _, l := range levels {
		counts, lat := countsTable(l.Summary, l.Unknown), latencyTable(l.Summary)
		name := "run"
		if l.Label != "" {
			name = l.Label
			counts.Caption = "Run at " + l.Label
			lat.Caption = "Latency (ms) at " + l.Label
		}
		p.Tables = append(p.Tables, counts, lat)
		p.Runs = append(p.Runs, Run{Name: name, TTFT: l.TTFT, ITL: l.ITL})
	}
	return p
}

// BenchReport is what a bench run's report page shows.
type BenchReport struct {
	// Command is the command line of the run.
	Command string
	// LoadUnit names the load ("concurrent requests", "requests/s").
	LoadUnit string
	// Levels are the measured levels, in increasing load.
	Levels []Level
	// TTFT and ITL are the samples of the CDF charts (e.g. of every
	// measured request; nil: no chart), CDFLabel says which.
	TTFT, ITL []time.Duration
	CDFLabel  string
	// Findings are the verdict lines: saturation point and why, best
	// goodput, highest load meeting the SLO.
	Findings []string
	// Workload describes what was sent, as name–value pairs.
	Workload [][2]string
}

// BenchPage returns the report page (report.html) of a bench run: the
// findings, a table of the levels, the CDFs, throughput and p99 TTFT
// against load, the server's KV cache and queue, the workload and the
// command line.
func BenchPage(b BenchReport) Page {
	p := Page{
		Title:   "llmmetrics bench",
		Command: b.Command,
		Runs:    []Run{{Name: b.CDFLabel, TTFT: b.TTFT, ITL: b.ITL, Levels: b.Levels, LoadUnit: b.LoadUnit, Workload: b.Workload}},
	}
	if p.Runs[0].Name == "" {
		p.Runs[0].Name = "run"
	}
	if len(b.Findings) > 0 {
		p.Verdict = &Verdict{Headline: b.Findings[0], Reasons: b.Findings[1:]}
	}
	t := Table{Caption: "Levels (" + b.LoadUnit + ")", Header: []string{"load", "requests/s", "output tok/s", "TTFT p50 ms", "TTFT p99 ms",
		"TPOT p50 ms", "ITL p99 ms", "E2EL p99 ms", "attainment", "failed", "KV cache", "waiting"}}
	for _, l := range b.Levels {
		s := l.Summary
		kv, wait := "-", "-"
		if l.Server != nil && l.Server.KVCacheUsage != nil {
			kv = fmt.Sprintf("%.0f%%", 100**l.Server.KVCacheUsage)
		}
		if l.Server != nil && l.Server.RequestsWaiting != nil {
			wait = fmt.Sprintf("%.1f", *l.Server.RequestsWaiting)
		}
		t.Rows = append(t.Rows, Row{Cells: []string{fmt.Sprintf("%g", l.Load), fmt.Sprintf("%.2f", s.RequestThroughput), fmt.Sprintf("%.0f", s.OutputThroughput),
			msAt(s.TTFT, 50), msAt(s.TTFT, 99), msAt(s.TPOT, 50), msAt(s.ITL, 99), msAt(s.E2EL, 99),
			fmt.Sprintf("%.1f%%", 100*s.Goodput.Attainment), fmt.Sprint(s.Failed + s.Canceled), kv, wait}})
	}
	p.Tables = []Table{t}
	if tt := tasksTable(b.Levels, b.LoadUnit); tt != nil {
		p.Tables = append(p.Tables, *tt)
	}
	if ct := contextTable(b.Levels); ct != nil {
		p.Tables = append(p.Tables, *ct)
	}
	return p
}

// countsTable is a run's counts, throughput and goodput; what u says is
// not known is printed so.
func countsTable(s llmmetrics.Summary, u Unknown) Table {
	t := Table{Caption: "Run", Header: []string{"figure", "value"}}
	add := func(k, v string) { t.Rows = append(t.Rows, Row{Cells: []string{k, v}}) }
	rate := func(x float64, f string, known bool) string {
		if !known {
			return "unknown"
		}
		return fmt.Sprintf(f, x)
	}
	add("requests", fmt.Sprintf("%d (%d ok, %d failed, %d canceled)", s.Requests, s.Completed, s.Failed, s.Canceled))
	dur := "unknown"
	if !u.Duration {
		dur = s.Duration.Round(time.Millisecond).String()
	}
	add("duration", dur)
	add("request throughput", rate(s.RequestThroughput, "%.2f requests/s", !u.Duration))
	add("output throughput", rate(s.OutputThroughput, "%.1f tokens/s", !u.Duration))
	add("total token throughput", rate(s.TotalTokenThroughput, "%.1f tokens/s", !u.Duration && !u.Input))
	input, cached := fmt.Sprint(s.InputTokens), fmt.Sprint(s.CachedInputTokens)
	if u.Input {
		input = "unknown"
	}
	if u.Cached {
		cached = "unknown"
	}
	add("tokens", fmt.Sprintf("%s input (%s cached), %d output", input, cached, s.OutputTokens))
	if !u.Concurrency {
		add("peak concurrency", fmt.Sprint(s.PeakConcurrency))
	}
	if !s.SLO.IsZero() {
		add("SLO", s.SLO.String())
		add("goodput", fmt.Sprintf("%s, %s", rate(s.Goodput.RequestsPerSecond, "%.2f requests/s", !u.Duration), rate(s.Goodput.TokensPerSecond, "%.1f tokens/s", !u.Duration)))
		add("SLO attainment", fmt.Sprintf("%.2f%% (%d of %d requests)", 100*s.Goodput.Attainment, s.Goodput.Good, s.Requests))
	}
	return t
}

// latencyTable is a run's latency distributions, in ms, then the server's
// own times where its answers carried them (wait: TTFT − the server's
// prefill; never a row for what no answer said).
func latencyTable(s llmmetrics.Summary) Table {
	t := Table{Caption: "Latency (ms)", Header: []string{"", "count", "mean", "p50", "p90", "p95", "p99", "max"}}
	type row = struct {
		name string
		d    llmmetrics.Distribution
	}
	rows := []row{{"TTFT", s.TTFT}, {"TTFO", s.TTFO}, {"TPOT", s.TPOT}, {"ITL", s.ITL}, {"E2EL", s.E2EL}}
	for _, r := range []row{{"wait", s.Wait}, {"srv prefill", s.ServerPrefill}, {"srv decode", s.ServerDecode}} {
		if r.d.Count > 0 {
			rows = append(rows, r)
		}
	}
	for _, row := range rows {
		d := row.d
		cells := []string{row.name, fmt.Sprint(d.Count)}
		if d.Count == 0 {
			cells = append(cells, "-", "-", "-", "-", "-", "-")
		} else {
			cells = append(cells, ms(d.Mean), msAt(d, 50), msAt(d, 90), msAt(d, 95), msAt(d, 99), ms(d.Max))
		}
		t.Rows = append(t.Rows, Row{Cells: cells})
	}
	return t
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/float64(time.Millisecond)) }

// msAt formats percentile p of d ("-": empty or not computed).
func msAt(d llmmetrics.Distribution, p float64) string {
	v, ok := d.Percentile(p)
	if !ok {
		return "-"
	}
	return ms(v)
}

// CommandLine joins args as a shell reads them back, quoting those that
// need it.
func CommandLine(args []string) string {
	parts := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n'\"$\\*?;&|<>()`#~{}[]") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		parts[i] = a
	}
	return strings.Join(parts, " ")
}
