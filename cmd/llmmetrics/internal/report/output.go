package report

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/llmmetrics/llmmetrics"
)

// check is one gate line: an objective or the SLO attainment.
type check struct {
	name         string // e.g. "p95 ttft<=200ms"
	pass         bool
	value, limit string
	margin       string
}

// gate checks the objectives and, when an SLO is set, its attainment.
func gate(s llmmetrics.Summary, o options) []check {
	var cs []check
	for _, obj := range o.objectives {
		res, err := obj.Check(s)
		c := check{name: obj.String(), limit: obj.Limit.String()}
		switch {
		case err != nil:
			c.value, c.margin = "invalid: "+err.Error(), "-"
		case !res.Found:
			c.value, c.margin = "none (no samples)", "-"
		default:
			c.pass = res.Pass
			c.value, c.margin = res.Value.String(), signed(res.Margin)
		}
		cs = append(cs, c)
	}
	if !o.slo.IsZero() {
		a := s.Goodput.Attainment
		cs = append(cs, check{
			name:   "slo " + o.slo.String() + " attainment>=" + pct(o.attainment),
			pass:   s.Requests > 0 && a >= o.attainment,
			value:  fmt.Sprintf("%s (%d of %d requests)", pct(a), s.Goodput.Good, s.Requests),
			limit:  pct(o.attainment),
			margin: fmt.Sprintf("%+.2f points", 100*(a-o.attainment)),
		})
	}
	return cs
}

func signed(d time.Duration) string {
	if d >= 0 {
		return "+" + d.String()
	}
	return d.String()
}

func pct(x float64) string { return fmt.Sprintf("%.2f%%", 100*x) }

// writeChecks prints one line per check, PASS or FAIL first, so that a CI
// log can be grepped.
func writeChecks(w io.Writer, cs []check) {
	for _, c := range cs {
		verdict := "PASS"
		if !c.pass {
			verdict = "FAIL"
		}
		fmt.Fprintf(w, "%s %s: value %s, limit %s, margin %s\n", verdict, c.name, c.value, c.limit, c.margin)
	}
}

// writeNotes prints the inputs and what their formats could not provide.
func writeNotes(w io.Writer, r *run) {
	for _, f := range r.files {
		fmt.Fprintf(w, "%s: %s, %d requests\n", f.name, f.format.name, f.records)
	}
	seen := map[string]bool{}
	for _, f := range r.files {
		if !seen[f.format.name] {
			seen[f.format.name] = true
			fmt.Fprintf(w, "TTFT (%s): %s\n", f.format.name, f.format.ttft)
		}
	}
	if r.clock == clockRelative {
		fmt.Fprintf(w, "run duration: %v, the sum of the durations the files state (their requests laid end to end)\n", r.duration)
	} else if r.n > 0 {
		fmt.Fprintln(w, "run duration: from the earliest start to the latest end over all files")
	}
	for _, n := range r.notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	if len(r.errorTypes) > 0 {
		fmt.Fprintf(w, "failed and canceled by error_type: %s\n", errorTypeCounts(r.errorTypes))
	}
}

// errorTypeCounts lists counts by error_type, the most frequent first
// ("500 ×3, timeout ×1").
func errorTypeCounts(m map[string]int) string {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b string) int {
		if c := cmp.Compare(m[b], m[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s ×%d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// writeSummary prints the run as a short table.
func writeSummary(w io.Writer, r *run, s llmmetrics.Summary) {
	writeNotes(w, r)
	fmt.Fprintf(w, "\n%d requests: %d ok, %d failed, %d canceled, over %v\n",
		s.Requests, s.Completed, s.Failed, s.Canceled, s.Duration.Round(time.Millisecond))
	fmt.Fprintf(w, "throughput: %.2f requests/s, %.1f output tokens/s, %.1f total tokens/s (%d input, %d output tokens)\n",
		s.RequestThroughput, s.OutputThroughput, s.TotalTokenThroughput, s.InputTokens, s.OutputTokens)
	if !s.SLO.IsZero() {
		fmt.Fprintf(w, "goodput (SLO %v): %d good, %.2f requests/s, %.1f tokens/s, attainment %s\n",
			s.SLO, s.Goodput.Good, s.Goodput.RequestsPerSecond, s.Goodput.TokensPerSecond, pct(s.Goodput.Attainment))
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "ms\tcount\tmean\tp50\tp90\tp95\tp99\tmax\t")
	for _, row := range []struct {
		name string
		d    llmmetrics.Distribution
	}{{"TTFT", s.TTFT}, {"TTFO", s.TTFO}, {"TPOT", s.TPOT}, {"ITL", s.ITL}, {"E2EL", s.E2EL}} {
		cells := []string{row.name, fmt.Sprint(row.d.Count)}
		if row.d.Count == 0 {
			cells = append(cells, "-", "-", "-", "-", "-", "-")
		} else {
			cells = append(cells, millis(row.d.Mean))
			for _, p := range []float64{50, 90, 95, 99} {
				v, _ := row.d.Percentile(p)
				cells = append(cells, millis(v))
			}
			cells = append(cells, millis(row.d.Max))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	tw.Flush()
	fmt.Fprintln(w)
}

func millis(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/1e6) }
