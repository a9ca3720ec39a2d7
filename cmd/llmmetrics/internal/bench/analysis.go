package bench

import (
	"math"

	"github.com/llmmetrics/llmmetrics"
)

// analysis returns the saturation verdict over the levels measured so far.
func (b *bench) analysis() llmmetrics.Saturation {
	ls := b.sortedLevels()
	in := make([]llmmetrics.LoadLevel, len(ls))
	for i, l := range ls {
		in[i] = llmmetrics.LoadLevel{Load: l.Load, Summary: l.Summary}
	}
	sat, _ := llmmetrics.FindSaturation(in, llmmetrics.SaturationOptions{Objectives: b.o.objectives})
	return sat
}

// pastTheKnee reports whether the sweep has shown the saturation point and
// what lies beyond it: throughput fell below its peak, or two more levels
// ran after the saturation level.
func pastTheKnee(sat llmmetrics.Saturation) bool {
	if !sat.Found {
		return false
	}
	for _, l := range sat.Levels[sat.Level:] {
		for _, r := range l.Reasons {
			if r.Signal == llmmetrics.SignalThroughputDrop {
				return true
			}
		}
	}
	return len(sat.Levels)-1 >= sat.Level+2
}

// tQuantile975 holds Student's t 0.975 quantiles for 1 … 10 degrees of
// freedom (two-sided 95 %).
var tQuantile975 = []float64{12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228}

// needsRepeat reports whether the mean of samples is not yet known to
// ±relPrec (relative half-width of its 95 % Student-t interval).
func needsRepeat(samples []float64, relPrec, _ float64) bool {
	if len(samples) < 2 {
		return true
	}
	mean, half := meanCI(samples)
	return half > relPrec*math.Abs(mean)
}
