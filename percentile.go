package llmmetrics

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/llmmetrics/llmmetrics/internal/stats"
)

// Percentile returns the p-th percentile of values with numpy's default
// linear interpolation, as `vllm bench serve` does. p is in percent (0–100):
// 0 gives the minimum, 50 the median, 100 the maximum. The error wraps
// ErrInvalid for a p outside [0, 100] or a NaN or infinite value, and
// ErrUndefined for no values. values is not modified.
func Percentile(values []float64, p float64) (float64, error) {
	s, err := sortedCopy(values, p)
	if err != nil {
		return 0, err
	}
	return stats.LerpAt(len(s), p, func(i int) float64 { return s[i] }), nil
}

// sortedCopy returns a sorted copy of values, or the error of a percentile
// p of them (see Percentile).
func sortedCopy(values []float64, p float64) ([]float64, error) {
	if !stats.ValidPercent(p) {
		return nil, fmt.Errorf("%w: percentile %v is outside [0, 100]", ErrInvalid, p)
	}
	if err := finiteValues(values); err != nil {
		return nil, err
	}
	if len(values) == 0 {
		return nil, fmt.Errorf("%w: percentile of no values", ErrUndefined)
	}
	s := slices.Clone(values)
	slices.Sort(s)
	return s, nil
}

// finiteValues returns an error wrapping ErrInvalid when a value is
// NaN or ±Inf.
func finiteValues(values []float64) error {
	for i, v := range values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%w: values[%d] is %v", ErrInvalid, i, v)
		}
	}
	return nil
}

// percentileNearestRank returns the p-th percentile of values with the
// nearest-rank method: the smallest value v such that at least p percent of
// the values are ≤ v (numpy's "inverted_cdf" method). Unlike Percentile, the
// result is always one of the observed values, which suits a user who must
// quote a latency that really happened.
//
// p is in percent (0–100); p = 0 gives the minimum and p = 100 the maximum.
// Its errors are those of Percentile. values is not modified. It is safe
// for concurrent use.
func percentileNearestRank(values []float64, p float64) (float64, error) {
	s, err := sortedCopy(values, p)
	if err != nil {
		return 0, err
	}
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1], nil
}

// WeightedMean returns Σ values[i]·weights[i] / Σ weights[i]: with weights
// N − 1, the mean of per-request TPOT is Summary.TokenWeightedTPOT. The
// error wraps ErrInvalid for slices of different lengths, a NaN or infinite
// value, a negative weight or an overflow, and ErrUndefined when the
// weights sum to 0.
func WeightedMean(values, weights []float64) (float64, error) {
	if len(values) != len(weights) {
		return 0, fmt.Errorf("%w: %d values and %d weights", ErrInvalid, len(values), len(weights))
	}
	if err := finiteValues(values); err != nil {
		return 0, err
	}
	var sum, wsum float64
	for i, v := range values {
		w := weights[i]
		if !(w >= 0) || math.IsInf(w, 0) {
			return 0, fmt.Errorf("%w: weights[%d] is %v", ErrInvalid, i, w)
		}
		if w == 0 {
			continue
		}
		sum += float64(v * w) // no FMA: see internal/stats
		wsum += w
	}
	if wsum == 0 {
		return 0, fmt.Errorf("%w: weighted mean with no weight", ErrUndefined)
	}
	if !finiteFloat(sum) || !finiteFloat(wsum) {
		return 0, fmt.Errorf("%w: the weighted sums overflow float64", ErrInvalid)
	}
	return sum / wsum, nil
}

// PercentileValue is one requested percentile of a Distribution.
type PercentileValue struct {
	// P is the percentile in percent (0–100).
	P float64 `json:"p"`
	// Value is the latency at percentile P, rounded to the nanosecond.
	Value time.Duration `json:"value_ns"`
}

// Distribution summarizes one sample set (all TTFTs of a run, say) with the
// statistics `vllm bench serve` reports, each rounded to the nanosecond. An
// empty set has Count 0 and every other field zero: check Count first.
type Distribution struct {
	// Count is the number of samples.
	Count int `json:"count"`
	// Mean is the arithmetic mean.
	Mean time.Duration `json:"mean_ns"`
	// Median is the 50th percentile (numpy linear).
	Median time.Duration `json:"median_ns"`
	// Std is the population standard deviation (numpy's np.std, ddof = 0).
	Std time.Duration `json:"std_ns"`
	// Min is the smallest sample.
	Min time.Duration `json:"min_ns"`
	// Max is the largest sample.
	Max time.Duration `json:"max_ns"`
	// Percentiles holds the requested percentiles in the order requested
	// (omitted from JSON when empty).
	Percentiles []PercentileValue `json:"percentiles,omitempty"`
}

// Percentile returns the value at percentile p (in percent), which must be
// one of SummaryOptions.Percentiles, or 0, 50 or 100. ok is false when the
// distribution is empty or p was not requested.
func (d Distribution) Percentile(p float64) (v time.Duration, ok bool) {
	if d.Count == 0 {
		return 0, false
	}
	for _, pv := range d.Percentiles {
		if pv.P == p {
			return pv.Value, true
		}
	}
	switch p {
	case 0:
		return d.Min, true
	case 50:
		return d.Median, true
	case 100:
		return d.Max, true
	}
	return 0, false
}

// roundDur rounds a float64 number of nanoseconds to a Duration, saturating
// at the Duration range (and mapping NaN to 0).
func roundDur(ns float64) time.Duration {
	switch {
	case ns != ns:
		return 0
	case ns >= math.MaxInt64:
		return math.MaxInt64
	case ns <= math.MinInt64:
		return math.MinInt64
	}
	return time.Duration(math.Round(ns))
}

// distribution turns the statistics of a sample set of nanoseconds into a
// Distribution with the percentiles ps (the ones s was computed for).
func distribution(s *stats.Sample, ps []float64) Distribution {
	if s.N == 0 {
		return Distribution{}
	}
	d := Distribution{
		Count:  s.N,
		Mean:   roundDur(s.Mean),
		Median: roundDur(s.Percentile(50)),
		Std:    roundDur(s.Std()),
		Min:    roundDur(s.Min),
		Max:    roundDur(s.Max),
	}
	if len(ps) > 0 {
		d.Percentiles = make([]PercentileValue, len(ps))
		for i, p := range ps {
			d.Percentiles[i] = PercentileValue{P: p, Value: roundDur(s.Percentile(p))}
		}
	}
	return d
}

func finiteFloat(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }
