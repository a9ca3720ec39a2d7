package compare

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The GuideLLM sweep of report's fixtures: synchronous, constant rate 2,
// Poisson rate 4 (report/guidellm_test.go has its figures).
const guideLLMSweep = "../report/testdata/guidellm_v07.json"

// writeRateRun writes a bench records.jsonl of open-loop levels.
func writeRateRun(t *testing.T, dir string, levels map[float64][]llmmetrics.Record) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, load := range []float64{2, 4, 8} {
		for _, r := range levels[load] {
			require.NoError(t, enc.Encode(map[string]any{"mode": "rate", "load": load, "repeat": 0, "record": r}))
		}
	}
	name := filepath.Join(dir, "records.jsonl")
	require.NoError(t, os.WriteFile(name, buf.Bytes(), 0o644))
	return name
}

func compareFiles(t *testing.T, base, nw string, o Options) *Comparison {
	t.Helper()
	b, err := ReadInput(context.Background(), base, nil)
	require.NoError(t, err)
	n, err := ReadInput(context.Background(), nw, nil)
	require.NoError(t, err)
	o.MinChange, o.Resamples, o.Seed = DefaultMinChange, 400, 1
	c, err := Compare(b, n, o)
	require.NoError(t, err)
	return c
}

func resultOf(t *testing.T, lt LevelTable, metric string) Result {
	t.Helper()
	for _, r := range lt.Results {
		if r.Metric == metric {
			return r
		}
	}
	t.Fatalf("no %s", metric)
	return Result{}
}

// A GuideLLM sweep against a bench run: its benchmarks are matched to the
// bench levels by load (rate 2 with rate 2, whatever the arrivals), the
// definitions each tool uses for its own figures are named, and what
// GuideLLM cannot say (per-gap times) is not compared, in either order.
func TestCompareGuideLLMWithBench(t *testing.T) {
	run := writeRateRun(t, t.TempDir(), map[float64][]llmmetrics.Record{
		2: records(1, 40, 300*time.Millisecond, 1), 4: records(2, 40, 100*time.Millisecond, 1), 8: records(3, 40, 100*time.Millisecond, 1),
	})
	c := compareFiles(t, guideLLMSweep, run, Options{})
	require.Len(t, c.Levels, 2)
	assert.Equal(t, "BASE rate 2 (constant arrivals) vs NEW rate 2", c.Levels[0].Level)
	assert.Equal(t, "BASE rate 4 (Poisson arrivals) vs NEW rate 4", c.Levels[1].Level)
	assert.Contains(t, c.Notes, "concurrency 1 (synchronous): only in BASE")
	assert.Contains(t, c.Notes, "rate 8: only in NEW")
	joined := strings.Join(c.Notes, "\n")
	assert.Contains(t, joined, "across tools: both sides are computed here from each request's times with one set of formulas")
	assert.Contains(t, joined, "BASE guidellm: GuideLLM's own time_per_output_token_ms divides by N, not N − 1")
	assert.Contains(t, joined, "NEW records: TTFT is llmmetrics")

	mean := resultOf(t, c.Levels[0], "mean ttft")
	assert.InDelta(t, 375, mean.Base, 1e-9) // (500 + 250)/2 ms, by hand in report's test
	assert.Equal(t, 2, mean.BaseN)
	itl := resultOf(t, c.Levels[0], "mean itl")
	assert.Equal(t, NotCompared, itl.Verdict)
	assert.Equal(t, "BASE cannot say it: guidellm: GuideLLM (v0.2 and later) saves no per-gap times", itl.Reason)

	// NEW without per-gap times is not a regression of ITL.
	c = compareFiles(t, run, guideLLMSweep, Options{})
	c.Gate([]string{"mean itl", "p99 itl"})
	assert.Empty(t, c.Regressed)
	itl = resultOf(t, c.Levels[0], "p99 itl")
	assert.Equal(t, NotCompared, itl.Verdict)
	assert.Equal(t, "NEW cannot say it: guidellm: GuideLLM (v0.2 and later) saves no per-gap times", itl.Reason)

	// -level picks one pair by the name report prints.
	c = compareFiles(t, guideLLMSweep, run, Options{Level: "rate 4"})
	require.Len(t, c.Levels, 1)
	assert.Equal(t, "BASE rate 4 (Poisson arrivals) vs NEW rate 4", c.Levels[0].Level)
	code, _, errOut := runMain("-level", "rate 3", guideLLMSweep, run)
	assert.Equal(t, exitBad, code)
	assert.Contains(t, errOut, `-level "rate 3": no such level`)
	code, out, _ := runMain("-level", "rate 2", "-fail-on", "mean itl", guideLLMSweep, run)
	assert.Equal(t, exitOK, code)
	assert.Contains(t, out, "mean itl n/a: BASE cannot say it")
}

// Without start times (SGLang) a rate is known but not its spread over the
// run: its change is not judged; without a duration (LLMPerf alone) no rate
// is known at all.
func TestCompareWithoutStartTimes(t *testing.T) {
	c := compareFiles(t, "../report/testdata/sglang_bench_serving.jsonl", "../report/testdata/sglang_bench_serving.jsonl", Options{Level: "concurrency 2"})
	r := resultOf(t, c.Levels[0], "output_throughput")
	assert.Equal(t, NotCompared, r.Verdict)
	assert.Contains(t, r.Reason, "no start times")
	assert.InDelta(t, 3.0, r.Base, 1e-9) // the run's 6 tokens over its 2 s
	for _, n := range c.Notes {          // one format: no definitions to resolve
		assert.NotContains(t, n, "across tools")
	}

	b, err := os.ReadFile("../report/testdata/llmperf_Qwen-Qwen3-0-6B_550_150_individual_responses.json")
	require.NoError(t, err)
	alone := filepath.Join(t.TempDir(), "x_individual_responses.json")
	require.NoError(t, os.WriteFile(alone, b, 0o600))
	c = compareFiles(t, alone, alone, Options{})
	r = resultOf(t, c.Levels[0], "request_throughput")
	assert.Equal(t, NotCompared, r.Verdict)
	assert.Contains(t, r.Reason, "no run duration")
	assert.Equal(t, 0, r.BaseN)
}

// In JSON, a side without a value, its change and a missing interval are
// null, not 0.
func TestCompareJSONNullForUnknown(t *testing.T) {
	run := writeRateRun(t, t.TempDir(), map[float64][]llmmetrics.Record{2: records(1, 40, 300*time.Millisecond, 1)})
	code, out, errOut := runMain("-json", "-level", "rate 2", guideLLMSweep, run)
	require.Equal(t, exitOK, code, errOut)
	var c struct {
		Levels []struct {
			Results []map[string]json.RawMessage `json:"results"`
		} `json:"levels"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &c))
	got := map[string]map[string]json.RawMessage{}
	for _, r := range c.Levels[0].Results {
		var name string
		require.NoError(t, json.Unmarshal(r["metric"], &name))
		got[name] = r
	}
	itl := got["mean itl"]
	for _, k := range []string{"base", "change", "ci_low", "ci_high"} {
		assert.Equal(t, "null", string(itl[k]), k)
	}
	assert.NotEqual(t, "null", string(itl["new"]))
	assert.Equal(t, "375", string(got["mean ttft"]["base"]))
	assert.NotEqual(t, "null", string(got["mean ttft"]["ci_low"]))
}
