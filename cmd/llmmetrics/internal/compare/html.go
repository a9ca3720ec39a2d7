package compare

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/cmd/llmmetrics/internal/present"
)

// Page returns the comparison as a report page: the verdict and its
// reasons, a table per level, the CDFs of TTFT and ITL of the first level
// compared, the runs' levels against load, their workloads, and the
// command line.
func Page(c *Comparison, ins [2]*Input, command string) present.Page {
	p := present.Page{
		Title:    "llmmetrics compare: " + filepath.Base(c.Base) + " → " + filepath.Base(c.New),
		Command:  command,
		Warnings: c.Warnings,
		Notes:    c.Notes,
		Methods:  append(Methods(c), verdictRule(c)),
		Verdict:  verdict(c),
	}
	for _, t := range c.Levels {
		tab := present.Table{Caption: fmt.Sprintf("%s (requests: BASE %d, NEW %d)", strings.TrimSpace(t.Level), len(t.base.recs), len(t.new.recs)),
			Header: []string{"metric", "unit", "BASE", "NEW", "change", "interval", "verdict"}}
		for _, r := range t.Results {
			row := present.Row{Cells: []string{r.Metric, r.Unit, num(r.Base, r.BaseN), num(r.New, r.NewN), ChangeText(r), IntervalText(r), r.Verdict}}
			if r.Verdict == Regression || r.Verdict == Improvement {
				row.Class = r.Verdict
			}
			tab.Rows = append(tab.Rows, row)
		}
		p.Tables = append(p.Tables, tab)
	}
	for i, in := range ins {
		side := [2]string{"BASE", "NEW"}[i]
		run := present.Run{Name: side + ": " + filepath.Base(in.Name)}
		if len(c.Levels) > 0 {
			lv := c.Levels[0].base
			if i == 1 {
				lv = c.Levels[0].new
			}
			run.TTFT, run.ITL = Samples(lv.recs)
		}
		if r := in.Results; r != nil {
			run.LoadUnit = "concurrent requests"
			if r.Mode == "rate" {
				run.LoadUnit = "requests/s"
			}
			for _, l := range r.Levels {
				run.Levels = append(run.Levels, present.Level{Load: l.Load, Summary: l.Summary, Server: l.Server})
			}
			run.Workload = workloadRows(r)
		}
		p.Runs = append(p.Runs, run)
	}
	return p
}

// Samples returns the TTFT of every completed request and every ITL gap,
// the samples of a report page's CDFs.
func Samples(recs []llmmetrics.Record) (ttft, itl []time.Duration) {
	for _, r := range recs {
		if r.Outcome != llmmetrics.OutcomeOK {
			continue
		}
		if d, ok := r.TTFT(); ok {
			ttft = append(ttft, d)
		}
		itl = append(itl, r.ITL...)
	}
	return ttft, itl
}

func workloadRows(r *BenchResults) [][2]string {
	rows := [][2]string{{"target", r.Target}, {"model", r.Model}, {"load mode", r.Mode}}
	if !r.SLO.IsZero() {
		rows = append(rows, [2]string{"SLO", r.SLO.String()})
	}
	if len(r.Workload) > 0 {
		rows = append(rows, [2]string{"workload", compact(r.Workload)})
	}
	return rows
}

func verdictRule(c *Comparison) string {
	return "Verdict: " + VerdictRule(c) + "."
}

// verdict sums the comparison up: the gate's outcome when -fail-on was
// given, else what regressed or improved; the reasons name each
// regression and improvement with its change and interval.
func verdict(c *Comparison) *present.Verdict {
	var reg, imp []string
	for _, t := range c.Levels {
		for _, r := range t.Results {
			if r.Verdict != Regression && r.Verdict != Improvement {
				continue
			}
			name := r.Metric
			if t.Level != "" && len(c.Levels) > 1 {
				name += " at " + t.Level
			}
			line := fmt.Sprintf("%s: %s %s, interval %s", r.Verdict, name, ChangeText(r), IntervalText(r))
			if IntervalText(r) == "-" {
				line = fmt.Sprintf("%s: %s (%s)", r.Verdict, name, r.Reason)
			}
			if r.Verdict == Regression {
				reg = append(reg, line)
			} else {
				imp = append(imp, line)
			}
		}
	}
	var sweep []string
	for _, s := range c.Sweep {
		sweep = append(sweep, "over the levels: "+s.String())
	}
	v := &present.Verdict{Reasons: append(sweep, append(reg, imp...)...)}
	switch {
	case len(c.FailOn) > 0 && len(c.Regressed) > 0:
		v.Bad, v.Headline = true, "FAIL: regressed: "+strings.Join(c.Regressed, ", ")
	case len(c.FailOn) > 0:
		v.Headline = fmt.Sprintf("PASS: no -fail-on metric regressed (%d checked)", len(c.FailOn))
	case len(reg) > 0:
		v.Bad, v.Headline = true, fmt.Sprintf("%d regressions, %d improvements beyond noise", len(reg), len(imp))
	case len(imp) > 0:
		v.Headline = fmt.Sprintf("%d improvements, no regression beyond noise", len(imp))
	default:
		v.Headline = "No change beyond noise"
	}
	return v
}

// writeHTML writes the comparison page to name.
func writeHTML(name string, c *Comparison, ins [2]*Input, args []string) error {
	return present.WriteFile(name, Page(c, ins, present.CommandLine(append([]string{"llmmetrics", "compare"}, args...))))
}
