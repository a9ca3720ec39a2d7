package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Token counts of the test servers: one token a word (split at spaces);
// one a word plus one for each of its vowels (words of the same length
// count differently); ⌈characters/4⌉ (tokens cross the spaces).
func countWords(s string) int { return len(strings.Fields(s)) }

func countVowels(s string) int {
	n := 0
	for _, w := range strings.Fields(s) {
		n += 1 + strings.Count(w, "a") + strings.Count(w, "e") + strings.Count(w, "i") + strings.Count(w, "o") + strings.Count(w, "u")
	}
	return n
}

func countQuarters(s string) int { return (len(s) + 3) / 4 }

// wordServer is a model server whose tokenizer counts words (split at
// spaces) and whose chat template adds 9 tokens, and 4 more for each
// message after the first; with tokenize it serves vLLM's /tokenize too,
// and its /v1/models tells a context of 4,096.
func wordServer(t *testing.T, tokenize bool) *httptest.Server {
	return countServer(t, tokenize, countWords, false)
}

// countServer is wordServer with another token count; with dropSystem its
// template leaves system messages out.
func countServer(t *testing.T, tokenize bool, words func(string) int, dropSystem bool) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"object":"list","data":[{"id":"m","object":"model","max_model_len":4096}]}`)
	})
	if tokenize {
		mux.HandleFunc("POST /tokenize", func(w http.ResponseWriter, r *http.Request) {
			var req struct{ Prompt string }
			_ = json.NewDecoder(r.Body).Decode(&req)
			fmt.Fprintf(w, `{"count":%d,"max_model_len":4096,"tokens":[]}`, words(req.Prompt))
		})
	}
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct{ Role, Content string } `json:"messages"`
		}
		require.NoError(t, json.NewDecoder(r.Body).Decode(&req))
		if dropSystem && len(req.Messages) > 0 && req.Messages[0].Role == "system" {
			req.Messages = req.Messages[1:]
		}
		n := 9
		for i, m := range req.Messages {
			n += words(m.Content) + 4*min(i, 1)
		}
		w.Header().Set("Content-Type", "text/event-stream")
		// "hm": one token by every count here, as the usage says.
		fmt.Fprint(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"hm\"},\"finish_reason\":null}]}\n\n")
		fmt.Fprint(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\n")
		fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":1,\"total_tokens\":%d}}\n\n", n, n+1)
		fmt.Fprint(w, "data: [DONE]\n\n")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestCalibration: on a server that counts tokens its own way, prompts
// are sized from its /tokenize (or, without one, from probe requests'
// usage) so that it counts the lengths asked, template included: exactly
// where each word counts the same wherever it is, by one characters-per-
// token figure (within ±2 % or ±2 tokens) where tokens cross words.
func TestCalibration(t *testing.T) {
	for _, tc := range []struct {
		name     string
		tokenize bool
		count    func(string) int
		via      string
		exact    bool
	}{
		{"tokenize endpoint", true, countWords, "per filler word from the server's /tokenize", true},
		{"usage probes", false, countWords, "per filler word from the server's usage of probe requests", true},
		{"words of different counts", false, countVowels, "per filler word from the server's usage of probe requests", true},
		{"words of different counts, tokenize endpoint", true, countVowels, "per filler word from the server's /tokenize", true},
		{"tokens across words", false, countQuarters, "per-word counts unusable: a check prompt of", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := countServer(t, tc.tokenize, tc.count, false)
			dir := t.TempDir()
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{"-url", srv.URL + "/v1", "-model", "m", "-concurrency", "2", "-requests", "40",
				"-repeats", "1", "-warmup", "0", "-input-tokens", "uniform:50-2000", "-output-tokens", "1", "-out", dir},
				env{stdout: &stdout, stderr: &stderr})
			require.Equal(t, exitOK, code, stderr.String())
			res := readResults(t, dir)
			assert.Contains(t, res.Workload.TokenCounting, tc.via)
			assert.Contains(t, res.Workload.TokenCounting, "9 tokens of template")
			within := 0
			recs := readRecords(t, dir)
			require.Len(t, recs, 40)
			for i, l := range recs {
				if withinBound(l.AskedInputTokens, l.Record.InputTokens) {
					within++
				}
				if tc.exact {
					assert.Equal(t, l.AskedInputTokens, l.Record.InputTokens, "record %d", i)
				}
			}
			assert.GreaterOrEqual(t, within, 38, "95 %% within ±2 %% or ±2 tokens")
			assert.NotContains(t, stderr.String(), "warning: the server counted input lengths")
			assert.Contains(t, stdout.String(), "token counting: calibrated")
		})
	}
}

// TestCalibrationTemplate: sessions of 3 turns with a shared system
// prompt are counted as asked, what the template adds for the system
// message and for each earlier exchange included (the answers counted as
// the server's output tokens); a template that drops the system message is
// named, and the lengths then warned about.
func TestCalibrationTemplate(t *testing.T) {
	for _, tc := range []struct {
		name       string
		tokenize   bool
		dropSystem bool
		says       []string
	}{
		{"usage probes", false, false, []string{"a system message adds 4 tokens of template", "each earlier exchange adds 8 tokens of template"}},
		{"tokenize endpoint", true, false, []string{"a system message adds 4 tokens of template", "each earlier exchange adds 8 tokens of template"}},
		{"system dropped", false, true, []string{"the chat template drops the system message", "each earlier exchange adds 8 tokens of template"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := countServer(t, tc.tokenize, countVowels, tc.dropSystem)
			dir := t.TempDir()
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{"-url", srv.URL + "/v1", "-model", "m", "-concurrency", "2", "-requests", "30",
				"-repeats", "1", "-warmup", "0", "-turns", "3", "-prefix-tokens", "60", "-input-tokens", "uniform:20-200",
				"-output-tokens", "1", "-out", dir}, env{stdout: &stdout, stderr: &stderr})
			require.Equal(t, exitOK, code, stderr.String())
			res := readResults(t, dir)
			for _, s := range tc.says {
				assert.Contains(t, res.Workload.TokenCounting, s)
			}
			recs := readRecords(t, dir)
			require.Len(t, recs, 30)
			turns := map[int]int{}
			for i, l := range recs {
				turns[l.Turn]++
				if tc.dropSystem {
					assert.Less(t, l.Record.InputTokens, l.AskedInputTokens, "record %d: the system prompt is not counted", i)
				} else {
					assert.Equal(t, l.AskedInputTokens, l.Record.InputTokens, "record %d (turn %d)", i, l.Turn)
				}
			}
			assert.Equal(t, map[int]int{1: 10, 2: 10, 3: 10}, turns)
			if tc.dropSystem {
				assert.Contains(t, stderr.String(), "warning: the server counted input lengths other than asked")
			}
		})
	}
}

// TestContextClamp: lengths drawn past the model's context (from
// /v1/models) are clamped to it.
func TestContextClamp(t *testing.T) {
	srv := wordServer(t, true)
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"-url", srv.URL + "/v1", "-model", "m", "-concurrency", "1", "-requests", "3",
		"-repeats", "1", "-warmup", "0", "-input-tokens", "9000", "-output-tokens", "1", "-out", dir}, env{stdout: &stdout, stderr: &stderr})
	require.Equal(t, exitOK, code, stderr.String())
	for _, l := range readRecords(t, dir) {
		assert.Equal(t, 4096, l.AskedInputTokens)
		assert.InDelta(t, 4096, l.Record.InputTokens, 2)
	}
}

func TestWithinBound(t *testing.T) {
	for _, tc := range []struct {
		asked, actual int
		want          bool
	}{
		{10, 12, true}, {10, 13, false}, {10, 8, true}, {10, 7, false}, // ±2 tokens
		{1000, 1020, true}, {1000, 1021, false}, {1000, 980, true}, {1000, 979, false}, // ±2 %
	} {
		t.Run(fmt.Sprint(tc.asked, "→", tc.actual), func(t *testing.T) {
			assert.Equal(t, tc.want, withinBound(tc.asked, tc.actual))
		})
	}
}

// TestCalibrationNoUsage: a server whose answers carry no usage gets a
// handful of probes, not one for each filler word, and the run says that
// lengths are sized at 4 characters a token.
func TestCalibrationNoUsage(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		requests.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"hm\"},\"finish_reason\":\"length\"}]}\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"-url", srv.URL + "/v1", "-model", "m", "-concurrency", "1", "-requests", "4",
		"-repeats", "1", "-warmup", "0", "-input-tokens", "100", "-output-tokens", "1", "-out", dir}, env{stdout: &stdout, stderr: &stderr})
	require.Equal(t, exitOK, code, stderr.String())
	res := readResults(t, dir)
	assert.Contains(t, res.Workload.TokenCounting, "assumed 4 characters a token")
	assert.Contains(t, res.Workload.TokenCounting, "per-word counts unusable: the server did not count the anchor word")
	// 4 measured, the preflight, the anchor word and the two probe texts.
	assert.LessOrEqual(t, requests.Load(), int64(4+1+3))
}
