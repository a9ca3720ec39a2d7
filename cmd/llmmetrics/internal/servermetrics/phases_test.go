package servermetrics

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func secs(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }

// levelPhases aggregates the payloads as the scrapes of one level of one
// endpoint.
func levelPhases(t *testing.T, payloads ...string) (*Aggregator, Phases) {
	t.Helper()
	a := NewAggregator()
	for _, p := range payloads {
		s, err := Parse(strings.NewReader(p))
		require.NoError(t, err)
		a.Add(0, s)
	}
	return a, a.Phases()
}

// The vLLM scrape pair of one level (testdata/vllm_v1_phases_*.txt): 160
// requests finished during it. By hand, from the buckets' increases:
//
//   - queue: 10, 20, 40, 60, 90, 120, 140, 158, 160 cumulative at 0.3,
//     0.5, 0.8, 1, 1.5, 2, 2.5, 5 and 10 s; sum +240 s, so the mean is
//     1.5 s; the p99's rank 0.99 × 160 = 158.4 falls in (5, 10]: 5 + 5 ×
//     (158.4 − 158)/(160 − 158) = 6 s;
//   - prefill: all 160 in (0, 0.3]; sum +16 s, mean 100 ms; p99 0.3 ×
//     158.4/160 = 0.297 s;
//   - decode: 40 in (2, 2.5], 120 in (2.5, 5]; sum +640 s, mean 4 s; p99
//     2.5 + 2.5 × (158.4 − 40)/120 = 4.9667 s.
func TestVLLMPhasePair(t *testing.T) {
	a, p := levelPhases(t, fixture(t, "vllm_v1_phases_before.txt"), fixture(t, "vllm_v1_phases_after.txt"))
	assert.Equal(t, "vLLM", p.Engine)
	assert.Equal(t, &Phase{Count: 160, Mean: 1500 * time.Millisecond, P99: 6 * time.Second, P99Low: 5 * time.Second, P99High: 10 * time.Second}, p.Queue)
	assert.Equal(t, &Phase{Count: 160, Mean: 100 * time.Millisecond, P99: 297 * time.Millisecond, P99Low: 0, P99High: 300 * time.Millisecond}, p.Prefill)
	require.NotNil(t, p.Decode)
	assert.Equal(t, 160, p.Decode.Count)
	assert.Equal(t, 4*time.Second, p.Decode.Mean)
	assert.InDelta(t, float64(secs(2.5+2.5*118.4/120)), float64(p.Decode.P99), 1)
	assert.Equal(t, []time.Duration{2500 * time.Millisecond, 5 * time.Second}, []time.Duration{p.Decode.P99Low, p.Decode.P99High})

	// The gauges of the same scrapes: running 14 and 16, waiting 0 and 24.
	s := a.Server()
	require.NotNil(t, s.RequestsRunning)
	assert.Equal(t, 15.0, *s.RequestsRunning)
	assert.Equal(t, 12.0, *s.RequestsWaiting)
	assert.Equal(t, 24.0, *s.RequestsWaitingMax)
}

// One scrape has no increase: no request finished within it.
func TestPhasesNeedTwoScrapes(t *testing.T) {
	_, p := levelPhases(t, fixture(t, "vllm_v1_phases_after.txt"))
	assert.Equal(t, Phases{}, p)
	_, p = levelPhases(t, fixture(t, "vllm_v1.txt"), fixture(t, "vllm_v1.txt"))
	assert.Equal(t, Phases{}, p, "a server without the histograms")
}

// hist writes one histogram series: le=bound cumulative counts, the count
// and the sum.
func hist(name, labels string, bounds []string, cum []int, sum float64) string {
	var b strings.Builder
	b.WriteString("# TYPE " + name + " histogram\n")
	for i, le := range bounds {
		b.WriteString(name + "_bucket{" + labels + `le="` + le + `"} ` + itoa(cum[i]) + "\n")
	}
	b.WriteString(name + "_count{" + strings.TrimSuffix(labels, ",") + "} " + itoa(cum[len(cum)-1]) + "\n")
	b.WriteString(name + "_sum{" + strings.TrimSuffix(labels, ",") + "} " + ftoa(sum) + "\n")
	return b.String()
}

func itoa(n int) string     { return strconv.Itoa(n) }
func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// Two engines with different buckets add up: engine 0 (buckets 1, 2 s)
// gets 10 requests in (1, 2]; engine 1 (buckets 1.5 s) 10 in (0, 1.5].
// Cumulative at the bounds' union: 1 → 0 + 0 (engine 1 has no bound at or
// below 1), 1.5 → 0 + 10, 2 → 10 + 10, +Inf → 20. The p99's rank 19.8
// falls in (1.5, 2]: 1.5 + 0.5 × 9.8/10 = 1.99 s. SGLang's queue
// histogram beside vLLM's names counts as its own engine.
func TestPhasesOverEngines(t *testing.T) {
	const name = "vllm:request_queue_time_seconds"
	before := hist(name, `engine="0",`, []string{"1", "2", "+Inf"}, []int{0, 0, 0}, 0) +
		strings.Replace(hist(name, `engine="1",`, []string{"1.5", "+Inf"}, []int{0, 0}, 0), "# TYPE "+name+" histogram\n", "", 1)
	after := hist(name, `engine="0",`, []string{"1", "2", "+Inf"}, []int{0, 10, 10}, 15) +
		strings.Replace(hist(name, `engine="1",`, []string{"1.5", "+Inf"}, []int{10, 10}, 5), "# TYPE "+name+" histogram\n", "", 1)
	_, p := levelPhases(t, before, after)
	assert.Equal(t, &Phase{Count: 20, Mean: time.Second, P99: 1990 * time.Millisecond, P99Low: 1500 * time.Millisecond, P99High: 2 * time.Second}, p.Queue)
	assert.Nil(t, p.Prefill)

	sg := "sglang:queue_time_seconds"
	_, p = levelPhases(t, hist(sg, `model_name="m",`, []string{"0.0", "0.1", "+Inf"}, []int{0, 0, 0}, 0),
		hist(sg, `model_name="m",`, []string{"0.0", "0.1", "+Inf"}, []int{2, 4, 4}, 0.1))
	assert.Equal(t, "SGLang", p.Engine)
	// Rank 3.96 of 4 falls in (0, 0.1], which holds 2: 0.1 × 1.96/2.
	assert.Equal(t, &Phase{Count: 4, Mean: 25 * time.Millisecond, P99: 98 * time.Millisecond, P99Low: 0, P99High: 100 * time.Millisecond}, p.Queue)
}

// A server that restarted within the level: its counters start again, and
// the values after the restart are the increase (as for other counters).
func TestPhasesAcrossRestart(t *testing.T) {
	const name = "vllm:request_prefill_time_seconds"
	_, p := levelPhases(t,
		hist(name, "", []string{"0.3", "+Inf"}, []int{500, 500}, 40),
		hist(name, "", []string{"0.3", "+Inf"}, []int{3, 4}, 0.8))
	assert.Equal(t, &Phase{Count: 4, Mean: 200 * time.Millisecond, P99: 300 * time.Millisecond, P99Low: 300 * time.Millisecond, Open: true}, p.Prefill,
		"rank 3.96 in the +Inf bucket: its lower bound, open")
}

func TestQuantile(t *testing.T) {
	inf := math.Inf(1)
	tests := []struct {
		name        string
		bounds, cum []float64
		v, lo, hi   float64
		open, ok    bool
		q           float64
	}{
		{"inside a bucket", []float64{1, 2, inf}, []float64{50, 100, 100}, 1.98, 1, 2, false, true, 0.99},
		{"the median at a bucket's end", []float64{1, 2, inf}, []float64{50, 100, 100}, 1, 0, 1, false, true, 0.5},
		{"in the +Inf bucket", []float64{1, 2, inf}, []float64{50, 90, 100}, 2, 2, 0, true, true, 0.99},
		{"counts that fall are repaired", []float64{1, 2, inf}, []float64{60, 50, 100}, 2, 2, 0, true, true, 0.99},
		{"no +Inf bucket", []float64{1, 2}, []float64{50, 100}, 0, 0, 0, false, false, 0.99},
		{"no count", []float64{1, inf}, []float64{0, 0}, 0, 0, 0, false, false, 0.99},
		{"a first bound at 0", []float64{0, 1, inf}, []float64{100, 100, 100}, 0, 0, 0, false, true, 0.99},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, lo, hi, open, ok := quantile(tc.q, tc.bounds, tc.cum)
			assert.Equal(t, tc.ok, ok)
			assert.InDelta(t, tc.v, v, 1e-12)
			assert.Equal(t, []float64{tc.lo, tc.hi}, []float64{lo, hi})
			assert.Equal(t, tc.open, open)
		})
	}
}

// The Watcher keeps the last level's phases: Begin scrapes the "before"
// payload, End the "after" one.
func TestWatcherPhases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		before, after := fixture(t, "vllm_v1_phases_before.txt"), fixture(t, "vllm_v1_phases_after.txt")
		var scrapes atomic.Int64
		client := &http.Client{Transport: handlerTransport{http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if scrapes.Add(1) == 1 {
				_, _ = w.Write([]byte(before))
				return
			}
			_, _ = w.Write([]byte(after))
		})}}
		var warnings []string
		w := NewWatcher([]string{"http://vllm.invalid/metrics"}, client, time.Hour, func(s string) { warnings = append(warnings, s) })
		assert.Equal(t, Phases{}, w.Phases(), "before any level")
		w.Begin(t.Context())
		synctest.Wait()
		w.End()
		assert.Equal(t, int64(2), scrapes.Load())
		p := w.Phases()
		require.NotNil(t, p.Queue)
		assert.Equal(t, 160, p.Queue.Count)
		assert.Equal(t, 6*time.Second, p.Queue.P99)
		for _, s := range warnings {
			assert.NotContains(t, s, "_time", "a missing histogram is not a problem to report")
		}
	})
}
