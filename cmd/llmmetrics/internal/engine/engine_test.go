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
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmmetrics/llmmetrics"
)

// Timing bounds between what a client measures and what Ollama reports of
// the same request (TestNativeTimings):
//
//   - TTFT ≥ prompt_eval_duration, and the time to the last token ≥
//     prompt_eval_duration + eval_duration, always: Ollama's prompt time
//     sums the decode calls while the request's prompt is processed (the
//     first token's included), its eval time those of tokens 2…N, disjoint
//     intervals all between the request's arrival and its last token.
//   - TPOT against eval_duration / eval_count: eval_duration lies between
//     the first and the last token the server sends, so the ratio TPOT ÷
//     (eval_duration / eval_count) is about (N−1)/N or more, plus what the
//     client adds (sampling, Ollama's HTTP relay, the proxy, the
//     scheduler's gaps), and less when the first token reaches the client
//     late and the next ones catch up: on a busy machine a whole stream
//     sometimes arrives in one burst. On a 2-core machine at a load average
//     of 13–24, 336 requests in 42 runs of 8 gave ratios of 0.21 to 1.63
//     per request and means of 0.96 to 1.23 per run. So the mean of a
//     run's ratios must be within [tpotMeanLow, tpotMeanHigh], with a
//     margin beyond both ends, and one request's ratio within [1/10, 10]:
//     the same order of magnitude (a TPOT divided by the wrong N, or in the
//     wrong unit, is not).
const (
	tpotMeanLow, tpotMeanHigh = 0.7, 1.6
	tpotLow, tpotHigh         = 0.1, 10.0
)

// requestIDKey carries a test's request number to WithOnEnd.
type requestIDKey struct{}

// records collects the Records of a Tracker by request number.
type records struct {
	mu   sync.Mutex
	byID map[int]llmmetrics.Record
	all  []llmmetrics.Record
}

func (r *records) onEnd(ctx context.Context, rec llmmetrics.Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all = append(r.all, rec)
	if id, ok := ctx.Value(requestIDKey{}).(int); ok {
		if r.byID == nil {
			r.byID = map[int]llmmetrics.Record{}
		}
		r.byID[id] = rec
	}
}

// measuredProxy is a reverse proxy to the server, measured by
// llmmetrics.NewHandler; the X-Test-Request header's number reaches the
// Record through the request's context.
func measuredProxy(t *testing.T, base string, recs *records) *httptest.Server {
	t.Helper()
	u, err := url.Parse(base)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.FlushInterval = -1 // every write reaches the client at once
	proxy.Transport = newClient(t).Transport
	tr, err := llmmetrics.NewTracker(llmmetrics.WithOnEnd(recs.onEnd))
	require.NoError(t, err)
	measured := llmmetrics.NewHandler(tr, proxy)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var id int
		if _, err := fmt.Sscan(r.Header.Get("X-Test-Request"), &id); err == nil {
			r = r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id))
		}
		measured.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// load sends one short native request so the model is in memory before
// anything is timed, and checks that generation runs to the token limit.
func load(t *testing.T, base string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), createTimeout)
	defer cancel()
	var a nativeAnswer
	require.NoError(t, post(ctx, newClient(t), base+"/api/generate", map[string]any{
		"model": modelName, "prompt": "hello there", "stream": false,
		"options": map[string]any{"num_predict": 4},
	}, &a))
	require.Equal(t, 4, a.EvalCount, "the random model never stops before the limit: %+v", a)
	require.Equal(t, "length", a.DoneReason)
}

// chatLine is one line of a native /api/chat stream.
type chatLine struct {
	Message struct {
		Content string `json:"content"`
	} `json:"message"`
	nativeAnswer
}

// TestNativeTimings: 8 streaming /api/chat requests at once (4 run, 4 wait
// in Ollama's queue) through NewHandler. For each, the Record counts what
// Ollama's last line reports (eval_count tokens, prompt_eval_count input
// tokens, one chunk per token: the random model's tokens are all plain
// pieces), its TTFT is never below prompt_eval_duration nor its time to
// the last token below prompt_eval_duration + eval_duration, and its TPOT
// is within the bounds above of eval_duration / eval_count.
func TestNativeTimings(t *testing.T) {
	s := startOllama(t, "OLLAMA_NUM_PARALLEL=4")
	load(t, s.base)
	recs := &records{}
	proxy := measuredProxy(t, s.base, recs)

	const clients, maxTokens = 8, 32
	hc := newClient(t)
	answers := make([]chatLine, clients)
	contentLines := make([]int, clients)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			body := map[string]any{
				"model":    modelName,
				"messages": []map[string]string{{"role": "user", "content": fmt.Sprintf("request %d: the queue grows when the batch is full", i)}},
				"options":  map[string]any{"num_predict": maxTokens},
			}
			answers[i], contentLines[i] = streamChat(ctx, t, hc, proxy.URL, i, body)
		})
	}
	wg.Wait()
	require.False(t, t.Failed())

	recs.mu.Lock()
	defer recs.mu.Unlock()
	require.Len(t, recs.byID, clients, "every request has its Record")
	var ratios float64
	for i, a := range answers {
		rec := recs.byID[i]
		t.Run(fmt.Sprint("request ", i), func(t *testing.T) {
			require.True(t, a.Done, "the stream ended with Ollama's figures")
			assert.Equal(t, llmmetrics.OutcomeOK, rec.Outcome)
			assert.Equal(t, maxTokens, a.EvalCount, "generation runs to num_predict")
			assert.Equal(t, a.EvalCount, rec.OutputTokens, "N is eval_count")
			assert.Equal(t, a.PromptEvalCount, rec.InputTokens, "input tokens are prompt_eval_count")
			assert.Equal(t, contentLines[i], rec.Chunks, "one chunk per line with content")
			assert.Equal(t, a.EvalCount, rec.Chunks, "one line per token")

			ttft, ok := rec.TTFT()
			require.True(t, ok)
			prompt := time.Duration(a.PromptEvalDuration)
			assert.GreaterOrEqual(t, ttft, prompt, "TTFT %v below prompt_eval_duration %v", ttft, prompt)
			toLast, eval := rec.LastToken.Sub(rec.Start), time.Duration(a.EvalDuration)
			assert.GreaterOrEqual(t, toLast, prompt+eval, "time to the last token %v below prompt_eval_duration + eval_duration %v", toLast, prompt+eval)

			tpot, ok := rec.TPOT()
			require.True(t, ok)
			perToken := eval / time.Duration(a.EvalCount)
			ratio := float64(tpot) / float64(perToken)
			ratios += ratio
			t.Logf("TTFT %v, prompt_eval_duration %v; TPOT %v, eval_duration/eval_count %v (×%.2f)", ttft, prompt, tpot, perToken, ratio)
			assert.GreaterOrEqual(t, ratio, tpotLow, "TPOT %v vs eval_duration/eval_count %v", tpot, perToken)
			assert.LessOrEqual(t, ratio, tpotHigh, "TPOT %v vs eval_duration/eval_count %v", tpot, perToken)
		})
	}
	mean := ratios / clients
	t.Logf("mean TPOT ÷ (eval_duration / eval_count): %.2f", mean)
	assert.GreaterOrEqual(t, mean, tpotMeanLow)
	assert.LessOrEqual(t, mean, tpotMeanHigh)
}

// streamChat sends a streaming /api/chat request and returns its last line
// and how many lines carried content.
func streamChat(ctx context.Context, t *testing.T, hc *http.Client, base string, id int, body any) (last chatLine, content int) {
	b, err := json.Marshal(body)
	if !assert.NoError(t, err) {
		return
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/chat", bytes.NewReader(b))
	if !assert.NoError(t, err) {
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Test-Request", fmt.Sprint(id))
	resp, err := hc.Do(req)
	if !assert.NoError(t, err) {
		return
	}
	defer resp.Body.Close()
	if !assert.Equal(t, http.StatusOK, resp.StatusCode) {
		return
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var line chatLine
		if !assert.NoError(t, json.Unmarshal(sc.Bytes(), &line), "%s", sc.Bytes()) {
			return
		}
		if line.Message.Content != "" {
			content++
		}
		last = line
	}
	assert.NoError(t, sc.Err())
	return last, content
}

// TestQueueFull503: with OLLAMA_MAX_QUEUE=1, requests that arrive while the
// model is still loading find the queue full and get 503. Eight requests
// sent at once through a measured client (NewTransport) and a measured
// proxy (NewHandler): both count each 503 as an error with error.type
// "503", and each success as OK.
func TestQueueFull503(t *testing.T) {
	s := startOllama(t, "OLLAMA_NUM_PARALLEL=1", "OLLAMA_MAX_QUEUE=1")
	serverRecs := &records{}
	proxy := measuredProxy(t, s.base, serverRecs)
	clientRecs := &records{}
	tr, err := llmmetrics.NewTracker(llmmetrics.WithOnEnd(clientRecs.onEnd))
	require.NoError(t, err)
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	client := &http.Client{Transport: llmmetrics.NewTransport(tr, base)}

	const clients = 8
	statuses := make([]int, clients)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"queue %d"}],"stream":true,"stream_options":{"include_usage":true},"max_tokens":8}`, modelName, i)
			req, err := http.NewRequestWithContext(context.WithValue(ctx, requestIDKey{}, i), http.MethodPost, proxy.URL+"/v1/chat/completions", bytes.NewReader([]byte(body)))
			if !assert.NoError(t, err) {
				return
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Test-Request", fmt.Sprint(i))
			<-start
			resp, err := client.Do(req)
			if !assert.NoError(t, err) {
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			statuses[i] = resp.StatusCode
		})
	}
	close(start) // all at once, while the model is not loaded
	wg.Wait()
	require.False(t, t.Failed())

	var ok, full int
	for _, code := range statuses {
		switch code {
		case http.StatusOK:
			ok++
		case http.StatusServiceUnavailable:
			full++
		default:
			t.Errorf("status %d: only 200 and 503 are expected", code)
		}
	}
	t.Logf("%d answered, %d refused with 503", ok, full)
	require.Positive(t, full, "the queue of 1 overflowed")
	require.Positive(t, ok, "the first request is served")

	for name, recs := range map[string]*records{"NewTransport": clientRecs, "NewHandler": serverRecs} {
		t.Run(name, func(t *testing.T) {
			recs.mu.Lock()
			defer recs.mu.Unlock()
			require.Len(t, recs.byID, clients)
			for i, code := range statuses {
				rec := recs.byID[i]
				if code == http.StatusServiceUnavailable {
					assert.Equal(t, llmmetrics.OutcomeError, rec.Outcome, "request %d", i)
					assert.Equal(t, "503", rec.ErrorType, "request %d", i)
					assert.Zero(t, rec.OutputTokens, "request %d", i)
				} else {
					assert.Equal(t, llmmetrics.OutcomeOK, rec.Outcome, "request %d", i)
					assert.Empty(t, rec.ErrorType, "request %d", i)
					assert.Equal(t, 8, rec.OutputTokens, "request %d: max_tokens, never an early stop", i)
				}
			}
		})
	}
}
