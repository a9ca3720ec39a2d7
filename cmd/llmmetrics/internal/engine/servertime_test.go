package engine

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/cmd/llmmetrics/internal/bench"
)

// TestOllamaServerTimes: bench over Ollama's native /api/chat at 1 and 8
// clients on 4 parallel slots. Every answer's last line carries Ollama's
// prompt_eval_duration and eval_duration, so every record has the
// server's prefill and decode times, and its TTFT is never below the
// prefill (Ollama's prompt clock starts when the request gets a slot,
// after the client sent it): the wait, TTFT − prefill, is at least 0
// without being clamped. Where TTFT goes comes from the answers; at 8
// clients half the requests wait for a slot, so the mean wait is longer
// than at 1. Ollama's answers have no cached-token count, so the run
// reports no cached tokens (0 in the totals, the usage said none).
func TestOllamaServerTimes(t *testing.T) {
	s := startOllama(t, "OLLAMA_NUM_PARALLEL=4")
	load(t, s.base)
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	ctx := t.Context()
	code := bench.Main(ctx, []string{
		"-url", s.base, "-api", "ollama", "-model", modelName,
		"-concurrency", "1,8", "-requests", "16", "-warmup", "0", "-repeats", "1",
		"-output-tokens", "24", "-input-tokens", "40",
		"-slo", "ttft=30s,tpot=5s", "-out", out,
	}, &stdout, &stderr)
	t.Logf("bench:\n%s%s", stdout.String(), stderr.String())
	require.Equal(t, 0, code)

	lines := readRecords(t, filepath.Join(out, "records.jsonl"))
	require.Len(t, lines, 32)
	for i, l := range lines {
		r := l.Record
		require.Equal(t, llmmetrics.OutcomeOK, r.Outcome, "record %d: %s", i, r.ErrorType)
		assert.Positive(t, r.ServerPrefill, "record %d: prompt_eval_duration", i)
		assert.Positive(t, r.ServerDecode, "record %d: eval_duration", i)
		ttft, ok := r.TTFT()
		require.True(t, ok, "record %d", i)
		assert.GreaterOrEqual(t, ttft, r.ServerPrefill, "record %d: the prompt clock starts after the request left", i)
		w, ok := r.Wait()
		require.True(t, ok, "record %d", i)
		assert.Equal(t, ttft-r.ServerPrefill, w, "record %d", i)
	}

	res := readBenchResults(t, out)
	require.Len(t, res.Levels, 2)
	for _, l := range res.Levels {
		st := l.ServerTime
		require.NotNil(t, st, "load %g", l.Load)
		assert.Equal(t, "answers", st.Source)
		assert.Equal(t, 16, st.Requests)
		assert.Equal(t, 16, l.Summary.ServerPrefill.Count)
		assert.Equal(t, 16, l.Summary.ServerDecode.Count)
		assert.Equal(t, 16, l.Summary.Wait.Count)
		assert.InDelta(t, float64(st.TTFTMean), float64(st.Wait.Mean+st.Prefill.Mean), float64(time.Microsecond), "TTFT = wait + prefill, mean for mean")
		assert.Zero(t, l.Summary.CachedInputTokens, "Ollama's answers say nothing of a cache")
	}
	assert.Greater(t, res.Levels[1].ServerTime.Wait.Mean, res.Levels[0].ServerTime.Wait.Mean, "at 8 clients on 4 slots requests wait for one")
	assert.Contains(t, stdout.String(), "Where TTFT goes, in the server's own words:")
}
