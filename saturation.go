package llmmetrics

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// LoadLevel is one step of a load test: the offered Load (concurrency or
// request rate, in any unit, as long as it grows with the load) and the
// Summary measured at it.
type LoadLevel struct {
	// Load is the offered load: concurrent users or requests per second.
	Load float64 `json:"load"`
	// Summary is what the run at this load measured. A Summary with only
	// throughput figures is valid; signals that need more are skipped.
	Summary Summary `json:"summary"`
}

// ThroughputMeasure selects the throughput figure FindSaturation tracks.
// The zero value is ThroughputOutputTokens.
type ThroughputMeasure uint8

const (
	// ThroughputOutputTokens uses Summary.OutputThroughput (tokens/s) and
	// token goodput.
	ThroughputOutputTokens ThroughputMeasure = iota
	// ThroughputRequests uses Summary.RequestThroughput (requests/s) and
	// request goodput.
	ThroughputRequests
	// ThroughputTotalTokens uses Summary.TotalTokenThroughput (tokens/s)
	// and token goodput.
	ThroughputTotalTokens
)

// Signal is one sign of saturation FindSaturation looks for. Signals are
// bit flags so SaturationOptions.Skip can hold several. Their text form is
// "knee", "throughput_drop", "tail_growth" and "attainment".
type Signal uint8

const (
	// SignalKnee: the throughput gained per added unit of load fell below
	// SaturationOptions.KneeFraction of linear scaling.
	SignalKnee Signal = 1 << iota
	// SignalThroughputDrop: throughput fell below the best of the lower
	// loads by more than SaturationOptions.DropTolerance.
	SignalThroughputDrop
	// SignalTailGrowth: a tail percentile grew by TailGrowth× or more
	// since the lowest load while the median stayed within MedianFlat×:
	// requests are queueing.
	SignalTailGrowth
	// SignalAttainment: SLO attainment fell below AttainmentTarget.
	SignalAttainment
)

var signalNames = []struct {
	s    Signal
	name string
}{{SignalKnee, "knee"}, {SignalThroughputDrop, "throughput_drop"}, {SignalTailGrowth, "tail_growth"}, {SignalAttainment, "attainment"}}

// String returns the signal's name, or names joined by "|" for a set.
func (s Signal) String() string {
	var parts []string
	for _, n := range signalNames {
		if s&n.s != 0 {
			parts = append(parts, n.name)
			s &^= n.s
		}
	}
	if s != 0 {
		parts = append(parts, fmt.Sprintf("Signal(%d)", uint8(s)))
	}
	return strings.Join(parts, "|")
}

// MarshalText encodes the signal as String does.
func (s Signal) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText decodes a name or "|"-joined names, in any case.
func (s *Signal) UnmarshalText(b []byte) error {
	var out Signal
	for part := range strings.SplitSeq(string(b), "|") {
		found := false
		for _, n := range signalNames {
			if strings.EqualFold(part, n.name) {
				out |= n.s
				found = true
			}
		}
		if !found && part != "" {
			return fmt.Errorf("%w: unknown signal %q", ErrInvalidText, part)
		}
	}
	*s = out
	return nil
}

// Defaults of SaturationOptions, used where a field is zero.
const (
	// DefaultKneeFraction: the knee fires when a step gains less than half
	// of what linear scaling from the previous level would have gained.
	DefaultKneeFraction = 0.5
	// DefaultDropTolerance: throughput 5 % below the best lower load
	// counts as a fall (smaller dips are noise).
	DefaultDropTolerance = 0.05
	// DefaultTailGrowth: the tail percentile must have at least tripled.
	DefaultTailGrowth = 3.0
	// DefaultMedianFlat: the median must have grown by less than 50 %.
	DefaultMedianFlat = 1.5
	// DefaultTailPercentile: the tail signal watches p99.
	DefaultTailPercentile = 99.0
	// DefaultAttainmentTarget: 90 % of requests must meet the SLO, the
	// attainment goal the DistServe paper (OSDI 2024) evaluates goodput at.
	DefaultAttainmentTarget = 0.9
)

// SaturationOptions configures FindSaturation. The zero value uses every
// default (see the Default… constants): output-token throughput, all four
// signals, TTFT for the tail signal, no percentile objectives.
type SaturationOptions struct {
	// Throughput selects the throughput figure (default output tokens/s).
	Throughput ThroughputMeasure
	// KneeFraction in (0, 1]: the knee fires when
	// ΔThroughput/ΔLoad < KneeFraction × (throughput/load at the previous
	// level), that is when a step gains less than that fraction of what
	// linear scaling from the previous level would gain (doubling the load
	// with the default 0.5: throughput grew by less than 50 %). 0 means
	// DefaultKneeFraction.
	KneeFraction float64
	// DropTolerance in [0, 1): throughput counts as falling when below
	// (1 − DropTolerance) × the best lower level. 0 means
	// DefaultDropTolerance.
	DropTolerance float64
	// TailGrowth > 1: how many times the tail percentile must have grown
	// since the lowest level. 0 means DefaultTailGrowth.
	TailGrowth float64
	// MedianFlat ≥ 1: the median may grow at most this many times for the
	// tail signal to fire. 0 means DefaultMedianFlat.
	MedianFlat float64
	// TailPercentile in (50, 100]: the percentile the tail signal watches;
	// it must be among the Summary's percentiles (100 is always there).
	// 0 means DefaultTailPercentile.
	TailPercentile float64
	// TailLatencies lists the distributions the tail signal watches. nil
	// means TTFT only (E2EL is another good choice).
	TailLatencies []Latency
	// AttainmentTarget in (0, 1]: the SLO attainment a level must reach.
	// 0 means DefaultAttainmentTarget.
	AttainmentTarget float64
	// Objectives are percentile objectives ("p95 ttft<=200ms") a level
	// must pass to count as meeting the SLO in Saturation.MaxGoodLevel.
	Objectives []Objective
	// Skip lists signals not to evaluate (bit flags, e.g.
	// SignalKnee|SignalTailGrowth).
	Skip Signal
}

// ErrInvalidSaturationOptions is returned (wrapped) by
// SaturationOptions.Validate.
var ErrInvalidSaturationOptions = errors.New("llmmetrics: invalid saturation options")

// Validate returns an error wrapping ErrInvalidSaturationOptions when a
// field is outside its documented range (NaN included) or an objective is
// invalid (the error then wraps ErrInvalidObjective as well).
func (o SaturationOptions) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidSaturationOptions}, args...)...)
	}
	switch {
	case o.Throughput > ThroughputTotalTokens:
		return bad("unknown throughput measure %d", o.Throughput)
	case o.KneeFraction != 0 && !(o.KneeFraction > 0 && o.KneeFraction <= 1):
		return bad("knee fraction %v outside (0, 1]", o.KneeFraction)
	case o.DropTolerance != 0 && !(o.DropTolerance > 0 && o.DropTolerance < 1):
		return bad("drop tolerance %v outside [0, 1)", o.DropTolerance)
	case o.TailGrowth != 0 && !(o.TailGrowth > 1 && !math.IsInf(o.TailGrowth, 0)):
		return bad("tail growth %v must be > 1 and finite", o.TailGrowth)
	case o.MedianFlat != 0 && !(o.MedianFlat >= 1 && !math.IsInf(o.MedianFlat, 0)):
		return bad("median flat factor %v must be ≥ 1 and finite", o.MedianFlat)
	case o.TailPercentile != 0 && !(o.TailPercentile > 50 && o.TailPercentile <= 100):
		return bad("tail percentile %v outside (50, 100]", o.TailPercentile)
	case o.AttainmentTarget != 0 && !(o.AttainmentTarget > 0 && o.AttainmentTarget <= 1):
		return bad("attainment target %v outside (0, 1]", o.AttainmentTarget)
	}
	for _, l := range o.TailLatencies {
		if !l.valid() {
			return bad("unknown tail latency %d", uint8(l))
		}
	}
	for _, obj := range o.Objectives {
		if err := obj.Validate(); err != nil {
			return bad("%w", err) // wraps ErrInvalidObjective too
		}
	}
	return nil
}

func (o SaturationOptions) withDefaults() SaturationOptions {
	def := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.KneeFraction, DefaultKneeFraction)
	def(&o.DropTolerance, DefaultDropTolerance)
	def(&o.TailGrowth, DefaultTailGrowth)
	def(&o.MedianFlat, DefaultMedianFlat)
	def(&o.TailPercentile, DefaultTailPercentile)
	def(&o.AttainmentTarget, DefaultAttainmentTarget)
	if o.TailLatencies == nil {
		o.TailLatencies = []Latency{LatencyTTFT}
	}
	return o
}

// SaturationReason is one signal that fired at a level, with the measured
// value, the threshold it crossed, and a human-readable Message (also
// returned by String).
type SaturationReason struct {
	// Signal is the signal that fired.
	Signal Signal `json:"signal"`
	// Latency names the distribution for SignalTailGrowth ("ttft", …);
	// empty for the other signals. Its JSON name stays "metric".
	Latency string `json:"metric,omitempty"`
	// Value is what was measured: the fraction of linear scaling (knee),
	// throughput as a fraction of the best lower level (drop), the tail
	// growth factor (tail), or the attainment (attainment).
	Value float64 `json:"value"`
	// Threshold is the limit Value crossed.
	Threshold float64 `json:"threshold"`
	// Message explains the reason in one sentence.
	Message string `json:"message"`
}

// String returns Message.
func (r SaturationReason) String() string { return r.Message }

// LevelReport is FindSaturation's verdict on one level.
type LevelReport struct {
	// Load is the level's offered load.
	Load float64 `json:"load"`
	// Throughput is the tracked throughput (see ThroughputMeasure).
	Throughput float64 `json:"throughput"`
	// Goodput is the matching goodput (token or request goodput).
	Goodput float64 `json:"goodput"`
	// MeetsSLO is true when the level has request data, its attainment
	// reaches the target (unless SignalAttainment is skipped) and every
	// objective passes.
	MeetsSLO bool `json:"meets_slo"`
	// Objectives holds the result of each option objective.
	Objectives []ObjectiveResult `json:"objectives,omitempty"`
	// Reasons lists the signals that fired at this level.
	Reasons []SaturationReason `json:"reasons,omitempty"`
}

// Saturation is the result of FindSaturation. Indexes refer to the levels
// passed in; -1 means "none".
type Saturation struct {
	// Found is true when some level shows a saturation signal.
	Found bool `json:"found"`
	// Level is the index of the first level where a signal fired (-1 when
	// not Found).
	Level int `json:"level"`
	// Load is levels[Level].Load (0 when not Found).
	Load float64 `json:"load"`
	// Reasons lists the signals that fired at Level.
	Reasons []SaturationReason `json:"reasons,omitempty"`
	// BestGoodputLevel is the index of the level with the highest goodput
	// (token goodput, or request goodput for ThroughputRequests); -1 when
	// no level has any.
	BestGoodputLevel int `json:"best_goodput_level"`
	// MaxGoodLevel is the index of the highest level that meets the SLO
	// attainment target and every objective (see LevelReport.MeetsSLO);
	// -1 when none does.
	MaxGoodLevel int `json:"max_good_level"`
	// MaxGoodLoad is levels[MaxGoodLevel].Load (0 when none).
	MaxGoodLoad float64 `json:"max_good_load"`
	// Levels holds the verdict on every level, in input order.
	Levels []LevelReport `json:"levels"`
}

// FindSaturation finds where a service stops scaling, from load-test
// levels in increasing Load. At each level it evaluates four signals (each
// with a default threshold that opts can change, or skip):
//
//   - knee: ΔThroughput/ΔLoad from the previous level is below
//     KneeFraction × the previous level's throughput per unit of load
//     (linear scaling from the previous level). The reference is local
//     rather than the lowest level's efficiency, so the mild sub-linearity
//     every batching server shows from the start does not pile up into an
//     early knee, and noise at the lowest (slowest, smallest) level does
//     not move every later verdict;
//   - throughput drop: throughput is below (1 − DropTolerance) × the best
//     lower level (past the peak);
//   - tail growth: for each TailLatencies distribution, the TailPercentile
//     value grew ≥ TailGrowth× since the first level that has it while the
//     median grew < MedianFlat× (queue build-up);
//   - attainment: SLO attainment (Goodput.Attainment) is below
//     AttainmentTarget.
//
// The saturation point is the first level where any signal fires. A signal
// whose inputs a level lacks (no requests, an empty distribution, a
// percentile not computed, a zero throughput without request data, a load
// not above the previous one) is skipped for that level, not an error.
// Invalid options give the error of opts.Validate (wrapping
// ErrInvalidSaturationOptions) and no result. FindSaturation is a pure
// function, safe for concurrent use; it does not modify levels.
func FindSaturation(levels []LoadLevel, opts SaturationOptions) (Saturation, error) {
	if err := opts.Validate(); err != nil {
		return Saturation{Level: -1, BestGoodputLevel: -1, MaxGoodLevel: -1}, err
	}
	res := Saturation{Level: -1, BestGoodputLevel: -1, MaxGoodLevel: -1}
	o := opts.withDefaults()
	res.Levels = make([]LevelReport, len(levels))

	best := 0.0 // best throughput so far
	prev := -1  // index of the last level with throughput data
	bestGoodput := 0.0
	type tailBase struct{ tail, median float64 }
	bases := make([]tailBase, len(o.TailLatencies))

	for i, lv := range levels {
		s := lv.Summary
		rep := &res.Levels[i]
		rep.Load = lv.Load
		rep.Throughput, rep.Goodput = o.measure(s)
		fire := func(sig Signal, latency string, value, threshold float64, format string, args ...any) {
			rep.Reasons = append(rep.Reasons, SaturationReason{
				Signal: sig, Latency: latency, Value: value, Threshold: threshold,
				Message: fmt.Sprintf(format, args...),
			})
		}
		unit := o.unit()

		// A zero throughput with no request data is missing, not a collapse.
		hasT := rep.Throughput > 0 || s.Requests > 0

		// Knee, against the previous level that has throughput.
		if hasT && prev >= 0 && o.Skip&SignalKnee == 0 {
			pl, pt := levels[prev].Load, res.Levels[prev].Throughput
			dl := lv.Load - pl
			if dl > 0 && pl > 0 && pt > 0 && finiteFloat(lv.Load) && finiteFloat(pl) {
				frac := (rep.Throughput - pt) / dl / (pt / pl)
				if frac < o.KneeFraction {
					fire(SignalKnee, "", frac, o.KneeFraction,
						"knee: from load %g to %g throughput grew by %.4g %s per unit of load, %.0f%% of linear scaling (threshold %.0f%%)",
						pl, lv.Load, (rep.Throughput-pt)/dl, unit, 100*frac, 100*o.KneeFraction)
				}
			}
		}
		if hasT {
			prev = i
		}

		// Throughput drop.
		if hasT && best > 0 && o.Skip&SignalThroughputDrop == 0 && rep.Throughput < (1-o.DropTolerance)*best {
			frac := rep.Throughput / best
			fire(SignalThroughputDrop, "", frac, 1-o.DropTolerance,
				"throughput fell to %.4g %s, %.0f%% below the best lower load's %.4g %s (past the peak)",
				rep.Throughput, unit, 100*(1-frac), best, unit)
		}
		best = max(best, rep.Throughput)

		// Tail growth.
		for j, m := range o.TailLatencies {
			d := s.Distribution(m)
			tail, ok := d.Percentile(o.TailPercentile)
			if !ok || d.Median <= 0 || tail <= 0 {
				continue
			}
			b := &bases[j]
			if b.tail == 0 {
				b.tail, b.median = float64(tail), float64(d.Median)
				continue
			}
			if o.Skip&SignalTailGrowth != 0 {
				continue
			}
			tg, mg := float64(tail)/b.tail, float64(d.Median)/b.median
			if tg >= o.TailGrowth && mg < o.MedianFlat {
				fire(SignalTailGrowth, m.String(), tg, o.TailGrowth,
					"queue build-up: p%g %s grew %.3g× since the first level that has it (threshold %.3g×) while the median grew only %.3g× (limit %.3g×)",
					o.TailPercentile, m, tg, o.TailGrowth, mg, o.MedianFlat)
			}
		}

		// SLO attainment and objectives.
		meets := s.Requests > 0
		if s.Requests > 0 && o.Skip&SignalAttainment == 0 && s.Goodput.Attainment < o.AttainmentTarget {
			meets = false
			fire(SignalAttainment, "", s.Goodput.Attainment, o.AttainmentTarget,
				"SLO attainment %.1f%% is below the %.1f%% target", 100*s.Goodput.Attainment, 100*o.AttainmentTarget)
		}
		for _, obj := range o.Objectives {
			r, _ := obj.Check(s) // valid: checked by Validate above
			rep.Objectives = append(rep.Objectives, r)
			meets = meets && r.Pass
		}
		rep.MeetsSLO = meets
		if meets {
			res.MaxGoodLevel, res.MaxGoodLoad = i, lv.Load
		}
		if rep.Goodput > bestGoodput {
			bestGoodput, res.BestGoodputLevel = rep.Goodput, i
		}
		if !res.Found && len(rep.Reasons) > 0 {
			res.Found, res.Level, res.Load, res.Reasons = true, i, lv.Load, rep.Reasons
		}
	}
	return res, nil
}

// measure returns the tracked throughput and goodput of s (NaN/Inf as 0).
func (o SaturationOptions) measure(s Summary) (throughput, goodput float64) {
	switch o.Throughput {
	case ThroughputRequests:
		throughput, goodput = s.RequestThroughput, s.Goodput.RequestsPerSecond
	case ThroughputTotalTokens:
		throughput, goodput = s.TotalTokenThroughput, s.Goodput.TokensPerSecond
	default:
		throughput, goodput = s.OutputThroughput, s.Goodput.TokensPerSecond
	}
	if !finiteFloat(throughput) {
		throughput = 0
	}
	if !finiteFloat(goodput) {
		goodput = 0
	}
	return throughput, goodput
}

func (o SaturationOptions) unit() string {
	if o.Throughput == ThroughputRequests {
		return "req/s"
	}
	return "tok/s"
}

func finiteFloat(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }
