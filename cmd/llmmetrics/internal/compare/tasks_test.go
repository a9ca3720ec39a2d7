package compare

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeAgentBench writes a bench directory of n agents' tasks of 3 steps
// run one after the other at concurrency 1 in repeats: each step's TTFT
// log-normal around 50 ms, 20 ms of tokens, and tool × (0.8–1.2) between
// steps; limit is the run's -task-latency (0: none).
func writeAgentBench(t *testing.T, dir string, seed uint64, n, repeats int, tool, limit time.Duration) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	rng := rand.New(rand.NewPCG(seed, 3))
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	at := t0
	for task := range n {
		for step := 1; step <= 3; step++ {
			first := at.Add(time.Duration(float64(50*time.Millisecond) * math.Exp(0.25*rng.NormFloat64())))
			last := first.Add(20 * time.Millisecond)
			r := llmmetrics.Record{Start: at, FirstToken: first, FirstOutput: first, LastToken: last, End: last,
				InputTokens: 1000 * step, OutputTokens: 10, Chunks: 10, Outcome: llmmetrics.OutcomeOK}
			require.NoError(t, enc.Encode(map[string]any{"mode": "concurrency", "load": 1, "repeat": task * repeats / n,
				"session": task, "turn": step, "step": step, "task_steps": 3, "record": r}))
			at = last
			if step < 3 {
				at = at.Add(time.Duration(float64(tool) * (0.8 + 0.4*rng.Float64())))
			}
		}
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "records.jsonl"), buf.Bytes(), 0o644))
	res := map[string]any{"schema": "llmmetrics.bench/v1", "model": "m", "mode": "concurrency", "slo": map[string]any{"ttft_ns": int64(80 * time.Millisecond)},
		"levels": []any{map[string]any{"load": 1, "tasks": map[string]any{"latency_limit_ns": int64(limit)}}}}
	js, err := json.Marshal(res)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "results.json"), js, 0o644))
	return dir
}

// TestCompareTasks: tools that take twice as long make the tasks longer,
// not the requests' TTFT; fewer tasks a second are good.
func TestCompareTasks(t *testing.T) {
	for _, repeats := range []int{1, 3} {
		t.Run(map[int]string{1: "one run", 3: "repeated"}[repeats], func(t *testing.T) {
			tmp := t.TempDir()
			base := writeAgentBench(t, filepath.Join(tmp, "base"), 1, 120, repeats, time.Second, 0)
			nw := writeAgentBench(t, filepath.Join(tmp, "new"), 1, 120, repeats, 2*time.Second, 0)
			var in [2]*Input
			for i, d := range []string{base, nw} {
				var err error
				in[i], err = ReadInput(t.Context(), d, nil)
				require.NoError(t, err)
			}
			c, err := Compare(in[0], in[1], Options{MinChange: DefaultMinChange, Resamples: 400, Seed: 1})
			require.NoError(t, err)
			for _, m := range []string{"p50 task_latency", "mean task_latency"} {
				r := verdictOf(t, c, m)
				assert.Equal(t, Regression, r.Verdict, "%s: %s", m, r.Reason)
				// Two tools of 1 s (0.8–1.2) become two of 2 s: about 2 s more
				// on 2.2 s.
				assert.InDelta(t, 2000, r.Change, 200, m)
				assert.Equal(t, 120, r.BaseN)
			}
			assert.Equal(t, NoChange, verdictOf(t, c, "p50 ttft").Verdict, "the same TTFT")
			g := verdictOf(t, c, "task_goodput")
			assert.Equal(t, Regression, g.Verdict, g.Reason)
			assert.InDelta(t, g.Base/g.New, 4.2/2.2, 0.15, "as many good tasks, about 4.2 s instead of 2.2 s each")
		})
	}
}

// TestCompareTaskLimit: a task latency limit from results.json makes a
// longer task not good.
func TestCompareTaskLimit(t *testing.T) {
	tmp := t.TempDir()
	base := writeAgentBench(t, filepath.Join(tmp, "base"), 1, 60, 1, time.Second, 0)
	nw := writeAgentBench(t, filepath.Join(tmp, "new"), 2, 60, 1, time.Second, time.Second)
	ib, err := ReadInput(t.Context(), base, nil)
	require.NoError(t, err)
	in, err := ReadInput(t.Context(), nw, nil)
	require.NoError(t, err)
	c, err := Compare(ib, in, Options{MinChange: DefaultMinChange, Resamples: 400, Seed: 1})
	require.NoError(t, err)
	g := verdictOf(t, c, "task_goodput")
	assert.Equal(t, 0.0, g.New, "no task of about 2.2 s is within 1 s")
	assert.Positive(t, g.Base)
}

// TestCompareTasksOneSide: a run with tasks against one without compares
// nothing of tasks, and says why; runs without tasks have no task rows.
func TestCompareTasksOneSide(t *testing.T) {
	tmp := t.TempDir()
	agent := writeAgentBench(t, filepath.Join(tmp, "agent"), 1, 30, 1, time.Second, 0)
	plain := writeBench(t, filepath.Join(tmp, "plain"), "m", map[float64][]llmmetrics.Record{1: records(1, 90, 50*time.Millisecond, 1)}, 1)
	read := func(d string) *Input {
		in, err := ReadInput(t.Context(), d, nil)
		require.NoError(t, err)
		return in
	}
	c, err := Compare(read(plain), read(agent), Options{MinChange: DefaultMinChange, Resamples: 400, Seed: 1, SLO: llmmetrics.SLO{TTFT: time.Second}})
	require.NoError(t, err)
	r := verdictOf(t, c, "mean task_latency")
	assert.Equal(t, NotCompared, r.Verdict)
	assert.Equal(t, "only one run has agents' tasks", r.Reason)
	c, err = Compare(read(plain), read(plain), Options{MinChange: DefaultMinChange, Resamples: 400, Seed: 1})
	require.NoError(t, err)
	for _, r := range c.Levels[0].Results {
		assert.NotContains(t, r.Metric, "task", "no task rows without tasks")
	}
}
