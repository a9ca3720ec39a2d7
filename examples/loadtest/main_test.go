package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/llmmetrics/llmmetrics/llmmetricstest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The sweeps run inside a testing/synctest bubble against the in-memory fake
// server: its steps, the requests' timings and so the knee are those of the
// simulation on fake time, not of how much CPU the test gets (on real time
// a loaded machine could move or hide the knee).

// TestShortSweepFindsTheKnee runs a short concurrency sweep against the
// fake server through the whole program and checks what it prints and
// writes.
func TestShortSweepFindsTheKnee(t *testing.T) {
	synctest.Test(t, testShortSweepFindsTheKnee)
}

func testShortSweepFindsTheKnee(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{
		"-concurrency", "1,4,16,64", "-speedup", "20", "-max-tokens", "32", "-prompt-words", "20",
		"-hourly-cost", "3", "-out", dir,
	}, &stdout, &stderr, false, llmmetricstest.NewInMemoryServer)
	require.NoError(t, err, "stderr: %s", stderr.String())
	out := stdout.String()
	t.Log("\n" + out)
	assert.Contains(t, out, "Saturation point:")
	assert.Contains(t, out, "per million output tokens")
	assert.Equal(t, 4, strings.Count(stderr.String(), "done:"), "one plain progress line per level when not a terminal")
	assert.NotContains(t, stderr.String(), "\r", "no live line when not a terminal")

	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	require.NoError(t, err)
	var res Results
	require.NoError(t, json.Unmarshal(b, &res))
	assert.Equal(t, "llmmetrics.loadtest/v1", res.Schema)
	require.Len(t, res.Levels, 4)
	for i, l := range res.Levels {
		assert.Equal(t, []float64{1, 4, 16, 64}[i], l.Load)
		assert.Equal(t, max(16, 3*int(l.Load)), l.Summary.Requests)
		assert.Equal(t, l.Summary.Requests, l.Summary.Completed, "no failures injected")
		assert.Positive(t, l.Summary.OutputThroughput)
		p99, ok := l.Summary.TTFT.Percentile(99)
		assert.True(t, ok, "percentiles survive the JSON round trip")
		assert.Positive(t, p99)
	}
	assert.True(t, res.Saturation.Found, "the sweep goes past the fake server's knee")
	assert.Greater(t, res.Saturation.Level, 0)
	require.NotNil(t, res.Cost)
	assert.Positive(t, res.Cost.PerMillionOutputTokens)

	svg, err := os.ReadFile(filepath.Join(dir, "saturation.svg"))
	require.NoError(t, err)
	assert.Contains(t, string(svg), "<svg")
	assert.Contains(t, string(svg), "saturation", "the saturation point is marked")
}

func TestRateMode(t *testing.T) {
	synctest.Test(t, testRateMode)
}

func testRateMode(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{
		"-rates", "20,80", "-burstiness", "0.5", "-requests", "24", "-speedup", "20", "-max-tokens", "16", "-out", dir,
	}, &stdout, &stderr, false, llmmetricstest.NewInMemoryServer)
	require.NoError(t, err, "stderr: %s", stderr.String())
	var res Results
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &res))
	assert.Equal(t, ModeRate, res.Mode)
	require.Len(t, res.Levels, 2)
	assert.Equal(t, 24, res.Levels[1].Summary.Requests)
	assert.Contains(t, stdout.String(), "requests/s")
}

func TestBadFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-concurrency", "4,2"}, "loads must increase"},
		{[]string{"-concurrency", "1.5"}, "whole number"},
		{[]string{"-rates", "0"}, "must be > 0"},
		{[]string{"-concurrency", "1", "-rates", "1"}, "not both"},
		{[]string{"-slo", "ttft=fast"}, "llmmetrics:"},
		{[]string{"-burstiness", "0"}, "burstiness"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), tt.args, &stdout, &stderr, false, llmmetricstest.NewInMemoryServer)
			require.Error(t, err)
			assert.Contains(t, err.Error()+stderr.String(), tt.want)
		})
	}
}
