package compare

import (
	"cmp"
	"fmt"
	"slices"
)

// A sweep of several load levels makes one verdict per metric at every
// level. Judged each by its own 95 % interval, a metric compared at 7
// levels of two runs that do not differ is called a change at some level
// in up to 1 − 0.95⁷ ≈ 30 % of comparisons. So the levels of one metric
// are judged together by the Holm–Bonferroni procedure, which keeps the
// chance that any of them is called a change by chance at 5 % at most
// (the family-wise error), whatever their dependence:
//
//   - with k of the metric's levels not yet called, every one of them is
//     judged by its interval of confidence 1 − 0.05/k (99.3 % at k = 7);
//   - those whose interval excludes 0 are called, and the rest judged
//     again at the confidence of the fewer left, until a round calls none.
//
// Calling every level whose interval excludes 0 at once, then widening
// less, is Holm's step-down procedure (in order of p-value, the i-th
// smallest is tested at 0.05/(k−i+1)) written with intervals: an interval
// of confidence 1 − α excludes 0 exactly when the p-value is below α, and
// both interval methods widen monotonically with the confidence. Every
// level keeps the interval it was last judged by, so a verdict and its
// interval agree. One level compared alone keeps its 95 % interval.

// holm judges each metric over the levels of ls together, widening the
// intervals by Holm's procedure, and sets every verdict again with
// -min-change minChange. Results without an interval (n/a, or a side with
// no values) are left as they are.
func holm(ls []LevelTable, minChange float64, commons ...*Result) {
	var order []string
	family := map[string][]*Result{}
	for i := range ls {
		for j := range ls[i].Results {
			r := &ls[i].Results[j]
			if r.ci == nil {
				continue
			}
			if _, ok := family[r.Metric]; !ok {
				order = append(order, r.Metric)
			}
			family[r.Metric] = append(family[r.Metric], r)
		}
	}
	// A metric's change common to its levels is one more test of its
	// family.
	for _, c := range commons {
		if _, ok := family[c.Metric]; ok {
			family[c.Metric] = append(family[c.Metric], c)
		}
	}
	for _, m := range order {
		holmFamily(family[m], minChange)
	}
}

// holmFamily judges the results rs of one metric at several levels by
// Holm's procedure: see above.
func holmFamily(rs []*Result, minChange float64) {
	if len(rs) < 2 {
		return
	}
	left := rs
	for len(left) > 0 {
		conf := 1 - (1-ciLevel)/float64(len(left))
		var keep []*Result
		for _, r := range left {
			r.setInterval(conf)
			r.Levels = len(rs)
			if r.CILow <= 0 && r.CIHigh >= 0 {
				keep = append(keep, r)
			}
		}
		if len(keep) == len(left) {
			break
		}
		left = keep
	}
	for _, r := range rs {
		r.judge(minChange)
	}
}

// SweepVerdict sums one metric up over the levels compared: at how many
// of them it regressed or improved.
type SweepVerdict struct {
	Metric       string `json:"metric"`
	Levels       int    `json:"levels"`
	Regressions  int    `json:"regressions"`
	Improvements int    `json:"improvements"`
	// Common is the metric's change common to the levels (its Base 1,
	// its New the ratio NEW/BASE), judged with them: absent with fewer
	// than 3 repeated levels.
	Common *Result `json:"common,omitempty"`
}

// String says it: "p50 ttft: regression at 3 of 7 levels; common to the
// levels: +12.1 % [+4.0 %, +20.8 %] (99.4%), regression".
func (v SweepVerdict) String() string {
	s := v.levels()
	if c := v.Common; c != nil && c.CILowPct != nil && c.ChangePct != nil {
		s += fmt.Sprintf("; common to the levels: %+.1f%% [%+.1f%%, %+.1f%%] (%s), %s", *c.ChangePct, *c.CILowPct, *c.CIHighPct, confText(c.Confidence), c.Verdict)
	}
	return s
}

func (v SweepVerdict) levels() string {
	switch {
	case v.Regressions > 0 && v.Improvements > 0:
		return fmt.Sprintf("%s: regression at %d and improvement at %d of %d levels", v.Metric, v.Regressions, v.Improvements, v.Levels)
	case v.Regressions > 0:
		return fmt.Sprintf("%s: regression at %d of %d levels", v.Metric, v.Regressions, v.Levels)
	case v.Improvements > 0:
		return fmt.Sprintf("%s: improvement at %d of %d levels", v.Metric, v.Improvements, v.Levels)
	}
	return fmt.Sprintf("%s: no change at %d levels", v.Metric, v.Levels)
}

// sweepVerdicts returns, for each metric that regressed or improved at
// some level or over the levels together (commons), in table order, at
// how many of the levels it was compared.
func sweepVerdicts(ls []LevelTable, commons []*Result) []SweepVerdict {
	var out []SweepVerdict
	at := map[string]int{}
	for _, t := range ls {
		for _, r := range t.Results {
			if r.Verdict == NotCompared {
				continue
			}
			k, ok := at[r.Metric]
			if !ok {
				k = len(out)
				at[r.Metric] = k
				out = append(out, SweepVerdict{Metric: r.Metric})
			}
			out[k].Levels++
			switch r.Verdict {
			case Regression:
				out[k].Regressions++
			case Improvement:
				out[k].Improvements++
			}
		}
	}
	for _, c := range commons {
		if k, ok := at[c.Metric]; ok {
			out[k].Common = c
		}
	}
	called := out[:0]
	for _, v := range out {
		if c := v.Common; v.Regressions+v.Improvements > 0 || c != nil && (c.Verdict == Regression || c.Verdict == Improvement) {
			called = append(called, v)
		}
	}
	names := MetricNames()
	slices.SortStableFunc(called, func(a, b SweepVerdict) int {
		return cmp.Compare(slices.Index(names, a.Metric), slices.Index(names, b.Metric))
	})
	return called
}

// holmNote says how the verdicts of several levels are judged.
func holmNote(ls []LevelTable) string {
	most := 0
	for _, t := range ls {
		for _, r := range t.Results {
			most = max(most, r.Levels)
		}
	}
	return fmt.Sprintf("%d levels: each metric is judged over its levels together (Holm–Bonferroni), its intervals widened from 95%% up to %s, so that between runs that do not differ the chance that any level of a metric is called a change is at most 5%%; over the metrics, a call by chance stays possible: gate with -fail-on on the few that matter",
		len(ls), confText(1-(1-ciLevel)/float64(max(most, 1))))
}
