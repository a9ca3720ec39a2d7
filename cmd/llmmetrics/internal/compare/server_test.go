package compare

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmmetrics/llmmetrics"
)

// withServerTimes gives each record the server's prefill and decode
// times: prefill the fraction of its TTFT, decode its generation time.
func withServerTimes(recs []llmmetrics.Record, prefill float64) []llmmetrics.Record {
	out := make([]llmmetrics.Record, len(recs))
	for i, r := range recs {
		ttft, _ := r.TTFT()
		gen, _ := r.GenerationTime()
		r.ServerPrefill = time.Duration(prefill * float64(ttft))
		r.ServerDecode = gen
		out[i] = r
	}
	return out
}

func resultsOf(t *testing.T, c *Comparison, suffix string) []Result {
	t.Helper()
	var out []Result
	for _, r := range c.Levels[0].Results {
		if isServerTime(r.Metric) && len(r.Metric) > len(suffix) && r.Metric[len(r.Metric)-len(suffix):] == suffix {
			out = append(out, r)
		}
	}
	return out
}

// The same TTFTs on both sides, but NEW's server spends 60 % of them in
// the prefill where BASE's spent 20 %: the server's prefill regressed
// (about 3×), the wait improved (80 % → 40 % of TTFT), the decode did not
// change; the TTFT rows say no change.
func TestCompareServerTimes(t *testing.T) {
	dir := t.TempDir()
	recs := records(1, 600, 50*time.Millisecond, 1)
	base := writeBench(t, filepath.Join(dir, "base"), "m", map[float64][]llmmetrics.Record{4: withServerTimes(recs, 0.2)}, 1)
	nw := writeBench(t, filepath.Join(dir, "new"), "m", map[float64][]llmmetrics.Record{4: withServerTimes(recs, 0.6)}, 1)
	code, out, errs := runMain("-json", "-fail-on", "p50 server_prefill", base, nw)
	require.Equal(t, exitFail, code, errs)
	var c Comparison
	require.NoError(t, json.Unmarshal([]byte(out), &c))
	require.Len(t, c.Levels, 1)

	for _, r := range resultsOf(t, &c, "server_prefill") {
		assert.Equal(t, Regression, r.Verdict, r.Metric)
		require.NotNil(t, r.ChangePct, r.Metric)
		assert.InDelta(t, 200, *r.ChangePct, 1, "%s: 0.6/0.2 − 1", r.Metric)
		assert.Equal(t, 600, r.BaseN)
	}
	for _, r := range resultsOf(t, &c, " wait") {
		assert.Equal(t, Improvement, r.Verdict, r.Metric)
		assert.InDelta(t, -50, *r.ChangePct, 1, "%s: 0.4/0.8 − 1", r.Metric)
	}
	for _, r := range resultsOf(t, &c, "server_decode") {
		assert.Equal(t, NoChange, r.Verdict, r.Metric)
		assert.Zero(t, r.Change, r.Metric)
	}
	assert.Len(t, resultsOf(t, &c, ""), 12, "3 times × 4 statistics")
	assert.Equal(t, NoChange, verdictOf(t, &c, "p50 ttft").Verdict)
	assert.Equal(t, []string{"p50 server_prefill at concurrency 4"}, c.Regressed)
}

// A run whose answers carried no server times has no rows of them; when
// only one side has them, the rows say so and judge nothing.
func TestCompareServerTimesOneSide(t *testing.T) {
	dir := t.TempDir()
	recs := records(1, 200, 50*time.Millisecond, 1)
	plain := writeBench(t, filepath.Join(dir, "plain"), "m", map[float64][]llmmetrics.Record{4: recs}, 1)
	timed := writeBench(t, filepath.Join(dir, "timed"), "m", map[float64][]llmmetrics.Record{4: withServerTimes(recs, 0.5)}, 1)

	code, out, errs := runMain("-json", plain, plain)
	require.Equal(t, exitOK, code, errs)
	var c Comparison
	require.NoError(t, json.Unmarshal([]byte(out), &c))
	assert.Empty(t, resultsOf(t, &c, ""), "no server times on either side: no rows")

	code, out, errs = runMain("-json", "-fail-on", "all", timed, plain)
	require.Equal(t, exitOK, code, errs)
	c = Comparison{}
	require.NoError(t, json.Unmarshal([]byte(out), &c))
	rs := resultsOf(t, &c, "")
	require.Len(t, rs, 12)
	for _, r := range rs {
		assert.Equal(t, NotCompared, r.Verdict, r.Metric)
		assert.Equal(t, "only BASE has the server's times (its answers carried them); NEW's did not", r.Reason)
		assert.Positive(t, r.Base, r.Metric)
		assert.Zero(t, r.NewN)
	}

	code, out, _ = runMain(plain, timed)
	require.Equal(t, exitOK, code)
	assert.Contains(t, out, "p50 server_prefill")
	assert.Contains(t, out, "only NEW has the server's times")
}

// Repeated runs compare the server's times over the repeats.
func TestCompareServerTimesRepeated(t *testing.T) {
	dir := t.TempDir()
	recs := records(1, 600, 50*time.Millisecond, 1)
	base := writeBench(t, filepath.Join(dir, "base"), "m", map[float64][]llmmetrics.Record{4: withServerTimes(recs, 0.2)}, 3)
	nw := writeBench(t, filepath.Join(dir, "new"), "m", map[float64][]llmmetrics.Record{4: withServerTimes(recs, 0.6)}, 3)
	code, out, errs := runMain("-json", base, nw)
	require.Equal(t, exitOK, code, errs)
	var c Comparison
	require.NoError(t, json.Unmarshal([]byte(out), &c))
	r := verdictOf(t, &c, "mean server_prefill")
	assert.Equal(t, Regression, r.Verdict)
	assert.Contains(t, r.Method, "repeats")
}
