package engine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/cmd/llmmetrics/internal/bench"
)

// promptRecorder is a reverse proxy that keeps the user message of every
// chat completion it forwards but bench's calibration probes (max tokens
// 1).
type promptRecorder struct {
	mu      sync.Mutex
	prompts []string
	next    http.Handler
}

func (p *promptRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req struct {
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
		MaxTokens int `json:"max_tokens"`
	}
	if json.Unmarshal(body, &req) == nil && len(req.Messages) > 0 && req.MaxTokens != 1 {
		p.mu.Lock()
		p.prompts = append(p.prompts, req.Messages[len(req.Messages)-1].Content)
		p.mu.Unlock()
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	p.next.ServeHTTP(w, r)
}

// TestBenchSweep runs "llmmetrics bench" against Ollama's OpenAI-compatible
// API, at 1, 2, 4 and 8 concurrent clients on 4 parallel slots: no request
// is lost, and every request's counts are Ollama's own. Each prompt bench
// sent is asked again on the native /api/chat: its eval_count is the
// max_tokens every record counts (the random model never stops early), and
// the records' input tokens are, one for one, the prompts'
// prompt_eval_count.
func TestBenchSweep(t *testing.T) {
	s := startOllama(t, "OLLAMA_NUM_PARALLEL=4")
	load(t, s.base)
	u, err := url.Parse(s.base)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.FlushInterval = -1
	proxy.Transport = newClient(t).Transport
	rec := &promptRecorder{next: proxy}
	front := httptest.NewServer(rec)
	t.Cleanup(front.Close)

	const maxTokens, perLevel = 24, 8
	levels := []float64{1, 2, 4, 8}
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	code := bench.Main(ctx, []string{
		"-url", front.URL + "/v1", "-model", modelName,
		"-concurrency", "1,2,4,8", "-requests", "8", "-warmup", "0", "-repeats", "1",
		"-max-tokens", "24", "-prompt-words", "12",
		"-slo", "ttft=30s,tpot=5s", "-out", out,
	}, &stdout, &stderr)
	t.Logf("bench:\n%s%s", stdout.String(), stderr.String())
	require.Equal(t, 0, code)

	lines := readRecords(t, filepath.Join(out, "records.jsonl"))
	require.Len(t, lines, len(levels)*perLevel, "every request is in records.jsonl")
	perLoad := map[float64]int{}
	var inputs []int
	for i, l := range lines {
		perLoad[l.Load]++
		r := l.Record
		assert.Equal(t, llmmetrics.OutcomeOK, r.Outcome, "record %d (load %v): %s", i, l.Load, r.ErrorType)
		assert.Equal(t, maxTokens, r.OutputTokens, "record %d: N", i)
		assert.Equal(t, maxTokens, r.Chunks, "record %d: one chunk per token", i)
		_, hasTTFT := r.TTFT()
		assert.True(t, hasTTFT, "record %d", i)
		inputs = append(inputs, r.InputTokens)
	}
	for _, l := range levels {
		assert.Equal(t, perLevel, perLoad[l], "level %v", l)
	}

	// The native answers to the same prompts.
	rec.mu.Lock()
	prompts := append([]string(nil), rec.prompts...)
	rec.mu.Unlock()
	require.GreaterOrEqual(t, len(prompts), len(lines), "the proxy saw every request")
	hc := newClient(t)
	native := make([]int, 0, len(prompts))
	for _, p := range prompts {
		var a chatLine
		require.NoError(t, post(ctx, hc, s.base+"/api/chat", map[string]any{
			"model": modelName, "stream": false,
			"messages": []map[string]string{{"role": "user", "content": p}},
			"options":  map[string]any{"num_predict": maxTokens},
		}, &a))
		assert.Equal(t, maxTokens, a.EvalCount, "eval_count of %q", p)
		native = append(native, a.PromptEvalCount)
	}
	assert.True(t, subMultiset(inputs, native),
		"every record's input tokens are the prompt_eval_count of a prompt bench sent, each once:\nrecords %v\nnative  %v", sorted(inputs), sorted(native))

	var results struct {
		Levels []json.RawMessage `json:"levels"`
	}
	data, err := os.ReadFile(filepath.Join(out, "results.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &results))
	assert.Len(t, results.Levels, len(levels))
}

// TestBenchLengths: every answer has the asked output length and the input
// lengths Ollama counts (prompt_eval_count, its chat template included)
// are the asked ones, within ±2 % or ±2 tokens for at least 95 % of the
// requests, for each API of Ollama that bench speaks: its OpenAI-compatible
// chat and its native /api/chat. Ollama has no tokenizer endpoint, so bench
// learns what Ollama counts for each filler word from probe requests' usage
// and builds prompts word by word (the test model's words count 2 or 3
// tokens each: one characters-per-token figure misses by a few tokens).
// The test model never ends an answer early.
func TestBenchLengths(t *testing.T) {
	s := startOllama(t, "OLLAMA_NUM_PARALLEL=4")
	load(t, s.base)
	for _, tc := range []struct{ api, url string }{
		{"chat", s.base + "/v1"},
		{"ollama", s.base},
	} {
		t.Run(tc.api, func(t *testing.T) {
			out := t.TempDir()
			var stdout, stderr bytes.Buffer
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
			defer cancel()
			code := bench.Main(ctx, []string{
				"-url", tc.url, "-model", modelName, "-api", tc.api,
				"-concurrency", "2", "-requests", "20", "-warmup", "0", "-repeats", "1",
				"-input-tokens", "uniform:40-400", "-output-tokens", "16", "-seed", "7",
				"-slo", "ttft=30s,tpot=5s", "-out", out,
			}, &stdout, &stderr)
			t.Logf("bench:\n%s%s", stdout.String(), stderr.String())
			require.Equal(t, 0, code)
			lines := readRecords(t, filepath.Join(out, "records.jsonl"))
			require.Len(t, lines, 20)
			within, exact := 0, 0
			for i, l := range lines {
				r := l.Record
				if r.InputTokens == l.AskedInput {
					exact++
				}
				require.Equal(t, llmmetrics.OutcomeOK, r.Outcome, "record %d: %s", i, r.ErrorType)
				assert.Equal(t, 16, l.AskedOutput, "record %d: -output-tokens", i)
				assert.Equal(t, l.AskedOutput, r.OutputTokens, "record %d: the asked output length", i)
				assert.GreaterOrEqual(t, l.AskedInput, 40, "record %d", i)
				assert.LessOrEqual(t, l.AskedInput, 400, "record %d", i)
				// ±2 % or ±2 tokens, whichever is larger.
				if float64(abs(r.InputTokens-l.AskedInput)) <= max(2, 0.02*float64(l.AskedInput)) {
					within++
				} else {
					t.Logf("record %d: asked %d input tokens, Ollama counted %d", i, l.AskedInput, r.InputTokens)
				}
			}
			t.Logf("%d of %d input lengths within ±2%% or ±2 tokens of the asked, %d exactly", within, len(lines), exact)
			assert.GreaterOrEqual(t, 20*within, 19*len(lines), "95 %% of the input lengths within ±2 %% or ±2 tokens")
			assert.Contains(t, stdout.String(), "token counting: calibrated per filler word")
		})
	}
}

func abs(x int) int { return max(x, -x) }

// recordLine is one line of records.jsonl (docs/command.md).
type recordLine struct {
	Load        float64           `json:"load"`
	Repeat      int               `json:"repeat"`
	Record      llmmetrics.Record `json:"record"`
	AskedInput  int               `json:"asked_input_tokens"`
	AskedOutput int               `json:"asked_output_tokens"`
}

func readRecords(t *testing.T, path string) []recordLine {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []recordLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var l recordLine
		require.NoError(t, json.Unmarshal(sc.Bytes(), &l))
		out = append(out, l)
	}
	require.NoError(t, sc.Err())
	return out
}

// subMultiset reports whether every value of a is in b, as many times at
// least.
func subMultiset(a, b []int) bool {
	left := map[int]int{}
	for _, v := range b {
		left[v]++
	}
	for _, v := range a {
		if left[v] == 0 {
			return false
		}
		left[v]--
	}
	return true
}

func sorted(v []int) []int {
	out := append([]int(nil), v...)
	sort.Ints(out)
	return out
}

func TestSubMultiset(t *testing.T) {
	assert.True(t, subMultiset([]int{3, 1, 3}, []int{3, 3, 1, 7}))
	assert.False(t, subMultiset([]int{3, 3, 3}, []int{3, 3, 1}))
	assert.False(t, subMultiset([]int{2}, nil))
	assert.True(t, subMultiset(nil, nil))
}
