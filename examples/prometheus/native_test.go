package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/examples/internal/promtest"
	"github.com/llmmetrics/llmmetrics/otelsdk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPrometheusNativeHistograms checks otelsdk.ExponentialHistograms end
// to end: a real Prometheus with native histograms on scrapes two
// exporters fed with the same requests, one with the option (native
// histograms) and one without (classic buckets), and evaluates the latency
// rules of rules_native.yml and rules.yml. Every native percentile must
// agree with Summarize within 2%; the classic ones are logged with their
// error, and the classic p99 TTFT must be clamped at the last semconv
// bucket, 10 s.
//
// The requests come with explicit times from a fixed seed: TTFT mostly
// lognormal around 0.5 s with 4% queued around 14 s, then 256 tokens in 16
// chunks with lognormal gaps around 0.4 s. They arrive in two batches, each scraped
// before the next, so rate() over the rules' 5m window sees exactly the
// second batch, which is what Summarize is given.
func TestPrometheusNativeHistograms(t *testing.T) {
	bin := lookPrometheus(t)
	ctx := context.Background()
	classic, err := newExporter()
	require.NoError(t, err)
	native, err := newExporter(otelsdk.ExponentialHistograms())
	require.NoError(t, err)
	var trackers []*llmmetrics.Tracker
	for _, exp := range []*exporter{classic, native} {
		tr, err := llmmetrics.NewTracker(llmmetrics.WithMeterProvider(exp.Provider), llmmetrics.WithoutWindow())
		require.NoError(t, err)
		trackers = append(trackers, tr)
	}
	rng := rand.New(rand.NewPCG(42, 14))
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	n := 0
	feed := func(count int) []llmmetrics.Record {
		records := make([]llmmetrics.Record, count)
		for i := range records {
			start := t0.Add(time.Duration(n) * 100 * time.Millisecond)
			n++
			ttft := 0.5 * math.Exp(0.5*rng.NormFloat64())
			if rng.Float64() < 0.04 {
				ttft = 14 * math.Exp(0.35*rng.NormFloat64())
			}
			chunk := start.Add(seconds(ttft))
			reqs := make([]*llmmetrics.Request, len(trackers))
			for j, tr := range trackers {
				reqs[j] = tr.StartAt(ctx, start)
			}
			for c := range 16 {
				if c > 0 {
					chunk = chunk.Add(seconds(0.4 * math.Exp(0.6*rng.NormFloat64())))
				}
				for _, r := range reqs {
					r.ChunkAt(chunk, 16)
				}
			}
			for _, r := range reqs {
				records[i] = r.EndAt(chunk, nil)
			}
		}
		return records
	}

	// The first batch is recorded before Prometheus starts, so its first
	// scrape, the start of every rate() window, holds exactly that batch.
	// A scrape never sees a batch half recorded: the OTel SDK reads a
	// histogram's count and buckets while Records go on, so a scrape in the
	// middle of a batch can hold buckets from different moments, which
	// rate() then takes for a counter reset (seen once in ten runs under
	// load: classic p99 TTFT 2.46 s instead of the clamped 10 s). feed holds
	// the write lock, each scrape the read lock.
	var gate sync.RWMutex
	const first, second = 2000, 20000
	feed(first)
	api := startPrometheus(t, bin, promConfig{
		jobs:  map[string]string{"classic": promtest.Serve(t, gated(&gate, classic.Handler)), "native": promtest.Serve(t, gated(&gate, native.Handler))},
		rules: []string{"rules.yml", "rules_native.yml"},
		flags: []string{"--enable-feature=native-histograms"},
	})
	for _, job := range []string{"classic", "native"} {
		api.waitFor(t, fmt.Sprintf(`sum(llmmetrics_requests_total{job=%q})`, job), first)
	}
	gate.Lock()
	records := feed(second)
	gate.Unlock()
	for _, job := range []string{"classic", "native"} {
		api.waitFor(t, fmt.Sprintf(`sum(llmmetrics_requests_total{job=%q})`, job), first+second)
	}
	sum := llmmetrics.Summarize(records, llmmetrics.SummaryOptions{Percentiles: []float64{50, 95, 99}})
	require.Equal(t, second, sum.Completed)

	t.Run("native series only on the native job", func(t *testing.T) {
		v, ok := api.query(`histogram_count(sum(rate(gen_ai_server_time_to_first_token_seconds{job="native"}[5m])))`)
		require.True(t, ok, "no native histogram series: is the protobuf exposition negotiated?")
		assert.Greater(t, v, 0.0)
		_, ok = api.query(`sum(gen_ai_server_time_to_first_token_seconds_bucket{job="native"})`)
		assert.False(t, ok, "a native histogram has no _bucket series")
		_, ok = api.query(`sum(gen_ai_server_time_to_first_token_seconds_bucket{job="classic"})`)
		assert.True(t, ok, "the classic job keeps its _bucket series")
	})

	classicRules, nativeRules := readRecordingRules(t, "rules.yml"), readRecordingRules(t, "rules_native.yml")
	t.Logf("%d requests (rate over the 5m window of the rules), Prometheus %s", second, prometheusVersion(t, api))
	t.Logf("| rule | exact (Summarize) | native | error | classic | error |")
	t.Logf("|---|---:|---:|---:|---:|---:|")
	for _, m := range []struct {
		short string
		dist  llmmetrics.Distribution
	}{{"ttft", sum.TTFT}, {"tpot", sum.TPOT}, {"itl", sum.ITL}, {"e2el", sum.E2EL}} {
		for _, p := range []float64{50, 95, 99} {
			record := fmt.Sprintf("llmmetrics:server_%s_seconds:p%02.0f_rate5m", m.short, p)
			t.Run(record, func(t *testing.T) {
				exactD, ok := m.dist.Percentile(p)
				require.True(t, ok)
				exact := exactD.Seconds()
				require.Contains(t, nativeRules, record)
				require.Contains(t, classicRules, record)
				nv, ok := api.query(nativeRules[record])
				require.True(t, ok, "no result for %s", nativeRules[record])
				cv, ok := api.query(classicRules[record])
				require.True(t, ok, "no result for %s", classicRules[record])
				t.Logf("| `%s` | %.4f s | %.4f s | %+.2f%% | %.4f s | %+.1f%% |", record, exact, nv, 100*(nv/exact-1), cv, 100*(cv/exact-1))
				assert.InEpsilon(t, exact, nv, 0.02, "native histogram_quantile vs Summarize")
				if record == "llmmetrics:server_ttft_seconds:p99_rate5m" {
					require.Greater(t, exact, 10.0)
					assert.Equal(t, 10.0, cv, "classic p99 TTFT is clamped at the last semconv bucket")
				}
			})
		}
	}

	t.Run("both rule files loaded", func(t *testing.T) {
		resp, err := api.hc.Get(api.url + "/api/v1/rules?type=record")
		require.NoError(t, err)
		defer resp.Body.Close()
		var body strings.Builder
		_, err = bufio.NewReader(resp.Body).WriteTo(&body)
		require.NoError(t, err)
		assert.Contains(t, body.String(), `"name":"llmmetrics-latency-server-native"`)
		assert.Contains(t, body.String(), `"name":"llmmetrics-latency-server"`)
	})
}

func seconds(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }

// readRecordingRules returns the expressions of a rules file's recording
// rules by record name. It reads the layout of this directory's files (a
// one-line expr right after each record line), not YAML in general.
func readRecordingRules(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	rules := map[string]string{}
	var record string
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		if r, ok := strings.CutPrefix(line, "- record: "); ok {
			record = r
			continue
		}
		if e, ok := strings.CutPrefix(line, "expr: "); ok && record != "" {
			rules[record] = e
		}
		record = ""
	}
	require.NotEmpty(t, rules, "%s: no recording rules", path)
	return rules
}

// prometheusVersion returns the server's version, for the log.
func prometheusVersion(t *testing.T, api promAPI) string {
	t.Helper()
	resp, err := api.hc.Get(api.url + "/api/v1/status/buildinfo")
	if err != nil {
		return "?"
	}
	defer resp.Body.Close()
	var body struct{ Data struct{ Version string } }
	if json.NewDecoder(resp.Body).Decode(&body) != nil {
		return "?"
	}
	return body.Data.Version
}

// gated serves h while holding gate's read lock.
func gated(gate *sync.RWMutex, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gate.RLock()
		defer gate.RUnlock()
		h.ServeHTTP(w, r)
	})
}
