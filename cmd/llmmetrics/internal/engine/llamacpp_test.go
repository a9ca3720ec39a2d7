package engine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/cmd/llmmetrics/internal/bench"
	"github.com/llmmetrics/llmmetrics/saturation"
)

// llamaCaptures holds what a real llama.cpp server (release b4747, 4
// slots) sent, recorded beside the repository (its README says how);
// read at run time, never copied in.
const llamaCaptures = "../../../../../shared/captures/llamacpp/"

func llamaCapture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(llamaCaptures + name)
	if err != nil {
		t.Skip("llama.cpp's captures are not beside the repository:", err)
	}
	return b
}

// replayServer answers every chat completion with the recorded stream,
// GET /props and GET /metrics with the recorded answers, and anything else
// (its /tokenize was not recorded) with 404.
func replayServer(t *testing.T, stream string) *httptest.Server {
	t.Helper()
	body, props, metrics := llamaCapture(t, stream), llamaCapture(t, "props.json"), llamaCapture(t, "metrics_12_streams_4_slots.txt")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions":
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write(body)
		case r.URL.Path == "/props":
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			_, _ = w.Write(props)
		case r.URL.Path == "/metrics":
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			_, _ = w.Write(metrics)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// benchResults is what these tests read of results.json.
type benchResults struct {
	Levels []struct {
		Load          float64            `json:"load"`
		Summary       llmmetrics.Summary `json:"summary"`
		Server        *saturation.Server `json:"server"`
		ServerTime    *bench.ServerTime  `json:"server_time"`
		PrefillStalls *saturation.Stalls `json:"prefill_stalls"`
	} `json:"levels"`
	Saturation saturation.Result `json:"saturation"`
}

func readBenchResults(t *testing.T, dir string) benchResults {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	require.NoError(t, err)
	var r benchResults
	require.NoError(t, json.Unmarshal(b, &r))
	return r
}

// TestLlamaCppCaptureReadings runs bench against llama.cpp's recorded
// answers (every request gets the same recorded stream): what bench reads
// of them is what the server said.
//
//   - chat_stream_usage.sse: usage 33 prompt and 16 completion tokens,
//     timings prompt_ms 83.203 and predicted_ms 75.55, so every record
//     has a server prefill of 83.203 ms and a decode of 75.55 ms; the
//     replay answers at once, before the 83 ms the server's prefill took,
//     so the client's TTFT is below it: the wait is 0 (never negative) and
//     the line under the table says the times do not fit; its chunks
//     arrive together, and no long gap is counted;
//   - props.json: total_slots 4, the engine's slots;
//   - metrics_12_streams_4_slots.txt: requests_processing 2,
//     requests_deferred 0, kv_cache_usage_ratio 0.0681152;
//   - chat_stream_prefix_reused.sse: usage prompt_tokens 1039 and
//     timings.prompt_n 22, so 1017 cached tokens a request and a
//     prefix-cache hit rate of 1017/1039 ≈ 97.9 % (b4747 says nothing of
//     it in usage or /metrics).
func TestLlamaCppCaptureReadings(t *testing.T) {
	t.Run("timings, slots and metrics", func(t *testing.T) {
		srv := replayServer(t, "chat_stream_usage.sse")
		out := t.TempDir()
		var stdout, stderr bytes.Buffer
		code := bench.Main(t.Context(), []string{
			"-url", srv.URL + "/v1", "-model", "m", "-concurrency", "2", "-requests", "8", "-warmup", "0", "-repeats", "1",
			"-output-tokens", "16", "-input-tokens", "33", "-server-metrics", srv.URL + "/metrics", "-out", out,
		}, &stdout, &stderr)
		t.Logf("bench:\n%s%s", stdout.String(), stderr.String())
		require.Equal(t, 0, code)
		lines := readRecords(t, filepath.Join(out, "records.jsonl"))
		require.Len(t, lines, 8)
		for i, l := range lines {
			r := l.Record
			require.Equal(t, llmmetrics.OutcomeOK, r.Outcome, "record %d: %s", i, r.ErrorType)
			assert.Equal(t, 33, r.InputTokens, "record %d", i)
			assert.Equal(t, 16, r.OutputTokens, "record %d", i)
			assert.Equal(t, 83203*time.Microsecond, r.ServerPrefill, "record %d: timings.prompt_ms", i)
			assert.Equal(t, 75550*time.Microsecond, r.ServerDecode, "record %d: timings.predicted_ms", i)
			w, ok := r.Wait()
			require.True(t, ok, "record %d", i)
			assert.GreaterOrEqual(t, w, time.Duration(0), "record %d", i)
		}
		res := readBenchResults(t, out)
		require.Len(t, res.Levels, 1)
		l := res.Levels[0]
		require.NotNil(t, l.Server)
		require.NotNil(t, l.Server.Slots)
		assert.Equal(t, 4, *l.Server.Slots, "/props total_slots")
		assert.Equal(t, 2.0, *l.Server.RequestsRunning)
		assert.Equal(t, 0.0, *l.Server.RequestsWaiting)
		assert.Equal(t, 0.0681152, *l.Server.KVCacheUsage)
		require.NotNil(t, l.ServerTime)
		assert.Equal(t, "answers", l.ServerTime.Source)
		assert.Equal(t, 8, l.ServerTime.Requests)
		assert.Equal(t, 83203*time.Microsecond, l.ServerTime.Prefill.Mean)
		assert.Equal(t, 75550*time.Microsecond, l.ServerTime.Decode.Mean)
		if l.ServerTime.TTFTMean < l.ServerTime.Prefill.Mean {
			assert.Contains(t, stdout.String(), "shorter than the server's own prefill mean 83 ms: its times do not fit the client's")
		}
		// The replay sends each stream in one write: its chunks arrive
		// together, and gaps that short say nothing of prefill stalls.
		assert.Nil(t, l.PrefillStalls)
		assert.NotContains(t, stdout.String(), "prompts stall decoding")
	})
	t.Run("cache from the timings", func(t *testing.T) {
		srv := replayServer(t, "chat_stream_prefix_reused.sse")
		out := t.TempDir()
		var stdout, stderr bytes.Buffer
		code := bench.Main(t.Context(), []string{
			"-url", srv.URL + "/v1", "-model", "random", "-concurrency", "1", "-requests", "4", "-warmup", "0", "-repeats", "1",
			"-output-tokens", "8", "-prefix-tokens", "900", "-input-tokens", "100", "-server-metrics", srv.URL + "/metrics", "-out", out,
		}, &stdout, &stderr)
		t.Logf("bench:\n%s%s", stdout.String(), stderr.String())
		require.Equal(t, 0, code)
		for i, l := range readRecords(t, filepath.Join(out, "records.jsonl")) {
			assert.Equal(t, 1039, l.Record.InputTokens, "record %d", i)
			assert.Equal(t, 1017, l.Record.CachedInputTokens, "record %d: prompt_tokens − timings.prompt_n", i)
		}
		res := readBenchResults(t, out)
		require.Len(t, res.Levels, 1)
		s := res.Levels[0].Summary
		assert.Equal(t, 4*1017, s.CachedInputTokens)
		assert.InDelta(t, 1017.0/1039, s.PrefixCacheHitRate, 1e-12)
		assert.Greater(t, s.PrefixCacheHitRate, 0.5)
	})
}

// llamaServerEnv names the llama.cpp server binary (llama-server) the
// tests below run; llama.cpp is not built by this repository's scripts.
const llamaServerEnv = "LLAMA_SERVER"

// llamaServer is one llama-server process on 127.0.0.1.
type llamaServer struct {
	base string
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan struct{}
}

// llamaListening matches the line llama-server logs once it listens, in
// the builds since port 0 is taken ("HTTP server is listening, hostname:
// 127.0.0.1, port: 43121, …") and in older ones ("server is listening on
// http://127.0.0.1:43121").
var llamaListening = regexp.MustCompile(`(?:listening, hostname: 127\.0\.0\.1, port: |listening on http://127\.0\.0\.1:)([0-9]+)`)

// startLlamaServer starts llama-server on the random test model with 4
// slots, 8,192 tokens of context (2,048 a slot), /metrics on and one
// compute thread (the setting of the measurements in docs/saturation.md),
// the kernel picking the port, and stops it when the test ends. It skips
// without LLAMA_SERVER.
func startLlamaServer(t *testing.T) *llamaServer {
	t.Helper()
	bin := os.Getenv(llamaServerEnv)
	if bin == "" {
		t.Skipf("%s is not set: these tests run a real llama.cpp server; set it to a llama-server binary (llama.cpp's tools/server), built elsewhere", llamaServerEnv)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s=%s: %v", llamaServerEnv, bin, err)
	}
	dir := t.TempDir()
	gguf := filepath.Join(dir, "model.gguf")
	require.NoError(t, WriteLlama(gguf, SmallLlama))
	cmd := exec.Command(bin, "-m", gguf, "--host", "127.0.0.1", "--port", "0", "-np", "4", "-c", "8192", "--metrics", "-t", "1", "-a", "random")
	cmd.Dir = dir
	ownGroup(cmd)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	cmd.Stdout = cmd.Stderr // llama-server logs to both
	require.NoError(t, cmd.Start())
	s := &llamaServer{cmd: cmd, log: &syncBuffer{}, done: make(chan struct{})}
	port := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			s.log.writeLine(sc.Text())
			if m := llamaListening.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case port <- m[1]:
				default:
				}
			}
		}
	}()
	go func() { _ = cmd.Wait(); close(s.done) }()
	t.Cleanup(func() {
		signalGroup(cmd, false)
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			signalGroup(cmd, true)
			<-s.done
		}
		if t.Failed() {
			t.Logf("llama-server's log:\n%s", s.log.tail(8000))
		}
	})
	select {
	case p := <-port:
		s.base = "http://127.0.0.1:" + p
	case <-s.done:
		t.Fatalf("llama-server exited before listening:\n%s", s.log.tail(4000))
	case <-time.After(startTimeout):
		t.Fatalf("llama-server did not listen within %v:\n%s", startTimeout, s.log.tail(4000))
	}
	// /health answers 503 while the model loads, 200 once it serves.
	hc := newClient(t)
	deadline := time.Now().Add(createTimeout)
	for {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+"/health", nil)
		require.NoError(t, err)
		resp, err := hc.Do(req)
		ok := err == nil && resp.StatusCode == http.StatusOK
		if err == nil {
			resp.Body.Close()
		}
		cancel()
		if ok {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("llama-server not ready within %v:\n%s", createTimeout, s.log.tail(4000))
		}
		select {
		case <-s.done:
			t.Fatalf("llama-server exited while loading:\n%s", s.log.tail(4000))
		case <-time.After(200 * time.Millisecond): // polling a process, not synchronising the test
		}
	}
}

// TestLlamaCppSweep: bench at 2, 4, 8 and 16 clients against llama-server
// on 4 slots (the measurements the server's account was built from): no
// request is lost, every record carries the server's prefill and decode
// times with a wait of at least 0, the slots are read from /props, and the
// saturation verdict names a cause on the server's side beside the knee.
func TestLlamaCppSweep(t *testing.T) {
	s := startLlamaServer(t)
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	code := bench.Main(ctx, []string{
		"-url", s.base + "/v1", "-model", "random", "-concurrency", "2,4,8,16", "-output-tokens", "64",
		"-server-metrics", s.base + "/metrics", "-slo", "ttft=60s,tpot=10s", "-out", out,
	}, &stdout, &stderr)
	t.Logf("bench:\n%s%s", stdout.String(), stderr.String())
	require.Equal(t, 0, code)
	for i, l := range readRecords(t, filepath.Join(out, "records.jsonl")) {
		r := l.Record
		require.Equal(t, llmmetrics.OutcomeOK, r.Outcome, "record %d: %s", i, r.ErrorType)
		assert.Positive(t, r.ServerPrefill, "record %d: timings.prompt_ms", i)
		assert.Positive(t, r.ServerDecode, "record %d: timings.predicted_ms", i)
		w, ok := r.Wait()
		require.True(t, ok, "record %d", i)
		assert.GreaterOrEqual(t, w, time.Duration(0), "record %d", i)
	}
	res := readBenchResults(t, out)
	for _, l := range res.Levels {
		require.NotNil(t, l.Server, "load %g", l.Load)
		require.NotNil(t, l.Server.Slots, "load %g", l.Load)
		assert.Equal(t, 4, *l.Server.Slots)
		require.NotNil(t, l.ServerTime, "load %g", l.Load)
		assert.Equal(t, "answers", l.ServerTime.Source)
	}
	require.True(t, res.Saturation.Found, "a saturation point within 16 clients on 4 slots")
	var server []string
	for _, r := range res.Saturation.Reasons {
		if r.Signal&(saturation.SignalKnee|saturation.SignalThroughputDrop|saturation.SignalTailGrowth|saturation.SignalAttainment) == 0 {
			server = append(server, r.Signal.String())
		}
	}
	assert.NotEmpty(t, server, "a server-side cause beside the client's signals: %v", res.Saturation.Reasons)
	t.Logf("server-side causes at %g: %s", res.Saturation.Load, strings.Join(server, ", "))
}

// TestLlamaCppPrefix: a 900-token shared system prompt before 100 tokens
// of question: llama.cpp reuses its slot's cached prefix and says so only
// in its timings (prompt_n below prompt_tokens, or cache_n): the run's
// prefix-cache hit rate is above 50 %.
func TestLlamaCppPrefix(t *testing.T) {
	s := startLlamaServer(t)
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	code := bench.Main(ctx, []string{
		"-url", s.base + "/v1", "-model", "random", "-concurrency", "2", "-requests", "16", "-repeats", "1",
		"-prefix-tokens", "900", "-input-tokens", "100", "-output-tokens", "16", "-out", out,
	}, &stdout, &stderr)
	t.Logf("bench:\n%s%s", stdout.String(), stderr.String())
	require.Equal(t, 0, code)
	res := readBenchResults(t, out)
	require.Len(t, res.Levels, 1)
	hit := res.Levels[0].Summary.PrefixCacheHitRate
	assert.Greater(t, hit, 0.5, fmt.Sprintf("prefix-cache hit rate %.1f%%", 100*hit))
}
