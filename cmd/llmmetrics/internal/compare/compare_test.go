package compare

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/saturation"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// records makes n completed requests from a closed loop of 4 clients:
// TTFT log-normal around ttft, 16 tokens in 16 chunks 2 ms × slow apart,
// each client sending its next request when the last ends.
func records(seed uint64, n int, ttft time.Duration, slow float64) []llmmetrics.Record {
	rng := rand.New(rand.NewPCG(seed, 9))
	clients := make([]time.Time, 4)
	for i := range clients {
		clients[i] = t0
	}
	recs := make([]llmmetrics.Record, n)
	for i := range recs {
		c := i % len(clients)
		start := clients[c]
		first := start.Add(time.Duration(float64(ttft) * slow * math.Exp(0.25*rng.NormFloat64())))
		r := llmmetrics.Record{Start: start, FirstToken: first, FirstOutput: first, InputTokens: 100, OutputTokens: 16, Chunks: 16, Outcome: llmmetrics.OutcomeOK}
		at := first
		for range 15 {
			g := time.Duration(float64(2*time.Millisecond) * slow * (0.9 + 0.2*rng.Float64()))
			r.ITL = append(r.ITL, g)
			r.MaxITL = max(r.MaxITL, g)
			at = at.Add(g)
		}
		r.LastToken, r.End = at, at
		clients[c] = at
		recs[i] = r
	}
	return recs
}

// writeBench writes a bench output directory: records.jsonl with the
// records at one concurrency level (split into repeats), and results.json.
func writeBench(t *testing.T, dir, model string, levels map[float64][]llmmetrics.Record, repeats int) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	var res BenchResults
	res.Schema, res.Model, res.Mode = "llmmetrics.bench/v1", model, "concurrency"
	for _, load := range []float64{1, 2, 4, 8} {
		recs, ok := levels[load]
		if !ok {
			continue
		}
		for i, r := range recs {
			require.NoError(t, enc.Encode(map[string]any{"mode": "concurrency", "load": load, "repeat": i * repeats / len(recs), "record": r}))
		}
		res.Levels = append(res.Levels, struct {
			Load    float64            `json:"load"`
			Summary llmmetrics.Summary `json:"summary"`
			Server  *saturation.Server `json:"server,omitempty"`
		}{Load: load})
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "records.jsonl"), buf.Bytes(), 0o644))
	js, err := json.Marshal(res)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "results.json"), js, 0o644))
	return dir
}

func runMain(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	// 400 resamples keep the tests fast; the default only steadies the ends.
	code := Main(context.Background(), append([]string{"-resamples", "400"}, args...), strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func verdictOf(t *testing.T, c *Comparison, metric string) Result {
	t.Helper()
	for _, r := range c.Levels[0].Results {
		if r.Metric == metric {
			return r
		}
	}
	t.Fatalf("no %s", metric)
	return Result{}
}

func TestMainGate(t *testing.T) {
	dir := t.TempDir()
	base := writeBench(t, filepath.Join(dir, "base"), "m", map[float64][]llmmetrics.Record{4: records(1, 600, 50*time.Millisecond, 1)}, 1)
	same := writeBench(t, filepath.Join(dir, "same"), "m", map[float64][]llmmetrics.Record{4: records(2, 600, 50*time.Millisecond, 1)}, 1)
	slow := writeBench(t, filepath.Join(dir, "slow"), "m", map[float64][]llmmetrics.Record{4: records(3, 600, 50*time.Millisecond, 1.15)}, 1)

	t.Run("same distribution passes", func(t *testing.T) {
		code, out, errs := runMain("-fail-on", "all", base, same)
		assert.Equal(t, exitOK, code, errs)
		assert.Contains(t, out, "PASS: no -fail-on metric regressed (41 checked)")
		assert.NotRegexp(t, `(?m)\bregression\s*$`, out)
	})
	t.Run("15% slower fails on ttft and throughput", func(t *testing.T) {
		code, out, _ := runMain("-fail-on", "p50 ttft, output_throughput", base, slow)
		assert.Equal(t, exitFail, code)
		assert.Contains(t, out, "FAIL: regressed: p50 ttft at concurrency 4, output_throughput at concurrency 4")
	})
	t.Run("a regression not named passes", func(t *testing.T) {
		code, _, _ := runMain("-fail-on", "slo_attainment", base, slow)
		assert.Equal(t, exitOK, code)
	})
	t.Run("json", func(t *testing.T) {
		code, out, _ := runMain("-json", base, slow)
		require.Equal(t, exitOK, code)
		var c Comparison
		require.NoError(t, json.Unmarshal([]byte(out), &c))
		require.Len(t, c.Levels, 1)
		r := verdictOf(t, &c, "mean itl")
		assert.Equal(t, Regression, r.Verdict)
		require.NotNil(t, r.ChangePct)
		assert.InDelta(t, 15, *r.ChangePct, 1.5)
		assert.Less(t, *r.CILowPct, *r.ChangePct)
		assert.Greater(t, *r.CIHighPct, *r.ChangePct)
		r = verdictOf(t, &c, "output_throughput")
		assert.Equal(t, Regression, r.Verdict)
		assert.Contains(t, r.Method, "time batches")
	})
	t.Run("improvement", func(t *testing.T) {
		code, out, _ := runMain("-fail-on", "all", slow, base)
		assert.Equal(t, exitOK, code)
		assert.Contains(t, out, "improvement")
	})
}

func TestMainBadInput(t *testing.T) {
	dir := t.TempDir()
	base := writeBench(t, filepath.Join(dir, "base"), "m", map[float64][]llmmetrics.Record{4: records(1, 40, 50*time.Millisecond, 1)}, 1)
	bad := filepath.Join(dir, "bad.jsonl")
	require.NoError(t, os.WriteFile(bad, []byte(`{"mode":"concurrency","load":1,"repeat":0,"record":{"start":"2026-01-01T00:00:00Z","end":"2026-01-01T00:00:01Z","outcome":"ok"}}`+"\n{\"record\": nope}\n"), 0o644))
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"one input", []string{base}, "want two inputs"},
		{"missing file", []string{base, filepath.Join(dir, "nope")}, "no such file"},
		{"malformed line", []string{base, bad}, "bad.jsonl:2:"},
		{"unknown metric", []string{"-fail-on", "p99 ttfx", base, base}, `unknown metric "p99 ttfx"`},
		{"bad min-change", []string{"-min-change", "-3%", base, base}, "min-change"},
		{"missing load", []string{"-load", "16", base, base}, "no load level 16"},
		{"empty dir", []string{dir, base}, "not a bench output directory"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errs := runMain(tt.args...)
			assert.Equal(t, exitBad, code)
			assert.Contains(t, errs, tt.want)
		})
	}
}

func TestComparability(t *testing.T) {
	dir := t.TempDir()
	recs := records(1, 40, 50*time.Millisecond, 1)
	a := writeBench(t, filepath.Join(dir, "a"), "llama", map[float64][]llmmetrics.Record{4: recs}, 1)
	b := writeBench(t, filepath.Join(dir, "b"), "qwen", map[float64][]llmmetrics.Record{4: recs}, 1)
	code, out, _ := runMain(a, b)
	assert.Equal(t, exitOK, code)
	assert.Contains(t, out, `warning: different models (BASE "llama", NEW "qwen")`)
	code, _, errs := runMain("-strict", a, b)
	assert.Equal(t, exitBad, code)
	assert.Contains(t, errs, "not comparable")
}

func TestLevels(t *testing.T) {
	dir := t.TempDir()
	a := writeBench(t, filepath.Join(dir, "a"), "m", map[float64][]llmmetrics.Record{1: records(1, 60, 40*time.Millisecond, 1), 4: records(2, 60, 50*time.Millisecond, 1)}, 3)
	b := writeBench(t, filepath.Join(dir, "b"), "m", map[float64][]llmmetrics.Record{4: records(3, 60, 50*time.Millisecond, 1), 8: records(4, 60, 90*time.Millisecond, 1)}, 3)
	ia, err := ReadInput(context.Background(), a, nil)
	require.NoError(t, err)
	ib, err := ReadInput(context.Background(), b, nil)
	require.NoError(t, err)
	require.Len(t, ia.Levels, 2)
	assert.Len(t, ia.Levels[1].repeats, 3, "repeats kept apart")

	c, err := Compare(ia, ib, Options{MinChange: 0.05, Resamples: 200, Seed: 1, SLO: llmmetrics.SLO{TTFT: 60 * time.Millisecond}})
	require.NoError(t, err)
	require.Len(t, c.Levels, 1, "the one level both have")
	for _, n := range c.Notes {
		assert.NotContains(t, n, "Holm", "one level: judged alone")
	}
	assert.Equal(t, "concurrency 4", c.Levels[0].Level)
	assert.Equal(t, []string{"concurrency 1: only in BASE", "concurrency 8: only in NEW"}, c.Notes, "repeated on both sides: no one-run note")
	assert.Contains(t, verdictOf(t, c, "output_throughput").Method, "over the repeats (3 and 3)")
	assert.Contains(t, verdictOf(t, c, "p50 ttft").Method, "Welch t interval over the repeats (3 and 3)")
	assert.Contains(t, verdictOf(t, c, "p99 itl").Method, "Welch t interval over the repeats (3 and 3)")
	assert.Contains(t, verdictOf(t, c, "slo_attainment").Method, "over the repeats (3 and 3)")

	eight := 8.0
	_, err = Compare(ia, ib, Options{MinChange: 0.05, Resamples: 200, Seed: 1, Load: &eight})
	assert.ErrorContains(t, err, "no load level 8")
}

// TestJudge checks the verdict rule on hand-made intervals.
func TestJudge(t *testing.T) {
	for _, tt := range []struct {
		name           string
		base, new      float64
		lo, hi         float64
		higherIsBetter bool
		points         bool
		want           string
	}{
		{"latency up beyond noise", 100, 112, 7, 18, false, false, Regression},
		{"latency down beyond noise", 100, 88, -18, -7, false, false, Improvement},
		{"throughput down beyond noise", 1000, 870, -200, -60, true, false, Regression},
		{"throughput up beyond noise", 1000, 1130, 60, 200, true, false, Improvement},
		{"interval includes 0", 100, 112, -1, 25, false, false, NoChange},
		{"real but below min-change", 100, 103, 1, 5, false, false, NoChange},
		{"attainment down 6 points", 99, 93, -9, -3, true, true, Regression},
		{"attainment down 3 points", 99, 96, -5, -1, true, true, NoChange},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := Result{Base: tt.base, New: tt.new, CILow: tt.lo, CIHigh: tt.hi, higherIsBetter: tt.higherIsBetter, points: tt.points}
			r.judge(0.05)
			assert.Equal(t, tt.want, r.Verdict, r.Reason)
			assert.InDelta(t, tt.new-tt.base, r.Change, 1e-9)
		})
	}
}

// TestRateReps: 10 requests of 30 tokens over 10 s (one ending in each
// second) is 30 tokens/s, and every one-second batch holds 30 tokens.
func TestRateReps(t *testing.T) {
	var recs []llmmetrics.Record
	for i := range 10 {
		recs = append(recs, llmmetrics.Record{Start: t0, End: t0.Add(time.Duration(i)*time.Second + 500*time.Millisecond), OutputTokens: 30, Outcome: llmmetrics.OutcomeOK})
	}
	// A failed request makes the span 10 s and adds no tokens.
	recs = append(recs, llmmetrics.Record{Start: t0, End: t0.Add(10 * time.Second), OutputTokens: 99, Outcome: llmmetrics.OutcomeError})
	tokens := func(r llmmetrics.Record) float64 {
		if r.Outcome != llmmetrics.OutcomeOK {
			return 0
		}
		return float64(r.OutputTokens)
	}
	point, reps, method := rateReps(sample{recs: recs}, tokens)
	assert.InDelta(t, 30, point, 1e-9)
	assert.Contains(t, method, "10 time batches")
	for k, r := range reps {
		assert.InDelta(t, 30, r, 1e-9, "batch %d", k)
	}
	// Repeats: each repeat's own rate, the point their mean.
	rep2 := []llmmetrics.Record{{Start: t0, End: t0.Add(2 * time.Second), OutputTokens: 30, Outcome: llmmetrics.OutcomeOK}}
	point, reps, method = rateReps(sample{repeats: [][]llmmetrics.Record{recs, rep2}}, tokens)
	assert.Equal(t, []float64{30, 15}, reps)
	assert.InDelta(t, 22.5, point, 1e-9)
	assert.Contains(t, method, "repeats (2 and 2)")
}

func TestParseFailOn(t *testing.T) {
	got, err := ParseFailOn(" P99  TTFT ,output_throughput")
	require.NoError(t, err)
	assert.Equal(t, []string{"p99 ttft", "output_throughput"}, got)
	all, err := ParseFailOn("all")
	require.NoError(t, err)
	assert.Equal(t, MetricNames(), all)
	assert.Len(t, all, (5+3)*4+4+5, "latencies and the server's times × stats, rates and attainment, task latency × stats and task goodput")
	_, err = ParseFailOn("p95 ttft")
	assert.Error(t, err)
}

func TestMinSamples(t *testing.T) {
	assert.Equal(t, 500, minSamples(99))
	assert.Equal(t, 50, minSamples(90))
	assert.Equal(t, 10, minSamples(50))
}

// TestMainHTML: -html writes the page: the gate's verdict, the table with
// regressions marked, the CDFs and the command line.
func TestMainHTML(t *testing.T) {
	dir := t.TempDir()
	base := writeBench(t, filepath.Join(dir, "base"), "m", map[float64][]llmmetrics.Record{4: records(1, 300, 50*time.Millisecond, 1)}, 1)
	slow := writeBench(t, filepath.Join(dir, "slow"), "m", map[float64][]llmmetrics.Record{4: records(3, 300, 50*time.Millisecond, 1.15)}, 1)
	page := filepath.Join(dir, "cmp.html")
	code, _, _ := runMain("-fail-on", "p50 ttft", "-html", page, base, slow)
	require.Equal(t, exitFail, code)
	b, err := os.ReadFile(page)
	require.NoError(t, err)
	html := string(b)
	assert.Contains(t, html, "FAIL: regressed: p50 ttft at concurrency 4")
	assert.Contains(t, html, `<tr class="regression"><td>p50 ttft</td>`)
	assert.Contains(t, html, "TTFT: cumulative distribution")
	assert.Contains(t, html, "llmmetrics compare -resamples 400 -fail-on &#39;p50 ttft&#39; -html "+page)
}

// TestFileAgainstLevel: a file (one run) against a bench directory of one
// level is compared, the table named by both.
func TestFileAgainstLevel(t *testing.T) {
	dir := t.TempDir()
	recs := records(1, 40, 50*time.Millisecond, 1)
	b := writeBench(t, filepath.Join(dir, "b"), "m", map[float64][]llmmetrics.Record{4: recs}, 1)
	ia, err := ReadInput(context.Background(), filepath.Join(b, "records.jsonl"), nil)
	require.NoError(t, err)
	ib, err := ReadInput(context.Background(), b, nil)
	require.NoError(t, err)
	ia.Levels[0].Mode = "" // as a file of another format reads
	c, err := Compare(ia, ib, Options{MinChange: 0.05, Resamples: 200, Seed: 1})
	require.NoError(t, err)
	assert.Equal(t, "BASE one run vs NEW concurrency 4", c.Levels[0].Level)
	assert.Equal(t, []string{"one run a side (BASE one run vs NEW concurrency 4): the intervals hold the noise of sampling requests within each run, not the spread between runs; repeat both (bench -repeats 3) for intervals that hold it"}, c.Notes)
	assert.Equal(t, NoChange, verdictOf(t, c, "mean ttft").Verdict, "the same requests")
}

// TestSaturationNote: two bench runs whose saturation verdicts differ get
// a note naming both; equal verdicts, none found on either side, or a
// file on one side get none.
func TestSaturationNote(t *testing.T) {
	run := func(found bool, load float64) *Input {
		r := &BenchResults{Mode: "concurrency"}
		r.Saturation = &struct {
			Found bool    `json:"found"`
			Load  float64 `json:"load"`
		}{found, load}
		return &Input{Results: r}
	}
	for _, tt := range []struct {
		name string
		b, n *Input
		want string
	}{
		{"one level apart", run(true, 32), run(true, 64), "saturation point: BASE concurrency 32, NEW concurrency 64 (each run's own verdict; the levels below are compared at the loads both ran)"},
		{"found in one", run(false, 0), run(true, 16), "saturation point: BASE none found, NEW concurrency 16 (each run's own verdict; the levels below are compared at the loads both ran)"},
		{"the same", run(true, 32), run(true, 32), ""},
		{"none found", run(false, 0), run(false, 0), ""},
		{"a file", &Input{}, run(true, 32), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, saturationNote(tt.b, tt.n))
		})
	}
}

// TestMainSweep: NEW 15 % slower at each of 4 levels measured once is a
// regression of p50 TTFT at all 4, each metric judged over the 4 levels
// together: the first round's intervals are 1 − 0.05/4 = 98.75 % ones.
func TestMainSweep(t *testing.T) {
	dir := t.TempDir()
	levels := func(seed uint64, slow float64) map[float64][]llmmetrics.Record {
		m := map[float64][]llmmetrics.Record{}
		for i, load := range []float64{1, 2, 4, 8} {
			m[load] = records(seed+uint64(i), 600, 50*time.Millisecond, slow)
		}
		return m
	}
	base := writeBench(t, filepath.Join(dir, "base"), "m", levels(1, 1), 1)
	slow := writeBench(t, filepath.Join(dir, "slow"), "m", levels(11, 1.15), 1)

	page := filepath.Join(dir, "c.html")
	code, out, errs := runMain("-fail-on", "p50 ttft", "-html", page, base, slow)
	assert.Equal(t, exitFail, code, errs)
	html, err := os.ReadFile(page)
	require.NoError(t, err)
	assert.Contains(t, string(html), "over the levels: p50 ttft: regression at 4 of 4 levels")
	assert.Contains(t, out, "note: 4 levels: each metric is judged over its levels together (Holm–Bonferroni), its intervals widened from 95% up to 98.8%")
	assert.Contains(t, out, "over the levels: p50 ttft: regression at 4 of 4 levels")
	assert.Contains(t, out, "FAIL: regressed: p50 ttft at concurrency 1, p50 ttft at concurrency 2, p50 ttft at concurrency 4, p50 ttft at concurrency 8")

	code, out, _ = runMain("-json", base, slow)
	require.Equal(t, exitOK, code)
	var c Comparison
	require.NoError(t, json.Unmarshal([]byte(out), &c))
	require.Len(t, c.Levels, 4)
	confs := map[float64]int{}
	for _, l := range c.Levels {
		for _, r := range l.Results {
			if r.Metric == "p50 ttft" {
				assert.Equal(t, Regression, r.Verdict, l.Level)
				assert.Equal(t, 4, r.Levels, l.Level)
				confs[r.Confidence]++
			}
		}
	}
	assert.Greater(t, confs[1-0.05/4], 0, "some level called in the first round, by its 98.75%% interval: %v", confs)
	assert.Contains(t, c.Sweep, SweepVerdict{Metric: "p50 ttft", Levels: 4, Regressions: 4})
}
