package saturation

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmmetrics/llmmetrics"
)

// repeated is a level whose repeats measured these output throughputs; its
// Summary (the pool) has their mean.
func repeated(load float64, tputs ...float64) Level {
	l := Level{Load: load}
	sum := 0.0
	for _, t := range tputs {
		l.Repeats = append(l.Repeats, llmmetrics.Summary{OutputThroughput: t})
		sum += t
	}
	l.Summary.OutputThroughput = sum / float64(len(tputs))
	return l
}

func loads(r Result) []float64 {
	var out []float64
	for _, l := range r.Levels {
		out = append(out, l.Load)
	}
	return out
}

// TestFindComparesWithLowerLoads: repeats of one load are merged, never
// compared with each other, and levels given out of order are sorted, so a
// load is compared only with lower ones.
func TestFindComparesWithLowerLoads(t *testing.T) {
	t.Run("[1 2 2 4]: the second load-2 level is a repeat, not a drop", func(t *testing.T) {
		got, err := Find([]Level{tputLevel(1, 100), tputLevel(2, 200), tputLevel(2, 188), tputLevel(4, 400)}, Options{})
		require.NoError(t, err)
		assert.False(t, got.Found, "%+v", got.Levels)
		assert.Equal(t, []float64{1, 2, 4}, loads(got))
		// Two samples at load 2 leave its throughput, and so both knees,
		// undecided: no drop, and no verdict either way.
		assert.Equal(t, []float64{1, 2}, got.KneeBetween)
		// Load 2 merged: mean 194 over 2 samples; t(1 df) = 12.706, s = 8.485,
		// half-width 12.706 × 8.485 / √2 = 76.23.
		assert.Equal(t, 2, got.Levels[1].Samples)
		assert.InDelta(t, 194, got.Levels[1].Throughput, 1e-9)
		assert.InDelta(t, 12.706*math.Sqrt(72)/math.Sqrt(2), got.Levels[1].ThroughputCI, 1e-9)
		for _, l := range got.Levels {
			for _, r := range l.Reasons {
				assert.True(t, r.Signal == SignalKnee && r.Undecided, "load %g: %s", l.Load, r.Message)
			}
		}
	})
	t.Run("[1 4 2 8]: sorted, load 2 is not compared with load 4", func(t *testing.T) {
		got, err := Find([]Level{tputLevel(1, 100), tputLevel(4, 400), tputLevel(2, 200), tputLevel(8, 800)}, Options{})
		require.NoError(t, err)
		assert.False(t, got.Found, "%+v", got.Levels)
		assert.Equal(t, []float64{1, 2, 4, 8}, loads(got))
		for _, l := range got.Levels {
			assert.Empty(t, l.Reasons, "load %g", l.Load)
		}
	})
	t.Run("a drop is against the best lower load, wherever it came in the input", func(t *testing.T) {
		got, err := Find([]Level{tputLevel(8, 500), tputLevel(1, 100), tputLevel(4, 1000), tputLevel(2, 200)}, Options{Skip: SignalKnee})
		require.NoError(t, err)
		require.True(t, got.Found)
		assert.InDelta(t, 8.0, got.Load, 0)
		require.Len(t, got.Reasons, 1)
		assert.Equal(t, SignalThroughputDrop, got.Reasons[0].Signal)
		assert.InDelta(t, 0.5, got.Reasons[0].Value, 1e-12)
		assert.Contains(t, got.Reasons[0].Message, "of load 4")
	})
}

// TestFindKneeIntervals: with repeats the knee is decided from the gain's
// 95 % interval. Two samples each, ±1 % around the mean: t(1 df) = 12.706,
// s = √2 % of the mean, half-width = 12.706 × 1 % of the mean = 12.7 %.
func TestFindKneeIntervals(t *testing.T) {
	tests := []struct {
		name    string
		levels  []Level
		found   bool
		load    float64
		between []float64
		state   string // the knee reason at the last load: "", "decided", "undecided"
	}{
		{
			// 8: 1000 ± 127; 16: 1200 ± 152. Gain (8/8)(T/Tp − 1): point 20 %,
			// interval [1048/1127 − 1, 1352/873 − 1] = [−7 %, 55 %]: straddles.
			name:    "straddling at the last load: undecided, between 8 and 16",
			levels:  []Level{repeated(8, 990, 1010), repeated(16, 1188, 1212)},
			between: []float64{8, 16}, state: "undecided",
		},
		{
			// 16: 1050 ± 133: interval [917/1127 − 1, 1183/873 − 1] = [−19 %, 36 %]: decided below 50 %.
			name:   "wholly below the threshold: the knee",
			levels: []Level{repeated(8, 990, 1010), repeated(16, 1039.5, 1060.5)},
			found:  true, load: 16, state: "decided",
		},
		{
			// 16: 1900 ± 241: interval [1659/1127 − 1, 2141/873 − 1] = [47 %, 145 %]: straddles.
			name:    "a near-linear step with wide intervals is undecided too",
			levels:  []Level{repeated(8, 990, 1010), repeated(16, 1881, 1919)},
			between: []float64{8, 16}, state: "undecided",
		},
		{
			// Ten samples of ±0.1 %: t(9) = 2.262, s ≈ 1.054 units per 1000,
			// half-width ≈ 0.75; 16: 1900: interval ≈ [89.8 %, 90.2 %].
			name: "tight intervals: a 90 % step is decidedly above",
			levels: []Level{repeated(8, 999, 1001, 999, 1001, 999, 1001, 999, 1001, 999, 1001),
				repeated(16, 1899, 1901, 1899, 1901, 1899, 1901, 1899, 1901, 1899, 1901)},
		},
		{
			// The straddle at 16 is not the point: the decided knee and drop at 32 are.
			name:   "an undecided knee is never the point: the next decided signal is",
			levels: []Level{repeated(8, 990, 1010), repeated(16, 1188, 1212), repeated(32, 500, 510)},
			found:  true, load: 32,
		},
		{
			// 16 straddles; 32 scales decidedly (3000 ± 0.x: tight); 64 falls.
			name: "an undecided knee passed over when the next load scales again",
			levels: []Level{repeated(8, 990, 1010), repeated(16, 1188, 1212),
				repeated(32, 2999, 3001, 2999, 3001, 2999, 3001), repeated(64, 1000, 1001)},
			found: true, load: 64,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Find(tt.levels, Options{})
			require.NoError(t, err)
			assert.Equal(t, tt.found, got.Found, "%+v", got.Levels)
			assert.InDelta(t, tt.load, got.Load, 0)
			assert.Equal(t, tt.between, got.KneeBetween)
			if tt.state != "" {
				last := got.Levels[len(got.Levels)-1]
				require.NotEmpty(t, last.Reasons)
				r := last.Reasons[0]
				assert.Equal(t, SignalKnee, r.Signal)
				assert.Equal(t, tt.state == "undecided", r.Undecided, r.Message)
				assert.Contains(t, r.Message, "95% interval")
			}
		})
	}
}

func f64(v float64) *float64 { return &v }

func TestFindServerSignals(t *testing.T) {
	quiet := &Server{KVCacheUsage: f64(0.4), RequestsWaiting: f64(0), Preemptions: f64(0), GPUUtilization: f64(0.7)}
	full := &Server{KVCacheUsage: f64(0.98), KVCacheUsageMax: f64(1), RequestsWaiting: f64(41), Preemptions: f64(12), GPUUtilization: f64(0.97)}
	levels := []Level{
		{Load: 8, Summary: llmmetrics.Summary{OutputThroughput: 1000}, Server: quiet},
		{Load: 16, Summary: llmmetrics.Summary{OutputThroughput: 1200}, Server: full},
	}
	got, err := Find(levels, Options{})
	require.NoError(t, err)
	require.True(t, got.Found)
	assert.InDelta(t, 16.0, got.Load, 0)
	var sigs []Signal
	var msgs []string
	for _, r := range got.Reasons {
		sigs = append(sigs, r.Signal)
		msgs = append(msgs, r.Message)
	}
	assert.Equal(t, []Signal{SignalKnee, SignalKVCache, SignalQueue, SignalPreemption, SignalGPU}, sigs, "client first, then the server's")
	assert.Equal(t, []string{
		"knee: from load 8 to 16 throughput grew by 25 tok/s per unit of load, 20% of linear scaling (threshold 50%)",
		"KV cache at 98% on average, 100% at its fullest",
		"41 requests waiting in the server's queue on average (0 at load 8)",
		"preemptions rising: 12 during the level (0 at load 8)",
		"GPUs busy 97% of the time",
	}, msgs)
	assert.Empty(t, got.Levels[0].Reasons, "a quiet server says nothing")

	t.Run("server signals never decide the saturation point", func(t *testing.T) {
		linear := []Level{{Load: 8, Summary: llmmetrics.Summary{OutputThroughput: 1000}, Server: full},
			{Load: 16, Summary: llmmetrics.Summary{OutputThroughput: 2000}, Server: full}}
		got, err := Find(linear, Options{})
		require.NoError(t, err)
		assert.False(t, got.Found)
		assert.NotEmpty(t, got.Levels[0].Reasons, "but they are reported at the level")
	})
	t.Run("absent figures are silent", func(t *testing.T) {
		got, err := Find([]Level{{Load: 8, Summary: llmmetrics.Summary{OutputThroughput: 1000}, Server: &Server{}},
			{Load: 16, Summary: llmmetrics.Summary{OutputThroughput: 1200}, Server: &Server{}}}, Options{})
		require.NoError(t, err)
		require.Len(t, got.Reasons, 1)
		assert.Equal(t, SignalKnee, got.Reasons[0].Signal)
	})
	t.Run("a steady queue is not a growing one; skipped signals stay silent", func(t *testing.T) {
		s := &Server{RequestsWaiting: f64(5), KVCacheUsage: f64(0.95)}
		got, err := Find([]Level{{Load: 8, Summary: llmmetrics.Summary{OutputThroughput: 1000}, Server: s},
			{Load: 16, Summary: llmmetrics.Summary{OutputThroughput: 1200}, Server: s}}, Options{Skip: SignalKVCache})
		require.NoError(t, err)
		assert.Equal(t, SignalKnee, firedSignals(got.Reasons))
		assert.Equal(t, SignalQueue, firedSignals(got.Levels[0].Reasons), "the first sight of a queue")
	})
}

func TestFindRejectsNaNLoad(t *testing.T) {
	_, err := Find([]Level{{Load: math.NaN()}}, Options{})
	assert.ErrorIs(t, err, ErrInvalidOptions)
}

func TestThroughputMeasureText(t *testing.T) {
	for m, name := range map[ThroughputMeasure]string{ThroughputOutputTokens: "output_tokens", ThroughputRequests: "requests", ThroughputTotalTokens: "total_tokens"} {
		assert.Equal(t, name, m.String())
		b, err := m.MarshalText()
		require.NoError(t, err)
		var back ThroughputMeasure
		require.NoError(t, back.UnmarshalText([]byte(name)))
		assert.Equal(t, m, back)
		assert.Equal(t, name, string(b))
	}
	assert.Equal(t, "ThroughputMeasure(7)", ThroughputMeasure(7).String())
	_, err := ThroughputMeasure(7).MarshalText()
	assert.ErrorIs(t, err, llmmetrics.ErrInvalid)
	var m ThroughputMeasure
	assert.ErrorIs(t, m.UnmarshalText([]byte("joules")), llmmetrics.ErrInvalid)
}

func TestMeanCI(t *testing.T) {
	m, h := MeanCI([]float64{10, 12, 14})
	// s = 2, t(2 df) = 4.303: 4.303 × 2 / √3.
	assert.InDelta(t, 12, m, 1e-12)
	assert.InDelta(t, 4.303*2/math.Sqrt(3), h, 1e-12)
	m, h = MeanCI([]float64{5})
	assert.Equal(t, [2]float64{5, 0}, [2]float64{m, h})
}

func TestSignalTextAnyCase(t *testing.T) {
	var s Signal
	require.NoError(t, s.UnmarshalText([]byte("KNEE|Tail_Growth|KV_Cache")))
	assert.Equal(t, SignalKnee|SignalTailGrowth|SignalKVCache, s)
	b, err := s.MarshalText()
	require.NoError(t, err)
	assert.Equal(t, "knee|tail_growth|kv_cache", string(b))
}
