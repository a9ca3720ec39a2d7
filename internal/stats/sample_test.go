package stats

import (
	"encoding/json"
	"math"
	"math/big"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func jsonFloat(f float64) string { b, _ := json.Marshal(f); return string(b) }

// exactMean returns the mean of integer keys as the float64 nearest to the
// exact rational mean.
func exactMean(keys []uint64) float64 {
	sum := new(big.Int)
	for _, k := range keys {
		sum.Add(sum, new(big.Int).SetUint64(k))
	}
	f, _ := new(big.Rat).SetFrac(sum, big.NewInt(int64(len(keys)))).Float64()
	return f
}

// sumSq is Σ(v − mean)² in order, each product rounded before the sum.
func sumSq(vals []float64, mean float64) float64 {
	var ss float64
	for _, v := range vals {
		d := v - mean
		ss += float64(d * d)
	}
	return ss
}

func TestSum128(t *testing.T) {
	tests := []struct {
		name string
		keys []uint64
		want float64
	}{
		{"small", []uint64{1, 2, 4}, 7.0 / 3},
		{"carries past 64 bits", []uint64{math.MaxInt64, math.MaxInt64, math.MaxInt64, math.MaxInt64}, math.MaxInt64},
		{"exact half of 2^63", []uint64{math.MaxInt64, 1}, 1 << 62},
		{"remainder kept", []uint64{math.MaxInt64, math.MaxInt64, 1}, (2*float64(math.MaxInt64) + 1) / 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s Sum128
			for _, k := range tt.keys {
				s.Add(k)
			}
			assert.Equal(t, tt.want, s.Mean(len(tt.keys)))
			assert.Equal(t, exactMean(tt.keys), s.Mean(len(tt.keys)))
		})
	}
}

// TestLerpNoFMA pins the value an FMA would change (see Lerp): run under
// qemu-aarch64 in CI, it fails if the product is fused with the sum.
func TestLerpNoFMA(t *testing.T) {
	// 200 + 100·0.33299999999999996 rounds to 233.3 in two steps; fused
	// into one it gives 233.29999999999998.
	assert.Equal(t, 233.3, LerpAt(2, 33.3, func(i int) float64 { return []float64{200, 300}[i] }))
}

func TestVirtualIndex(t *testing.T) {
	tests := []struct {
		n     int
		p     float64
		wantI int
		wantT float64
	}{
		{1, 99, 0, 0},
		{4, 0, 0, 0},
		{4, 50, 1, 0.5},
		{4, 100, 3, 0},
		{101, 99, 99, 0},
		// numpy's (n − 1)·q, not n·q + (1 − q) − 1: 1 % of 2 values is
		// index 0.01 exactly.
		{2, 1, 0, 0.01},
	}
	for _, tt := range tests {
		i, frac := VirtualIndex(tt.n, tt.p)
		assert.Equal(t, tt.wantI, i, "n=%d p=%v", tt.n, tt.p)
		assert.Equal(t, tt.wantT, frac, "n=%d p=%v", tt.n, tt.p)
	}
}

// TestOfMatchesSorting checks the selection-based statistics against a
// plain sort, for data shapes that stress the histogram recursion.
func TestOfMatchesSorting(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	shapes := map[string]func(i int) uint64{
		"uniform":       func(int) uint64 { return uint64(10e6 + rng.Int64N(30e6)) },
		"heavy tail":    func(i int) uint64 { return uint64(20e6*rng.ExpFloat64()) + uint64(i%1000*(i%1000)*1e6) },
		"one outlier":   func(i int) uint64 { return map[bool]uint64{true: 1 << 60, false: 20e6}[i == 77] },
		"few distinct":  func(int) uint64 { return uint64(rng.IntN(3)) * 1e6 },
		"all equal":     func(int) uint64 { return 5 },
		"full range":    func(int) uint64 { return rng.Uint64() >> 1 },
		"float seconds": func(int) uint64 { return math.Float64bits(rng.ExpFloat64() * 1e7) },
	}
	pss := [][]float64{nil, {0, 1, 25, 50, 90, 99, 99.9, 100}}
	for name, gen := range shapes {
		for _, n := range []int{1, 2, 3, 511, 512, 513, 2049, 70_000} {
			t.Run(name+"/"+jsonFloat(float64(n)), func(t *testing.T) {
				kind := Int
				if name == "float seconds" {
					kind = Float
				}
				keys := make([]uint64, n)
				vals := make([]float64, n)
				for i := range keys {
					keys[i] = gen(i)
					vals[i] = kind.value(keys[i])
				}
				sorted := slices.Sorted(slices.Values(vals))
				at := func(i int) float64 { return sorted[i] }
				wantMean := exactMean(keys)
				if kind == Float {
					var sum float64
					for _, v := range vals {
						sum += v
					}
					wantMean = sum / float64(n)
				}
				wantSS := sumSq(vals, wantMean)
				for _, ps := range pss {
					s := Of(slices.Clone(keys), make([]uint64, n), ps, kind)
					require.Equal(t, n, s.N)
					assert.Equal(t, wantMean, s.Mean, "mean")
					assert.Equal(t, wantSS, s.SumSq, "Σ(x − mean)² in key order")
					assert.Equal(t, math.Sqrt(wantSS/float64(n)), s.Std())
					assert.Equal(t, sorted[0], s.Min)
					assert.Equal(t, sorted[n-1], s.Max)
					assert.Equal(t, LerpAt(n, 50, at), s.Percentile(50), "median")
					for _, p := range ps {
						assert.Equal(t, LerpAt(n, p, at), s.Percentile(p), "p%v", p)
					}
				}
			})
		}
	}
}

func TestOfEmptyAndManyPercentiles(t *testing.T) {
	s := Of(nil, nil, []float64{50, 99}, Int)
	assert.Zero(t, s.N)
	assert.Zero(t, s.Std())
	assert.Zero(t, s.Percentile(99))

	// More percentiles than fit without allocating.
	ps := make([]float64, 100)
	for i := range ps {
		ps[i] = float64(i) + 0.5
	}
	keys := make([]uint64, 5000)
	vals := make([]float64, len(keys))
	for i := range keys {
		keys[i] = uint64(i * i)
		vals[i] = float64(keys[i])
	}
	s = Of(slices.Clone(keys), make([]uint64, len(keys)), ps, Int)
	for _, p := range ps {
		require.Equal(t, LerpAt(len(vals), p, func(i int) float64 { return vals[i] }), s.Percentile(p), "p%v", p)
	}
}

func TestLogBucket(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	values := []uint64{0, 1, 1023, 1024, 2047, 2048, 2049, 4095, 4096, 1<<40 - 1, 1 << 40, math.MaxInt64, math.MaxUint64 - 1, math.MaxUint64}
	for range 10000 {
		values = append(values, rng.Uint64()>>rng.UintN(64))
	}
	for _, v := range values {
		b := logBucket(v)
		require.Less(t, b, logBucketCount, "v=%d", v)
		lo, hi := logBucketRange(b)
		require.LessOrEqual(t, lo, v, "v=%d bucket %d", v, b)
		require.GreaterOrEqual(t, hi, v, "v=%d bucket %d", v, b)
		require.Equal(t, b, logBucket(lo), "v=%d: bucket starts at its lo", v)
		require.Equal(t, b, logBucket(hi), "v=%d: bucket ends at its hi", v)
		if lo > 0 {
			require.Equal(t, b-1, logBucket(lo-1), "v=%d: buckets are consecutive", v)
		}
		if v < 2048 {
			assert.Equal(t, int(v), b, "small values have a bucket each")
		}
		if v >= 2048 {
			assert.LessOrEqual(t, hi-lo+1, uint64(1)<<(bits.Len64(v)-11), "v=%d: width ≤ v/1,024", v)
		}
	}
}

// gapsOf computes Gaps over the lists ls.
func gapsOf(ls [][]time.Duration, ps []float64) Sample {
	return Gaps(len(ls), func(i int) []time.Duration { return ls[i] }, ps)
}

// TestGapsMatchesOf checks the in-place two-pass selection of Gaps against
// Of over the copied gaps, for gap shapes that stress the log-linear
// buckets.
func TestGapsMatchesOf(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 44))
	shapes := map[string]func(i int) time.Duration{
		"uniform":      func(int) time.Duration { return time.Duration(10e6 + rng.Int64N(30e6)) },
		"all equal":    func(int) time.Duration { return 20 * time.Millisecond },
		"one outlier":  func(i int) time.Duration { return map[bool]time.Duration{true: 1 << 62, false: 20e6}[i == 77] },
		"small":        func(int) time.Duration { return time.Duration(rng.IntN(3000)) },
		"negative":     func(int) time.Duration { return time.Duration(rng.Int64N(2000) - 1000) },
		"full range":   func(int) time.Duration { return time.Duration(rng.Int64()) },
		"two clusters": func(i int) time.Duration { return time.Duration(i%2)*time.Hour + time.Duration(rng.IntN(5)) },
	}
	pss := [][]float64{nil, {0, 1, 25, 50, 90, 99, 99.9, 100}}
	for name, gen := range shapes {
		for _, n := range []int{1, 2, 513, 2049, 50_000} {
			t.Run(name+"/"+jsonFloat(float64(n)), func(t *testing.T) {
				var ls [][]time.Duration
				var keys []uint64
				for len(keys) < n {
					var l []time.Duration
					for range min(rng.IntN(40), n-len(keys)) { // some lists are empty
						g := gen(len(keys))
						l = append(l, g)
						keys = append(keys, uint64(max(g, 0)))
					}
					ls = append(ls, l)
				}
				for _, ps := range pss {
					want := Of(slices.Clone(keys), make([]uint64, len(keys)), ps, Int)
					got := gapsOf(ls, ps)
					require.Equal(t, want.N, got.N)
					assert.Equal(t, want.Mean, got.Mean, "mean")
					assert.Equal(t, want.SumSq, got.SumSq, "Σ(x − mean)², same order")
					assert.Equal(t, want.Min, got.Min, "min")
					assert.Equal(t, want.Max, got.Max, "max")
					for _, p := range append([]float64{50}, ps...) {
						assert.Equal(t, want.Percentile(p), got.Percentile(p), "p%v", p)
					}
				}
			})
		}
	}
	t.Run("no gaps", func(t *testing.T) {
		s := gapsOf([][]time.Duration{nil, {}}, []float64{99})
		assert.Zero(t, s.N)
	})
}
