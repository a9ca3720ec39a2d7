package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/examples/internal/promtest"
	"github.com/llmmetrics/llmmetrics/llmmetricstest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPrometheusAgreesWithSummarize runs a workload, lets a real Prometheus
// server scrape the exporter, and checks that Prometheus' view of the
// metrics agrees with what the library computes from the same requests.
func TestPrometheusAgreesWithSummarize(t *testing.T) {
	bin := lookPrometheus(t)
	exp, err := newExporter()
	require.NoError(t, err)
	metricsURL := promtest.Serve(t, exp.Handler)

	const requests = 160
	slo := llmmetrics.SLO{TTFT: 60 * time.Millisecond, TPOT: 8 * time.Millisecond}
	// The workload runs on testing/synctest's fake time against the
	// in-memory fake server: its latencies (and so SLO attainment) are the
	// simulation's, whatever CPU the test gets. Prometheus scrapes the
	// exporter on real time afterwards.
	var records []llmmetrics.Record
	synctest.Test(t, func(t *testing.T) {
		records, err = run(context.Background(), exp.Provider, workload{
			Requests: requests, Concurrency: 12, SLO: slo,
			Server:    llmmetricstest.ServerConfig{BaseTPOT: 3 * time.Millisecond, OutputMin: 16, OutputMax: 48, Seed: 7},
			NewServer: llmmetricstest.NewInMemoryServer,
		})
		require.NoError(t, err)
	})
	sum := llmmetrics.Summarize(records, llmmetrics.SummaryOptions{SLO: slo})
	require.Equal(t, requests, sum.Completed, "the fake server injects no failures here")
	require.Greater(t, sum.Goodput.Attainment, 0.0)

	api := startPrometheus(t, bin, promConfig{
		jobs:  map[string]string{"llmmetrics": metricsURL},
		rules: []string{"rules.yml"},
	})
	api.waitFor(t, `sum(llmmetrics_requests_total)`, requests)

	t.Run("p99 TTFT agrees within bucket resolution", func(t *testing.T) {
		promP99, ok := api.query(`histogram_quantile(0.99, sum by (le) (gen_ai_client_operation_time_to_first_chunk_seconds_bucket))`)
		require.True(t, ok)
		libP99, ok := sum.TTFT.Percentile(99)
		require.True(t, ok)
		// numpy's p99 lies between two order statistics; Prometheus
		// interpolates inside the bucket that holds the 0.99·N-th sample.
		// Both must fall between the lower bound of the bucket of the lower
		// neighbour and the upper bound of the bucket of the upper one.
		ttfts := make([]float64, 0, len(records))
		for _, r := range records {
			d, _ := r.TTFT()
			ttfts = append(ttfts, d.Seconds())
		}
		slices.Sort(ttfts)
		rank := 0.99 * float64(len(ttfts)-1)
		lo, _ := bucketOf(ttfts[int(rank)])
		_, hi := bucketOf(ttfts[min(int(rank)+1, len(ttfts)-1)])
		t.Logf("p99 TTFT: library %v, Prometheus %.4fs, bucket range [%g, %g]", libP99, promP99, lo, hi)
		assert.GreaterOrEqual(t, libP99.Seconds(), lo)
		assert.LessOrEqual(t, libP99.Seconds(), hi)
		assert.GreaterOrEqual(t, promP99, lo)
		assert.LessOrEqual(t, promP99, hi)
	})
	t.Run("goodput ratio equals SLO attainment", func(t *testing.T) {
		ratio, ok := api.query(`sum(llmmetrics_requests_total{llmmetrics_slo_met="true"}) / sum(llmmetrics_requests_total)`)
		require.True(t, ok)
		assert.InDelta(t, sum.Goodput.Attainment, ratio, 1e-12)
	})
	t.Run("output tokens agree", func(t *testing.T) {
		v, ok := api.query(`sum(llmmetrics_tokens_total{gen_ai_token_type="output"})`)
		require.True(t, ok)
		assert.Equal(t, float64(sum.OutputTokens), v)
	})
}

// bucketOf returns the bounds (lower exclusive, upper inclusive) of the
// client TTFT histogram bucket that holds v.
func bucketOf(v float64) (lo, hi float64) {
	// The client TTFT buckets: the GenAI conventions' recommended
	// boundaries for gen_ai.client.operation.time_to_first_chunk.
	b := []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	for i, ub := range b {
		if v <= ub {
			if i > 0 {
				lo = b[i-1]
			}
			return lo, ub
		}
	}
	return b[len(b)-1], b[len(b)-1] // +Inf bucket: Prometheus answers the last finite bound
}

func lookPrometheus(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus binary not installed (.ci/run installs Debian's prometheus package)")
	}
	return bin
}

// promConfig is what startPrometheus runs: scrape jobs (name → target
// address), rule files (relative to this directory) and extra flags.
type promConfig struct {
	jobs  map[string]string
	rules []string
	flags []string
}

// promAPI queries a Prometheus server through its own HTTP client.
type promAPI struct {
	url string
	hc  *http.Client
}

// startPrometheus runs a Prometheus server on a loopback port that scrapes
// the jobs every 500 ms, and returns its API.
func startPrometheus(t *testing.T, bin string, c promConfig) promAPI {
	t.Helper()
	cfg := "global:\n  scrape_interval: 500ms\n  evaluation_interval: 500ms\nscrape_configs:\n"
	for _, job := range slices.Sorted(maps.Keys(c.jobs)) {
		cfg += fmt.Sprintf("  - job_name: %q\n    static_configs:\n      - targets: [%q]\n", job, c.jobs[job])
	}
	cfg += "rule_files:\n"
	for _, r := range c.rules {
		cfg += fmt.Sprintf("  - %q\n", mustAbs(t, r))
	}
	url, hc := promtest.Start(t, bin, cfg, c.flags...)
	return promAPI{url: url, hc: hc}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	require.NoError(t, err)
	return a
}

// query runs an instant query and returns its single scalar result.
func (p promAPI) query(q string) (float64, bool) {
	resp, err := p.hc.Get(p.url + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	var body struct {
		Status string
		Data   struct {
			Result []struct {
				Value [2]any
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Status != "success" || len(body.Data.Result) != 1 {
		return 0, false
	}
	s, _ := body.Data.Result[0].Value[1].(string)
	v, err := strconv.ParseFloat(s, 64)
	return v, err == nil
}

// waitFor waits until the instant query q returns want: a scrape has seen
// everything recorded so far.
func (p promAPI) waitFor(t *testing.T, q string, want float64) {
	t.Helper()
	require.Eventually(t, func() bool {
		v, ok := p.query(q)
		return ok && v == want
	}, 60*time.Second, 100*time.Millisecond, "Prometheus never answered %s = %v", q, want)
}
