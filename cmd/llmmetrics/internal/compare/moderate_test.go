package compare

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/stat/distuv"
)

func TestTrigammaInverse(t *testing.T) {
	assert.InDelta(t, math.Pi*math.Pi/6, trigamma(1), 1e-12, "ψ'(1) = π²/6")
	assert.InDelta(t, math.Pi*math.Pi/2, trigamma(0.5), 1e-9, "ψ'(1/2) = π²/2")
	for _, y := range []float64{0.3, 1, 2.5, 40} {
		assert.InDelta(t, y, trigammaInverse(trigamma(y)), 1e-6*y, "y = %g", y)
	}
}

// TestPriorVariance: variances that agree exactly spread less than chance
// allows, so d0 is infinite and s0² the bias-corrected geometric mean:
// with 4 degrees of freedom each, E[log s²] = log σ² + ψ(2) − log 2, so
// s0² = s² · 2 · e^−ψ(2), ψ(2) = 1 − γ.
func TestPriorVariance(t *testing.T) {
	d0, s02 := priorVariance([]float64{0.5, 0.5, 0.5}, []float64{4, 4, 4})
	assert.True(t, math.IsInf(d0, 1))
	assert.InDelta(t, 0.5*2*math.Exp(-(1-0.5772156649015329)), s02, 1e-9)

	// Variances that spread far more than 4 degrees of freedom explain
	// give a small d0.
	d0, _ = priorVariance([]float64{0.001, 0.1, 10, 0.01, 1}, []float64{4, 4, 4, 4, 4})
	assert.Less(t, d0, 1.0)
}

// TestModerateFamily: three levels alike, each 2 repeats a side with logs
// {0, 0.02} and {0.10, 0.12}: s² = (2·0.0001 + 2·0.0001)/2 = 0.0002 with 2
// degrees of freedom at each. They agree, so d0 is infinite, capped at a
// quarter of the mean per-level 2: 0.5. s0² = e^(log 0.0002 − ψ(1)) =
// 0.0002·e^γ; the moderated variance (0.5 s0² + 2·0.0002)/2.5 with 2.5
// degrees of freedom; the interval of log(NEW/BASE) = 0.11 is ± t·√(v·(½+½)).
func TestModerateFamily(t *testing.T) {
	var rs []*Result
	for range 3 {
		r := &Result{Metric: "p50 ttft", Base: 1, New: math.Exp(0.11), reps: &logReps{b: []float64{0, 0.02}, n: []float64{0.10, 0.12}}}
		r.ci = func(float64) ends { return ends{} }
		rs = append(rs, r)
	}
	moderateFamily(rs)
	s02 := 0.0002 * math.Exp(0.5772156649015329)
	v := (0.5*s02 + 2*0.0002) / 2.5
	tq := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: 2.5}.Quantile(0.975)
	lo, hi := math.Expm1(0.11-tq*math.Sqrt(v)), math.Expm1(0.11+tq*math.Sqrt(v))
	for _, r := range rs {
		require.NotNil(t, r.CILowPct)
		assert.InDelta(t, 100*lo, *r.CILowPct, 1e-9)
		assert.InDelta(t, 100*hi, *r.CIHighPct, 1e-9)
		assert.InDelta(t, lo, r.CILow, 1e-12, "Base 1: the absolute interval is the relative one")
		assert.Contains(t, r.Method, "moderated over the 3 levels")
		assert.Contains(t, r.Method, "prior 0.5 degrees of freedom, 2.5 in all")
	}

	// Two levels are too few to moderate: each keeps its own variance (2
	// degrees of freedom), with no common change.
	two := []*Result{{Base: 1, New: math.Exp(0.11), reps: rs[0].reps}, {Base: 1, New: math.Exp(0.11), reps: rs[1].reps}}
	assert.Nil(t, moderateFamily(two))
	assert.Contains(t, two[0].Method, "each of the 2 levels with its own variance (2 degrees of freedom)")
	tq2 := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: 2}.Quantile(0.975)
	assert.InDelta(t, 100*math.Expm1(0.11-tq2*math.Sqrt(0.0002)), *two[0].CILowPct, 1e-9)

	// One level: nothing to moderate.
	one := []*Result{{Base: 1, New: 1, reps: rs[0].reps}}
	assert.Nil(t, moderateFamily(one))
	assert.Empty(t, one[0].Method)
}

// TestBetweenLevels: changes 0, 0.1 and 0.2 with variance 0.001 each:
// weights 1000, common change 0.1, Q = 1000·(0.01 + 0 + 0.01) = 20 on 2
// degrees of freedom, and Σw − Σw²/Σw = 3000 − 1000, so τ² = 18/2000.
func TestBetweenLevels(t *testing.T) {
	assert.InDelta(t, 0.009, betweenLevels([]float64{0, 0.1, 0.2}, []float64{0.001, 0.001, 0.001}), 1e-12)
	assert.Zero(t, betweenLevels([]float64{0.1, 0.1, 0.1}, []float64{0.001, 0.002, 0.003}), "a common change")
	assert.Zero(t, betweenLevels([]float64{0, 0.01, 0.02}, []float64{0.001, 0.001, 0.001}), "scatter within the levels' own noise")
	// Two levels: 0 and 0.1, Q = 1000·(0.0025 + 0.0025) = 5 on 1 degree of
	// freedom, Σw − Σw²/Σw = 2000 − 1000: τ² = 4/1000.
	assert.InDelta(t, 0.004, betweenLevels([]float64{0, 0.1}, []float64{0.001, 0.001}), 1e-12)
	assert.Zero(t, betweenLevels([]float64{0.1}, []float64{0.001}), "one level: none")
}

// TestCommonChange: changes 0.10, 0.12 and 0.14 (logs) with variance
// 0.0004 each and no scatter beyond it: weights 2500, mean 0.12; the
// weighted scatter 2500·(0.0004 + 0 + 0.0004)/2 = 1, so the standard error
// is √(1/7500), with 2 degrees of freedom.
func TestCommonChange(t *testing.T) {
	like := &Result{Metric: "p50 ttft"}
	c := commonChange(like, []float64{0.10, 0.12, 0.14}, []float64{0.0004, 0.0004, 0.0004}, 0)
	require.NotNil(t, c)
	tq := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: 2}.Quantile(0.975)
	se := math.Sqrt(1.0 / 7500)
	assert.InDelta(t, 100*math.Expm1(0.12), *c.ChangePct, 1e-9)
	assert.InDelta(t, 100*math.Expm1(0.12-tq*se), *c.CILowPct, 1e-9)
	assert.InDelta(t, 100*math.Expm1(0.12+tq*se), *c.CIHighPct, 1e-9)
	assert.Equal(t, Regression, c.Verdict, "higher latency")
	assert.Nil(t, commonChange(like, []float64{0.1, 0.1}, []float64{0.01, 0.01}, 0), "two levels")
}

// TestSweepCommonChange: a +15 % shift at 5 levels of 2 and 3 repeats is
// called over the levels, named so, and fails a gate on it; the same
// sweep against itself is not.
func TestSweepCommonChange(t *testing.T) {
	sweep := func(shift float64) *Comparison {
		c := &Comparison{}
		for l := range 5 {
			rng := rand.New(rand.NewPCG(7, uint64(l)))
			b, n := repeatedRuns(rng, 2, 200, 0.02, 1), repeatedRuns(rng, 3, 200, 0.02, shift)
			c.Levels = append(c.Levels, LevelTable{Level: fmt.Sprintf("concurrency %d", 1<<l), Results: compareRepeated("ttft", b, n, ttftMS, []stat{{p: 50}}, settings{})})
		}
		commons := moderate(c.Levels)
		holm(c.Levels, DefaultMinChange, commons...)
		c.Sweep = sweepVerdicts(c.Levels, commons)
		c.Gate([]string{"p50 ttft"})
		return c
	}
	slow := sweep(1.15)
	require.Len(t, slow.Sweep, 1)
	require.NotNil(t, slow.Sweep[0].Common)
	assert.Equal(t, Regression, slow.Sweep[0].Common.Verdict)
	assert.InDelta(t, 15, *slow.Sweep[0].Common.ChangePct, 5)
	assert.Contains(t, slow.Sweep[0].String(), "; common to the levels: +")
	assert.Contains(t, slow.Regressed, "p50 ttft over the levels")

	same := sweep(1)
	assert.Empty(t, same.Sweep)
	assert.Empty(t, same.Regressed)
}
