package compare

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stepInterval is an interval function whose half-width at confidence
// 1 − 0.05/k is k: 1 at 95 %, 2 at 97.5 %, 3 at 98.33 %, so that Holm's
// rounds can be followed by hand.
func stepInterval(d float64) func(float64) ends {
	return func(conf float64) ends {
		w := (1 - ciLevel) / (1 - conf)
		return ends{lo: d - w, hi: d + w}
	}
}

// holmLevels returns one level per change of changes, each with the
// latency metric "p50 ttft" (BASE 10 ms) judged at 95 %.
func holmLevels(changes ...float64) []LevelTable {
	var ls []LevelTable
	for _, d := range changes {
		r := Result{Metric: "p50 ttft", Base: 10, New: 10 + d, ci: stepInterval(d)}
		r.setInterval(ciLevel)
		r.judge(DefaultMinChange)
		ls = append(ls, LevelTable{Results: []Result{r}})
	}
	return ls
}

// TestHolm follows Holm's rounds by hand: with k levels left, each is
// judged by its interval of half-width k (confidence 1 − 0.05/k), those
// that exclude 0 are called, and the rest judged again with fewer left.
func TestHolm(t *testing.T) {
	c3, c2 := 1-0.05/3, 1-0.05/2
	for _, tt := range []struct {
		name     string
		changes  []float64
		verdicts []string
		conf     []float64
	}{
		// k=3: 3.5−3 > 0 called; k=2: 2.5−2 > 0 called; k=1: 0.5 ± 1 holds 0.
		{"step down", []float64{3.5, 2.5, 0.5}, []string{Regression, Regression, NoChange}, []float64{c3, c2, ciLevel}},
		// k=3: neither 2.5 ± 3 nor 0.5 ± 3 excludes 0, though 2.5 ± 1 alone would.
		{"widened", []float64{2.5, 2.5, 0.5}, []string{NoChange, NoChange, NoChange}, []float64{c3, c3, c3}},
		// k=3: −3.5 called (lower latency: an improvement); k=2: 1.5 ± 2 holds 0.
		{"one called", []float64{-3.5, 1.5, 1.5}, []string{Improvement, NoChange, NoChange}, []float64{c3, c2, c2}},
		// k=2 at once: both excluded in the first round.
		{"both at once", []float64{4, -4}, []string{Regression, Improvement}, []float64{c2, c2}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ls := holmLevels(tt.changes...)
			holm(ls, DefaultMinChange)
			for i, l := range ls {
				r := l.Results[0]
				assert.Equal(t, tt.verdicts[i], r.Verdict, "level %d", i)
				assert.InDelta(t, tt.conf[i], r.Confidence, 1e-12, "level %d", i)
				assert.Equal(t, len(tt.changes), r.Levels, "level %d", i)
				w := (1 - ciLevel) / (1 - tt.conf[i])
				assert.InDelta(t, tt.changes[i]-w, r.CILow, 1e-9, "level %d", i)
			}
		})
	}
}

// TestHolmLeavesOthers: a level compared alone keeps its 95 % interval;
// results without an interval (n/a) are not in the family, so the one
// level with an interval is judged alone.
func TestHolmLeavesOthers(t *testing.T) {
	ls := holmLevels(1.5)
	holm(ls, DefaultMinChange)
	assert.Equal(t, Regression, ls[0].Results[0].Verdict, "1.5 ± 1 excludes 0")
	assert.Equal(t, ciLevel, ls[0].Results[0].Confidence)
	assert.Zero(t, ls[0].Results[0].Levels)

	na := Result{Metric: "p50 ttft", Verdict: NotCompared, Reason: "too few values"}
	ls = append(holmLevels(1.5), LevelTable{Results: []Result{na}})
	holm(ls, DefaultMinChange)
	assert.Equal(t, Regression, ls[0].Results[0].Verdict)
	assert.Equal(t, ciLevel, ls[0].Results[0].Confidence)
	assert.Equal(t, na, ls[1].Results[0])
}

// TestHolmMinChange: a level called beyond noise but by less than
// -min-change (0.45 ms of 10 ms is 4.5 %) is "no change", and still leaves
// the family, so the other is judged with one left: 1.5 ± 1 excludes 0
// (1.5 ± 2, at two left, would not).
func TestHolmMinChange(t *testing.T) {
	ls := holmLevels(0.45, 1.5)
	ls[0].Results[0].ci = func(conf float64) ends {
		w := (1 - ciLevel) / (1 - conf) / 10 // 0.45 ± 0.2 at two left
		return ends{lo: 0.45 - w, hi: 0.45 + w}
	}
	holm(ls, DefaultMinChange)
	assert.Equal(t, NoChange, ls[0].Results[0].Verdict)
	assert.Contains(t, ls[0].Results[0].Reason, "smaller than -min-change 5%")
	assert.Equal(t, Regression, ls[1].Results[0].Verdict)
	assert.Equal(t, ciLevel, ls[1].Results[0].Confidence)
	assert.Contains(t, ls[1].Results[0].Reason, "the 95% interval (Holm over 2 levels) excludes 0")
}

// TestSweepVerdicts counts each called metric's levels, in table order
// whatever level a metric is first compared at.
func TestSweepVerdicts(t *testing.T) {
	lv := func(vs ...string) LevelTable {
		var l LevelTable
		for i, v := range vs {
			l.Results = append(l.Results, Result{Metric: []string{"p50 ttft", "p99 ttft", "goodput"}[i], Verdict: v})
		}
		return l
	}
	got := sweepVerdicts([]LevelTable{
		lv(Regression, NotCompared, NoChange),
		lv(Regression, NoChange, NoChange),
		lv(NoChange, Improvement, NoChange),
		lv(Improvement, Regression, NoChange),
	}, nil)
	require.Len(t, got, 2, "goodput was not called")
	ordered := sweepVerdicts([]LevelTable{
		{Results: []Result{{Metric: "p90 e2el", Verdict: Regression}}},
		{Results: []Result{{Metric: "p50 ttft", Verdict: Regression}, {Metric: "p90 e2el", Verdict: NoChange}}},
	}, nil)
	require.Len(t, ordered, 2)
	assert.Equal(t, "p50 ttft", ordered[0].Metric, "ttft before e2el, as in the table")
	assert.Equal(t, SweepVerdict{Metric: "p50 ttft", Levels: 4, Regressions: 2, Improvements: 1}, got[0])
	assert.Equal(t, SweepVerdict{Metric: "p99 ttft", Levels: 3, Regressions: 1, Improvements: 1}, got[1], "n/a is not a level compared")
	assert.Equal(t, "p50 ttft: regression at 2 and improvement at 1 of 4 levels", got[0].String())
	assert.Equal(t, "p99 ttft: regression at 2 of 7 levels", SweepVerdict{Metric: "p99 ttft", Levels: 7, Regressions: 2}.String())
	assert.Equal(t, "goodput: improvement at 1 of 3 levels", SweepVerdict{Metric: "goodput", Levels: 3, Improvements: 1}.String())
}

// TestHolmNote: 7 levels widen to 1 − 0.05/7 = 99.29 %.
func TestHolmNote(t *testing.T) {
	ls := holmLevels(0, 0, 0, 0, 0, 0, 0)
	holm(ls, DefaultMinChange)
	assert.Equal(t, "7 levels: each metric is judged over its levels together (Holm–Bonferroni), its intervals widened from 95% up to 99.3%, so that between runs that do not differ the chance that any level of a metric is called a change is at most 5%; over the metrics, a call by chance stays possible: gate with -fail-on on the few that matter", holmNote(ls))
}

// TestConfText formats confidences to 0.1 %.
func TestConfText(t *testing.T) {
	for conf, want := range map[float64]string{0: "95%", 0.95: "95%", 1 - 0.05/7: "99.3%", 0.975: "97.5%", 0.99: "99%"} {
		assert.Equal(t, want, confText(conf), "%g", conf)
	}
}
