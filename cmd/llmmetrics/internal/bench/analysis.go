package bench

import (
	"math"

	"github.com/llmmetrics/llmmetrics/saturation"
)

// analysis returns the saturation verdict over the levels measured so far:
// each level's repeats are the samples of its throughput (saturation.Find
// decides the knee from their intervals), its Server what the model server
// reported during it.
func (b *bench) analysis() saturation.Result {
	res, _ := saturation.Find(b.satLevels(), b.satOptions()) // objectives validated by the flags
	return res
}

// satOptions are the saturation analysis' options: the objectives, and
// task goodput as the SLO criterion for agents' tasks (unless
// -goodput-by request).
func (b *bench) satOptions() saturation.Options {
	return saturation.Options{Objectives: b.o.objectives, ByTask: b.byTask()}
}

// byTask reports whether the SLO is judged by tasks.
func (b *bench) byTask() bool {
	return b.wl != nil && b.wl.Agent() && b.o.wl.agent.goodputBy != "request"
}

// satLevels returns the measured levels as saturation.Find reads them.
func (b *bench) satLevels() []saturation.Level {
	ls := b.sortedLevels()
	in := make([]saturation.Level, len(ls))
	for i, l := range ls {
		in[i] = saturation.Level{Load: l.Load, Summary: l.Summary, Repeats: l.repeats, Server: l.Server, InFlight: l.ClientInFlight}
		if t := l.Tasks; t != nil {
			in[i].Tasks = &saturation.Tasks{Total: t.Tasks, Good: t.Good}
		}
	}
	for i, l := range ls {
		in[i].PrefillStalls = l.PrefillStalls // the long gaps the level counted (servertime.go)
	}
	return in
}

// pastTheKnee reports whether the sweep has shown the saturation point and
// what lies beyond it: throughput fell below its peak, or two more levels
// ran after the saturation level.
func pastTheKnee(sat saturation.Result) bool {
	if !sat.Found {
		return false
	}
	for _, l := range sat.Levels[sat.Level:] {
		for _, r := range l.Reasons {
			if r.Signal == saturation.SignalThroughputDrop && !r.Undecided {
				return true
			}
		}
	}
	return len(sat.Levels)-1 >= sat.Level+2
}

// needsRepeat reports whether the mean of samples is not yet known to
// ±relPrec (relative half-width of its 95 % Student-t interval).
func needsRepeat(samples []float64, relPrec float64) bool {
	if len(samples) < 2 {
		return true
	}
	mean, half := saturation.MeanCI(samples)
	return half > relPrec*math.Abs(mean)
}
