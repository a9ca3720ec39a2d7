package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmmetrics/llmmetrics/llmmetricstest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The runs go inside a testing/synctest bubble against the in-memory fake
// server: its steps, the requests' timings and so the knee are those of the
// simulation on fake time, not of how much CPU the test gets.

// testEnv returns an env for run inside a bubble; *srv is set to the fake
// server the run starts.
func testEnv(stdout, stderr *bytes.Buffer, srv **llmmetricstest.Server) env {
	return env{stdout: stdout, stderr: stderr, inMemory: true, newFake: func(cfg llmmetricstest.ServerConfig) *llmmetricstest.Server {
		s := llmmetricstest.NewInMemoryServer(cfg)
		if srv != nil {
			*srv = s
		}
		return s
	}}
}

func readResults(t *testing.T, dir string) Results {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	require.NoError(t, err)
	var res Results
	require.NoError(t, json.Unmarshal(b, &res))
	return res
}

func readRecords(t *testing.T, dir string) []recordLine {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "records.jsonl"))
	require.NoError(t, err)
	defer f.Close()
	var out []recordLine
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l recordLine
		require.NoError(t, json.Unmarshal(sc.Bytes(), &l), "line %d", len(out)+1)
		out = append(out, l)
	}
	require.NoError(t, sc.Err())
	return out
}

// TestShortSweepFindsTheKnee runs a concurrency sweep through the whole
// subcommand and checks what it prints and writes.
func TestShortSweepFindsTheKnee(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{
			"-concurrency", "1,4,16,64", "-speedup", "20", "-max-tokens", "32", "-prompt-words", "20",
			"-hourly-cost", "3", "-repeats", "2", "-out", dir,
		}, testEnv(&stdout, &stderr, nil))
		require.Equal(t, 0, code, "stderr: %s", stderr.String())
		out := stdout.String()
		assert.Contains(t, out, "Saturation point:")
		assert.Contains(t, out, "per million output tokens")
		assert.Equal(t, 4, strings.Count(stderr.String(), "done:"), "one plain progress line per level when not a terminal")
		assert.NotContains(t, stderr.String(), "\r", "no live line when not a terminal")

		res := readResults(t, dir)
		assert.Equal(t, "llmmetrics.bench/v1", res.Schema)
		assert.False(t, res.Interrupted)
		require.Len(t, res.Levels, 4)
		for i, l := range res.Levels {
			assert.Equal(t, []float64{1, 4, 16, 64}[i], l.Load)
			assert.Equal(t, 2*max(16, 3*int(l.Load)), l.Summary.Requests, "two repeats of max(16, 3c) measured requests")
			assert.Equal(t, l.Summary.Requests, l.Summary.Completed, "no failures injected")
			assert.Len(t, l.RepeatThroughput, 2)
			p99, ok := l.Summary.TTFT.Percentile(99)
			assert.True(t, ok, "percentiles survive the JSON round trip")
			assert.Positive(t, p99)
		}
		assert.True(t, res.Saturation.Found, "the sweep goes past the fake server's knee")
		assert.Nil(t, res.MaxLoadUnderSLO, "only -search reports max_load_under_slo")
		require.NotNil(t, res.Cost)
		assert.Positive(t, res.Cost.PerMillionOutputTokens)

		lines := readRecords(t, dir)
		assert.Len(t, lines, 2*(16+16+48+192))
		for _, f := range []string{"throughput.svg", "ttft.svg"} {
			svg, err := os.ReadFile(filepath.Join(dir, f))
			require.NoError(t, err)
			assert.Contains(t, string(svg), "<svg")
			assert.Contains(t, string(svg), "saturation: ", "the saturation point is marked")
		}
		page, err := os.ReadFile(filepath.Join(dir, "report.html"))
		require.NoError(t, err, "bench writes report.html")
		assert.Contains(t, string(page), "Saturation point: ", "the page holds the verdict")
		assert.Contains(t, string(page), "<svg", "and its charts inline")
		assert.NotContains(t, string(page), "<script", "no script")
		assert.NotRegexp(t, `(src|href)="https?:`, string(page), "nothing loaded from the network")
	})
}

func TestRateMode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{
			"-rates", "20,80", "-burstiness", "0.5", "-requests", "24", "-repeats", "1", "-speedup", "20", "-max-tokens", "16", "-out", dir,
		}, testEnv(&stdout, &stderr, nil))
		require.Equal(t, 0, code, "stderr: %s", stderr.String())
		res := readResults(t, dir)
		assert.Equal(t, ModeRate, res.Mode)
		require.Len(t, res.Levels, 2)
		assert.Equal(t, 24, res.Levels[1].Summary.Requests)
		assert.Contains(t, stdout.String(), "requests/s")
		for _, l := range readRecords(t, dir) {
			assert.Equal(t, ModeRate, l.Mode)
		}
	})
}

// TestWarmupNotCounted: the server sees warm-up + measured requests; only
// the measured ones are in the summary and in records.jsonl.
func TestWarmupNotCounted(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		warm, n int // per repeat
		repeats int
	}{
		{"explicit", []string{"-concurrency", "4", "-requests", "8", "-warmup", "5", "-repeats", "2"}, 5, 8, 2},
		{"default: one per client", []string{"-concurrency", "8", "-requests", "16", "-repeats", "1"}, 8, 16, 1},
		{"none", []string{"-concurrency", "2", "-requests", "6", "-warmup", "0", "-repeats", "1"}, 0, 6, 1},
		{"rate default: one second of arrivals", []string{"-rates", "10", "-requests", "12", "-repeats", "1"}, 10, 12, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				dir := t.TempDir()
				var stdout, stderr bytes.Buffer
				var srv *llmmetricstest.Server
				args := append([]string{"-speedup", "20", "-max-tokens", "8", "-prompt-words", "10", "-out", dir}, tt.args...)
				code := run(context.Background(), args, testEnv(&stdout, &stderr, &srv))
				require.Equal(t, 0, code, "stderr: %s", stderr.String())
				require.NotNil(t, srv)
				assert.Equal(t, 1+tt.repeats*(tt.warm+tt.n), srv.Stats().Requests, "the server saw the preflight and the warm-up requests")
				res := readResults(t, dir)
				require.Len(t, res.Levels, 1)
				assert.Equal(t, tt.repeats*tt.n, res.Levels[0].Summary.Requests, "only measured requests are summarized")
				lines := readRecords(t, dir)
				assert.Len(t, lines, tt.repeats*tt.n)
				repeats := map[int]int{}
				for _, l := range lines {
					repeats[l.Repeat]++
				}
				for r := range tt.repeats {
					assert.Equal(t, tt.n, repeats[r], "repeat %d", r)
				}
			})
		})
	}
}

// TestWarmupIsEveryClientsFirst: with one warm-up request per client (the
// default), each client's first request is its warm-up, so no measured
// request is sent in the opening wave (on a connection the warm-up has not
// opened yet). The fake server answers every request alike, so the
// measured requests, each sent as its client's warm-up ends, start within
// a fraction of an answer of each other; one sent in the opening wave
// would start a whole answer before the others.
func TestWarmupIsEveryClientsFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		var stdout, stderr bytes.Buffer
		var srv *llmmetricstest.Server
		code := run(context.Background(), []string{"-speedup", "20", "-max-tokens", "8", "-prompt-words", "10", "-out", dir,
			"-concurrency", "8", "-requests", "8", "-repeats", "1"}, testEnv(&stdout, &stderr, &srv))
		require.Equal(t, 0, code, "stderr: %s", stderr.String())
		lines := readRecords(t, dir)
		require.Len(t, lines, 8)
		first, last := lines[0].Record.Start, lines[0].Record.Start
		shortest := time.Hour
		for _, l := range lines {
			r := l.Record
			e2el, ok := r.E2EL()
			require.True(t, ok)
			shortest = min(shortest, e2el)
			if r.Start.Before(first) {
				first = r.Start
			}
			if r.Start.After(last) {
				last = r.Start
			}
		}
		require.Positive(t, shortest)
		assert.Less(t, last.Sub(first), shortest/2, "measured requests start together, after the warm-up wave")
	})
}

// cancelOn is a writer that calls cancel the first time what was written
// contains marker.
type cancelOn struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	marker string
	cancel context.CancelFunc
}

func (c *cancelOn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Write(p)
	if strings.Contains(c.buf.String(), c.marker) {
		c.cancel()
	}
	return len(p), nil
}

// TestInterruptWritesPartialResults cancels the run (as Ctrl-C does) once
// the first level is done: the files hold that level, and the run says so.
func TestInterruptWritesPartialResults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		stderr := &cancelOn{marker: "done:", cancel: cancel}
		var stdout bytes.Buffer
		e := testEnv(&stdout, nil, nil)
		e.stderr = stderr
		code := run(ctx, []string{"-concurrency", "2,4,8", "-requests", "8", "-repeats", "1", "-speedup", "20", "-max-tokens", "16", "-out", dir}, e)
		assert.Equal(t, exitInterrupted, code)
		assert.Contains(t, stderr.buf.String(), "interrupted: wrote the 1 level(s) measured so far")
		assert.Contains(t, stdout.String(), "Interrupted")
		res := readResults(t, dir)
		assert.True(t, res.Interrupted)
		require.Len(t, res.Levels, 1)
		assert.Equal(t, 2.0, res.Levels[0].Load)
		assert.Len(t, readRecords(t, dir), 8, "the finished level's records, none of the interrupted one")
	})
}

func TestBadFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"decreasing loads", []string{"-concurrency", "4,2"}, "loads must increase"},
		{"fractional concurrency", []string{"-concurrency", "1.5"}, "whole number"},
		{"zero rate", []string{"-rates", "0"}, "must be > 0"},
		{"not a number", []string{"-rates", "x"}, "not a number"},
		{"both modes", []string{"-concurrency", "1", "-rates", "1"}, "not both"},
		{"bad SLO", []string{"-slo", "ttft=fast"}, "llmmetrics:"},
		{"bad objective", []string{"-objective", "p95 speed<=1s"}, "unknown latency"},
		{"burstiness", []string{"-burstiness", "0"}, "burstiness"},
		{"negative warmup", []string{"-warmup", "-2"}, "-warmup"},
		{"negative repeats", []string{"-repeats", "-1"}, "-repeats"},
		{"search from several loads", []string{"-search", "-concurrency", "1,2"}, "one load"},
		{"search precision", []string{"-search", "-search-precision", "1"}, "-search-precision"},
		{"url without model", []string{"-url", "http://127.0.0.1:1/v1"}, "-model"},
		{"server metrics not a URL", []string{"-server-metrics", "localhost:9400"}, "not an http(s) URL"},
		{"NaN burstiness", []string{"-rates", "1", "-burstiness", "NaN"}, "-burstiness must be a number > 0, not NaN"},
		{"infinite burstiness", []string{"-burstiness", "+Inf"}, "-burstiness"},
		{"NaN search precision", []string{"-search", "-search-precision", "NaN"}, "-search-precision must be in (0, 1), not NaN"},
		{"NaN hourly cost", []string{"-hourly-cost", "NaN"}, "-hourly-cost must be a number ≥ 0, not NaN"},
		{"infinite hourly cost", []string{"-hourly-cost", "Inf"}, "-hourly-cost"},
		{"NaN speedup", []string{"-speedup", "NaN"}, "-speedup"},
		{"zero timeout", []string{"-timeout", "0s"}, "-timeout must be > 0"},
		{"timeout not a duration", []string{"-timeout", "5"}, "-timeout"},
		{"huge prompts", []string{"-prompt-words", "100000000"}, "-prompt-words must be ≤ 1000000"},
		{"empty out", []string{"-out", ""}, "-out must name a directory"},
		{"url not http", []string{"-url", "localhost:8000/v1", "-model", "m"}, "is not an http(s) URL"},
		{"unknown flag", []string{"-nope"}, "flag provided but not defined"},
		{"argument", []string{"extra"}, "unexpected arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, env{stdout: &stdout, stderr: &stderr, newFake: func(llmmetricstest.ServerConfig) *llmmetricstest.Server {
				t.Fatal("no server starts on bad flags")
				return nil
			}})
			assert.Equal(t, exitUsage, code)
			assert.Contains(t, stderr.String(), tt.want)
			assert.Contains(t, stderr.String(), "llmmetrics bench: ")
		})
	}
}

func TestHelpExitsZero(t *testing.T) {
	var stdout, stderr bytes.Buffer
	assert.Equal(t, 0, run(context.Background(), []string{"-h"}, env{stdout: &stdout, stderr: &stderr}))
	assert.Contains(t, stderr.String(), "-server-metrics")
}

// TestLiveProgressLine: on a terminal the status line is rewritten in place
// while a repeat runs, and cleared before the level's plain line.
func TestLiveProgressLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		var stdout, stderr bytes.Buffer
		e := testEnv(&stdout, &stderr, nil)
		e.live = true
		code := run(context.Background(), []string{"-concurrency", "2", "-requests", "16", "-repeats", "1", "-speedup", "1", "-max-tokens", "64", "-out", dir}, e)
		require.Equal(t, 0, code, "stderr: %s", stderr.String())
		out := stderr.String()
		assert.Contains(t, out, "\r\033[Kconcurrency 2     repeat 1: ", "a live line")
		assert.Contains(t, out, "/16 requests")
		assert.Contains(t, out, "\r\033[Kconcurrency 2     done:", "the live line is cleared before the level's line")
	})
}

// TestServerTelemetry: by default the run watches the fake server's
// /metrics; each level keeps what it said, the table and the charts show
// it, and the figures the fake server does not export are told once.
func TestServerTelemetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{
			"-concurrency", "1,64", "-speedup", "20", "-repeats", "1", "-out", dir,
		}, testEnv(&stdout, &stderr, nil))
		require.Equal(t, 0, code, "stderr: %s", stderr.String())
		res := readResults(t, dir)
		require.Len(t, res.Levels, 2)
		low, high := res.Levels[0].Server, res.Levels[1].Server
		require.NotNil(t, low)
		require.NotNil(t, high)
		for _, p := range []*float64{low.RequestsRunning, low.RequestsWaiting, low.KVCacheUsage, low.Preemptions, high.KVCacheUsage, high.RequestsWaiting, high.Preemptions} {
			require.NotNil(t, p)
		}
		assert.LessOrEqual(t, *low.RequestsRunning, 1.0, "one request at a time")
		assert.Zero(t, *low.RequestsWaiting)
		assert.Zero(t, *low.Preemptions)
		assert.Greater(t, *high.KVCacheUsage, *low.KVCacheUsage)
		assert.Greater(t, *high.RequestsWaiting, 1.0, "64 streams overflow a batch of 32")
		assert.Positive(t, *high.Preemptions, "the KV budget of the default run preempts at 64")
		assert.LessOrEqual(t, *high.KVCacheUsageMax, 1.0)
		assert.Nil(t, high.PowerWatts, "the fake server has no GPU")
		assert.Nil(t, high.OutputTokensPerJoule)

		assert.Contains(t, stdout.String(), "KV")
		assert.Contains(t, stdout.String(), "waiting")
		assert.Equal(t, 1, strings.Count(stderr.String(), "no endpoint reports gpu_utilization"), "told once: %s", stderr.String())
		for _, f := range []string{"kv_cache.svg", "queue.svg"} {
			svg, err := os.ReadFile(filepath.Join(dir, f))
			require.NoError(t, err)
			assert.Contains(t, string(svg), "<svg")
		}
	})
}
