package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/llmmetricstest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests run bench against real HTTP servers on 127.0.0.1 (outside
// synctest: real sockets), each a few requests long.

// streamAnswer writes a streaming chat completion of n tokens with its
// usage chunk, as an OpenAI-compatible server does.
func streamAnswer(w http.ResponseWriter, n int) {
	w.Header().Set("Content-Type", "text/event-stream")
	for i := range n {
		fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"t%d \"}}]}\n\n", i)
		w.(http.Flusher).Flush()
	}
	fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\ndata: [DONE]\n\n", n, n+5)
}

// realEnv is an env for a run against a real server: no fake server may start.
func realEnv(t *testing.T, stdout, stderr *bytes.Buffer) env {
	return env{stdout: stdout, stderr: stderr, newFake: func(llmmetricstest.ServerConfig) *llmmetricstest.Server {
		t.Error("no fake server starts with -url")
		return nil
	}}
}

// written lists the files a run left in dir.
func written(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// TestEndpointFails: a server that is not a working OpenAI-compatible
// stream stops the run before the first level, with exit 1, the server's
// own answer, and no file written.
func TestEndpointFails(t *testing.T) {
	refused := func(t *testing.T) string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := l.Addr().String()
		require.NoError(t, l.Close())
		return "http://" + addr + "/v1"
	}
	serve := func(h http.HandlerFunc) func(t *testing.T) string {
		return func(t *testing.T) string {
			s := httptest.NewServer(h)
			t.Cleanup(s.Close)
			return s.URL + "/v1"
		}
	}
	tests := []struct {
		name string
		url  func(t *testing.T) string
		want string
	}{
		{"nothing listening", refused, "connect: connection refused"},
		{"501 to POST", serve(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "Unsupported method ('POST')", http.StatusNotImplemented)
		}), "HTTP 501: Unsupported method ('POST')"},
		{"a self-signed certificate", func(t *testing.T) string {
			s := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { streamAnswer(w, 3) }))
			t.Cleanup(s.Close)
			return s.URL + "/v1"
		}, "x509: certificate signed by unknown authority"},
		{"a wrong model name", serve(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error":{"code":404,"message":"model 'x' not found","type":"not_found_error"}}`)
		}), "HTTP 404: model 'x' not found"},
		{"an error body that is not JSON", serve(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, "<html>\n  <body>Not   Found</body></html>")
		}), "HTTP 404: Not Found"},
		{"not a stream", serve(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, "<html>welcome</html>")
		}), `not an OpenAI-compatible stream: no token arrived (status OK, Content-Type "text/html", it begins "<html>welcome</html>")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{"-url", tt.url(t), "-model", "x", "-concurrency", "1", "-requests", "2",
				"-repeats", "1", "-timeout", "10s", "-out", dir}, realEnv(t, &stdout, &stderr))
			assert.Equal(t, exitFailed, code)
			assert.Contains(t, stderr.String(), tt.want)
			assert.Contains(t, stderr.String(), "llmmetrics bench: ")
			assert.Empty(t, written(t, dir), "nothing written")
			assert.Empty(t, stdout.String(), "no table")
		})
	}
}

// connCount counts the answers served on one connection (HTTP/1 serves a
// connection's requests one after another, on one goroutine).
type connCount struct{ answered int }

type connKey struct{}

// closingServer answers every streamed request, and closes a connection
// when the request after every answers on it arrives, having read it, as
// llama.cpp's server does after an answer: the client meets EOF on a
// reused connection before any byte of an answer. kills counts them.
// The calibration's probes (max tokens 1) are answered and not counted:
// their retries are not the run's.
func closingServer(t *testing.T, every int, kills *atomic.Int64) *httptest.Server {
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			MaxTokens int `json:"max_tokens"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		_, _ = io.Copy(io.Discard, r.Body)
		if req.MaxTokens == 1 {
			streamAnswer(w, 1)
			return
		}
		cc := r.Context().Value(connKey{}).(*connCount)
		if cc.answered >= every {
			kills.Add(1)
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		cc.answered++
		streamAnswer(w, 4)
	}))
	s.Config.ConnContext = func(ctx context.Context, _ net.Conn) context.Context {
		return context.WithValue(ctx, connKey{}, &connCount{})
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// TestClosedConnectionsLoseNoRequest: a request that meets a connection the
// server closed is retried once on a fresh connection, and counted.
func TestClosedConnectionsLoseNoRequest(t *testing.T) {
	tests := []struct {
		name        string
		args        []string
		measured    int
		wantRetries int // -1: as many as the server closed
	}{
		// One client: the preflight and requests 1, 2 use the first
		// connection's 3 answers; request 3 meets its close and is retried;
		// 4–6 on a second connection, 7 retried, 8 on a third.
		{"one client, exactly", []string{"-concurrency", "1", "-requests", "8", "-repeats", "1"}, 8, 2},
		{"four clients", []string{"-concurrency", "4", "-requests", "24", "-repeats", "2"}, 48, -1},
		// Open loop: each request takes its connection 2 ms before its
		// time and its write is held; the retry's write is not.
		{"open loop, held writes", []string{"-rates", "300", "-requests", "40", "-repeats", "1"}, 40, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var kills atomic.Int64
			s := closingServer(t, 3, &kills)
			dir := t.TempDir()
			var stdout, stderr bytes.Buffer
			args := append([]string{"-url", s.URL + "/v1", "-model", "m", "-warmup", "0", "-out", dir}, tt.args...)
			code := run(context.Background(), args, realEnv(t, &stdout, &stderr))
			require.Equal(t, exitOK, code, "stderr: %s", stderr.String())
			res := readResults(t, dir)
			require.Len(t, res.Levels, 1)
			l := res.Levels[0]
			assert.Equal(t, tt.measured, l.Summary.Requests)
			assert.Equal(t, tt.measured, l.Summary.Completed, "no request lost")
			assert.Equal(t, 4*tt.measured, l.Summary.OutputTokens)
			want := tt.wantRetries
			if want < 0 {
				want = int(kills.Load())
			}
			assert.Positive(t, want, "the server closed connections")
			assert.Equal(t, want, l.Retries)
			assert.Equal(t, int(kills.Load()), l.Retries, "every closed connection is one retry")
			assert.Contains(t, stdout.String(), "retried")
			unit := "concurrent requests"
			if tt.args[0] == "-rates" {
				unit = "requests/s"
			}
			assert.Contains(t, stdout.String(), fmt.Sprintf("Retried at %g %s: %d request(s)", l.Load, unit, want))
			for _, line := range readRecords(t, dir) {
				assert.Equal(t, llmmetrics.OutcomeOK, line.Record.Outcome)
				assert.Empty(t, line.Error)
				if !line.Scheduled.IsZero() {
					assert.False(t, line.Record.Start.Before(line.Scheduled), "a write before its time")
				}
			}
		})
	}
}

// stallingServer answers request n (counted from 1, the preflight first)
// when answer(n), and otherwise never: it holds the request until the
// client goes away.
func stallingServer(t *testing.T, answer func(n int64) bool) *httptest.Server {
	var n atomic.Int64
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if !answer(n.Add(1)) {
			<-r.Context().Done()
			return
		}
		streamAnswer(w, 4)
	}))
	t.Cleanup(s.Close)
	return s
}

// TestTimeout: -timeout ends each request that gets no answer at its
// timeout, as a failure of error_type timeout; the run finishes with them
// counted, and a level where every request timed out ends the run.
func TestTimeout(t *testing.T) {
	const timeout = 300 * time.Millisecond
	tests := []struct {
		name      string
		answer    func(n int64) bool
		wantCode  int
		completed int
	}{
		{"every other request never answered", func(n int64) bool { return n%2 == 1 }, exitOK, 4},
		{"none answered after the preflight", func(n int64) bool { return n == 1 }, exitFailed, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := stallingServer(t, tt.answer)
			dir := t.TempDir()
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{"-url", s.URL + "/v1", "-model", "m", "-concurrency", "2", "-requests", "8",
				"-warmup", "0", "-repeats", "1", "-timeout", timeout.String(), "-out", dir}, realEnv(t, &stdout, &stderr))
			require.Equal(t, tt.wantCode, code, "stderr: %s", stderr.String())
			res := readResults(t, dir)
			require.Len(t, res.Levels, 1)
			l := res.Levels[0]
			assert.Equal(t, 8, l.Summary.Requests)
			assert.Equal(t, tt.completed, l.Summary.Completed)
			assert.Equal(t, 8-tt.completed, l.Summary.Failed, "a timeout is a failure, not a cancel")
			assert.Equal(t, map[string]int{"timeout": 8 - tt.completed}, l.Failures)
			for _, line := range readRecords(t, dir) {
				r := line.Record
				require.False(t, r.Start.IsZero())
				if r.Outcome == llmmetrics.OutcomeOK {
					continue
				}
				assert.Equal(t, "timeout", r.ErrorType)
				assert.Equal(t, "not done within -timeout 300ms", line.Error)
				// The deadline starts before the Record's start: by a few
				// milliseconds on an idle machine, by 50 ms and more when
				// both cores are busy. Half the timeout still tells a
				// request that ended at its timeout from one that ended
				// early for another reason.
				assert.GreaterOrEqual(t, r.End.Sub(r.Start), timeout/2, "ended at its timeout")
				assert.Less(t, r.End.Sub(r.Start), timeout+2*time.Second, "not long after it")
			}
			if tt.wantCode == exitFailed {
				assert.Contains(t, stderr.String(), "every request failed at concurrency 2 (8 timeout): not done within -timeout 300ms")
			} else {
				assert.Contains(t, stdout.String(), "Failed at 2 concurrent requests: 50.0% of requests (4 timeout), above the 5% a trusted level allows")
				assert.True(t, res.Saturation.Levels[0].Untrusted)
			}
		})
	}
}

// TestQueueBeforeEngine reproduces llama.cpp's queue in its HTTP threads:
// 16 requests in flight, its /metrics says 3 processing and 0.5 deferred.
func TestQueueBeforeEngine(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing 3\n"+
			"# TYPE llamacpp:requests_deferred gauge\nllamacpp:requests_deferred 0.5\n")
	})
	mux.HandleFunc("/v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		time.Sleep(40 * time.Millisecond) // the engine's work: the request stays in flight
		streamAnswer(w, 4)
	})
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"-url", s.URL + "/v1", "-model", "m", "-concurrency", "16", "-requests", "64",
		"-warmup", "0", "-repeats", "1", "-server-metrics", s.URL + "/metrics", "-out", dir}, realEnv(t, &stdout, &stderr))
	require.Equal(t, exitOK, code, "stderr: %s", stderr.String())
	res := readResults(t, dir)
	require.Len(t, res.Levels, 1)
	l := res.Levels[0]
	assert.Greater(t, l.ClientInFlight, 10.0, "a closed loop of 16 keeps about 16 in flight")
	assert.LessOrEqual(t, l.ClientInFlight, 16.0)
	require.NotNil(t, l.WaitingBeforeEngine)
	assert.InDelta(t, l.ClientInFlight-3.5, *l.WaitingBeforeEngine, 1e-9)
	assert.Contains(t, stdout.String(), "in flight, the engine runs 3 and queues 0.5: about ")
	assert.Contains(t, stdout.String(), "wait in front of it — HTTP threads, a proxy or a connection limit")
}

// TestRedirectLoopKeepsARecord: a request the client gives up on after
// redirects still leaves a failed Record with its start time.
func TestRedirectLoopKeepsARecord(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		http.Redirect(w, r, r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(s.Close)
	var stdout, stderr bytes.Buffer
	o, err := parseFlags([]string{"-url", s.URL + "/v1", "-model", "m", "-timeout", "10s"}, &stderr)
	require.NoError(t, err)
	b, err := newBench(o, realEnv(t, &stdout, &stderr))
	require.NoError(t, err)
	defer b.close()
	before := time.Now()
	var rec llmmetrics.Record
	sent := b.send(context.Background(), b.preflightBody(), &rec, keepNothing)
	assert.False(t, rec.Start.Before(before.Truncate(time.Second)), "a start time: %v", rec.Start)
	assert.False(t, rec.Start.IsZero())
	assert.Equal(t, llmmetrics.OutcomeError, rec.Outcome)
	assert.NotEmpty(t, rec.ErrorType)
	assert.Contains(t, sent.msg, "redirects")

	dir := t.TempDir()
	code := run(context.Background(), []string{"-url", s.URL + "/v1", "-model", "m", "-out", dir}, realEnv(t, &stdout, &stderr))
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, stderr.String(), "stopped after 10 redirects")
	assert.Empty(t, written(t, dir))
}

// TestBadOut: an -out that cannot be a directory is a usage error, found
// before any request is sent.
func TestBadOut(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"-url", "http://127.0.0.1:1/v1", "-model", "m", "-out", filepath.Join(file, "sub")}, realEnv(t, &stdout, &stderr))
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr.String(), "llmmetrics bench: -out: ")
}

// TestOpenFileLimit: a concurrency past the limit on open files is a usage
// error that names the number needed and how to raise the limit.
func TestOpenFileLimit(t *testing.T) {
	limit := func(n uint64) func() (uint64, bool) { return func() (uint64, bool) { return n, true } }
	tests := []struct {
		name  string
		args  []string
		limit func() (uint64, bool)
		want  string // "" passes
	}{
		{"fake server: two files per stream", []string{"-concurrency", "5000"}, limit(1024),
			"concurrency 5000 needs about 10064 open files, and the limit is 1024: raise it (ulimit -n 10064) or lower the concurrency"},
		{"a real server: one per stream", []string{"-url", "http://h/v1", "-model", "m", "-concurrency", "1,2000"}, limit(1024),
			"concurrency 2000 needs about 2064 open files"},
		{"within the limit", []string{"-concurrency", "480"}, limit(1024), ""},
		{"the automatic sweep fits 1024", nil, limit(1024), ""},
		{"search goes to 256× its start", []string{"-search", "-concurrency", "4"}, limit(1024), "concurrency 1024 needs about 2112"},
		{"rates are not checked", []string{"-rates", "5000"}, limit(10), ""},
		{"an unknown limit is not checked", []string{"-concurrency", "5000"}, func() (uint64, bool) { return 0, false }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			o, err := parseFlags(tt.args, &stderr)
			require.NoError(t, err)
			err = checkOpenFiles(o, tt.limit)
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.IsType(t, usageError{}, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestExcerpt(t *testing.T) {
	long := strings.Repeat("é", 400) // 2 bytes each
	tests := []struct{ in, want string }{
		{"  a\n\tb  ", "a b"},
		{"\xff\xfeok", "\uFFFDok"},
		{long, strings.Repeat("é", maxErrorMessage/2) + "…"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, excerpt([]byte(tt.in)))
	}
	assert.Equal(t, "HTTP 404: The model `x` does not exist.", httpError(404, []byte(`{"object":"error","message":"The model `+"`x`"+` does not exist.","type":"NotFoundError","code":404}`)), "vLLM")
	assert.Equal(t, "HTTP 404: model 'x' not found", httpError(404, []byte(`{"error":"model 'x' not found"}`)), "Ollama")
	assert.Equal(t, "HTTP 503 Service Unavailable", httpError(503, nil))
	assert.Equal(t, "HTTP 501: Error response Message: Unsupported method ('POST').",
		httpError(501, []byte("<html><head><title>Error response</title></head><body><p>Message: Unsupported method ('POST').</p></body></html>")), "an HTML error page")
	assert.Equal(t, "HTTP 500: a < b", httpError(500, []byte("a < b")), "not HTML")
}

// TestFailuresSayWhy: failures mid-run are counted by error_type per level,
// named in the findings, and records.jsonl keeps a short message beside
// each one's error_type.
func TestFailuresSayWhy(t *testing.T) {
	var n atomic.Int64
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if n.Add(1)%3 == 0 { // every third request the server sees (the preflight and the length probes among them)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error":{"message":"Rate limit reached","type":"rate_limit_error"}}`)
			return
		}
		streamAnswer(w, 4)
	}))
	t.Cleanup(s.Close)
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"-url", s.URL + "/v1", "-model", "m", "-concurrency", "1", "-requests", "6",
		"-warmup", "0", "-repeats", "1", "-out", dir}, realEnv(t, &stdout, &stderr))
	require.Equal(t, exitOK, code, "stderr: %s", stderr.String())
	res := readResults(t, dir)
	require.Len(t, res.Levels, 1)
	l := res.Levels[0]
	assert.Equal(t, map[string]int{"429": 2}, l.Failures)
	assert.Equal(t, "HTTP 429: Rate limit reached", l.FirstError)
	assert.Equal(t, 4, l.Summary.Completed)
	assert.Contains(t, stdout.String(), "Failed at 1 concurrent requests: 33.3% of requests (2 429), above the 5% a trusted level allows; first: HTTP 429: Rate limit reached.")
	assert.Contains(t, stderr.String(), "6 requests (2 failed: 2 429)")
	var failed int
	for i, line := range readRecords(t, dir) {
		if line.Record.Outcome != llmmetrics.OutcomeOK {
			failed++
			assert.Equal(t, llmmetrics.OutcomeError, line.Record.Outcome, "line %d", i)
			assert.Equal(t, "429", line.Record.ErrorType)
			assert.Equal(t, "HTTP 429: Rate limit reached", line.Error)
			continue
		}
		assert.Equal(t, llmmetrics.OutcomeOK, line.Record.Outcome, "line %d", i)
		assert.Empty(t, line.Error)
		assert.Empty(t, line.Record.ErrorType)
	}
	assert.Equal(t, 2, failed)
}
