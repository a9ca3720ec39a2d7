package compare

import (
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"
)

// WriteText prints the comparison: the inputs and warnings, a table per
// level, how the intervals were computed, and the gate.
func WriteText(w io.Writer, c *Comparison) {
	fmt.Fprintf(w, "BASE: %s\nNEW:  %s\n", c.Base, c.New)
	for _, s := range c.Warnings {
		fmt.Fprintf(w, "warning: %s\n", s)
	}
	for _, s := range c.Notes {
		fmt.Fprintf(w, "note: %s\n", s)
	}
	for _, t := range c.Levels {
		fmt.Fprintln(w)
		if t.Level != "" {
			fmt.Fprintf(w, "%s (requests: BASE %d, NEW %d)\n", t.Level, len(t.base.recs), len(t.new.recs))
		} else {
			fmt.Fprintf(w, "requests: BASE %d, NEW %d\n", len(t.base.recs), len(t.new.recs))
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "metric\tunit\tbase\tnew\tchange\tinterval\tverdict\t")
		for _, r := range t.Results {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.Metric, r.Unit, num(r.Base, r.BaseN), num(r.New, r.NewN),
				ChangeText(r), IntervalText(r), r.Verdict)
		}
		tw.Flush()
		for _, r := range t.Results {
			if r.Verdict == Regression || r.Verdict == Improvement || r.Verdict == NotCompared {
				fmt.Fprintf(w, "  %s %s: %s\n", r.Metric, r.Verdict, r.Reason)
			}
		}
	}
	fmt.Fprintln(w)
	for _, v := range c.Sweep {
		fmt.Fprintf(w, "over the levels: %s\n", v)
	}
	for _, m := range Methods(c) {
		fmt.Fprintf(w, "method: %s\n", m)
	}
	fmt.Fprintf(w, "verdict: %s\n", VerdictRule(c))
	switch {
	case len(c.FailOn) == 0:
	case len(c.Regressed) > 0:
		fmt.Fprintf(w, "FAIL: regressed: %s\n", strings.Join(c.Regressed, ", "))
	default:
		fmt.Fprintf(w, "PASS: no -fail-on metric regressed (%d checked)\n", len(c.FailOn))
	}
}

// Methods lists, once each, how the intervals of c were computed.
func Methods(c *Comparison) []string {
	var ms []string
	seen := map[string]bool{}
	for _, t := range c.Levels {
		for _, r := range t.Results {
			if r.Method == "" || seen[r.Metric+r.Method] {
				continue
			}
			m := metricFamily(r.Metric) + ": " + repeatCounts.ReplaceAllString(r.Method, "over the repeats")
			if !seen[m] {
				seen[m] = true
				ms = append(ms, m)
			}
			seen[r.Metric+r.Method] = true
		}
	}
	return ms
}

// repeatCounts matches the repeat counts of a method, which differ from
// level to level.
var repeatCounts = regexp.MustCompile(`over the repeats \(\d+ and \d+\)`)

// metricFamily groups metrics for the method lines.
func metricFamily(m string) string {
	switch {
	case isServerTime(m):
		return "the server's times (wait, server_prefill, server_decode)"
	case strings.HasSuffix(m, " itl"):
		return "ITL"
	case strings.HasSuffix(m, " "+taskLatencyName):
		return "task latency percentiles and mean"
	case strings.Contains(m, " "):
		return "TTFT, TTFO, TPOT, E2EL percentiles and means"
	case slices.Contains(rates, m):
		return strings.Join(rates, ", ")
	}
	return m
}

// num formats a value ("-" when its side has no values).
func num(x float64, n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.4g", x)
}

// ChangeText formats the change, absolute and relative.
func ChangeText(r Result) string {
	if r.BaseN == 0 || r.NewN == 0 {
		return "-"
	}
	if r.points {
		return fmt.Sprintf("%+.2f points", r.Change)
	}
	if r.ChangePct == nil {
		return fmt.Sprintf("%+.4g", r.Change)
	}
	return fmt.Sprintf("%+.4g (%s)", r.Change, pctText(*r.ChangePct))
}

// VerdictRule says how the verdicts are reached.
func VerdictRule(c *Comparison) string {
	conf := "95% interval"
	if len(c.Levels) > 1 {
		conf = "interval (95% for a metric judged at one level; with several, Holm-adjusted per metric, its confidence shown)"
	}
	return fmt.Sprintf("regression or improvement when the %s excludes 0 and the change is at least -min-change (%g%%; for slo_attainment, points); else no change", conf, 100*c.MinChange)
}

// IntervalText formats the interval of the change (relative when there is
// one), with its confidence when it is not 95 %.
func IntervalText(r Result) string {
	var s string
	switch {
	case r.Verdict == NotCompared || (r.CILow == 0 && r.CIHigh == 0 && r.Method == ""):
		return "-"
	case r.points:
		s = fmt.Sprintf("[%+.2f, %+.2f] points", r.CILow, r.CIHigh)
	case r.CILowPct != nil:
		s = fmt.Sprintf("[%s, %s]", pctText(*r.CILowPct), pctText(*r.CIHighPct))
	default:
		s = fmt.Sprintf("[%+.4g, %+.4g]", r.CILow, r.CIHigh)
	}
	if r.Confidence != 0 && confText(r.Confidence) != confText(ciLevel) {
		s += " (" + confText(r.Confidence) + ")"
	}
	return s
}

func pctText(p float64) string {
	if math.IsInf(p, 0) {
		return "inf"
	}
	return fmt.Sprintf("%+.1f%%", p)
}
