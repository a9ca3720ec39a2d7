package servermetrics

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmmetrics/llmmetrics/saturation"
)

func ptr(v float64) *float64 { return &v }

// serverOf aggregates one scrape of each payload, as one level.
func serverOf(t *testing.T, payloads ...string) saturation.Server {
	t.Helper()
	a := NewAggregator()
	for i, p := range payloads {
		s, err := Parse(strings.NewReader(p))
		require.NoError(t, err)
		a.Add(i, s)
	}
	return a.Server()
}

func fixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return string(b)
}

// TestFixtures reads each engine's payload; the expected values are the
// fixtures' numbers, combined by hand.
func TestFixtures(t *testing.T) {
	for _, tc := range []struct {
		file string
		want saturation.Server
	}{
		{"vllm_v1.txt", saturation.Server{
			RequestsRunning: ptr(22), RequestsWaiting: ptr(4), RequestsWaitingMax: ptr(4),
			KVCacheUsage: ptr(0.91), KVCacheUsageMax: ptr(0.91),
			// one scrape: counters have no increase yet
			Preemptions: ptr(0), PrefixCacheHitRate: nil,
		}},
		// Real: vLLM's design document. Only the running gauge of our
		// figures is in the published excerpt.
		{"vllm_v1_design_doc.txt", saturation.Server{
			RequestsRunning: ptr(8),
		}},
		// Real: an idle V0 server relayed by AIBrix, prefix caching off.
		// running 0.0, waiting 0.0, gpu_cache_usage_perc 0.0,
		// num_preemptions_total 0.0 (one scrape: increase 0); the hit-rate
		// gauge reads -1.0, "disabled", so there is no hit rate (not -1).
		{"vllm_v0_aibrix.txt", saturation.Server{
			RequestsRunning: ptr(0), RequestsWaiting: ptr(0), RequestsWaitingMax: ptr(0),
			KVCacheUsage: ptr(0), KVCacheUsageMax: ptr(0),
			Preemptions: ptr(0), PrefixCacheHitRate: nil,
		}},
		{"vllm_v0.txt", saturation.Server{
			RequestsRunning: ptr(8), RequestsWaiting: ptr(0), RequestsWaitingMax: ptr(0),
			KVCacheUsage: ptr(0.342), KVCacheUsageMax: ptr(0.342),
			Preemptions: ptr(0), PrefixCacheHitRate: ptr(0.25),
		}},
		{"sglang.txt", saturation.Server{
			RequestsRunning: ptr(162), RequestsWaiting: ptr(2826), RequestsWaitingMax: ptr(2826),
			KVCacheUsage: ptr(0.28), KVCacheUsageMax: ptr(0.28),
			PrefixCacheHitRate: ptr(0.007507552643049313),
		}},
		{"tgi.txt", saturation.Server{
			RequestsRunning: ptr(32), RequestsWaiting: ptr(17), RequestsWaitingMax: ptr(17),
		}},
		{"llamacpp.txt", saturation.Server{
			RequestsRunning: ptr(4), RequestsWaiting: ptr(46), RequestsWaitingMax: ptr(46),
			KVCacheUsage: ptr(0.5), KVCacheUsageMax: ptr(0.5),
		}},
		// Real: llama.cpp b4747 after one request, and two seconds after
		// 12 streams started on 4 slots (2 processing, 0 deferred: the
		// other streams wait for an HTTP thread, which /metrics cannot
		// see). No preemption or prefix-cache figure.
		{"llamacpp_b4747_idle.txt", saturation.Server{
			RequestsRunning: ptr(0), RequestsWaiting: ptr(0), RequestsWaitingMax: ptr(0),
			KVCacheUsage: ptr(0.00488281), KVCacheUsageMax: ptr(0.00488281),
		}},
		{"llamacpp_b4747_12_streams.txt", saturation.Server{
			RequestsRunning: ptr(2), RequestsWaiting: ptr(0), RequestsWaitingMax: ptr(0),
			KVCacheUsage: ptr(0.0681152), KVCacheUsageMax: ptr(0.0681152),
		}},
		// Builds since May 2025 export no KV-cache figure.
		{"llamacpp_no_kv.txt", saturation.Server{
			RequestsRunning: ptr(4), RequestsWaiting: ptr(3), RequestsWaitingMax: ptr(3),
		}},
		{"dcgm.txt", saturation.Server{
			GPUUtilization: ptr((0.98 + 0.62) / 2), PowerWatts: ptr(301.5 + 198.5),
		}},
		// Real: eight idle H100s, untyped samples (the capture grepped the
		// HELP and TYPE lines away). Utilization: eight 0s → 0. Power:
		// 113.611 + 68.347 + 65.709 + 67.316 + 68.717 + 65.742 + 67.328
		// + 66.997 = 583.767 W.
		{"dcgm_aicr_h100.txt", saturation.Server{
			GPUUtilization: ptr(0),
			PowerWatts:     ptr(113.611 + 68.347 + 65.709 + 67.316 + 68.717 + 65.742 + 67.328 + 66.997),
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			got := serverOf(t, fixture(t, tc.file))
			assertServer(t, tc.want, got)
		})
	}
}

// assertServer compares field by field with a tolerance for sums.
func assertServer(t *testing.T, want, got saturation.Server) {
	t.Helper()
	pairs := []struct {
		name      string
		want, got *float64
	}{
		{"running", want.RequestsRunning, got.RequestsRunning},
		{"waiting", want.RequestsWaiting, got.RequestsWaiting},
		{"waiting max", want.RequestsWaitingMax, got.RequestsWaitingMax},
		{"kv", want.KVCacheUsage, got.KVCacheUsage},
		{"kv max", want.KVCacheUsageMax, got.KVCacheUsageMax},
		{"preemptions", want.Preemptions, got.Preemptions},
		{"prefix hit rate", want.PrefixCacheHitRate, got.PrefixCacheHitRate},
		{"gpu", want.GPUUtilization, got.GPUUtilization},
		{"power", want.PowerWatts, got.PowerWatts},
		{"tok/J", want.OutputTokensPerJoule, got.OutputTokensPerJoule},
	}
	for _, p := range pairs {
		if p.want == nil {
			assert.Nil(t, p.got, p.name)
			continue
		}
		if assert.NotNil(t, p.got, p.name) {
			assert.InDelta(t, *p.want, *p.got, 1e-9, p.name)
		}
	}
}

// TestNoDoubleCounting: vLLM 0.9-0.10 export the KV usage and prefix
// counters under two names; the first name of the table wins.
func TestNoDoubleCounting(t *testing.T) {
	s, err := Parse(strings.NewReader(fixture(t, "vllm_v1.txt")))
	require.NoError(t, err)
	assert.Len(t, s[figKV], 2, "two engines, not four series")
	assert.Equal(t, 20000.0, s[figPrefixQueries][`engine=0,model_name=Qwen/Qwen2.5-7B-Instruct`])
}

// TestLlamaCppExposition: llama.cpp's real exposition parses although it
// declares an average (n_busy_slots_per_decode, 2.17571) a counter; of its
// eleven unlabelled metrics only processing, deferred and the KV-cache
// ratio are figures, and its counters (tokens, seconds, decode calls) are
// not read as preemptions or prefix-cache counts. A level of the two real
// scrapes: running (0 + 2) / 2 = 1, waiting 0, KV mean (0.00488281 +
// 0.0681152) / 2, max 0.0681152.
func TestLlamaCppExposition(t *testing.T) {
	for _, name := range []string{"llamacpp_b4747_idle.txt", "llamacpp_b4747_12_streams.txt", "llamacpp_no_kv.txt"} {
		s, err := Parse(strings.NewReader(fixture(t, name)))
		require.NoError(t, err, name)
		for f := range s {
			assert.Contains(t, []figure{figRunning, figWaiting, figKV}, f, "%s: %s", name, figureNames[f])
			assert.Equal(t, []string{""}, keys(s[f]), "%s: one unlabelled series", name)
		}
	}
	assertServer(t, saturation.Server{
		RequestsRunning: ptr(1), RequestsWaiting: ptr(0), RequestsWaitingMax: ptr(0),
		KVCacheUsage: ptr((0.00488281 + 0.0681152) / 2), KVCacheUsageMax: ptr(0.0681152),
	}, levelOf(t, fixture(t, "llamacpp_b4747_idle.txt"), fixture(t, "llamacpp_b4747_12_streams.txt")))
}

// levelOf aggregates the payloads as successive scrapes of one endpoint.
func levelOf(t *testing.T, payloads ...string) saturation.Server {
	t.Helper()
	a := NewAggregator()
	for _, p := range payloads {
		s, err := Parse(strings.NewReader(p))
		require.NoError(t, err)
		a.Add(0, s)
	}
	return a.Server()
}

func keys(m map[string]float64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestLevelAggregation: several scrapes, several engines, a counter reset.
func TestLevelAggregation(t *testing.T) {
	scrape := func(run0, run1, wait0, wait1, kv0, kv1, pre0, pre1, q0, h0 float64) string {
		return fmt.Sprintf(`vllm:num_requests_running{engine="0"} %g
vllm:num_requests_running{engine="1"} %g
vllm:num_requests_waiting{engine="0"} %g
vllm:num_requests_waiting{engine="1"} %g
vllm:kv_cache_usage_perc{engine="0"} %g
vllm:kv_cache_usage_perc{engine="1"} %g
vllm:num_preemptions_total{engine="0"} %g
vllm:num_preemptions_total{engine="1"} %g
vllm:prefix_cache_queries_total{engine="0"} %g
vllm:prefix_cache_hits_total{engine="0"} %g
`, run0, run1, wait0, wait1, kv0, kv1, pre0, pre1, q0, h0)
	}
	a := NewAggregator()
	for _, p := range []string{
		scrape(10, 4, 0, 2, 0.5, 0.2, 100, 5, 1000, 100),
		scrape(20, 6, 6, 2, 0.9, 0.4, 103, 5, 1600, 400),
		scrape(30, 8, 12, 2, 1.0, 0.6, 2, 6, 2000, 600), // engine 0 restarted: preemptions 103 → 2
	} {
		s, err := Parse(strings.NewReader(p))
		require.NoError(t, err)
		a.Add(0, s)
	}
	got := a.Server()
	// running: engine means 20 and 6 → 26; waiting: 6 and 2 → 8; max sum 14.
	// KV: engine means 0.8 and 0.4 → the largest, 0.8; max 1.0.
	// preemptions: engine 0: +3 then reset → +2 = 5; engine 1: +1 → 6.
	// prefix: hits +500 over queries +1000 → 0.5.
	assertServer(t, saturation.Server{
		RequestsRunning: ptr(26), RequestsWaiting: ptr(8), RequestsWaitingMax: ptr(14),
		KVCacheUsage: ptr(0.8), KVCacheUsageMax: ptr(1.0), Preemptions: ptr(6), PrefixCacheHitRate: ptr(0.5),
	}, got)
}

// TestGPUsAndEngines: engines on two endpoints are summed; DCGM power is
// summed over GPUs, utilization averaged; tokens per joule from the rate.
func TestGPUsAndEngines(t *testing.T) {
	a := NewAggregator()
	for i, p := range []string{
		"vllm:num_requests_waiting{engine=\"0\"} 3\n",
		"vllm:num_requests_waiting{engine=\"0\"} 5\n", // same labels, other endpoint: another engine
		"DCGM_FI_DEV_GPU_UTIL{gpu=\"0\"} 100\nDCGM_FI_DEV_GPU_UTIL{gpu=\"1\"} 50\nDCGM_FI_DEV_POWER_USAGE{gpu=\"0\"} 400\nDCGM_FI_DEV_POWER_USAGE{gpu=\"1\"} 100\n",
	} {
		s, err := Parse(strings.NewReader(p))
		require.NoError(t, err)
		a.Add(i, s)
	}
	got := a.Server()
	SetOutputRate(&got, 1000)
	assertServer(t, saturation.Server{
		RequestsWaiting: ptr(8), RequestsWaitingMax: ptr(5),
		GPUUtilization: ptr(0.75), PowerWatts: ptr(500), OutputTokensPerJoule: ptr(2),
	}, got)
}

// TestParseSkipsSentinels: numbers that mean "no value" are not readings.
// vLLM v0 exports gpu_prefix_cache_hit_rate -1 with prefix caching off
// (testdata/vllm_v0_aibrix.txt); the DCGM exporter's README shows a blank
// sentinel written as a value (DCGM_FI_DEV_MEMORY_TEMP 9223372036854775794,
// DCGM_INT64_NOT_SUPPORTED): one in GPU_UTIL (int64) or POWER_USAGE
// (DCGM_FP64_NOT_SUPPORTED, 2^47+2) must not become a GPU at 9e16 percent.
func TestParseSkipsSentinels(t *testing.T) {
	s, err := Parse(strings.NewReader(fixture(t, "vllm_v0_aibrix.txt")))
	require.NoError(t, err)
	assert.NotContains(t, s, figPrefixRate, "-1 is no hit rate")
	assert.Equal(t, 0.0, s[figKV][`model_name=Qwen/Qwen2.5-Coder-1.5B-Instruct`], "a real 0 is kept")

	s, err = Parse(strings.NewReader(`DCGM_FI_DEV_GPU_UTIL{gpu="0", UUID="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52"} 9223372036854775794
DCGM_FI_DEV_GPU_UTIL{gpu="1", UUID="GPU-b"} 40
DCGM_FI_DEV_POWER_USAGE{gpu="0", UUID="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52"} 140737488355330.000000
DCGM_FI_DEV_POWER_USAGE{gpu="1", UUID="GPU-b"} 250.5
`))
	require.NoError(t, err)
	assert.Equal(t, map[string]float64{"UUID=GPU-b,gpu=1": 0.4}, s[figGPUUtil])
	assert.Equal(t, map[string]float64{"UUID=GPU-b,gpu=1": 250.5}, s[figPower])

	// All of a name's series blank: the next name of the table is read.
	s, err = Parse(strings.NewReader("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\"} 2147483634\nDCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu=\"0\"} 0.75\n"))
	require.NoError(t, err)
	assert.Equal(t, map[string]float64{"gpu=0": 0.75}, s[figGPUUtil])
}

func TestParseSkipsNaNAndRejectsGarbage(t *testing.T) {
	s, err := Parse(strings.NewReader("sglang:token_usage{tp_rank=\"0\"} NaN\nsglang:num_queue_reqs 3\n"))
	require.NoError(t, err)
	assert.NotContains(t, s, figKV)
	assert.Equal(t, 3.0, s[figWaiting][""])
	_, err = Parse(strings.NewReader("this is { not prometheus\n"))
	assert.ErrorContains(t, err, "llmmetrics: parse metrics")
}

// TestWatcher runs a level against a changing endpoint in a synctest
// bubble: scrapes at Begin, every interval and at End; no goroutine
// outlives End; a failing endpoint and the missing figures are told once.
func TestWatcher(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var waiting atomic.Int64
		var preempt atomic.Int64
		mux := http.NewServeMux()
		mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprintf(w, "# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{engine=\"0\"} %d\n# TYPE vllm:num_preemptions_total counter\nvllm:num_preemptions_total{engine=\"0\"} %d\n",
				waiting.Load(), preempt.Load())
		})
		mux.HandleFunc("/broken", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "no", http.StatusInternalServerError) })
		client := &http.Client{Transport: handlerTransport{mux}}
		var mu sync.Mutex
		var warnings []string
		w := NewWatcher([]string{"http://a.invalid/metrics", "http://b.invalid/broken"}, client, time.Second,
			func(s string) { mu.Lock(); warnings = append(warnings, s); mu.Unlock() })

		for level := range 2 {
			waiting.Store(0)
			w.Begin(t.Context())
			synctest.Wait() // scrape at Begin: waiting 0
			for i := 1; i <= 3; i++ {
				waiting.Store(int64(4 * i)) // 4, 8, 12 at the ticks
				preempt.Add(1)
				time.Sleep(time.Second)
				synctest.Wait()
			}
			preempt.Add(2)
			got := w.End() // final scrape: waiting 12, preemptions +2
			synctest.Wait()
			// waiting: scrapes 0, 4, 8, 12, 12 → mean 7.2; preemptions +3 +2 = 5.
			require.NotNil(t, got.RequestsWaiting, "level %d", level)
			assert.InDelta(t, 7.2, *got.RequestsWaiting, 1e-9)
			assert.Equal(t, 12.0, *got.RequestsWaitingMax)
			assert.Equal(t, 5.0, *got.Preemptions)
			assert.Nil(t, got.KVCacheUsage)
		}
		mu.Lock()
		defer mu.Unlock()
		var broken, kv int
		for _, s := range warnings {
			if strings.Contains(s, "b.invalid/broken") {
				broken++
			}
			if strings.Contains(s, "kv_cache_usage") {
				kv++
			}
		}
		assert.Equal(t, 1, broken, "the failing endpoint is told once: %q", warnings)
		assert.Equal(t, 1, kv, "a missing figure is told once: %q", warnings)
	})
}

// TestWatcherCanceled: a canceled level stops at once, without the last
// scrape, and its goroutine is gone.
func TestWatcherCanceled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int64
		client := &http.Client{Transport: handlerTransport{http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			n.Add(1)
			fmt.Fprintln(w, "tgi_queue_size 1")
		})}}
		w := NewWatcher([]string{"http://x.invalid/metrics"}, client, time.Second, nil)
		ctx, cancel := context.WithCancel(t.Context())
		w.Begin(ctx)
		synctest.Wait()
		cancel()
		got := w.End()
		assert.Equal(t, int64(1), n.Load(), "no scrape after the cancel")
		require.NotNil(t, got.RequestsWaiting)
		assert.Equal(t, 1.0, *got.RequestsWaiting)
	})
}

// handlerTransport serves requests with a handler, in memory (inside a
// synctest bubble, where sockets would stall fake time).
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}
