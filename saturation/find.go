package saturation

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/llmmetrics/llmmetrics"
)

// Level is one step of a load test: the offered Load, what the client
// measured at it, and what the server reported about itself.
type Level struct {
	// Load is the offered load: concurrent users or requests per second,
	// in any unit that grows with the load.
	Load float64 `json:"load"`
	// Summary is what the run at this load measured (with repeats: all of
	// them pooled). A Summary with only throughput figures is valid;
	// signals that need more are skipped.
	Summary llmmetrics.Summary `json:"summary"`
	// Repeats are the Summaries of the level's repeats when it ran more
	// than once: Find takes the throughput's confidence interval from
	// them (each repeat is one sample). Empty: Summary is one sample.
	Repeats []llmmetrics.Summary `json:"-"`
	// Server is what the model server reported during the level (nil:
	// nothing was read); it explains the saturation point.
	Server *Server `json:"server,omitempty"`
	// PrefillStalls counts the level's long gaps between tokens and those
	// that overlapped another request's prefill (CountStalls of its
	// Records; nil: not counted). SignalPrefillStall reads it.
	PrefillStalls *Stalls `json:"prefill_stalls,omitempty"`
	// InFlight is the client's mean number of requests in flight during
	// the level (0: unknown). Compared with Server's running and waiting
	// requests, it shows requests that wait in front of the engine
	// (SignalQueueBeforeEngine).
	InFlight float64 `json:"in_flight,omitempty"`
	// Tasks counts the level's agents' tasks and the good ones (nil: the
	// level sent no tasks). With Options.ByTask, SLO attainment is the
	// share of good tasks.
	Tasks *Tasks `json:"tasks,omitempty"`
}

// Tasks counts a level's tasks (sessions of several requests, an agent's
// steps) and the good ones: those whose every request met the SLO (and,
// where the load test bounds it, whose whole latency did).
type Tasks struct {
	Total int `json:"total"`
	Good  int `json:"good"`
}

// Reason is one signal that fired at a level, with the measured value,
// the threshold it crossed, and a one-sentence Message (also String).
type Reason struct {
	// Signal is the signal that fired.
	Signal Signal `json:"signal"`
	// Latency names the distribution for SignalTailGrowth ("ttft", …);
	// empty for the other signals.
	Latency string `json:"latency,omitempty"`
	// Value is what was measured: the fraction of linear scaling (knee),
	// throughput as a fraction of the best lower level (drop), the tail
	// growth factor (tail), the attainment, or the server's figure.
	Value float64 `json:"value"`
	// Threshold is the limit Value crossed.
	Threshold float64 `json:"threshold"`
	// Undecided is set on a knee whose 95 % interval straddles the
	// threshold (see Find).
	Undecided bool `json:"undecided,omitempty"`
	// Message explains the reason in one sentence.
	Message string `json:"message"`
}

// String returns Message.
func (r Reason) String() string { return r.Message }

// LevelReport is Find's verdict on one load (repeated loads merged).
type LevelReport struct {
	// Load is the level's offered load.
	Load float64 `json:"load"`
	// Samples is how many throughput samples the level has (its repeats).
	Samples int `json:"samples"`
	// Throughput is the mean tracked throughput of the samples (see
	// ThroughputMeasure).
	Throughput float64 `json:"throughput"`
	// ThroughputCI is the half-width of Throughput's two-sided 95 %
	// Student-t interval (0 with one sample).
	ThroughputCI float64 `json:"throughput_ci"`
	// Goodput is the matching goodput (token or request goodput), the mean
	// over the level's entries.
	Goodput float64 `json:"goodput"`
	// MeetsSLO is true when the level has request data, its attainment
	// reaches the target (unless SignalAttainment is skipped) and every
	// objective passes (in every entry of a repeated load).
	MeetsSLO bool `json:"meets_slo"`
	// Objectives holds the result of each option objective.
	Objectives []llmmetrics.ObjectiveResult `json:"objectives,omitempty"`
	// FailureRate is the share of the level's requests that did not
	// complete (failed or canceled), 0–1.
	FailureRate float64 `json:"failure_rate"`
	// Untrusted is set when FailureRate is above Options.MaxFailureRate:
	// the level's figures say more about the failures than about the
	// server's capacity.
	Untrusted bool `json:"untrusted,omitempty"`
	// Reasons lists the signals that fired at this level, the server's
	// among them.
	Reasons []Reason `json:"reasons,omitempty"`
	// PrefillStalls is the level's Level.PrefillStalls, the counts of
	// repeated entries summed (nil: none was given).
	PrefillStalls *Stalls `json:"prefill_stalls,omitempty"`
}

// Result is Find's verdict. Level indexes refer to Result.Levels; -1
// means none.
type Result struct {
	// Found is true when the saturation point is decided.
	Found bool `json:"found"`
	// Level is the index in Levels of the saturation point (-1 when not
	// Found).
	Level int `json:"level"`
	// Load is the saturation point's load (0 when not Found).
	Load float64 `json:"load"`
	// Reasons lists the signals at the saturation point: the client-side
	// ones that decided it, then the server-side ones that explain it.
	Reasons []Reason `json:"reasons,omitempty"`
	// KneeBetween holds the two loads the first undecided knee lies
	// between (its interval straddles the threshold) when no load has a
	// decided signal (Found is then false): more repeats, or a level
	// between them, would decide it.
	KneeBetween []float64 `json:"knee_between,omitempty"`
	// BestGoodputLevel is the index of the level with the highest goodput;
	// -1 when no level has any.
	BestGoodputLevel int `json:"best_goodput_level"`
	// MaxGoodLevel is the index of the highest level that meets the SLO
	// (LevelReport.MeetsSLO); -1 when none does.
	MaxGoodLevel int `json:"max_good_level"`
	// MaxGoodLoad is Levels[MaxGoodLevel].Load (0 when none).
	MaxGoodLoad float64 `json:"max_good_load"`
	// SLOUnmetAtLowestLoad is set when the lowest load with requests
	// misses the attainment target: the SLO is not met even at the least
	// load, a finding about the SLO (Notes), never a saturation point
	// (SignalAttainment then decides nothing).
	SLOUnmetAtLowestLoad bool `json:"slo_unmet_at_lowest_load,omitempty"`
	// Untrusted is set when the verdict (the saturation point, or the
	// loads the knee lies between) is drawn from an untrusted level
	// (LevelReport.Untrusted): the level itself or the one it is compared
	// with.
	Untrusted bool `json:"untrusted,omitempty"`
	// Notes are findings beside the saturation point, one sentence each:
	// the SLO not met at the lowest load, a verdict drawn from untrusted
	// levels.
	Notes []string `json:"notes,omitempty"`
	// Levels holds the verdict on every load, in increasing load, repeated
	// loads merged.
	Levels []LevelReport `json:"levels"`
}

// Find finds where a service stops scaling, and why, from load-test levels
// in any order. Levels with the same Load are repeats: they are merged,
// never compared with each other.
//
// At each load it evaluates four client-side signals, each with a default
// threshold that opts can change or skip:
//
//   - knee: ΔThroughput/ΔLoad from the previous load is below
//     KneeFraction × that load's throughput per unit of load (linear
//     scaling from the previous load, not from the lowest, so the mild
//     sub-linearity of every batching server does not pile up into an
//     early knee);
//   - throughput drop: throughput is below (1 − DropTolerance) × the best
//     lower load (past the peak);
//   - tail growth: a TailLatencies percentile grew ≥ TailGrowth× since the
//     lowest load that has it while the median grew < MedianFlat×;
//   - attainment: SLO attainment is below AttainmentTarget.
//
// With repeats, throughput is the mean of the samples with a 95 % Student-t
// interval, and the knee and the drop fire only when the whole interval of
// the figure lies past the threshold (interval arithmetic on the two loads'
// intervals). A knee whose interval straddles the threshold is undecided:
// it is reported at its load (Reason.Undecided) but never taken as the
// saturation point; when no load has a decided signal, the first undecided
// knee is reported in KneeBetween (the knee lies between those loads: more
// repeats would decide it). Without repeats the intervals are points and
// the rules are the plain thresholds.
//
// The saturation point is the first load where a client-side signal is
// decided. The server-side signals
// (Level.Server: KV cache full, queue growing, preemptions rising, GPUs
// busy) fire at any load they are seen and are added to the saturation
// point's Reasons to explain it; they never decide it.
//
// A signal whose inputs a load lacks (no requests, an empty distribution,
// a percentile not computed, a nil Server field) is skipped there. Invalid
// options give an error wrapping ErrInvalidOptions; a NaN or infinite
// load, an error too. Find is a pure function; it does not modify levels.
func Find(levels []Level, opts Options) (Result, error) {
	res := Result{Level: -1, BestGoodputLevel: -1, MaxGoodLevel: -1}
	if err := opts.Validate(); err != nil {
		return res, err
	}
	for _, l := range levels {
		if math.IsNaN(l.Load) || math.IsInf(l.Load, 0) {
			return res, fmt.Errorf("%w: load %v is not a number", ErrInvalidOptions, l.Load)
		}
	}
	o := opts.withDefaults()
	ms := merge(levels, o)
	res.Levels = make([]LevelReport, len(ms))
	knees := make([]kneeState, len(ms))
	f := finder{o: o, ms: ms, res: &res}
	for i := range ms {
		knees[i] = f.level(i)
	}
	f.decide(knees)
	return res, nil
}

// merged is one load, its entries' samples pooled.
type merged struct {
	load      float64
	samples   []float64
	mean, ci  float64
	goodput   float64
	summaries []llmmetrics.Summary // the entries' Summaries
	stalls    *Stalls              // the entries' PrefillStalls summed (nil: none)
	server    *Server
	inFlight  float64 // the entries' mean InFlight
	hasData   bool    // throughput or request data
	tasks     *Tasks  // the entries' Tasks summed (nil: none has any)
}

// merge sorts levels by load and merges equal loads.
func merge(levels []Level, o Options) []merged {
	sorted := slices.Clone(levels)
	slices.SortStableFunc(sorted, func(a, b Level) int { return cmp.Compare(a.Load, b.Load) })
	var out []merged
	for _, l := range sorted {
		if len(out) == 0 || out[len(out)-1].load != l.Load {
			out = append(out, merged{load: l.Load})
		}
		m := &out[len(out)-1]
		t, g := o.measure(l.Summary)
		if len(l.Repeats) == 0 {
			m.samples = append(m.samples, t)
		}
		for _, r := range l.Repeats {
			rt, _ := o.measure(r)
			m.samples = append(m.samples, rt)
		}
		m.goodput += g
		m.inFlight += l.InFlight
		m.summaries = append(m.summaries, l.Summary)
		if st := l.PrefillStalls; st != nil {
			if m.stalls == nil {
				c := *st
				m.stalls = &c
			} else {
				m.stalls.add(*st)
			}
		}
		if m.server == nil {
			m.server = l.Server
		}
		if l.Tasks != nil {
			if m.tasks == nil {
				m.tasks = &Tasks{}
			}
			m.tasks.Total += l.Tasks.Total
			m.tasks.Good += l.Tasks.Good
		}
		m.hasData = m.hasData || l.Summary.Requests > 0 || slices.ContainsFunc(m.samples, func(v float64) bool { return v > 0 })
	}
	for i := range out {
		m := &out[i]
		m.mean, m.ci = meanCI(m.samples)
		m.goodput /= float64(len(m.summaries))
		m.inFlight /= float64(len(m.summaries))
	}
	return out
}

// kneeState is what the knee signal says at a load.
type kneeState uint8

const (
	kneeNone      kneeState = iota // no data or no previous load
	kneeAbove                      // decided: scales at or above the threshold
	kneeUndecided                  // the interval straddles the threshold
	kneeBelow                      // decided: the knee
)

type finder struct {
	o        Options
	ms       []merged
	res      *Result
	prev     int // the last load with throughput data, -1 none
	best     int // the lower load with the best throughput, -1 none
	bases    []tailBase
	started  bool
	bestGood float64
	lowest   bool // the lowest load with requests has been seen
}

type tailBase struct{ tail, median float64 }

// level evaluates every signal at load i and returns the knee's state.
func (f *finder) level(i int) kneeState {
	if !f.started {
		f.prev, f.best, f.bases, f.started = -1, -1, make([]tailBase, len(f.o.TailLatencies)), true
	}
	m := &f.ms[i]
	rep := &f.res.Levels[i]
	rep.Load, rep.Samples, rep.Throughput, rep.ThroughputCI, rep.Goodput = m.load, len(m.samples), m.mean, m.ci, m.goodput
	state := kneeNone
	if m.hasData {
		state = f.knee(i, rep)
		f.drop(i, rep)
		f.prev = i
		if f.best < 0 || m.mean > f.ms[f.best].mean {
			f.best = i
		}
	}
	f.tail(i, rep)
	f.trust(i, rep)
	f.attainment(i, rep)
	rep.Reasons = append(rep.Reasons, serverReasons(f.o, f.ms, i)...)
	rep.Reasons, rep.PrefillStalls = append(rep.Reasons, f.causes(i, rep)...), m.stalls
	if rep.Goodput > f.bestGood {
		f.bestGood, f.res.BestGoodputLevel = rep.Goodput, i
	}
	if rep.MeetsSLO {
		f.res.MaxGoodLevel, f.res.MaxGoodLoad = i, m.load
	}
	return state
}

func (f *finder) fire(rep *LevelReport, r Reason) { rep.Reasons = append(rep.Reasons, r) }

// knee compares load i with the previous load that has data: the gain as a
// fraction of linear scaling is (pl/dl)·(T/Tp − 1), increasing in T and
// decreasing in Tp, so its interval comes from the two intervals' ends.
func (f *finder) knee(i int, rep *LevelReport) kneeState {
	if f.prev < 0 || f.o.Skip&SignalKnee != 0 {
		return kneeNone
	}
	p, m := &f.ms[f.prev], &f.ms[i]
	pl, dl := p.load, m.load-p.load
	if pl <= 0 || p.mean <= 0 || dl <= 0 {
		return kneeNone
	}
	gain := func(t, tp float64) float64 {
		if tp <= 0 {
			return math.Inf(1)
		}
		return pl / dl * (t/tp - 1)
	}
	frac := gain(m.mean, p.mean)
	lo, hi := gain(m.mean-m.ci, p.mean+p.ci), gain(m.mean+m.ci, p.mean-p.ci)
	k := f.o.KneeFraction
	interval := ""
	if m.ci > 0 || p.ci > 0 {
		interval = fmt.Sprintf(" (95%% interval %.0f%% to %.0f%%)", 100*lo, 100*math.Min(hi, 99.99))
	}
	switch {
	case hi < k:
		f.fire(rep, Reason{Signal: SignalKnee, Value: frac, Threshold: k, Message: fmt.Sprintf(
			"knee: from load %g to %g throughput grew by %.4g %s per unit of load, %.0f%% of linear scaling%s (threshold %.0f%%)",
			pl, m.load, (m.mean-p.mean)/dl, f.o.unit(), 100*frac, interval, 100*k)})
		return kneeBelow
	case lo < k:
		f.fire(rep, Reason{Signal: SignalKnee, Value: frac, Threshold: k, Undecided: true, Message: fmt.Sprintf(
			"knee between load %g and %g: throughput grew by %.0f%% of linear scaling%s, straddling the %.0f%% threshold",
			pl, m.load, 100*frac, interval, 100*k)})
		return kneeUndecided
	}
	return kneeAbove
}

// drop compares load i with the best lower load, interval against interval.
func (f *finder) drop(i int, rep *LevelReport) {
	if f.best < 0 || f.o.Skip&SignalThroughputDrop != 0 {
		return
	}
	b, m := &f.ms[f.best], &f.ms[i]
	limit := (1 - f.o.DropTolerance) * (b.mean - b.ci)
	if b.mean <= 0 || m.mean+m.ci >= limit {
		return
	}
	frac := m.mean / b.mean
	f.fire(rep, Reason{Signal: SignalThroughputDrop, Value: frac, Threshold: 1 - f.o.DropTolerance, Message: fmt.Sprintf(
		"throughput fell to %.4g %s, %.0f%% below the %.4g %s of load %g (past the peak)",
		m.mean, f.o.unit(), 100*(1-frac), b.mean, f.o.unit(), b.load)})
}

// tail watches each TailLatencies percentile against the lowest load that
// has it; with several entries at a load, their percentiles' mean.
func (f *finder) tail(i int, rep *LevelReport) {
	for j, l := range f.o.TailLatencies {
		tail, median, ok := meanTail(f.ms[i].summaries, l, f.o.TailPercentile)
		if !ok {
			continue
		}
		b := &f.bases[j]
		if b.tail == 0 {
			b.tail, b.median = tail, median
			continue
		}
		if f.o.Skip&SignalTailGrowth != 0 {
			continue
		}
		tg, mg := tail/b.tail, median/b.median
		if tg >= f.o.TailGrowth && mg < f.o.MedianFlat {
			f.fire(rep, Reason{Signal: SignalTailGrowth, Latency: l.String(), Value: tg, Threshold: f.o.TailGrowth, Message: fmt.Sprintf(
				"queue build-up: p%g %s grew %.3g× since the lowest load (threshold %.3g×) while the median grew only %.3g× (limit %.3g×)",
				f.o.TailPercentile, l, tg, f.o.TailGrowth, mg, f.o.MedianFlat)})
		}
	}
}

func meanTail(ss []llmmetrics.Summary, l llmmetrics.Latency, p float64) (tail, median float64, ok bool) {
	n := 0
	for _, s := range ss {
		d := s.Distribution(l)
		t, has := d.Percentile(p)
		if !has || d.Median <= 0 || t <= 0 {
			continue
		}
		tail += float64(t)
		median += float64(d.Median)
		n++
	}
	if n == 0 {
		return 0, 0, false
	}
	return tail / float64(n), median / float64(n), true
}

// attainment checks SLO attainment (pooled over a load's entries) and the
// objectives (each entry must pass).
func (f *finder) attainment(i int, rep *LevelReport) {
	var requests, good int
	for _, s := range f.ms[i].summaries {
		requests += s.Requests
		good += s.Goodput.Good
	}
	meets := requests > 0
	what := "SLO attainment"
	byTask := f.o.ByTask && f.ms[i].tasks != nil && f.ms[i].tasks.Total > 0
	if requests > 0 && f.o.Skip&SignalAttainment == 0 {
		att := float64(good) / float64(requests)
		if len(f.ms[i].summaries) == 1 {
			att = f.ms[i].summaries[0].Goodput.Attainment
		}
		if byTask {
			att, what = float64(f.ms[i].tasks.Good)/float64(f.ms[i].tasks.Total), "task SLO attainment"
		}
		if !f.lowest {
			f.lowest = true
			if att < f.o.AttainmentTarget {
				f.res.SLOUnmetAtLowestLoad = true
				unit := "requests"
				if byTask {
					unit = "tasks"
				}
				f.res.Notes = append(f.res.Notes, fmt.Sprintf(
					"the SLO is not met even at the lowest load (%g): %.1f%% of %s met it, below the %.1f%% target; this is about the SLO (or the failures), not a saturation point",
					f.ms[i].load, 100*att, unit, 100*f.o.AttainmentTarget))
			}
		}
		if att < f.o.AttainmentTarget {
			meets = false
			f.fire(rep, Reason{Signal: SignalAttainment, Value: att, Threshold: f.o.AttainmentTarget, Message: fmt.Sprintf(
				"%s %.1f%% is below the %.1f%% target", what, 100*att, 100*f.o.AttainmentTarget)})
		}
	}
	for k, obj := range f.o.Objectives {
		for e, s := range f.ms[i].summaries {
			r, _ := obj.Check(s) // valid: checked by Validate
			if e == 0 {
				rep.Objectives = append(rep.Objectives, r)
			} else if !r.Pass && rep.Objectives[k].Pass {
				rep.Objectives[k] = r // report the failing entry
			}
			meets = meets && r.Pass
		}
	}
	rep.MeetsSLO = meets
}

// decide picks the saturation point: the first load with a decided
// client-side signal. An undecided knee never is one (a knee is declared
// only when its interval lies below the threshold); when nothing is
// decided, the first undecided knee is reported in KneeBetween.
func (f *finder) decide(knees []kneeState) {
	res := f.res
	firstOpen := -1
	for i, rep := range res.Levels {
		if f.decided(i) {
			res.Found, res.Level, res.Load = true, i, rep.Load
			res.Reasons = clientFirst(rep.Reasons)
			if res.SLOUnmetAtLowestLoad { // a finding of its own (Notes), not why it saturates
				res.Reasons = slices.DeleteFunc(res.Reasons, func(r Reason) bool { return r.Signal == SignalAttainment })
			}
			f.distrust(f.prevWithData(i), i)
			return
		}
		if knees[i] == kneeUndecided && firstOpen < 0 {
			firstOpen = i
		}
	}
	if firstOpen >= 0 {
		prev := f.prevWithData(firstOpen)
		res.KneeBetween = []float64{f.ms[prev].load, res.Levels[firstOpen].Load}
		f.distrust(prev, firstOpen)
	}
}

// distrust marks the verdict untrusted when it is drawn from load i or
// the load it is compared with (prev), and either is untrusted.
func (f *finder) distrust(prev, i int) {
	for _, k := range []int{prev, i} {
		if l := f.res.Levels[k]; l.Untrusted && !f.res.Untrusted {
			f.res.Untrusted = true
			f.res.Notes = append(f.res.Notes, fmt.Sprintf(
				"the verdict is drawn from load %g, where %.1f%% of requests failed (above %.1f%%): it may say more about the failures than about the server's capacity",
				l.Load, 100*l.FailureRate, 100*f.o.MaxFailureRate))
		}
	}
}

// decided reports whether load i has a decided client-side signal. The
// attainment signal decides nothing when the SLO is not met even at the
// lowest load: it then fails at every load and says nothing about where
// the service stops scaling.
func (f *finder) decided(i int) bool {
	for _, r := range f.res.Levels[i].Reasons {
		if r.Signal == SignalAttainment && f.res.SLOUnmetAtLowestLoad {
			continue
		}
		if r.Signal&clientSignals != 0 && !r.Undecided {
			return true
		}
	}
	return false
}

// trust sets the level's failure rate and marks it untrusted above
// MaxFailureRate.
func (f *finder) trust(i int, rep *LevelReport) {
	var requests, done int
	for _, s := range f.ms[i].summaries {
		requests += s.Requests
		done += s.Completed
	}
	if requests == 0 {
		return
	}
	rep.FailureRate = float64(requests-done) / float64(requests)
	rep.Untrusted = rep.FailureRate > f.o.MaxFailureRate
}

func (f *finder) prevWithData(i int) int {
	for k := i - 1; k >= 0; k-- {
		if f.ms[k].hasData {
			return k
		}
	}
	return i
}

// clientFirst returns rs with the client-side reasons first.
func clientFirst(rs []Reason) []Reason {
	out := slices.Clone(rs)
	slices.SortStableFunc(out, func(a, b Reason) int {
		ca, cb := a.Signal&clientSignals != 0, b.Signal&clientSignals != 0
		switch {
		case ca && !cb:
			return -1
		case cb && !ca:
			return 1
		}
		return 0
	})
	return out
}

// tQuantile975 holds Student's t 0.975 quantiles for 1 … 10 degrees of
// freedom (two-sided 95 %); beyond, the normal 1.96.
var tQuantile975 = []float64{12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228}

// meanCI returns the mean of xs and the half-width of its two-sided 95 %
// Student-t interval (0 for fewer than two values).
func meanCI(xs []float64) (mean, half float64) {
	n := len(xs)
	if n == 0 {
		return 0, 0
	}
	for _, v := range xs {
		mean += v
	}
	mean /= float64(n)
	if n < 2 {
		return mean, 0
	}
	var ss float64
	for _, v := range xs {
		d := v - mean
		ss += d * d
	}
	t := 1.96
	if n-1 <= len(tQuantile975) {
		t = tQuantile975[n-2]
	}
	return mean, t * math.Sqrt(ss/float64(n-1)/float64(n))
}

// MeanCI returns the mean of samples and the half-width of its two-sided
// 95 % Student-t interval (0 for fewer than two samples): the interval
// Find uses for a level's repeats. llmmetrics bench repeats a level until
// the half-width is within its target.
func MeanCI(samples []float64) (mean, halfWidth float64) { return meanCI(samples) }
