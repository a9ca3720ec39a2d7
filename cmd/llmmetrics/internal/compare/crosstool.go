package compare

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/llmmetrics/llmmetrics/cmd/llmmetrics/internal/report"
)

// Comparing one tool's file with another's: every figure is computed here
// from each request's times with one set of formulas, so what the tools
// define apart (their own TPOT, their ITL) is resolved; what a format
// cannot give at all is not compared, rather than read as a regression.

// definitionNotes names, when BASE and NEW come from different formats,
// the definitions this comparison resolves: one set of formulas on both
// sides, and how each tool defines its own figures.
func definitionNotes(b, n *Input) []string {
	if slices.Equal(uniq(b.Formats), uniq(n.Formats)) {
		return nil
	}
	notes := []string{"across tools: both sides are computed here from each request's times with one set of formulas — TTFT to the first-token time each file holds, TPOT = (last token − first)/(N − 1), ITL per gap, E2EL to the last token, rates over each run's duration — so the tools' own definitions below do not enter the figures"}
	for _, side := range []struct {
		name string
		in   *Input
	}{{"BASE", b}, {"NEW", n}} {
		for _, d := range side.in.Defs {
			notes = append(notes, side.name+" "+d)
		}
	}
	return notes
}

// latencyOf returns the latency a metric is of ("p99 itl" → "itl"), or
// "" for a rate.
func latencyOf(metric string) string {
	_, l, ok := strings.Cut(metric, " ")
	if !ok {
		return ""
	}
	return l
}

// cannotSay marks the results that a side's format cannot give (a latency
// its file does not keep, a rate without a duration or start times) as not
// compared, saying why.
func cannotSay(rs []Result, b, n *Input, lb, ln Level) {
	for i := range rs {
		r := &rs[i]
		why := ""
		lat := latencyOf(r.Metric)
		switch {
		case lat != "" && b.Cannot[lat] != "":
			why, r.BaseN = "BASE cannot say it: "+b.Cannot[lat], 0
		case lat != "" && n.Cannot[lat] != "":
			why, r.NewN = "NEW cannot say it: "+n.Cannot[lat], 0
		case lat != "" || r.Metric == attainmentName:
		case lb.noDuration || ln.noDuration:
			why = "no run duration on one side (LLMPerf without its summary): no rate is known"
			if lb.noDuration {
				r.BaseN = 0
			}
			if ln.noDuration {
				r.NewN = 0
			}
		case lb.noStarts || ln.noStarts:
			why = "one side has no start times (SGLang, LLMPerf, vLLM before start_times): its rate is known, but not its spread over the run, so no interval"
		}
		if why == "" {
			continue
		}
		r.Verdict, r.Reason, r.ci = NotCompared, why, nil
		r.Change, r.ChangePct, r.CILow, r.CIHigh, r.CILowPct, r.CIHighPct, r.Confidence = 0, nil, 0, 0, nil, nil, 0
	}
}

// levelNamed returns the pair of levels spec names, one on each side
// (report.SelectLoad's names).
func levelNamed(b, n *Input, spec string) ([][2]Level, []string, error) {
	var pair [2]Level
	for i, in := range []*Input{b, n} {
		loads := make([]report.Load, len(in.Levels))
		for k, l := range in.Levels {
			loads[k] = report.Load{Mode: l.Mode, Value: l.Load, Detail: l.Detail}
		}
		k, err := report.SelectLoad(loads, spec)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %v", in.Name, err)
		}
		pair[i] = in.Levels[k]
	}
	return [][2]Level{pair}, nil, nil
}

// MarshalJSON writes the result with null where a side has no value (its
// base or new, the change) or there is no interval: never a 0 standing
// for "unknown".
func (r Result) MarshalJSON() ([]byte, error) {
	type plain Result
	out := struct {
		plain
		Base   *float64 `json:"base"`
		New    *float64 `json:"new"`
		Change *float64 `json:"change"`
		CILow  *float64 `json:"ci_low"`
		CIHigh *float64 `json:"ci_high"`
	}{plain: plain(r)}
	if r.BaseN > 0 {
		out.Base = &r.Base
	}
	if r.NewN > 0 {
		out.New = &r.New
	}
	if r.BaseN > 0 && r.NewN > 0 {
		out.Change = &r.Change
	}
	if IntervalText(r) != "-" {
		out.CILow, out.CIHigh = &r.CILow, &r.CIHigh
	}
	return json.Marshal(out)
}
