package compare

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/llmmetrics/llmmetrics"

	"github.com/stretchr/testify/assert"
)

// The calibration of the latency verdicts, measured on seeded synthetic
// data: TTFT-like values drawn from a log-normal distribution (median
// 100 ms, σ = 0.25 in log space: p99 is 1.79 × the median).
//
// The power at p99 is bounded by the data, whatever the method: the
// standard error of a sample quantile is √(p(1−p)/n) / f(q), which for a
// log-normal is σ·√(p(1−p)/n) / φ(z_p) relative to the quantile: 2.1 % at
// σ = 0.25 and n = 2,000, so a +10 % shift is 3.4 standard errors of the
// difference (power ≈ 90 %); at σ = 0.5 it is 1.7 (power ≈ 40 %).
const sigma = 0.25

// calibrationStats are the statistics whose verdicts are counted.
var calibrationStats = []stat{{p: 50}, {p: 90}, {p: 99}}

// calibrationResamples keeps the 400 trials fast under the race detector;
// the command's default (DefaultResamples) only makes the interval ends
// steadier.
const calibrationResamples = 1000

// lognormal returns n sorted draws of exp(N(ln 100, 0.5²)) × scale.
func lognormal(rng *rand.Rand, n int, scale float64) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = scale * math.Exp(math.Log(100)+sigma*rng.NormFloat64())
	}
	slices.Sort(xs)
	return xs
}

// verdictCounts runs trials comparisons of two samples of n values (the
// second scaled by shift) and counts, per -min-change of minChanges and
// per statistic, the trials whose verdict was want. The trials run in
// parallel, each with its own seed.
func verdictCounts(trials, n int, stats []stat, resamples int, shift float64, minChanges []float64, want string) [][]int {
	counts := make([][]int, len(minChanges))
	for i := range counts {
		counts[i] = make([]int, len(stats))
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for trial := range next {
				rng := rand.New(rand.NewPCG(uint64(trial), 7))
				xb := lognormal(rng, n, 1)
				xn := lognormal(rng, n, shift)
				s := settings{resamples: resamples, seed: uint64(trial)}
				rs := compareIID("ttft", xb, xn, stats, s, rng)
				mu.Lock()
				for i, m := range minChanges {
					for j, r := range rs {
						r.judge(m)
						if r.Verdict == want {
							counts[i][j]++
						}
					}
				}
				mu.Unlock()
			}
		})
	}
	for t := range trials {
		next <- t
	}
	close(next)
	wg.Wait()
	return counts
}

// TestCalibrationAA: two samples of one distribution, 1,000 requests
// each, are called a regression in at most 5 % of 400 trials, for every
// statistic, with the default -min-change and with none (the interval
// alone: a two-sided 95 % interval calls a one-sided regression in 2.5 %
// of trials when it is exact).
func TestCalibrationAA(t *testing.T) {
	const trials = 400
	minChanges := []float64{DefaultMinChange, 0}
	counts := verdictCounts(trials, 1000, calibrationStats, calibrationResamples, 1, minChanges, Regression)
	assertFalseAlarms(t, "", counts, trials, minChanges, calibrationStats)
}

// assertFalseAlarms checks that each statistic, at each -min-change, was
// called a regression in at most 5 % of the trials (counts[min-change][stat]).
func assertFalseAlarms(t *testing.T, label string, counts [][]int, trials int, minChanges []float64, stats []stat) {
	t.Helper()
	for i, m := range minChanges {
		for j, st := range stats {
			rate := float64(counts[i][j]) / float64(trials)
			t.Logf("%smin-change %g%%, %s: false regressions %d of %d (%.1f%%)", label, 100*m, statName(st), counts[i][j], trials, 100*rate)
			assert.LessOrEqual(t, rate, 0.05, "min-change %g, %s", m, statName(st))
		}
	}
}

// TestCalibrationPower: a true +10 % shift of every quantile (the new
// sample is the old distribution × 1.1), 2,000 requests each, is found
// (verdict regression) in at least 80 % of trials at p99.
func TestCalibrationPower(t *testing.T) {
	const trials = 200
	counts := verdictCounts(trials, 2000, calibrationStats, calibrationResamples, 1.10, []float64{DefaultMinChange}, Regression)[0]
	for j, st := range calibrationStats {
		t.Logf("%s: +10%% found in %d of %d trials (%.1f%%)", statName(st), counts[j], trials, 100*float64(counts[j])/trials)
	}
	assert.GreaterOrEqual(t, float64(counts[2])/trials, 0.80, "p99")
}

// TestCalibrationMean: the same A/A and +10 % checks for the mean, whose
// bootstrap costs n draws a resample, so fewer trials and resamples.
func TestCalibrationMean(t *testing.T) {
	const trials, resamples = 200, 400
	mean := []stat{{mean: true}}
	aa := verdictCounts(trials, 1000, mean, resamples, 1, []float64{DefaultMinChange, 0}, Regression)
	t.Logf("mean: false regressions %d (min-change 5%%) and %d (min-change 0) of %d", aa[0][0], aa[1][0], trials)
	assert.LessOrEqual(t, float64(aa[1][0])/trials, 0.05)
	const powerTrials = 50
	found := verdictCounts(powerTrials, 2000, mean, resamples, 1.10, []float64{DefaultMinChange}, Regression)[0][0]
	t.Logf("mean: +10%% found in %d of %d trials", found, powerTrials)
	assert.GreaterOrEqual(t, float64(found)/powerTrials, 0.80)
}

// The calibration of the verdicts of repeated levels (bench -repeats), on
// seeded synthetic runs: every repeat draws its TTFTs from the log-normal
// above with its own median, 100 ms × exp(τ·Z) with Z standard normal, so
// repeats differ by more than their requests' sampling noise, as runs do
// when the machine's load changes between them.

// repeatedRuns returns k repeats of n requests, each repeat's TTFTs
// log-normal with median 100 ms × scale × exp(τ·Z).
func repeatedRuns(rng *rand.Rand, k, n int, tau, scale float64) [][]llmmetrics.Record {
	reps := make([][]llmmetrics.Record, k)
	for i := range reps {
		run := scale * math.Exp(tau*rng.NormFloat64())
		reps[i] = make([]llmmetrics.Record, 0, n)
		for _, x := range lognormal(rng, n, run) {
			d := time.Duration(x * float64(time.Millisecond))
			reps[i] = append(reps[i], llmmetrics.Record{Start: t0, FirstToken: t0.Add(d), Outcome: llmmetrics.OutcomeOK})
		}
	}
	return reps
}

// ttftMS is a record's TTFT in ms, the values the repeated calibrations
// compare.
func ttftMS(r llmmetrics.Record) []float64 {
	d, _ := r.TTFT()
	return []float64{ms(d)}
}

// repeatedCounts runs trials comparisons of two repeated levels (k repeats
// of n requests each, run-to-run spread tau, NEW scaled by shift) and
// counts, per -min-change of minChanges and per statistic, the trials
// whose verdict was want.
func repeatedCounts(trials, k, n int, tau, shift float64, minChanges []float64, stats []stat, want string) [][]int {
	counts := make([][]int, len(minChanges))
	for i := range counts {
		counts[i] = make([]int, len(stats))
	}
	for trial := range trials {
		rng := rand.New(rand.NewPCG(uint64(trial), 11))
		b := repeatedRuns(rng, k, n, tau, 1)
		nw := repeatedRuns(rng, k, n, tau, shift)
		rs := compareRepeated("ttft", b, nw, ttftMS, stats, settings{})
		for i, m := range minChanges {
			for j, r := range rs {
				r.judge(m)
				if r.Verdict == want {
					counts[i][j]++
				}
			}
		}
	}
	return counts
}

// TestCalibrationRepeatsAA: two repeated levels of one distribution whose
// runs differ by τ = 5 % (3 repeats of 500 requests each) are called a
// regression in at most 5 % of 400 trials, for every statistic, with the
// default -min-change and with none.
func TestCalibrationRepeatsAA(t *testing.T) {
	const trials = 400
	stats := []stat{{p: 50}, {p: 90}, {p: 99}, {mean: true}}
	minChanges := []float64{DefaultMinChange, 0}
	counts := repeatedCounts(trials, 3, 500, 0.05, 1, minChanges, stats, Regression)
	assertFalseAlarms(t, "repeats, ", counts, trials, minChanges, stats)
}

// TestCalibrationRepeatsPower: a true +15 % shift (NEW × 1.15) between
// repeated levels whose runs differ by τ = 2 % (3 repeats of 200 requests,
// as bench -repeats 3 -requests 200 runs) is found in at least 80 % of 200
// trials at p50 and the mean; and +10 % at 5 repeats.
func TestCalibrationRepeatsPower(t *testing.T) {
	const trials = 200
	stats := []stat{{p: 50}, {p: 90}, {mean: true}}
	for _, tt := range []struct {
		k     int
		shift float64
	}{{3, 1.15}, {5, 1.10}} {
		counts := repeatedCounts(trials, tt.k, 200, 0.02, tt.shift, []float64{DefaultMinChange}, stats, Regression)[0]
		for j, st := range stats {
			t.Logf("repeats %d, %+.0f%%, %s: found in %d of %d trials (%.1f%%)", tt.k, 100*(tt.shift-1), statName(st), counts[j], trials, 100*float64(counts[j])/trials)
		}
		assert.GreaterOrEqual(t, float64(counts[0])/trials, 0.80, "p50, %d repeats", tt.k)
		assert.GreaterOrEqual(t, float64(counts[2])/trials, 0.80, "mean, %d repeats", tt.k)
	}
}

// The calibration of a sweep: every level of two runs of one server is an
// A/A comparison, and each metric is judged over the levels together
// (Holm). What counts is the family-wise error: the share of trials in
// which any level of a metric is called a change (either way).

// sweepLevels is how many levels the sweep calibration compares: the
// default bench sweep runs 6 or 7.
const sweepLevels = 7

// sweepCounts runs trials comparisons of sweeps of sweepLevels levels,
// each level's results made by level (seeded per trial and level), judges
// them over the levels as Compare does (moderated, then Holm), and counts, per -min-change of minChanges
// and per result, the trials in which any level was called a change, and
// (calls) the levels called in all.
func sweepCounts(trials int, minChanges []float64, level func(rng *rand.Rand, trial, l int) []Result) (anyLevel, calls, commonCalls [][]int) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for trial := range next {
				ls := make([]LevelTable, sweepLevels)
				for l := range ls {
					rng := rand.New(rand.NewPCG(uint64(trial), uint64(100+l)))
					ls[l].Results = level(rng, trial, l)
				}
				commons := moderate(ls)
				holm(ls, 0, commons...)
				mu.Lock()
				for i, m := range minChanges {
					if anyLevel == nil || len(anyLevel) < len(minChanges) {
						anyLevel, calls, commonCalls = make([][]int, len(minChanges)), make([][]int, len(minChanges)), make([][]int, len(minChanges))
					}
					if anyLevel[i] == nil {
						anyLevel[i], calls[i], commonCalls[i] = make([]int, len(ls[0].Results)), make([]int, len(ls[0].Results)), make([]int, len(ls[0].Results))
					}
					for j := range ls[0].Results {
						called, common := 0, false
						for _, l := range ls {
							r := l.Results[j]
							r.judge(m)
							if r.Verdict == Regression || r.Verdict == Improvement {
								called++
							}
						}
						for _, c := range commons {
							if c.Metric == ls[0].Results[j].Metric {
								c.judge(m)
								common = c.Verdict == Regression || c.Verdict == Improvement
							}
						}
						calls[i][j] += called
						if called > 0 || common {
							anyLevel[i][j]++
						}
						if common {
							commonCalls[i][j]++
						}
					}
				}
				mu.Unlock()
			}
		})
	}
	for t := range trials {
		next <- t
	}
	close(next)
	wg.Wait()
	return anyLevel, calls, commonCalls
}

// checkSweep logs and checks the family-wise error of sweepCounts: at
// most 5 % for each statistic.
func checkSweep(t *testing.T, what string, trials int, minChanges []float64, stats []stat, anyLevel, calls [][]int) {
	t.Helper()
	for i, m := range minChanges {
		for j, st := range stats {
			rate := float64(anyLevel[i][j]) / float64(trials)
			t.Logf("%s, %d levels, min-change %g%%, %s: some level called in %d of %d trials (%.1f%%), %d levels called in all", what, sweepLevels, 100*m, statName(st), anyLevel[i][j], trials, 100*rate, calls[i][j])
			assert.LessOrEqual(t, rate, 0.05, "%s, min-change %g, %s", what, m, statName(st))
		}
	}
}

// TestCalibrationSweepAA: two sweeps of 7 levels of one distribution,
// 1,000 requests a level and side, measured once (a bootstrap over
// requests at each level): in at most 5 % of 400 trials is any level of a
// percentile called a change, with the default -min-change and with none.
func TestCalibrationSweepAA(t *testing.T) {
	const trials = 400
	minChanges := []float64{DefaultMinChange, 0}
	anyLevel, calls, _ := sweepCounts(trials, minChanges, func(rng *rand.Rand, trial, _ int) []Result {
		xb, xn := lognormal(rng, 1000, 1), lognormal(rng, 1000, 1)
		return compareIID("ttft", xb, xn, calibrationStats, settings{resamples: DefaultResamples, seed: rng.Uint64()}, rng)
	})
	checkSweep(t, "one run a level", trials, minChanges, calibrationStats, anyLevel, calls)
}

// TestCalibrationSweepRepeatsAA: the same for sweeps whose levels were
// repeated (3 repeats of 500 requests, runs differing by τ = 5 %; Welch's
// interval over the repeats at each level), the mean included.
func TestCalibrationSweepRepeatsAA(t *testing.T) {
	const trials = 400
	stats := []stat{{p: 50}, {p: 90}, {p: 99}, {mean: true}}
	minChanges := []float64{DefaultMinChange, 0}
	anyLevel, calls, _ := sweepCounts(trials, minChanges, func(rng *rand.Rand, trial, _ int) []Result {
		b, n := repeatedRuns(rng, 3, 500, 0.05, 1), repeatedRuns(rng, 3, 500, 0.05, 1)
		return compareRepeated("ttft", b, n, ttftMS, stats, settings{})
	})
	checkSweep(t, "3 repeats a level", trials, minChanges, stats, anyLevel, calls)
}

// TestCalibrationSweepRepeatsUnlike: A/A sweeps whose levels are unlike,
// as a bench sweep's are: from 16 requests a repeat at the lowest level
// (p50 of few values) to 500, runs that differ by 1 % to 10 % (past
// saturation a run moves more), 2 repeats on one side and 3 on the other.
// Moderation must not lend the quiet levels' precision to the noisy ones:
// in at most 5 % of 400 trials is any level of a statistic called a change.
func TestCalibrationSweepRepeatsUnlike(t *testing.T) {
	const trials = 400
	stats := []stat{{p: 50}, {mean: true}}
	minChanges := []float64{DefaultMinChange, 0}
	requests := [sweepLevels]int{16, 32, 64, 100, 200, 500, 500}
	tau := [sweepLevels]float64{0.01, 0.01, 0.02, 0.02, 0.05, 0.10, 0.10}
	anyLevel, calls, _ := sweepCounts(trials, minChanges, func(rng *rand.Rand, trial, l int) []Result {
		b, n := repeatedRuns(rng, 2, requests[l], tau[l], 1), repeatedRuns(rng, 3, requests[l], tau[l], 1)
		return compareRepeated("ttft", b, n, ttftMS, stats, settings{})
	})
	checkSweep(t, "unlike levels", trials, minChanges, stats, anyLevel, calls)
}

// TestCalibrationSweepRepeatsDrift: A/A sweeps whose runs drift between
// them: each side's repeats of a level share a factor exp(δ·Z) (δ = 5 %,
// the machine's state during that run), which their spread cannot show,
// besides each repeat's own τ = 2 %. Judged by their repeats alone, the
// levels of a statistic would be called a change in most trials; the
// levels' scatter of the change (τ² between levels) keeps it at 5 % or
// less.
func TestCalibrationSweepRepeatsDrift(t *testing.T) {
	const trials = 400
	stats := []stat{{p: 50}, {mean: true}}
	minChanges := []float64{DefaultMinChange, 0}
	anyLevel, calls, _ := sweepCounts(trials, minChanges, func(rng *rand.Rand, trial, _ int) []Result {
		b := repeatedRuns(rng, 3, 200, 0.02, math.Exp(0.05*rng.NormFloat64()))
		n := repeatedRuns(rng, 3, 200, 0.02, math.Exp(0.05*rng.NormFloat64()))
		return compareRepeated("ttft", b, n, ttftMS, stats, settings{})
	})
	checkSweep(t, "drifting runs", trials, minChanges, stats, anyLevel, calls)
}

// TestCalibrationSweepRepeatsPower: a true +15 % shift at every level of
// a sweep of 7 repeated levels (200 requests a repeat, runs that differ by
// τ = 2 %) is found at most levels, at p50 and the mean: with 3 repeats a
// side at 89 % (p50) and 97 % (mean) of the levels, with 2 and 3 (bench's
// adaptive repeats stop at 2 when two agree) at 57 % and 74 %. Welch's
// interval of each level alone found it at 73 % and 89 %, and at 27 % and
// 34 % with 2 and 3 repeats (1 to 3 degrees of freedom at Holm's 99.3 %).
// What the levels' scatter costs: without it, 99 % and 78 % at p50; with
// it, drift between runs is not called a change (the test above).
func TestCalibrationSweepRepeatsPower(t *testing.T) {
	const trials = 100
	stats := []stat{{p: 50}, {mean: true}}
	for _, tt := range []struct {
		kb, kn  int
		atLeast [2]float64 // p50, mean
	}{{3, 3, [2]float64{0.85, 0.90}}, {2, 3, [2]float64{0.50, 0.70}}} {
		_, calls, commonCalls := sweepCounts(trials, []float64{DefaultMinChange}, func(rng *rand.Rand, trial, _ int) []Result {
			b, n := repeatedRuns(rng, tt.kb, 200, 0.02, 1), repeatedRuns(rng, tt.kn, 200, 0.02, 1.15)
			return compareRepeated("ttft", b, n, ttftMS, stats, settings{})
		})
		for j, st := range stats {
			share := float64(calls[0][j]) / (trials * sweepLevels)
			t.Logf("%d levels of %d and %d repeats, +15%%, %s: found at %d of %d levels (%.1f%%), common to the levels in %d of %d trials", sweepLevels, tt.kb, tt.kn, statName(st), calls[0][j], trials*sweepLevels, 100*share, commonCalls[0][j], trials)
			assert.GreaterOrEqual(t, share, tt.atLeast[j], "%d and %d repeats, %s", tt.kb, tt.kn, statName(st))
		}
	}
}

// TestCalibrationSweepPower: what the family-wise control costs. A true
// +10 % shift at every one of 7 levels, 2,000 requests a level and side,
// is found at most levels: with all 7 left, each level is first judged by
// its 99.3 % interval, and every level found lowers the confidence the
// rest are judged by. The share of levels found is at least 80 % for
// each percentile, as on one level alone.
func TestCalibrationSweepPower(t *testing.T) {
	const trials = 100
	_, calls, _ := sweepCounts(trials, []float64{DefaultMinChange}, func(rng *rand.Rand, trial, _ int) []Result {
		xb, xn := lognormal(rng, 2000, 1), lognormal(rng, 2000, 1.10)
		return compareIID("ttft", xb, xn, calibrationStats, settings{resamples: DefaultResamples, seed: rng.Uint64()}, rng)
	})
	for j, st := range calibrationStats {
		share := float64(calls[0][j]) / (trials * sweepLevels)
		t.Logf("%d levels, +10%%, %s: found at %d of %d levels (%.1f%%)", sweepLevels, statName(st), calls[0][j], trials*sweepLevels, 100*share)
		assert.GreaterOrEqual(t, share, 0.80, statName(st))
	}
}
