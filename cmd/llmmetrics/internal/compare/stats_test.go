package compare

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/llmmetrics/llmmetrics"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPoint checks numpy's linear percentile on hand-computed values:
// for [1 2 3 4], h = 3p/100.
func TestPoint(t *testing.T) {
	xs := []float64{1, 2, 3, 4}
	for _, tt := range []struct {
		st   stat
		want float64
	}{
		{stat{p: 0}, 1},
		{stat{p: 50}, 2.5},  // h = 1.5
		{stat{p: 90}, 3.7},  // h = 2.7
		{stat{p: 99}, 3.97}, // h = 2.97
		{stat{p: 100}, 4},
		{stat{mean: true}, 2.5},
	} {
		t.Run(statName(tt.st), func(t *testing.T) {
			assert.InDelta(t, tt.want, point(xs, tt.st), 1e-12)
		})
	}
}

// TestWeightedPercentile: gaps 1, 2 (unit 0) and 3 (unit 1), unit 0
// drawn twice and unit 1 once, is the sequence 1 1 2 2 3.
func TestWeightedPercentile(t *testing.T) {
	c := clustered{xs: []float64{1, 2, 3}, unit: []int32{0, 0, 1}, units: 2}
	count := []int32{2, 1}
	for _, tt := range []struct{ p, want float64 }{
		{0, 1}, {25, 1}, {50, 2}, {60, 2}, {90, 2.6}, {100, 3},
	} {
		assert.InDelta(t, tt.want, weightedPercentile(c, count, 5, tt.p), 1e-12, "p%g", tt.p)
	}
}

// TestBootIIDIsTheBootstrap: the resampled median drawn from order
// statistics has the exact bootstrap distribution. For n = 5 the median
// of a resample is at most the j-th smallest value exactly when at least 3
// of the 5 draws are among the first j: P = P(Binomial(5, j/5) ≥ 3).
func TestBootIIDIsTheBootstrap(t *testing.T) {
	xs := []float64{10, 20, 30, 40, 50}
	const b = 40000
	reps := bootIID(xs, []stat{{p: 50}, {mean: true}}, b, rand.New(rand.NewPCG(1, 2)))
	want := []float64{0.05792, 0.31744, 0.68256, 0.94208, 1} // P(median ≤ xs[j])
	for j, x := range xs {
		n := 0
		for _, r := range reps {
			if r[0] <= x {
				n++
			}
		}
		assert.InDelta(t, want[j], float64(n)/b, 0.01, "P(median ≤ %g)", x)
	}
	// The resampled mean: mean 30, variance σ²/n = 200/5 = 40.
	m, v := 0.0, 0.0
	for _, r := range reps {
		m += r[1] / b
	}
	for _, r := range reps {
		v += (r[1] - m) * (r[1] - m) / b
	}
	assert.InDelta(t, 30, m, 0.2)
	assert.InDelta(t, 40, v, 2)
}

// TestBootClustered: a resample keeps a request's gaps together, so with
// one request of gaps {1, 3} and one of {5, 7}, every resample is one of
// three sequences and its mean one of 2, 4, 6, each the bootstrap's
// probability 1/4, 1/2, 1/4.
func TestBootClustered(t *testing.T) {
	c := clustered{xs: []float64{1, 3, 5, 7}, unit: []int32{0, 0, 1, 1}, units: 2}
	const b = 20000
	reps := bootClustered(c, []stat{{mean: true}, {p: 50}}, b, rand.New(rand.NewPCG(3, 4)))
	seen := map[float64]int{}
	for _, r := range reps {
		seen[r[0]]++
		switch r[0] { // the median of 1 1 3 3, 1 3 5 7 and 5 5 7 7
		case 2:
			assert.Equal(t, 2.0, r[1])
		case 4:
			assert.Equal(t, 4.0, r[1])
		case 6:
			assert.Equal(t, 6.0, r[1])
		}
	}
	require.Len(t, seen, 3)
	assert.InDelta(t, 0.25, float64(seen[2])/b, 0.015)
	assert.InDelta(t, 0.5, float64(seen[4])/b, 0.015)
	assert.InDelta(t, 0.25, float64(seen[6])/b, 0.015)
}

// TestWelch: equal standard errors 1 with 10 replicates each give
// Welch–Satterthwaite df = 2² / (1/9 + 1/9) = 18 and t(0.975, 18) =
// 2.100922, so the half-width is 2.100922·√2; at 99 % t(0.995, 18) =
// 2.878440 (a t table).
func TestWelch(t *testing.T) {
	lo, hi := welch(5, 1, 10, 1, 10, ciLevel)
	h := 2.100922 * math.Sqrt2
	assert.InDelta(t, 5-h, lo, 1e-5)
	assert.InDelta(t, 5+h, hi, 1e-5)
	lo, hi = welch(5, 1, 10, 1, 10, 0.99)
	h = 2.878440 * math.Sqrt2
	assert.InDelta(t, 5-h, lo, 1e-5)
	assert.InDelta(t, 5+h, hi, 1e-5)
	lo, hi = welch(3, 0, 10, 0, 10, ciLevel)
	assert.Equal(t, [2]float64{3, 3}, [2]float64{lo, hi}, "no spread: a point")
}

// TestMeanSE: [1 2 3 4 5] has mean 3, sample sd √2.5 and SE √(2.5/5).
func TestMeanSE(t *testing.T) {
	m, se := meanSE([]float64{1, 2, 3, 4, 5})
	assert.InDelta(t, 3, m, 1e-12)
	assert.InDelta(t, math.Sqrt(0.5), se, 1e-12)
}

// TestCompareRepeated: BASE repeats of TTFT {1, 1} and {3, 3} ms have
// means 1 and 3 (SE of their mean 1), NEW repeats {2, 2} and {4, 4} means
// 2 and 4 (SE 1); the pooled means are 2 and 3, so the change is +1 ms,
// Welch–Satterthwaite df = (1+1)² / (1/1 + 1/1) = 2 and t(0.975, 2) =
// 4.302653: the interval is 1 ± 4.302653·√2.
func TestCompareRepeated(t *testing.T) {
	run := func(ms ...int) []llmmetrics.Record {
		var recs []llmmetrics.Record
		for _, m := range ms {
			recs = append(recs, llmmetrics.Record{Start: t0, FirstToken: t0.Add(time.Duration(m) * time.Millisecond), Outcome: llmmetrics.OutcomeOK})
		}
		return recs
	}
	b := [][]llmmetrics.Record{run(1, 1), run(3, 3)}
	n := [][]llmmetrics.Record{run(2, 2), run(4, 4)}
	rs := compareRepeated("ttft", b, n, ttftMS, []stat{{mean: true}, {p: 50}, {p: 90}}, settings{minChange: 0.05})
	require.Len(t, rs, 3)
	mean := rs[0]
	h := 4.302653 * math.Sqrt2
	assert.InDelta(t, 2, mean.Base, 1e-9)
	assert.InDelta(t, 3, mean.New, 1e-9)
	assert.InDelta(t, 1-h, mean.CILow, 1e-5)
	assert.InDelta(t, 1+h, mean.CIHigh, 1e-5)
	assert.InDelta(t, 100*(1-h)/2, *mean.CILowPct, 1e-4, "relative to BASE")
	assert.Equal(t, NoChange, mean.Verdict)
	assert.Contains(t, mean.Method, "over the repeats (2 and 2)")
	// p50 needs 10 values in every repeat; p90 50.
	assert.Equal(t, NotCompared, rs[1].Verdict)
	assert.Contains(t, rs[1].Reason, "too few values per repeat for p50 (2 and 2 in the smallest; at least 10 each)")
	assert.Equal(t, NotCompared, rs[2].Verdict)

	// A run whose values are all in one repeat has no spread to judge by.
	one := [][]llmmetrics.Record{run(1, 1), nil}
	rs = compareRepeated("ttft", one, n, ttftMS, []stat{{mean: true}}, settings{})
	assert.Equal(t, NotCompared, rs[0].Verdict)
	assert.Contains(t, rs[0].Reason, "fewer than 2 repeats (1 and 2)")
}
