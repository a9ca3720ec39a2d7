package compare

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mathext"
	"gonum.org/v1/gonum/stat/distuv"
)

// A sweep's levels, each repeated a few times, are many small comparisons
// of one metric side by side: each level alone has 2 to 5 repeats a side,
// so Welch's interval has 1 to 8 degrees of freedom and, at the 99.3 %
// that Holm asks of 7 levels, a t quantile of 5 to 90: a level's interval
// spans ±30 % or more, and a 15 % slower server goes unseen. Yet how much
// a statistic moves between repeats, relative to its size, is much alike
// from one level to the next. The levels' variances are moderated as
// limma's empirical Bayes does for thousands of genes measured a few
// times each (Smyth, "Linear models and empirical Bayes methods for
// assessing differential expression in microarray experiments", 2004):
//
//   - each level l gives the variance s²ₗ, with dₗ = kb + kn − 2 degrees of
//     freedom, of the logarithm of the statistic between repeats (both
//     sides pooled: the same server, or one whose change is in the mean);
//   - the levels' variances are taken as scaled χ² draws around a common
//     prior s₀² with d₀ degrees of freedom, both estimated from the s²ₗ by
//     the moments of log s²ₗ (limma's fitFDist): d₀ is large when the
//     levels agree, small when they do not, and +Inf when their spread is
//     no more than chance (it is capped: see moderateFamily);
//   - each level is judged by the moderated variance (d₀s₀² + dₗs²ₗ) /
//     (d₀ + dₗ), with d₀ + dₗ degrees of freedom: the t interval of the log
//     of NEW/BASE, turned into a relative change.
//
// A level whose spread is unlike the others' keeps most of its own (d₀
// small), so the method does not lend a quiet level's precision to a noisy
// one. It needs 3 levels with a spread; with fewer, each keeps Welch's.
//
// A level's repeats run back to back and share the machine's state; the
// next run, minutes later, may find it changed, and that drift is in the
// change but not in the repeats' spread (seeded A/A sweeps whose runs
// drift by 5 % a level were called a change in 80 % of trials). So each
// level's interval also holds the levels' scatter of the change about
// their common change, estimated as a random-effects meta-analysis does
// (DerSimonian–Laird τ², see betweenLevels): a change common to the levels
// is found, one level moving alone against the others is not told from
// drift.

// logReps are a result's per-repeat statistics, logged, kept by setWelch
// for moderation: nil when a value is not positive (a rate of 0, an
// attainment) or the change is in points.
type logReps struct{ b, n []float64 }

// logged returns the logarithms of xs, or nil when one is not positive.
func logged(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		if !(x > 0) || math.IsInf(x, 1) {
			return nil
		}
		out[i] = math.Log(x)
	}
	return out
}

// within returns the variance of the log replicates about each side's
// mean, both sides pooled, and its degrees of freedom.
func (l *logReps) within() (s2 float64, df int) {
	ss := 0.0
	for _, ys := range [][]float64{l.b, l.n} {
		m := 0.0
		for _, y := range ys {
			m += y
		}
		m /= float64(len(ys))
		for _, y := range ys {
			ss += (y - m) * (y - m)
		}
	}
	df = len(l.b) + len(l.n) - 2
	return ss / float64(df), df
}

// moderate replaces, in each metric of ls with 3 or more repeated levels
// whose statistic moved between repeats, the levels' Welch intervals by
// the moderated t intervals described above, and returns each such
// metric's change common to the levels (see common).
func moderate(ls []LevelTable) (commons []*Result) {
	family := map[string][]*Result{}
	var order []string
	for i := range ls {
		for j := range ls[i].Results {
			r := &ls[i].Results[j]
			if r.reps == nil || r.ci == nil {
				continue
			}
			if _, ok := family[r.Metric]; !ok {
				order = append(order, r.Metric)
			}
			family[r.Metric] = append(family[r.Metric], r)
		}
	}
	for _, m := range order {
		if c := moderateFamily(family[m]); c != nil {
			commons = append(commons, c)
		}
	}
	return commons
}

func moderateFamily(rs []*Result) (common *Result) {
	var s2s, dfs []float64
	own, ownDF := make([]float64, len(rs)), make([]float64, len(rs)) // each level's within variance
	all := 0.0
	for i, r := range rs {
		s2, df := r.reps.within()
		own[i], ownDF[i] = s2, float64(df)
		all += float64(df)
		if s2 > 0 {
			s2s, dfs = append(s2s, s2), append(dfs, float64(df))
		}
	}
	if len(s2s) < 2 || len(s2s) < len(rs) && len(s2s) < 3 {
		return nil
	}
	// Two levels (a p90 has 50 values a repeat at only the top levels of
	// many sweeps) are too few to estimate a prior: each keeps its own
	// variance (d0 = 0), and gets the levels' scatter.
	d0, s02 := 0.0, 0.0
	if len(s2s) >= 3 {
		d0, s02 = priorVariance(s2s, dfs)
	}
	// The prior counts for at most a quarter of a level's own degrees of
	// freedom (on average over the levels). limma lets d0 be as large as
	// the moments say, even infinite, over thousands of genes; 7 levels
	// estimate it poorly, and levels as unlike as a bench sweep's (runs
	// that differ by 1 % to 10 %, 16 to 500 requests a repeat) were then
	// called a change in 11 % of seeded A/A sweeps with an uncapped d0, 6 %
	// with d0 up to the levels' mean, and 3–4 % with a quarter of it, which
	// still finds a 15 % shift at 99 % of levels (calibration_test.go).
	d0 = min(d0, all/float64(len(rs))/4)
	type level struct {
		r         *Result
		y, v2, nu float64 // log(NEW/BASE), its variance, degrees of freedom
	}
	var lv []level
	for i, r := range rs {
		if !(r.New > 0 && r.Base > 0) {
			continue // the points are not both positive: Welch's stays
		}
		d := ownDF[i]
		v := (d0*s02 + d*own[i]) / (d0 + d)
		lv = append(lv, level{r: r, y: math.Log(r.New / r.Base), v2: v * (1/float64(len(r.reps.b)) + 1/float64(len(r.reps.n))), nu: d0 + d})
	}
	ys, v2s := make([]float64, len(lv)), make([]float64, len(lv))
	for i, l := range lv {
		ys[i], v2s[i] = l.y, l.v2
	}
	tau2 := betweenLevels(ys, v2s)
	for _, l := range lv {
		r, base, center, nu := l.r, l.r.Base, l.y, l.nu
		se := math.Sqrt(l.v2 + tau2)
		r.ci = func(conf float64) ends {
			t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: nu}.Quantile(1 - (1-conf)/2)
			lo, hi := math.Expm1(center-t*se), math.Expm1(center+t*se)
			return ends{lo: base * lo, hi: base * hi, loPct: 100 * lo, hiPct: 100 * hi, pct: true}
		}
		r.Method = fmt.Sprintf("t interval of log(NEW/BASE) over the repeats (%d and %d), its variance moderated over the %d levels (empirical Bayes, Smyth 2004: prior %.1f degrees of freedom, %.1f in all), plus the levels' own scatter of the change (DerSimonian–Laird τ = %.1f %%)",
			len(r.reps.b), len(r.reps.n), len(rs), d0, nu, 100*math.Sqrt(tau2))
		if len(s2s) < 3 {
			r.Method = fmt.Sprintf("t interval of log(NEW/BASE) over the repeats (%d and %d), each of the %d levels with its own variance (%.0f degrees of freedom), plus the levels' own scatter of the change (DerSimonian–Laird τ = %.1f %%)",
				len(r.reps.b), len(r.reps.n), len(rs), nu, 100*math.Sqrt(tau2))
		}
		r.setInterval(ciLevel)
	}
	return commonChange(rs[0], ys, v2s, tau2)
}

// commonChange is the change of a metric common to its levels, as a
// Result whose Base is 1 and New the ratio NEW/BASE (so its relative
// change and interval are those of the ratio): the random-effects mean of
// the levels' log(NEW/BASE), weighted by 1/(vₗ + τ²), with the
// Hartung–Knapp–Sidik–Jonkman interval (t with L − 1 degrees of freedom,
// the weighted scatter of the levels about the mean, never below the
// levels' own variances: Röver et al. 2015), sound with few levels where
// the normal one is too narrow. It is judged with the levels (Holm), so a
// slowdown that raises p50 TTFT by 6 to 23 % at every level, each level
// alone within its noise, is still called. Nil with fewer than 3 levels.
func commonChange(like *Result, ys, v2s []float64, tau2 float64) *Result {
	n := len(ys)
	if n < 3 {
		return nil
	}
	var sw, swy float64
	for i, y := range ys {
		w := 1 / (v2s[i] + tau2)
		sw, swy = sw+w, swy+w*y
	}
	mu := swy / sw
	q := 0.0
	for i, y := range ys {
		q += (y - mu) * (y - mu) / (v2s[i] + tau2)
	}
	se := math.Sqrt(max(q/float64(n-1), 1) / sw)
	df := float64(n - 1)
	c := &Result{Metric: like.Metric, Unit: "ratio", Base: 1, New: math.Exp(mu), higherIsBetter: like.higherIsBetter,
		BaseN: n, NewN: n,
		Method: fmt.Sprintf("the levels' common change: random-effects mean of log(NEW/BASE) over %d levels (weights 1/(variance + τ²)), Hartung–Knapp–Sidik–Jonkman t interval with %d degrees of freedom", n, n-1)}
	c.ci = func(conf float64) ends {
		t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(1 - (1-conf)/2)
		lo, hi := math.Expm1(mu-t*se), math.Expm1(mu+t*se)
		return ends{lo: lo, hi: hi, loPct: 100 * lo, hiPct: 100 * hi, pct: true}
	}
	c.setInterval(ciLevel)
	c.judge(0)
	return c
}

// betweenLevels is the DerSimonian–Laird estimate of the variance τ² of
// the levels' true changes ys about their common change, beyond what
// their variances v2s explain (0 when they scatter no more than that).
// Between two runs, a level's change is its share of a common change
// plus what moved that level alone from one run to the other: the
// machine's state, which a level's repeats, run back to back, share and
// cannot show. A change at one level unlike the others' is that drift as
// much as anything under test; a change common to the levels keeps τ² at
// 0 and its full power.
func betweenLevels(ys, v2s []float64) float64 {
	if len(ys) < 2 {
		return 0
	}
	var sw, sw2, swy float64
	for i, y := range ys {
		w := 1 / v2s[i]
		sw, sw2, swy = sw+w, sw2+w*w, swy+w*y
	}
	mean := swy / sw
	q := 0.0
	for i, y := range ys {
		q += (y - mean) * (y - mean) / v2s[i]
	}
	return max(0, (q-float64(len(ys)-1))/(sw-sw2/sw))
}

// priorVariance estimates the prior degrees of freedom d0 and variance s02
// of sample variances s2s (with dfs degrees of freedom each) by the method
// of moments on their logarithms, as limma's fitFDist: log s² less its
// expectation's offset has variance trigamma(d/2) + trigamma(d0/2). d0 is
// +Inf when the variances spread no more than their own degrees of
// freedom explain.
func priorVariance(s2s, dfs []float64) (d0, s02 float64) {
	n := float64(len(s2s))
	es := make([]float64, len(s2s))
	mean, tri := 0.0, 0.0
	for i, s2 := range s2s {
		h := dfs[i] / 2
		es[i] = math.Log(s2) - mathext.Digamma(h) + math.Log(h)
		mean += es[i]
		tri += trigamma(h)
	}
	mean /= n
	tri /= n
	v := 0.0
	for _, e := range es {
		v += (e - mean) * (e - mean)
	}
	v = v/(n-1) - tri
	if v <= 0 {
		return math.Inf(1), math.Exp(mean)
	}
	d0 = 2 * trigammaInverse(v)
	return d0, math.Exp(mean + mathext.Digamma(d0/2) - math.Log(d0/2))
}

// trigamma is ψ'(x) = ζ(2, x), the Hurwitz zeta function.
func trigamma(x float64) float64 { return mathext.Zeta(2, x) }

// trigammaInverse solves trigamma(y) = x for y > 0 by limma's Newton
// iteration (ψ”(y) = −2ζ(3, y)).
func trigammaInverse(x float64) float64 {
	switch {
	case x > 1e7:
		return 1 / math.Sqrt(x)
	case x < 1e-6:
		return 1 / x
	}
	y := 0.5 + 1/x
	for range 50 {
		tri := trigamma(y)
		dif := tri * (1 - tri/x) / (-2 * mathext.Zeta(3, y))
		y += dif
		if -dif/y < 1e-8 {
			break
		}
	}
	return y
}
