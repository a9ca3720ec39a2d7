package report

import (
	"cmp"
	"encoding/json"
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

// shownLevel is a level as printed: its Summary and gate lines.
type shownLevel struct {
	lv     *level
	sum    llmmetrics.Summary
	checks []check
	// phases are the level's transport phases (aiperf's http_req_*), in
	// httpPhases order; Count 0 when the files keep none.
	phases [len(httpPhases)]llmmetrics.Distribution
}

// named reports whether the output names each level (several, or one
// whose file names its load).
func named(ls []shownLevel) bool { return len(ls) > 1 || ls[0].lv.load != Load{} }

// writeChecks prints one line per check, PASS or FAIL first, so that a CI
// log can be grepped; with several levels each line names its level.
func writeChecks(w io.Writer, ls []shownLevel) {
	for _, l := range ls {
		at := ""
		if len(ls) > 1 {
			at = " at " + l.lv.load.String()
		}
		for _, c := range l.checks {
			verdict := "PASS"
			if !c.pass {
				verdict = "FAIL"
			}
			fmt.Fprintf(w, "%s %s%s: value %s, limit %s, margin %s\n", verdict, c.name, at, c.value, c.limit, c.margin)
		}
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
		fmt.Fprintln(w, "run duration: the sum of the durations the files state (their requests laid end to end), per level")
	} else if r.n > 0 {
		fmt.Fprintln(w, "run duration: from the earliest start to the latest end over all files, per level")
	}
	for _, n := range r.notes {
		fmt.Fprintf(w, "note: %s\n", n)
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

// writeRun prints the notes, each level as a short table, and the gate.
func writeRun(w io.Writer, r *run, ls []shownLevel) {
	writeNotes(w, r)
	for _, l := range ls {
		if named(ls) {
			fmt.Fprintf(w, "\nlevel: %s\n", l.lv.load)
		}
		writeLevel(w, l)
	}
	writeChecks(w, ls)
}

// writeLevel prints one level's summary; what is not known is printed so.
func writeLevel(w io.Writer, l shownLevel) {
	lv, s := l.lv, l.sum
	u := lv.unknown()
	over := "over " + s.Duration.Round(time.Millisecond).String()
	if u.duration {
		over = "over an unknown duration (no start times and no stated duration: no rate is known)"
	}
	fmt.Fprintf(w, "\n%d requests: %d ok, %d failed, %d canceled, %s\n",
		s.Requests, s.Completed, s.Failed, s.Canceled, over)
	rate := func(x float64, f string, known bool) string {
		if !known {
			return "unknown"
		}
		return fmt.Sprintf(f, x)
	}
	fmt.Fprintf(w, "throughput: %s requests/s, %s output tokens/s, %s total tokens/s (%s, %d output tokens)\n",
		rate(s.RequestThroughput, "%.2f", !u.duration), rate(s.OutputThroughput, "%.1f", !u.duration),
		rate(s.TotalTokenThroughput, "%.1f", !u.duration && !u.input), inputText(lv, s), s.OutputTokens)
	if !s.SLO.IsZero() {
		fmt.Fprintf(w, "goodput (SLO %v): %d good, %s requests/s, %s tokens/s, attainment %s\n",
			s.SLO, s.Goodput.Good, rate(s.Goodput.RequestsPerSecond, "%.2f", !u.duration),
			rate(s.Goodput.TokensPerSecond, "%.1f", !u.duration), pct(s.Goodput.Attainment))
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "ms\tcount\tmean\tp50\tp90\tp95\tp99\tmax\t")
	rows := []struct {
		name string
		d    llmmetrics.Distribution
	}{{"TTFT", s.TTFT}, {"TTFO", s.TTFO}, {"TPOT", s.TPOT}, {"ITL", s.ITL}, {"E2EL", s.E2EL}}
	var phases []string
	for k, d := range l.phases {
		if d.Count > 0 {
			rows = append(rows, struct {
				name string
				d    llmmetrics.Distribution
			}{httpPhases[k].name, d})
			phases = append(phases, httpPhases[k].name+": aiperf's "+httpPhases[k].tag)
		}
	}
	server := serverRows(s) // servertime.go
	rows = append(rows, server...)
	for _, row := range rows {
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
	if len(phases) > 0 {
		fmt.Fprintf(w, "(%s: the request's transport phases, of completed requests)\n", strings.Join(phases, "; "))
	}
	if len(server) > 0 {
		fmt.Fprintln(w, serverNote)
	}
	if len(lv.errorTypes) > 0 {
		fmt.Fprintf(w, "failed and canceled by error_type: %s\n", errorTypeCounts(lv.errorTypes))
	}
	fmt.Fprintln(w)
}

// inputText says the input tokens of a level: the total, or that some or
// all of its completed requests have no count.
func inputText(lv *level, s llmmetrics.Summary) string {
	switch {
	case lv.noInput == 0:
		return fmt.Sprintf("%d input", s.InputTokens)
	case lv.noInput == lv.completed:
		return "input tokens unknown"
	}
	return fmt.Sprintf("%d input tokens in %d of %d requests, the others' unknown", s.InputTokens, lv.completed-lv.noInput, lv.completed)
}

func millis(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/1e6) }

// writeJSON prints the Summary JSON of one level, or with several levels
// {"levels": [{"level", "mode", "load", "detail", "summary"}]}.
func writeJSON(w io.Writer, ls []shownLevel) error {
	type jsonLevel struct {
		Level   string          `json:"level"`
		Mode    string          `json:"mode,omitempty"`
		Load    float64         `json:"load,omitempty"`
		Detail  string          `json:"detail,omitempty"`
		Summary json.RawMessage `json:"summary"`
	}
	var out any
	var levels []jsonLevel
	for _, l := range ls {
		raw, err := summaryJSON(l.sum, l.lv.unknown(), l.phases)
		if err != nil {
			return err
		}
		ld := l.lv.load
		levels = append(levels, jsonLevel{Level: ld.String(), Mode: ld.Mode, Load: ld.Value, Detail: ld.Detail, Summary: raw})
	}
	if len(levels) == 1 {
		out = levels[0].Summary
	} else {
		out = struct {
			Levels []jsonLevel `json:"levels"`
		}{levels}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
