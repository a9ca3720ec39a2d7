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
// the moderated t intervals described above.
func moderate(ls []LevelTable) {
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
		moderateFamily(family[m])
	}
}

func moderateFamily(rs []*Result) {
	var s2s, dfs []float64
	for _, r := range rs {
		if s2, df := r.reps.within(); s2 > 0 {
			s2s, dfs = append(s2s, s2), append(dfs, float64(df))
		}
	}
	if len(s2s) < 3 {
		return
	}
	d0, s02 := priorVariance(s2s, dfs)
	// The prior counts for at most a quarter of a level's own degrees of
	// freedom (on average over the levels). limma lets d0 be as large as
	// the moments say, even infinite, over thousands of genes; 7 levels
	// estimate it poorly, and levels as unlike as a bench sweep's (runs
	// that differ by 1 % to 10 %, 16 to 500 requests a repeat) were then
	// called a change in 11 % of seeded A/A sweeps with an uncapped d0, 6 %
	// with d0 up to the levels' mean, and 3–4 % with a quarter of it, which
	// still finds a 15 % shift at 99 % of levels (calibration_test.go).
	all := 0.0
	for _, r := range rs {
		_, df := r.reps.within()
		all += float64(df)
	}
	d0 = min(d0, all/float64(len(rs))/4)
	for _, r := range rs {
		s2, df := r.reps.within()
		d := float64(df)
		v, nu := (d0*s02+d*s2)/(d0+d), d0+d
		if !(r.New > 0 && r.Base > 0) {
			continue // the points are not both positive: Welch's stays
		}
		se := math.Sqrt(v * (1/float64(len(r.reps.b)) + 1/float64(len(r.reps.n))))
		center, base := math.Log(r.New/r.Base), r.Base
		r.ci = func(conf float64) ends {
			t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: nu}.Quantile(1 - (1-conf)/2)
			lo, hi := math.Expm1(center-t*se), math.Expm1(center+t*se)
			return ends{lo: base * lo, hi: base * hi, loPct: 100 * lo, hiPct: 100 * hi, pct: true}
		}
		r.Method = fmt.Sprintf("t interval of log(NEW/BASE) over the repeats (%d and %d), its variance moderated over the %d levels (empirical Bayes, Smyth 2004: prior %.1f degrees of freedom, %.1f in all)",
			len(r.reps.b), len(r.reps.n), len(rs), d0, nu)
		r.setInterval(ciLevel)
	}
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
