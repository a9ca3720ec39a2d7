package compare

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"gonum.org/v1/gonum/stat/distuv"
)

// batches is how many equal time windows a single run's rates are cut
// into for their standard error (the method of batch means).
const batches = 10

// sample is one side of a comparison: one run, or one load level of a
// bench run.
type sample struct {
	recs []llmmetrics.Record
	// repeats holds the records of each repeat when the level was repeated
	// (bench -repeats); rates then vary over the repeats.
	repeats [][]llmmetrics.Record
	// duration is the run duration rates are over (0: the records' span).
	duration time.Duration
	slo      llmmetrics.SLO
	// tasks and stepTags are agents' tasks (tasks.go; nil: none).
	tasks    *taskSample
	stepTags []taskTag
}

// span returns max(End) − min(Start) of recs and min(Start).
func span(recs []llmmetrics.Record) (time.Duration, time.Time) {
	if len(recs) == 0 {
		return 0, time.Time{}
	}
	lo, hi := recs[0].Start, recs[0].End
	for _, r := range recs[1:] {
		if r.Start.Before(lo) {
			lo = r.Start
		}
		if r.End.After(hi) {
			hi = r.End
		}
	}
	return hi.Sub(lo), lo
}

// rateReps returns a rate (Σ value over the records / duration, per
// second), and replicates of it for its standard error: the rate of each
// repeat (point: their mean), or of each of `batches` equal windows of the
// run, a record counting in the window of its End (scaled so that their
// mean is the point).
func rateReps(s sample, value func(llmmetrics.Record) float64) (point float64, reps []float64, method string) {
	if len(s.repeats) >= 2 {
		for _, rr := range s.repeats {
			d, _ := span(rr)
			if d <= 0 {
				return 0, nil, ""
			}
			reps = append(reps, sum(rr, value)/d.Seconds())
		}
		point, _ = meanSE(reps)
		return point, reps, repeatMethod(len(reps), len(reps), false)
	}
	d, start := span(s.recs)
	if d <= 0 {
		return 0, nil, ""
	}
	total := sum(s.recs, value)
	dur := d
	if s.duration > 0 {
		dur = s.duration
	}
	point = total / dur.Seconds()
	reps = make([]float64, batches)
	w := d / batches
	for _, r := range s.recs {
		k := min(int(r.End.Sub(start)/w), batches-1)
		reps[k] += value(r)
	}
	m := total / batches
	for k := range reps {
		if m > 0 {
			reps[k] *= point / m
		}
	}
	return point, reps, fmt.Sprintf("Welch t interval over %d time batches of each run", batches)
}

func sum(recs []llmmetrics.Record, value func(llmmetrics.Record) float64) float64 {
	t := 0.0
	for _, r := range recs {
		t += value(r)
	}
	return t
}

// compareRates returns the results of throughput, goodput and SLO
// attainment.
func compareRates(b, n sample, s settings) []Result {
	ok := func(r llmmetrics.Record) bool { return r.Outcome == llmmetrics.OutcomeOK }
	type rate struct {
		name, unit string
		value      func(llmmetrics.Record, llmmetrics.SLO) float64
		needSLO    bool
	}
	rs := []rate{
		{"output_throughput", "tokens/s", func(r llmmetrics.Record, _ llmmetrics.SLO) float64 {
			if ok(r) {
				return float64(r.OutputTokens)
			}
			return 0
		}, false},
		{"request_throughput", "requests/s", func(r llmmetrics.Record, _ llmmetrics.SLO) float64 { return b2f(ok(r)) }, false},
		{"goodput", "requests/s", func(r llmmetrics.Record, slo llmmetrics.SLO) float64 { return b2f(slo.Met(r)) }, true},
	}
	var out []Result
	for _, rt := range rs {
		res := Result{Metric: rt.name, Unit: rt.unit, higherIsBetter: true}
		if rt.needSLO && (b.slo.IsZero() || n.slo.IsZero()) {
			res.Verdict, res.Reason = NotCompared, "no SLO (give -slo)"
			out = append(out, res)
			continue
		}
		pb, rb, mb := rateReps(b, func(r llmmetrics.Record) float64 { return rt.value(r, b.slo) })
		pn, rn, mn := rateReps(n, func(r llmmetrics.Record) float64 { return rt.value(r, n.slo) })
		res.Base, res.New, res.BaseN, res.NewN = pb, pn, len(rb), len(rn)
		res.Method = mb
		if len(b.repeats) >= 2 && len(n.repeats) >= 2 {
			res.Method = repeatMethod(len(rb), len(rn), false)
		} else if mn != mb {
			res.Method = "BASE: " + mb + "; NEW: " + mn
		}
		if rb == nil || rn == nil {
			res.Verdict, res.Reason = NotCompared, "a run has no duration"
			out = append(out, res)
			continue
		}
		res.setWelch(rb, rn)
		if len(b.repeats) >= 2 && len(n.repeats) >= 2 {
			res.keepRepeats(rb, rn)
		}
		res.judge(s.minChange)
		out = append(out, res)
	}
	return append(out, compareAttainment(b, n, s))
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// compareAttainment compares the share of requests that meet the SLO, in
// percent; the interval is a bootstrap over requests (the resampled count
// of good requests is binomial), or Welch's over the repeats when both
// runs were repeated; the change is in percentage points.
func compareAttainment(b, n sample, s settings) Result {
	res := Result{Metric: attainmentName, Unit: "%", higherIsBetter: true, points: true,
		Method: fmt.Sprintf("bootstrap over requests, %d resamples, percentile interval; change in percentage points", s.resamples)}
	if b.slo.IsZero() || n.slo.IsZero() {
		res.Verdict, res.Reason = NotCompared, "no SLO (give -slo)"
		return res
	}
	good := func(x sample) (int, int) {
		g := 0
		for _, r := range x.recs {
			if x.slo.Met(r) {
				g++
			}
		}
		return g, len(x.recs)
	}
	gb, nb := good(b)
	gn, nn := good(n)
	res.BaseN, res.NewN = nb, nn
	if nb == 0 || nn == 0 {
		res.Verdict, res.Reason = NotCompared, "a run has no requests"
		return res
	}
	pb, pn := float64(gb)/float64(nb), float64(gn)/float64(nn)
	res.Base, res.New = 100*pb, 100*pn
	rng := rand.New(rand.NewPCG(s.seed, 100))
	if len(b.repeats) >= 2 && len(n.repeats) >= 2 {
		// Repeated runs: Welch's interval over each repeat's attainment.
		res.setWelch(attainments(b), attainments(n))
		res.Method = repeatMethod(len(b.repeats), len(n.repeats), true) + "; change in percentage points"
		res.judge(s.minChange)
		return res
	}
	db := distuv.Binomial{N: float64(nb), P: pb, Src: rng}
	dn := distuv.Binomial{N: float64(nn), P: pn, Src: rng}
	diffs := make([]float64, s.resamples)
	for i := range diffs {
		diffs[i] = 100 * (dn.Rand()/float64(nn) - db.Rand()/float64(nb))
	}
	res.ci = bootInterval(diffs, nil)
	res.setInterval(ciLevel)
	res.judge(s.minChange)
	return res
}

// attainments returns the SLO attainment of each repeat of x, in percent.
func attainments(x sample) []float64 {
	out := make([]float64, 0, len(x.repeats))
	for _, rep := range x.repeats {
		if len(rep) == 0 {
			continue
		}
		g := 0
		for _, r := range rep {
			if x.slo.Met(r) {
				g++
			}
		}
		out = append(out, 100*float64(g)/float64(len(rep)))
	}
	return out
}
