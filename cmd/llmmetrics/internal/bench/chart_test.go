package bench

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/saturation"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ttftDist is a TTFT distribution whose every percentile is d.
func ttftDist(d time.Duration) llmmetrics.Distribution {
	return llmmetrics.Distribution{Count: 1, Median: d, Max: d,
		Percentiles: []llmmetrics.PercentileValue{{P: 50, Value: d}, {P: 99, Value: d}}}
}

func zero() *float64 { v := 0.0; return &v }

// TestDegenerateResults: the table and the charts of empty, zero,
// single-level and all-failed results: no panic, no error, and no chart
// without a point to draw.
func TestDegenerateResults(t *testing.T) {
	failed := &Level{Load: 4, Summary: llmmetrics.Summary{Requests: 10, Failed: 10}, RepeatThroughput: []float64{0},
		Failures: map[string]int{"eof": 10}, FirstError: "EOF"}
	one := &Level{Load: 1, Summary: llmmetrics.Summary{Requests: 2, Completed: 2, OutputThroughput: 50, TTFT: ttftDist(30 * time.Millisecond)},
		RepeatThroughput: []float64{50}}
	zeroTTFT := &Level{Load: 1, Summary: llmmetrics.Summary{Requests: 2, Completed: 2, TTFT: ttftDist(0)}, RepeatThroughput: []float64{0, 0}}
	idle := &Level{Load: 2, Summary: llmmetrics.Summary{Requests: 2, Completed: 2}, Server: &saturation.Server{
		RequestsRunning: zero(), RequestsWaiting: zero(), KVCacheUsage: zero(), KVCacheUsageMax: zero()}}
	tests := []struct {
		name      string
		r         Results
		wantFiles []string
	}{
		{"no level", Results{}, nil},
		{"one level with nothing in it", Results{Levels: []*Level{{Load: 1}}}, []string{"throughput.svg"}},
		{"one level, all failed", Results{Levels: []*Level{failed}}, []string{"throughput.svg"}},
		{"one level", Results{Levels: []*Level{one}, SLO: llmmetrics.SLO{TTFT: 200 * time.Millisecond}},
			[]string{"throughput.svg", "ttft.svg"}},
		{"one level, rates", Results{Mode: ModeRate, Levels: []*Level{one}}, []string{"throughput.svg", "ttft.svg"}},
		{"a TTFT of 0 and no throughput", Results{Levels: []*Level{zeroTTFT}}, []string{"throughput.svg", "ttft.svg"}},
		{"a server that reports zeros", Results{Levels: []*Level{idle}}, []string{"throughput.svg", "kv_cache.svg", "queue.svg"}},
		{"the saturation point and max under SLO off the levels", Results{Levels: []*Level{one, failed},
			Saturation: saturation.Result{Found: true, Load: 1e6}, MaxLoadUnderSLO: zero()},
			[]string{"throughput.svg", "ttft.svg"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			require.NotPanics(t, func() { writeTable(&out, tt.r) })
			assert.Contains(t, out.String(), "load")
			dir := t.TempDir()
			var paths []string
			require.NotPanics(t, func() {
				var err error
				paths, err = writeCharts(dir, tt.r)
				require.NoError(t, err)
			})
			var names []string
			for _, p := range paths {
				names = append(names, filepath.Base(p))
				svg, err := os.ReadFile(p)
				require.NoError(t, err)
				assert.Contains(t, string(svg), "<svg")
			}
			assert.Equal(t, tt.wantFiles, names)
		})
	}
}

// FuzzCharts draws the charts of two levels with any figures the flags
// allow (loads > 0 and finite): never a panic.
func FuzzCharts(f *testing.F) {
	f.Add(1.0, 1.0, 0.0, 0.0, int64(0), 0.0, uint8(0))
	f.Add(1.0, 2.0, 100.0, 0.0, int64(1), 0.5, uint8(3))
	f.Add(0.001, 1e6, 1e300, math.Inf(1), int64(-1), math.NaN(), uint8(255))
	f.Fuzz(func(t *testing.T, load1, load2, tput, half float64, ttft int64, kv float64, flags uint8) {
		if !(load1 > 0) || !(load2 > 0) || math.IsInf(load1, 0) || math.IsInf(load2, 0) {
			t.Skip("the flags allow only loads > 0 and finite")
		}
		l1 := &Level{Load: load1, Summary: llmmetrics.Summary{OutputThroughput: tput, TTFT: ttftDist(time.Duration(ttft))}}
		l2 := &Level{Load: load2, RepeatThroughput: []float64{tput, tput + half}}
		if flags&1 != 0 {
			l2.Server = &saturation.Server{KVCacheUsage: &kv, RequestsWaiting: &kv}
		}
		r := Results{Levels: []*Level{l1, l2}, SLO: llmmetrics.SLO{TTFT: time.Duration(ttft)}}
		if flags&2 != 0 {
			r.Mode = ModeRate
		}
		if flags&4 != 0 {
			r.Saturation = saturation.Result{Found: true, Load: load2}
		}
		writeTable(&bytes.Buffer{}, r)
		_, _ = writeCharts(t.TempDir(), r) // an error (a NaN figure) is fine; a panic is not
	})
}

// TestOneLevelRunsDrawCharts: a run of one level (one load on a log axis)
// draws its charts.
func TestOneLevelRunsDrawCharts(t *testing.T) {
	for _, args := range [][]string{
		{"-concurrency", "1", "-requests", "2", "-repeats", "1"},
		{"-rates", "1", "-requests", "2", "-repeats", "1"},
	} {
		t.Run(args[0], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				dir := t.TempDir()
				var stdout, stderr bytes.Buffer
				code := run(context.Background(), append(args, "-speedup", "20", "-max-tokens", "8", "-out", dir), testEnv(&stdout, &stderr, nil))
				require.Equal(t, exitOK, code, "stderr: %s", stderr.String())
				for _, f := range []string{"throughput.svg", "ttft.svg"} {
					svg, err := os.ReadFile(filepath.Join(dir, f))
					require.NoError(t, err, f)
					assert.Contains(t, string(svg), "<svg")
				}
			})
		})
	}
}
