package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// truthTimes is what a server recorded of one request.
type truthTimes struct {
	body                  int64
	bodyRead, first, last time.Time // whole body read; first and last chunk about to be written
	done                  time.Time // the answer's end written
}

// longServer answers a chat completion after reading its whole body:
// prefill after the body, then chunks of chunkBytes of text every gap,
// each timed as it is about to be written.
type longServer struct {
	prefill, gap       time.Duration
	chunks, chunkBytes int

	mu    sync.Mutex
	times []truthTimes
}

func (s *longServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n, err := io.Copy(io.Discard, r.Body)
	tt := truthTimes{body: n, bodyRead: time.Now()}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	content := strings.Repeat("x", s.chunkBytes)
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	next := tt.bodyRead.Add(s.prefill)
	for i := range s.chunks {
		time.Sleep(time.Until(next)) // the server's own schedule
		now := time.Now()
		if i == 0 {
			tt.first = now
		}
		tt.last = now
		fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"%s\"}}]}\n\n", content)
		fl.Flush()
		next = next.Add(s.gap)
	}
	fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\ndata: [DONE]\n\n", n/4, s.chunks, n/4+int64(s.chunks))
	fl.Flush()
	tt.done = time.Now()
	s.mu.Lock()
	s.times = append(s.times, tt)
	s.mu.Unlock()
}

// TestLongContext sends 100,000-token prompts (about 400 KB each) at
// concurrency 64 and reads answers of 64 chunks of 4 KB, against a server
// that times its own side: the time from having read the whole request to
// its first chunk (its TTFT), and from its first chunk to its last (its
// schedule, unless the client's reading held its writes back). The
// client's figures may not be below the server's (TTFT runs from the
// client's write of the request's last bytes, before the server read
// them, to the kernel's arrival of the first chunk, after it was
// written), and may not be far above: a client that drains long bodies
// or large chunks slowly (vLLM's benchmark client with aiohttp's 64 KB
// read buffer reported a TTFT of 134 s against 1.3 s at 50,000 tokens)
// would be seconds off.
func TestLongContext(t *testing.T) {
	if testing.Short() {
		t.Skip("25 MB of prompts")
	}
	const (
		concurrency = 64
		// Far above what the client's lag reaches when it keeps up (a few
		// ms at the median on an idle machine; up to ~150 ms for the
		// answer's end under the race detector with the other core busy,
		// where the client, building and writing 25 MB of requests, is
		// the bottleneck), far below the seconds of a client that drains
		// slowly (a reader of 256 bytes a millisecond: first to last
		// chunk 1.9 s against 0.3 s).
		bound = 250 * time.Millisecond
	)
	s := &longServer{prefill: 100 * time.Millisecond, gap: 5 * time.Millisecond, chunks: 64, chunkBytes: 4 << 10}
	mux := http.NewServeMux()
	mux.Handle("/v1/chat/completions", s)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"-url", srv.URL + "/v1", "-model", "m", "-concurrency", fmt.Sprint(concurrency),
		"-requests", fmt.Sprint(concurrency), "-warmup", "0", "-repeats", "1", "-input-tokens", "100000", "-output-tokens", "64",
		"-out", dir}, realEnv(t, &stdout, &stderr))
	require.Equal(t, exitOK, code, "stderr: %s", stderr.String())

	// The measured requests: not the preflight's and the length probes'
	// small ones.
	var truth []truthTimes
	s.mu.Lock()
	for _, tt := range s.times {
		if tt.body > 300_000 { // a 100,000-token prompt is several hundred KB
			truth = append(truth, tt)
		}
	}
	s.mu.Unlock()
	require.Equal(t, concurrency, len(truth), "requests with a long prompt")
	var recs []llmmetrics.Record
	for _, l := range readRecords(t, dir) {
		require.Equal(t, llmmetrics.OutcomeOK, l.Record.Outcome, l.Error)
		recs = append(recs, l.Record)
	}
	require.Len(t, recs, concurrency)

	var srvTTFT, srvGen, srvE2EL, cliTTFT, cliGen, cliE2EL []time.Duration
	for _, tt := range truth {
		srvTTFT = append(srvTTFT, tt.first.Sub(tt.bodyRead))
		srvGen = append(srvGen, tt.last.Sub(tt.first))
		srvE2EL = append(srvE2EL, tt.done.Sub(tt.bodyRead))
	}
	for _, r := range recs {
		assert.Equal(t, s.chunks, r.Chunks, "every chunk counted")
		cliTTFT = append(cliTTFT, r.FirstToken.Sub(r.Start))
		cliGen = append(cliGen, r.LastToken.Sub(r.FirstToken))
		cliE2EL = append(cliE2EL, r.End.Sub(r.Start))
	}
	// The client drained the answers as fast as the server wrote them: a
	// slow reader fills the socket buffers and holds the server's writes
	// back, past its schedule.
	schedule := time.Duration(s.chunks-1) * s.gap
	assert.Less(t, pctOf(srvGen, 50)-schedule, bound, "the server's first to last chunk %v (p50), its schedule %v", pctOf(srvGen, 50), schedule)
	st, ct := pctOf(srvTTFT, 50), pctOf(cliTTFT, 50)
	assert.GreaterOrEqual(t, ct, st, "TTFT p50: the client's is not below the server's")
	assert.Less(t, ct-st, bound, "TTFT p50: client %v, server %v", ct, st)
	sg, cg := pctOf(srvGen, 50), pctOf(cliGen, 50)
	assert.Less(t, (cg - sg).Abs(), bound, "first to last chunk p50: client %v, server %v", cg, sg)
	// The answer's end: a client that drains slowly ends its requests
	// late, and its throughput (tokens over the level's time) falls.
	se, ce := pctOf(srvE2EL, 50), pctOf(cliE2EL, 50)
	assert.Less(t, (ce - se).Abs(), bound, "E2EL p50: client %v, server %v", ce, se)
	t.Logf("p50: TTFT server %v, client %v; first to last chunk server %v, client %v; E2EL server %v, client %v; p90 TTFT server %v, client %v",
		st, ct, sg, cg, se, ce, pctOf(srvTTFT, 90), pctOf(cliTTFT, 90))
}

// pctOf is the p-th percentile of ds (numpy linear).
func pctOf(ds []time.Duration, p float64) time.Duration {
	fs := make([]float64, len(ds))
	for i, d := range slices.Sorted(slices.Values(ds)) {
		fs[i] = float64(d)
	}
	v, _ := llmmetrics.Percentile(fs, p)
	return time.Duration(v)
}
