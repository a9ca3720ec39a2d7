package stats

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var sketchPs = []float64{0, 1, 25, 50, 90, 99, 99.9, 100}

func randomGaps(r *rand.Rand, n int, scale time.Duration) []time.Duration {
	g := make([]time.Duration, n)
	for i := range g {
		g[i] = time.Duration(r.ExpFloat64() * float64(scale))
	}
	return g
}

// TestMixedWithoutSketchesIsGaps: lists alone give Gaps's Sample, bit for
// bit.
func TestMixedWithoutSketchesIsGaps(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	lists := [][]time.Duration{randomGaps(r, 500, time.Millisecond), nil, randomGaps(r, 1024, 30*time.Millisecond), {0, -5}}
	at := func(i int) []time.Duration { return lists[i] }
	want, got := Gaps(len(lists), at, sketchPs), Mixed(len(lists), at, nil, sketchPs)
	assert.Equal(t, want.N, got.N)
	assert.Equal(t, want.Mean, got.Mean)
	assert.Equal(t, want.SumSq, got.SumSq)
	assert.Equal(t, want.Min, got.Min)
	assert.Equal(t, want.Max, got.Max)
	for _, p := range append(sketchPs, 50) {
		assert.Equal(t, want.Percentile(p), got.Percentile(p), "p%v", p)
	}
}

// TestMixedWithSketches: lists and sketches together have the exact count,
// mean, min and max, a std within float rounding, and each percentile
// between the true order statistics Σ⌈n_i/SketchPoints⌉ ranks around the
// exact one.
func TestMixedWithSketches(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	lists := [][]time.Duration{randomGaps(r, 700, time.Millisecond), randomGaps(r, 1000, 5*time.Millisecond)}
	long := [][]time.Duration{randomGaps(r, 100_000, 2*time.Millisecond), randomGaps(r, SketchPoints+1, 50*time.Millisecond), randomGaps(r, 33_333, 100*time.Microsecond)}
	var sketches []*GapSketch
	slack := 0
	for _, g := range long {
		before := slices.Clone(g)
		sketches = append(sketches, NewGapSketch(g))
		require.Equal(t, before, g, "NewGapSketch does not modify the gaps")
		slack += (len(g) + SketchPoints - 1) / SketchPoints
	}
	got := Mixed(len(lists), func(i int) []time.Duration { return lists[i] }, sketches, sketchPs)

	var all []uint64
	for _, g := range append(slices.Clone(lists), long...) {
		for _, d := range g {
			all = append(all, uint64(d))
		}
	}
	slices.Sort(all)
	vals := make([]float64, len(all))
	for i, k := range all {
		vals[i] = float64(k)
	}
	exact := Of(slices.Clone(all), make([]uint64, len(all)), sketchPs, Int)
	assert.Equal(t, len(all), got.N)
	assert.Equal(t, exactMean(all), got.Mean)
	assert.Equal(t, float64(all[0]), got.Min)
	assert.Equal(t, float64(all[len(all)-1]), got.Max)
	assert.InEpsilon(t, exact.Std(), got.Std(), 1e-9)
	for _, p := range append(sketchPs, 50) {
		i, _ := VirtualIndex(len(all), p)
		lo, hi := all[max(i-slack, 0)], all[min(i+1+slack, len(all)-1)]
		v := got.Percentile(p)
		assert.GreaterOrEqual(t, v, float64(lo), "p%v", p)
		assert.LessOrEqual(t, v, float64(hi), "p%v", p)
		t.Logf("p%v: exact %.0f, sketched %.0f (rank slack %d of %d)", p, exact.Percentile(p), v, slack, len(all))
	}
}

// TestGapSketchPoints: a hand-checked sketch. 2,048 gaps 1…2,048 ns make
// 1,024 blocks of two, {2j+1, 2j+2}; each point is the lower middle, 2j+1,
// standing for 2 gaps.
func TestGapSketchPoints(t *testing.T) {
	g := make([]time.Duration, 2*SketchPoints)
	for i := range g {
		g[len(g)-1-i] = time.Duration(i + 1) // reversed: the sketch sorts
	}
	s := NewGapSketch(g)
	assert.Equal(t, 2*SketchPoints, s.N())
	assert.Equal(t, uint64(1), s.min)
	assert.Equal(t, uint64(2*SketchPoints), s.max)
	for j := range SketchPoints {
		require.Equal(t, uint64(2*j+1), s.points[j], "point %d", j)
		require.Equal(t, uint64(2), s.weight(j))
	}
	// Alone: the median's ranks 1,023 and 1,024 (values 1,024 and 1,025)
	// read points 511 and 512: 1,023 and 1,025, so the median is 1,024,
	// like the exact 1,024.5 within one rank.
	m := Mixed(0, nil, []*GapSketch{s}, nil)
	assert.Equal(t, 1024.0, m.Percentile(50))
	assert.Equal(t, 1024.5, m.Mean)
}
