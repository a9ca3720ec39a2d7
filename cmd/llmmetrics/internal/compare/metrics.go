package compare

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmmetrics/llmmetrics"
)

// Verdicts of a metric.
const (
	Regression  = "regression"
	Improvement = "improvement"
	NoChange    = "no change"
	NotCompared = "n/a" // a side has no value (the reason says why)
)

// Result is one metric's comparison.
type Result struct {
	// Metric names it as -fail-on does: "p99 ttft", "output_throughput".
	Metric string `json:"metric"`
	// Unit of Base, New, Change and the absolute interval: "ms",
	// "tokens/s", "requests/s" or "%" (SLO attainment, whose change is in
	// percentage points).
	Unit string  `json:"unit"`
	Base float64 `json:"base"`
	New  float64 `json:"new"`
	// Change is New − Base; ChangePct is the change relative to Base, in
	// percent (absent when Base is 0).
	Change    float64  `json:"change"`
	ChangePct *float64 `json:"change_pct,omitempty"`
	// CILow and CIHigh bound Change with confidence Confidence; CILowPct
	// and CIHighPct bound ChangePct.
	CILow     float64  `json:"ci_low"`
	CIHigh    float64  `json:"ci_high"`
	CILowPct  *float64 `json:"ci_low_pct,omitempty"`
	CIHighPct *float64 `json:"ci_high_pct,omitempty"`
	// Confidence is the interval's confidence: 0.95, or more when the
	// metric is judged over several load levels together (Holm).
	Confidence float64 `json:"confidence,omitempty"`
	// Levels is how many load levels this metric is judged over together
	// (Holm–Bonferroni; absent when judged alone).
	Levels int `json:"holm_levels,omitempty"`
	// Method says how the interval was computed.
	Method  string `json:"method"`
	Verdict string `json:"verdict"`
	// Reason says why the verdict.
	Reason string `json:"reason"`
	// BaseN and NewN are the sample sizes (values, or replicates for rates).
	BaseN int `json:"base_n"`
	NewN  int `json:"new_n"`

	higherIsBetter bool
	points         bool // the change is judged in percentage points (attainment)
	// ci computes the interval at a confidence (nil: the verdict is not
	// judged by an interval).
	ci func(conf float64) ends
	// reps are the per-repeat statistics, logged, of a repeated level
	// (nil otherwise): see moderate.
	reps *logReps
}

// ends are the ends of an interval of the change, absolute and, when pct
// is set, relative (percent).
type ends struct {
	lo, hi       float64
	loPct, hiPct float64
	pct          bool
}

// setInterval sets r's interval from r.ci at confidence conf.
func (r *Result) setInterval(conf float64) {
	e := r.ci(conf)
	r.Confidence = conf
	r.CILow, r.CIHigh = e.lo, e.hi
	r.CILowPct, r.CIHighPct = nil, nil
	if e.pct {
		r.CILowPct, r.CIHighPct = &e.loPct, &e.hiPct
	}
}

// bootInterval returns the interval function of the percentile bootstrap
// of the resampled changes abs (absolute) and rel (relative, percent;
// nil: none), which it sorts.
func bootInterval(abs, rel []float64) func(conf float64) ends {
	slices.Sort(abs)
	slices.Sort(rel)
	return func(conf float64) ends {
		lo, hi := tails(conf)
		e := ends{lo: percentileOf(abs, lo), hi: percentileOf(abs, hi)}
		if rel != nil {
			e.loPct, e.hiPct, e.pct = percentileOf(rel, lo), percentileOf(rel, hi), true
		}
		return e
	}
}

// latencies are the latency metrics, in table order.
var latencies = []struct {
	name string
	get  func(r llmmetrics.Record) (time.Duration, bool)
}{
	{"ttft", llmmetrics.Record.TTFT},
	{"ttfo", llmmetrics.Record.TTFO},
	{"tpot", llmmetrics.Record.TPOT},
	{"itl", nil}, // every gap, resampled by request
	{"e2el", llmmetrics.Record.E2EL},
}

// latencyStats are the statistics of each latency, in table order.
var latencyStats = []stat{{p: 50}, {p: 90}, {p: 99}, {mean: true}}

func statName(s stat) string {
	if s.mean {
		return "mean"
	}
	return fmt.Sprintf("p%g", s.p)
}

// rates are the per-run rates, in table order.
var rates = []string{"output_throughput", "request_throughput", "goodput"}

// Attainment is the metric name of SLO attainment.
const attainmentName = "slo_attainment"

// MetricNames returns every metric name compare knows, in table order.
func MetricNames() []string {
	var ns []string
	for _, l := range slices.Concat(latencies, serverLatencies) {
		for _, s := range latencyStats {
			ns = append(ns, statName(s)+" "+l.name)
		}
	}
	return append(append(append(ns, rates...), attainmentName), taskMetricNames()...)
}

// minSamples is the smallest sample a percentile p is compared on: at
// least 5 values expected beyond it on either side (n·min(p, 1−p) ≥ 5),
// the rule of thumb under which a bootstrap of a quantile is sound.
func minSamples(p float64) int {
	q := min(p, 100-p) / 100
	return int(math.Ceil(5 / q))
}

// settings are what every comparison of one run pair shares.
type settings struct {
	minChange float64 // fraction, e.g. 0.05
	resamples int
	seed      uint64
}

// compareLatencies returns the results of every latency metric: by a
// bootstrap over requests, or by the spread over the repeats when both
// runs were repeated.
func compareLatencies(b, n sample, s settings) []Result {
	var out []Result
	repeated := len(b.repeats) >= 2 && len(n.repeats) >= 2
	for i, l := range latencies {
		rng := rand.New(rand.NewPCG(s.seed, uint64(i)))
		vals := func(r llmmetrics.Record) []float64 {
			if r.Outcome != llmmetrics.OutcomeOK {
				return nil
			}
			if l.get == nil {
				xs := make([]float64, len(r.ITL))
				for k, d := range r.ITL {
					xs[k] = ms(d)
				}
				return xs
			}
			if d, ok := l.get(r); ok {
				return []float64{ms(d)}
			}
			return nil
		}
		switch {
		case repeated:
			out = append(out, compareRepeated(l.name, b.repeats, n.repeats, vals, latencyStats, s)...)
		case l.get == nil:
			var rb, rn [][]float64
			cb := clusteredOf(b.recs, vals)
			cn := clusteredOf(n.recs, vals)
			if cb.units > 0 && cn.units > 0 {
				rb = bootClustered(cb, latencyStats, s.resamples, rng)
				rn = bootClustered(cn, latencyStats, s.resamples, rng)
			}
			method := fmt.Sprintf("bootstrap over requests with all their gaps, %d resamples, percentile interval", s.resamples)
			out = append(out, latencyResults(l.name, cb.xs, cn.xs, latencyStats, rb, rn, method, s)...)
		default:
			out = append(out, compareIID(l.name, values(b.recs, l.get), values(n.recs, l.get), latencyStats, s, rng)...)
		}
	}
	return append(out, compareServerTimes(b, n, s)...) // server.go
}

// compareIID compares statistics of two sorted samples of per-request
// values (ms) by a bootstrap over requests.
func compareIID(name string, xb, xn []float64, stats []stat, s settings, rng *rand.Rand) []Result {
	var rb, rn [][]float64
	if len(xb) > 0 && len(xn) > 0 {
		rb = bootIID(xb, stats, s.resamples, rng)
		rn = bootIID(xn, stats, s.resamples, rng)
	}
	method := fmt.Sprintf("bootstrap over requests, %d resamples, percentile interval", s.resamples)
	return latencyResults(name, xb, xn, stats, rb, rn, method, s)
}

// missing judges r when a run has no values (BASE only: a regression, the
// NEW run lost them) and reports whether it did.
func (r *Result) missing(xb, xn []float64, st stat) bool {
	switch {
	case len(xb) == 0 && len(xn) == 0:
		r.Verdict, r.Reason = NotCompared, "no values in either run"
	case len(xn) == 0:
		r.Base = point(xb, st)
		r.Verdict, r.Reason = Regression, "NEW has no values where BASE has "+fmt.Sprint(len(xb))
	case len(xb) == 0:
		r.New = point(xn, st)
		r.Verdict, r.Reason = NotCompared, "BASE has no values"
	default:
		return false
	}
	return true
}

// latencyResults turns the replicates of one latency's statistics into
// results. xb and xn are the sorted values (ms).
func latencyResults(name string, xb, xn []float64, stats []stat, rb, rn [][]float64, method string, s settings) []Result {
	var out []Result
	for j, st := range stats {
		r := Result{Metric: statName(st) + " " + name, Unit: "ms", Method: method, BaseN: len(xb), NewN: len(xn)}
		need := 2
		if !st.mean {
			need = minSamples(st.p)
		}
		switch {
		case r.missing(xb, xn, st):
		case len(xb) < need || len(xn) < need:
			r.Base, r.New = point(xb, st), point(xn, st)
			r.Change = r.New - r.Base
			r.Verdict, r.Reason = NotCompared, fmt.Sprintf("too few values for %s (%d and %d; at least %d each)", statName(st), len(xb), len(xn), need)
		default:
			r.Base, r.New = point(xb, st), point(xn, st)
			abs := make([]float64, len(rb))
			rel := make([]float64, len(rb))
			for i := range rb {
				abs[i] = rn[i][j] - rb[i][j]
				rel[i] = ratioChange(rn[i][j], rb[i][j])
			}
			if r.Base <= 0 {
				rel = nil
			}
			r.ci = bootInterval(abs, rel)
			r.setInterval(ciLevel)
			r.judge(s.minChange)
		}
		out = append(out, r)
	}
	return out
}

// ratioChange is n/b − 1 in percent (+Inf when b is 0 and n is not).
func ratioChange(n, b float64) float64 {
	if b == 0 {
		if n == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return 100 * (n/b - 1)
}

// point is statistic st of the sorted values xs.
func point(xs []float64, st stat) float64 {
	if st.mean {
		sum := 0.0
		for _, x := range xs {
			sum += x
		}
		return sum / float64(len(xs))
	}
	lo, hi, frac := rankOf(len(xs), st.p)
	return lerp(xs[lo-1], xs[hi-1], frac)
}

// values returns get of every completed record that has it, in ms, sorted.
func values(recs []llmmetrics.Record, get func(llmmetrics.Record) (time.Duration, bool)) []float64 {
	var xs []float64
	for _, r := range recs {
		if r.Outcome != llmmetrics.OutcomeOK {
			continue
		}
		if d, ok := get(r); ok {
			xs = append(xs, ms(d))
		}
	}
	slices.Sort(xs)
	return xs
}

// clusteredOf returns the values vals gives of every record, in ms,
// sorted, each record with values a unit.
func clusteredOf(recs []llmmetrics.Record, vals func(llmmetrics.Record) []float64) clustered {
	type value struct {
		x    float64
		unit int32
	}
	var vs []value
	var units int32
	for _, r := range recs {
		xs := vals(r)
		if len(xs) == 0 {
			continue
		}
		for _, x := range xs {
			vs = append(vs, value{x, units})
		}
		units++
	}
	slices.SortFunc(vs, func(a, b value) int { return cmp.Compare(a.x, b.x) })
	c := clustered{xs: make([]float64, len(vs)), unit: make([]int32, len(vs)), units: int(units)}
	for i, v := range vs {
		c.xs[i], c.unit[i] = v.x, v.unit
	}
	return c
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// judge sets the change and the verdict from the interval: a change is
// real when its interval (95 %, or Holm's over several levels) excludes
// 0, and it counts when it is at
// least minChange (relative; for attainment, in points). Higher latency is
// worse; higher throughput, goodput and attainment are better.
func (r *Result) judge(minChange float64) {
	r.Change = r.New - r.Base
	size := math.Abs(r.Change) // points, for attainment
	if !r.points {
		if r.Base == 0 {
			size = math.Inf(1)
		} else {
			pct := 100 * r.Change / r.Base
			r.ChangePct = &pct
			size = math.Abs(pct) / 100
		}
	} else {
		size /= 100
	}
	up := r.CILow > 0
	down := r.CIHigh < 0
	switch {
	case !up && !down:
		r.Verdict, r.Reason = NoChange, "the "+r.intervalName()+" includes 0: no change beyond noise"
		return
	case size < minChange:
		r.Verdict, r.Reason = NoChange, fmt.Sprintf("a real change, but smaller than -min-change %s", fmtMin(minChange, r.points))
		return
	}
	worse := up != r.higherIsBetter
	dir := "higher"
	if down {
		dir = "lower"
	}
	if worse {
		r.Verdict = Regression
	} else {
		r.Verdict = Improvement
	}
	r.Reason = fmt.Sprintf("%s beyond noise (the %s excludes 0) and by at least -min-change %s", dir, r.intervalName(), fmtMin(minChange, r.points))
}

// intervalName names r's interval by its confidence: "95% interval", or
// "99.3% interval (Holm over 7 levels)".
func (r *Result) intervalName() string {
	s := confText(r.Confidence) + " interval"
	if r.Levels > 1 {
		s += fmt.Sprintf(" (Holm over %d levels)", r.Levels)
	}
	return s
}

// confText formats a confidence in percent to 0.1: "95%", "99.3%" (0:
// the default 95 %).
func confText(conf float64) string {
	if conf == 0 {
		conf = ciLevel
	}
	return strings.TrimSuffix(strconv.FormatFloat(100*conf, 'f', 1, 64), ".0") + "%"
}

func fmtMin(m float64, points bool) string {
	if points {
		return fmt.Sprintf("%g points", 100*m)
	}
	return fmt.Sprintf("%g%%", 100*m)
}

// ParseFailOn parses a -fail-on list ("p99 ttft,output_throughput" or
// "all"): the metric names, checked.
func ParseFailOn(s string) ([]string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	known := MetricNames()
	if strings.EqualFold(s, "all") {
		return known, nil
	}
	var out []string
	for _, f := range strings.Split(s, ",") {
		name := strings.Join(strings.Fields(strings.ToLower(f)), " ")
		if !slices.Contains(known, name) {
			return nil, fmt.Errorf("-fail-on: unknown metric %q (want all or some of: %s)", strings.TrimSpace(f), strings.Join(known, ", "))
		}
		out = append(out, name)
	}
	return out, nil
}
