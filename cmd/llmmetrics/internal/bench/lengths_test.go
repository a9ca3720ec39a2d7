package bench

import (
	"bytes"
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/llmmetricstest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLengthsCompute: the comparison of asked and actual lengths and the
// TTFT buckets, computed by hand.
func TestLengthsCompute(t *testing.T) {
	ms := time.Millisecond
	ls := Lengths{samples: []lengthSample{
		{askedIn: 100, in: 100, askedOut: 10, out: 10, ttft: 10 * ms, hasTTFT: true}, // bucket 64-127
		{askedIn: 100, in: 103, askedOut: 10, out: 8, ttft: 20 * ms, hasTTFT: true},  // off by 3 > 2: outside; short
		{askedIn: 200, in: 200, askedOut: 10, out: 12, ttft: 30 * ms, hasTTFT: true}, // bucket 128-255; long
		{askedIn: 1000, in: 1019, askedOut: 0, out: 50, ttft: 0, hasTTFT: false},     // within 2 %; asked no output
	}}
	ls.compute()
	assert.Equal(t, 4, ls.Requests)
	assert.Equal(t, 0.75, ls.InputWithin)
	assert.InDelta(t, 1.0/3, ls.OutputShort, 1e-12)
	assert.InDelta(t, 1.0/3, ls.OutputLong, 1e-12)
	assert.Equal(t, (100+100+200+1000)/4.0, ls.AskedInput.Mean)
	assert.Equal(t, (100+103+200+1019)/4.0, ls.ActualInput.Mean)
	require.Len(t, ls.TTFTByInput, 2)
	assert.Equal(t, Bucket{Min: 64, Max: 127, Range: "64-127", Requests: 2, P50: 15 * ms, P99: ls.TTFTByInput[0].P99}, ls.TTFTByInput[0])
	assert.InDelta(t, float64(19900*time.Microsecond), float64(ls.TTFTByInput[0].P99), float64(time.Microsecond)) // 10 + 0.99 × 10 ms
	assert.Equal(t, "128-255", ls.TTFTByInput[1].Range)
	assert.Equal(t, 30*ms, ls.TTFTByInput[1].P50)
}

// TestLengthWarning: a server that counts other lengths than asked is
// warned about, once.
func TestLengthWarning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		e := testEnv(&stdout, &stderr, nil)
		e.newFake = func(cfg llmmetricstest.ServerConfig) *llmmetricstest.Server {
			cfg.PromptTokens = 500 // counts every prompt as 500 tokens
			return llmmetricstest.NewInMemoryServer(cfg)
		}
		code := run(context.Background(), []string{"-concurrency", "1,2", "-requests", "4", "-repeats", "1", "-warmup", "0",
			"-speedup", "20", "-input-tokens", "100", "-output-tokens", "500", "-out", t.TempDir()}, e)
		require.Equal(t, exitOK, code, stderr.String())
		assert.Equal(t, 1, bytes.Count(stderr.Bytes(), []byte("warning: the server counted input lengths other than asked: 0% within")))
		assert.Equal(t, 1, bytes.Count(stderr.Bytes(), []byte("answers are shorter than the output length asked")), "the fake server's 96–160 tokens under the 500 asked")
		assert.Contains(t, stdout.String(), "TTFT")
	})
}

// TestSessionsOpenLoop: with -rates, each arrival starts a session whose
// later turns follow its answers.
func TestSessionsOpenLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		reqs, code, stderr, _ := runWorkload(t, dir, "-rates", "4", "-requests", "9", "-turns", "3", "-input-tokens", "10", "-output-tokens", "3")
		require.Equal(t, exitOK, code, stderr)
		assert.Len(t, reqs, 9)
		perSession := map[int][]int{}
		for _, l := range readRecords(t, dir) {
			assert.Equal(t, llmmetrics.OutcomeOK, l.Record.Outcome)
			perSession[l.Session] = append(perSession[l.Session], l.Turn)
		}
		for s, turns := range perSession {
			assert.Equal(t, []int{1, 2, 3}[:len(turns)], turns, "session %d's turns in order", s)
		}
	})
}
