package llmmetrics

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPercentile(t *testing.T) {
	inf := math.Inf(1)
	tests := []struct {
		name    string
		values  []float64
		p       float64
		want    float64
		wantErr error
	}{
		// numpy.percentile([1, 2, 3, 4], p) with the default linear method.
		{"p0 is min", []float64{4, 1, 3, 2}, 0, 1, nil},
		{"p25", []float64{4, 1, 3, 2}, 25, 1.75, nil},
		{"p50 even count is mean of middle", []float64{4, 1, 3, 2}, 50, 2.5, nil},
		{"p90", []float64{4, 1, 3, 2}, 90, 3.7, nil},
		{"p100 is max", []float64{4, 1, 3, 2}, 100, 4, nil},
		{"p50 odd count", []float64{5, 1, 3}, 50, 3, nil},
		{"single value", []float64{7}, 99, 7, nil},
		{"p99 of 1..100", seqFloats(1, 100), 99, 99.01, nil},
		{"empty", nil, 50, 0, ErrUndefined},
		{"p below 0", []float64{1, 2}, -0.1, 0, ErrInvalid},
		{"p above 100", []float64{1, 2}, 100.1, 0, ErrInvalid},
		{"NaN p", []float64{1, 2}, math.NaN(), 0, ErrInvalid},
		{"NaN value", []float64{1, math.NaN(), 3}, 50, 0, ErrInvalid},
		{"Inf value", []float64{1, 2, inf}, 50, 0, ErrInvalid},
		{"empty and invalid p: the argument error wins", nil, 101, 0, ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.values)
			for _, f := range []func([]float64, float64) (float64, error){Percentile, percentileNearestRank} {
				got, err := f(tt.values, tt.p)
				if tt.wantErr != nil {
					require.ErrorIs(t, err, tt.wantErr)
					assert.Zero(t, got)
					continue
				}
				require.NoError(t, err)
				assert.Equal(t, in, tt.values, "input not modified")
			}
			if tt.wantErr == nil {
				got, _ := Percentile(tt.values, tt.p)
				assert.InDelta(t, tt.want, got, 1e-12)
			}
		})
	}
}

func seqFloats(from, to int) []float64 {
	var out []float64
	for i := from; i <= to; i++ {
		out = append(out, float64(i))
	}
	return out
}

func TestPercentileNearestRank(t *testing.T) {
	v := []float64{40, 15, 35, 50, 20} // the classic nearest-rank example
	tests := []struct {
		p    float64
		want float64
	}{{0, 15}, {5, 15}, {30, 20}, {40, 20}, {50, 35}, {99, 50}, {100, 50}}
	for _, tt := range tests {
		t.Run(jsonFloat(tt.p), func(t *testing.T) {
			got, err := percentileNearestRank(v, tt.p)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestPercentileProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	pct := func(v []float64, p float64) float64 {
		got, err := Percentile(v, p)
		require.NoError(t, err)
		return got
	}
	for range 60 {
		n := 1 + rng.IntN(60)
		v := make([]float64, n)
		for i := range v {
			v[i] = rng.NormFloat64() * 1000
		}
		s := slices.Sorted(slices.Values(v))
		require.Equal(t, s[0], pct(v, 0))
		require.Equal(t, s[n-1], pct(v, 100))
		med := s[n/2]
		if n%2 == 0 {
			med = (s[n/2-1] + s[n/2]) / 2
		}
		require.InDelta(t, med, pct(v, 50), 1e-9)
		prev := math.Inf(-1)
		for p := 0.0; p <= 100; p += 1.25 {
			got := pct(v, p)
			require.GreaterOrEqual(t, got, prev, "monotone in p")
			nr, err := percentileNearestRank(v, p)
			require.NoError(t, err)
			require.Contains(t, v, nr, "nearest rank is an observed value")
			prev = got
		}
	}
}

func TestWeightedMean(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	tests := []struct {
		name    string
		v, w    []float64
		want    float64
		wantErr error
	}{
		{"plain mean", []float64{1, 2, 3}, []float64{1, 1, 1}, 2, nil},
		{"TPOT by tokens", []float64{10, 100}, []float64{1000, 10}, 11000.0 / 1010, nil},
		{"zero weight ignored", []float64{5, 1e9}, []float64{2, 0}, 5, nil},
		{"NaN value even with zero weight", []float64{5, nan}, []float64{1, 0}, 0, ErrInvalid},
		{"Inf value", []float64{5, inf}, []float64{1, 1}, 0, ErrInvalid},
		{"length mismatch", []float64{1}, []float64{1, 2}, 0, ErrInvalid},
		{"negative weight", []float64{1, 2}, []float64{1, -1}, 0, ErrInvalid},
		{"NaN weight", []float64{1, 2}, []float64{1, nan}, 0, ErrInvalid},
		{"inf weight", []float64{1, 2}, []float64{1, inf}, 0, ErrInvalid},
		{"overflow", []float64{1e308, 1e308}, []float64{10, 10}, 0, ErrInvalid},
		{"empty", nil, nil, 0, ErrUndefined},
		{"all zero weights", []float64{1, 2}, []float64{0, 0}, 0, ErrUndefined},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := WeightedMean(tt.v, tt.w)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				assert.Regexp(t, "^llmmetrics: ", err.Error())
				assert.Zero(t, got)
				return
			}
			require.NoError(t, err)
			assert.InDelta(t, tt.want, got, 1e-12)
		})
	}
}

func TestDistributionPercentile(t *testing.T) {
	d := Distribution{Count: 3, Min: 1, Median: 2, Max: 3, Percentiles: []PercentileValue{{P: 99, Value: 5}}}
	tests := []struct {
		p    float64
		want time.Duration
		ok   bool
	}{{99, 5, true}, {0, 1, true}, {50, 2, true}, {100, 3, true}, {95, 0, false}}
	for _, tt := range tests {
		v, ok := d.Percentile(tt.p)
		assert.Equal(t, tt.ok, ok, "p%v", tt.p)
		assert.Equal(t, tt.want, v, "p%v", tt.p)
	}
	_, ok := Distribution{}.Percentile(50)
	assert.False(t, ok, "empty distribution")
}

// TestPercentileNumpyVirtualIndex pins numpy's own virtual index for the
// linear method, (n − 1)·q: the textbook n·q + (1 − q) − 1 is equal on
// paper but rounds differently (found in review).
func TestPercentileNumpyVirtualIndex(t *testing.T) {
	// numpy.percentile([0, 1e6], 1) == 10000.0 exactly.
	got, err := Percentile([]float64{0, 1e6}, 1)
	require.NoError(t, err)
	assert.Equal(t, 10000.0, got)
	// numpy.percentile([0, 15], 90) == 13.5: Summarize rounds it to 14 ns.
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	recs := []Record{
		{Start: t0, FirstToken: t0, LastToken: t0, End: t0, OutputTokens: 1},
		{Start: t0, FirstToken: t0.Add(15), LastToken: t0.Add(15), End: t0.Add(15), OutputTokens: 1},
	}
	s := Summarize(recs, SummaryOptions{Percentiles: []float64{90}})
	v, ok := s.TTFT.Percentile(90)
	require.True(t, ok)
	assert.Equal(t, 14*time.Nanosecond, v)
}
