package compare

import (
	"fmt"
	"slices"

	"github.com/llmmetrics/llmmetrics"
)

// Levels measured more than once (bench -repeats ≥ 2 on both sides) are
// compared by the spread of each statistic over the repeats: a latency
// percentile or mean, or the SLO attainment, is computed on every repeat
// alone, and the interval of the change is Welch's t interval with those
// per-repeat values as replicates (Welch–Satterthwaite degrees of freedom),
// centred on the change of the statistic of all repeats pooled. The spread
// of a statistic between repeats holds both the sampling noise of its
// requests and whatever moves a whole run (the machine's other work, a
// warmer cache), so the interval covers both; with few repeats the t
// quantile widens it, as it must: two or three runs say little about how
// much runs differ. A resampling bootstrap of 2 to 5 repeats cannot: it
// sees only the repeats there are, and understates their spread by a
// factor (k−1)/k in variance.

// repeatValues returns, for each repeat of reps with any, the values vals
// gives of its records, sorted, and all of them pooled, sorted.
func repeatValues(reps [][]llmmetrics.Record, vals func(llmmetrics.Record) []float64) (per [][]float64, pooled []float64) {
	for _, rep := range reps {
		var xs []float64
		for _, r := range rep {
			xs = append(xs, vals(r)...)
		}
		if len(xs) == 0 {
			continue
		}
		slices.Sort(xs)
		per = append(per, xs)
		pooled = append(pooled, xs...)
	}
	slices.Sort(pooled)
	return per, pooled
}

// repeatMethod says how a repeated level's interval is computed, around
// the change of the statistic of all repeats pooled or, for rates, of the
// repeats' mean.
func repeatMethod(kb, kn int, pooled bool) string {
	around := "all repeats pooled"
	if !pooled {
		around = "the repeats' mean"
	}
	return fmt.Sprintf("Welch t interval over the repeats (%d and %d): each repeat's own value as a replicate, Welch–Satterthwaite degrees of freedom, around the change of %s", kb, kn, around)
}

// compareRepeated compares statistics of one latency of two repeated
// levels: the point is the statistic of the pooled values (ms), the
// interval Welch's over the per-repeat statistics.
func compareRepeated(name string, b, n [][]llmmetrics.Record, vals func(llmmetrics.Record) []float64, stats []stat, s settings) []Result {
	pb, xb := repeatValues(b, vals)
	pn, xn := repeatValues(n, vals)
	var out []Result
	for _, st := range stats {
		r := Result{Metric: statName(st) + " " + name, Unit: "ms", Method: repeatMethod(len(pb), len(pn), true), BaseN: len(xb), NewN: len(xn)}
		need := 1
		if !st.mean {
			need = minSamples(st.p)
		}
		fewest := func(per [][]float64) int {
			m := 0
			for i, xs := range per {
				if i == 0 || len(xs) < m {
					m = len(xs)
				}
			}
			return m
		}
		switch {
		case r.missing(xb, xn, st):
		case len(pb) < 2 || len(pn) < 2:
			r.Base, r.New = point(xb, st), point(xn, st)
			r.Change = r.New - r.Base
			r.Verdict, r.Reason = NotCompared, fmt.Sprintf("values in fewer than 2 repeats (%d and %d): no spread between repeats to judge by", len(pb), len(pn))
		case fewest(pb) < need || fewest(pn) < need:
			r.Base, r.New = point(xb, st), point(xn, st)
			r.Change = r.New - r.Base
			r.Verdict, r.Reason = NotCompared, fmt.Sprintf("too few values per repeat for %s (%d and %d in the smallest; at least %d each): its spread between repeats cannot be measured", statName(st), fewest(pb), fewest(pn), need)
		default:
			r.Base, r.New = point(xb, st), point(xn, st)
			rb, rn := perRepeat(pb, st), perRepeat(pn, st)
			r.setWelch(rb, rn)
			r.keepRepeats(rb, rn)
			r.judge(s.minChange)
		}
		out = append(out, r)
	}
	return out
}

// perRepeat returns statistic st of each repeat's sorted values.
func perRepeat(per [][]float64, st stat) []float64 {
	out := make([]float64, len(per))
	for i, xs := range per {
		out[i] = point(xs, st)
	}
	return out
}

// setWelch sets r's interval: Welch's t interval of the change New − Base
// with the standard errors of the replicates rb and rn (each side's
// replicates of the statistic), relative to Base when Base is not 0.
func (r *Result) setWelch(rb, rn []float64) {
	_, sb := meanSE(rb)
	_, sn := meanSE(rn)
	diff, base, pct := r.New-r.Base, r.Base, r.Base != 0 && !r.points
	r.ci = func(conf float64) ends {
		lo, hi := welch(diff, sb, len(rb), sn, len(rn), conf)
		e := ends{lo: lo, hi: hi}
		if pct {
			e.loPct, e.hiPct, e.pct = 100*lo/base, 100*hi/base, true
		}
		return e
	}
	r.setInterval(ciLevel)
}

// keepRepeats keeps the logarithms of a repeated level's per-repeat
// statistics for moderation over a sweep's levels (see moderate): not for
// a change in points, nor when a value is not positive.
func (r *Result) keepRepeats(rb, rn []float64) {
	if lb, ln := logged(rb), logged(rn); lb != nil && ln != nil && !r.points {
		r.reps = &logReps{b: lb, n: ln}
	}
}
