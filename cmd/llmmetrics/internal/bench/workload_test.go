package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmmetrics/llmmetrics/llmmetricstest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// received is one request as the server received it, and the answer it received.
type received struct {
	at, answered time.Time
	path         string
	body         []byte
	answer       []byte
}

// recorder is a transport that keeps what passes through it.
type recorder struct {
	base http.RoundTripper
	mu   sync.Mutex
	reqs []*received
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	s := &received{at: time.Now(), path: req.URL.RequestURI()}
	s.body, _ = io.ReadAll(req.Body)
	req.Body = io.NopCloser(bytes.NewReader(s.body))
	r.mu.Lock()
	r.reqs = append(r.reqs, s)
	r.mu.Unlock()
	resp, err := r.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	s.answer, _ = io.ReadAll(resp.Body)
	s.answered = time.Now()
	resp.Body = io.NopCloser(bytes.NewReader(s.answer))
	return resp, nil
}

// runWorkload runs bench with args in a bubble against the in-memory fake
// server and returns what it received, the exit code, stderr and the server.
func runWorkload(t *testing.T, dir string, args ...string) ([]*received, int, string, *llmmetricstest.Server) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	var srv *llmmetricstest.Server
	rec := &recorder{}
	e := testEnv(&stdout, &stderr, &srv)
	e.wrap = func(base http.RoundTripper) http.RoundTripper { rec.base = base; return rec }
	code := run(context.Background(), append([]string{"-speedup", "20", "-repeats", "1", "-warmup", "0", "-out", dir}, args...), e)
	reqs := rec.reqs
	if len(reqs) > 0 {
		reqs = reqs[1:] // the preflight's
	}
	return reqs, code, stderr.String(), srv
}

// TestWorkloadEveryAPI: each API's requests reach its path in its own
// shape, with the asked input length counted by the server and the asked
// output length produced.
func TestWorkloadEveryAPI(t *testing.T) {
	for _, tc := range []struct {
		api, path string
		eos       bool
	}{
		{"chat", "/v1/chat/completions", true},
		{"completions", "/v1/completions", true},
		{"responses", "/v1/responses", false},
		{"anthropic", "/v1/messages", false},
		{"gemini", "/v1beta/models/llmmetricstest-model:streamGenerateContent?alt=sse", false},
		{"ollama", "/api/chat", false},
	} {
		t.Run(tc.api, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				dir := t.TempDir()
				args := []string{"-api", tc.api, "-concurrency", "2", "-requests", "6", "-input-tokens", "uniform:30-90", "-output-tokens", "7"}
				if tc.eos {
					args = append(args, "-ignore-eos")
				}
				reqs, code, stderr, srv := runWorkload(t, dir, args...)
				require.Equal(t, exitOK, code, stderr)
				require.Len(t, reqs, 6)
				for _, r := range reqs {
					assert.Equal(t, tc.path, r.path)
					var v map[string]any
					require.NoError(t, json.Unmarshal(r.body, &v))
					assert.Equal(t, tc.eos, v["ignore_eos"] == true)
				}
				recs := readRecords(t, dir)
				require.Len(t, recs, 6)
				asked := 0
				for _, l := range recs {
					assert.Equal(t, l.AskedInputTokens, l.Record.InputTokens, "the server counts the length asked")
					assert.GreaterOrEqual(t, l.AskedInputTokens, 30)
					assert.LessOrEqual(t, l.AskedInputTokens, 90)
					assert.Equal(t, 7, l.AskedOutputTokens)
					assert.Equal(t, 7, l.Record.OutputTokens)
					assert.Equal(t, 1, l.Turn)
					assert.Nil(t, l.PrefixGroup)
					asked += l.AskedInputTokens
				}
				assert.Equal(t, asked+16, srv.Stats().PromptTokens, "the requests' and the preflight's 16")
				res := readResults(t, dir)
				require.NotNil(t, res.Workload)
				assert.Equal(t, tc.api, res.Workload.API)
				require.NotNil(t, res.Levels[0].Lengths)
				assert.Equal(t, 1.0, res.Levels[0].Lengths.InputWithin)
			})
		})
	}
}

// chatSystem returns a chat body's system message ("" none) and its other
// messages.
func chatMessages(t *testing.T, body []byte) (string, []map[string]string) {
	t.Helper()
	var v struct {
		Messages []map[string]string `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(body, &v))
	if len(v.Messages) > 0 && v.Messages[0]["role"] == "system" {
		return v.Messages[0]["content"], v.Messages[1:]
	}
	return "", v.Messages
}

// TestWorkloadSharedPrefix: G system prompts of N tokens, byte for byte
// the same within a group; the fake server's cache hits them.
func TestWorkloadSharedPrefix(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		reqs, code, stderr, srv := runWorkload(t, dir, "-concurrency", "1", "-requests", "8", "-prefix-tokens", "64", "-prefix-groups", "2", "-input-tokens", "20")
		require.Equal(t, exitOK, code, stderr)
		require.Len(t, reqs, 8)
		systems := map[string]int{}
		for i, r := range reqs {
			sys, msgs := chatMessages(t, r.body)
			assert.Len(t, sys, 64*4)
			assert.Len(t, msgs[0]["content"], 20*4)
			systems[sys]++
			if i >= 2 {
				prev, _ := chatMessages(t, reqs[i-2].body)
				assert.Equal(t, prev, sys, "request %d has the system prompt of request %d", i, i-2)
			}
		}
		assert.Len(t, systems, 2)
		// Each group's first request misses; the 6 others hit all 64 tokens.
		assert.Equal(t, 6*64, srv.Stats().CachedPromptTokens)
		groups := map[int]int{}
		for _, l := range readRecords(t, dir) {
			require.NotNil(t, l.PrefixGroup)
			groups[*l.PrefixGroup]++
			assert.Equal(t, 84, l.AskedInputTokens)
		}
		assert.Equal(t, map[int]int{0: 4, 1: 4}, groups)
		res := readResults(t, dir)
		assert.InDelta(t, 6*64.0/(8*84), res.Levels[0].Summary.PrefixCacheHitRate, 1e-9)
	})
}

// deltas returns a chat stream's text, parsed here independently.
func deltas(t *testing.T, stream []byte) string {
	var b strings.Builder
	for _, line := range strings.Split(string(stream), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ev struct {
			Choices []struct {
				Delta struct{ Content string } `json:"delta"`
			} `json:"choices"`
		}
		require.NoError(t, json.Unmarshal([]byte(data), &ev))
		if len(ev.Choices) > 0 {
			b.WriteString(ev.Choices[0].Delta.Content)
		}
	}
	return b.String()
}

// TestWorkloadSessions: a session's turns carry the earlier prompts and the
// answers as the server streamed them, after the think time.
func TestWorkloadSessions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		reqs, code, stderr, srv := runWorkload(t, dir, "-concurrency", "1", "-requests", "6", "-turns", "3", "-think-time", "2s", "-input-tokens", "25", "-output-tokens", "5")
		require.Equal(t, exitOK, code, stderr)
		require.Len(t, reqs, 6)
		for i, r := range reqs {
			turn := i%3 + 1
			_, msgs := chatMessages(t, r.body)
			require.Len(t, msgs, 2*turn-1)
			if turn == 1 {
				continue
			}
			prev := reqs[i-1]
			_, prevMsgs := chatMessages(t, prev.body)
			assert.Equal(t, prevMsgs, msgs[:len(prevMsgs)], "turn %d starts with turn %d's messages", turn, turn-1)
			answer := msgs[len(prevMsgs)]
			assert.Equal(t, "assistant", answer["role"])
			assert.Equal(t, deltas(t, prev.answer), answer["content"], "the answer received, fed back")
			assert.NotEmpty(t, answer["content"])
			assert.Equal(t, 2*time.Second, r.at.Sub(prev.answered).Round(time.Millisecond), "the think time")
		}
		recs := readRecords(t, dir)
		var turns, sessions []int
		for _, l := range recs {
			turns, sessions = append(turns, l.Turn), append(sessions, l.Session)
			assert.Equal(t, l.AskedInputTokens, l.Record.InputTokens)
		}
		slices.Sort(turns)
		assert.Equal(t, []int{1, 1, 2, 2, 3, 3}, turns)
		assert.ElementsMatch(t, []int{0, 0, 0, 1, 1, 1}, sessions)
		assert.Positive(t, srv.Stats().CachedPromptTokens, "later turns hit the earlier turns' blocks")
	})
}

// TestWorkloadReplay: a trace's requests arrive at their recorded times
// (scaled), and equal hash ids give byte-identical prefix blocks.
func TestWorkloadReplay(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "trace.jsonl")
	require.NoError(t, os.WriteFile(trace, []byte(`{"timestamp": 0, "input_length": 600, "output_length": 4, "hash_ids": [7, 8]}
{"timestamp": 10, "input_length": 520, "output_length": 3, "hash_ids": [7, 9]}
{"timestamp": 10, "input_length": 100, "output_length": 2, "hash_ids": [10]}
{"timestamp": 250.5, "input_length": 1100, "output_length": 6, "hash_ids": [7, 8, 11]}
{"timestamp": 1400, "input_length": 30, "output_length": 1, "hash_ids": [12]}
`), 0o644))
	for _, scale := range []float64{1, 0.5} {
		t.Run("time-scale "+strconv.FormatFloat(scale, 'g', -1, 64), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				dir := t.TempDir()
				reqs, code, stderr, srv := runWorkload(t, dir, "-trace", trace, "-time-scale", strconv.FormatFloat(scale, 'g', -1, 64))
				require.Equal(t, exitOK, code, stderr)
				require.Len(t, reqs, 5)
				want := []float64{0, 10, 10, 250.5, 1400}
				start := reqs[0].at
				var prompts []string
				for i, r := range reqs {
					got := r.at.Sub(start)
					assert.InDelta(t, want[i]*scale*float64(time.Millisecond), float64(got), float64(time.Millisecond), "request %d", i)
					_, msgs := chatMessages(t, r.body)
					prompts = append(prompts, msgs[0]["content"])
				}
				byLen := map[int]string{}
				for _, p := range prompts {
					byLen[len(p)/4] = p
				}
				require.Len(t, byLen, 5)
				const block = 512 * 4
				assert.Equal(t, byLen[600][:block], byLen[520][:block], "hash id 7")
				assert.Equal(t, byLen[600], byLen[1100][:600*4], "hash ids 7, 8")
				assert.NotEqual(t, byLen[600][block:520*4], byLen[520][block:], "ids 8 and 9 differ")
				assert.Positive(t, srv.Stats().CachedPromptTokens)
				res := readResults(t, dir)
				assert.Equal(t, ModeReplay, res.Mode)
				require.Len(t, res.Levels, 1)
				assert.Equal(t, 1/scale, res.Levels[0].Load)
				assert.Equal(t, "trace", res.Workload.Source)
				assert.Len(t, res.Workload.SHA256, 64)
				outs := 0
				for _, l := range readRecords(t, dir) {
					outs += l.Record.OutputTokens
					assert.Equal(t, l.AskedInputTokens, l.Record.InputTokens)
				}
				assert.Equal(t, 4+3+2+6+1, outs)
			})
		})
	}
}

// TestWorkloadDataset: a dataset's prompts are received as written; the
// results name the file and its hash, and the entries that cannot be received.
func TestWorkloadDataset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join("..", "workload", "testdata", "prompts.txt")
		reqs, code, stderr, _ := runWorkload(t, dir, "-concurrency", "1", "-requests", "4", "-dataset", path)
		require.Equal(t, exitOK, code, stderr)
		var got []string
		for _, r := range reqs {
			_, msgs := chatMessages(t, r.body)
			got = append(got, msgs[0]["content"])
		}
		assert.Equal(t, []string{"First prompt", "Second prompt", "Third prompt", "First prompt"}, got)
		res := readResults(t, dir)
		assert.Equal(t, "dataset", res.Workload.Source)
		assert.Equal(t, "prompts", res.Workload.Format)
		assert.Equal(t, path, res.Workload.Path)
		assert.Len(t, res.Workload.SHA256, 64)

		dir = t.TempDir()
		sharegpt := filepath.Join("..", "workload", "testdata", "sharegpt.json")
		_, code, stderr, _ = runWorkload(t, dir, "-concurrency", "1", "-requests", "2", "-dataset", sharegpt)
		require.Equal(t, exitOK, code, stderr)
		res = readResults(t, dir)
		assert.Equal(t, 1, res.Workload.SkippedCount)
		assert.Contains(t, res.Workload.Skipped[0], `entry 2 (id "b2"): no human turn`)
	})
}

// TestWorkloadSameSeedSameBodies: two runs with the same flags send the
// same bytes; another seed, other bytes.
func TestWorkloadSameSeedSameBodies(t *testing.T) {
	bodies := func(seed string) [][]byte {
		var out [][]byte
		synctest.Test(t, func(t *testing.T) {
			reqs, code, stderr, _ := runWorkload(t, t.TempDir(), "-concurrency", "1", "-requests", "5", "-seed", seed,
				"-input-tokens", "lognormal:60,20", "-output-tokens", "uniform:2-6", "-prefix-tokens", "16")
			require.Equal(t, exitOK, code, stderr)
			for _, r := range reqs {
				out = append(out, r.body)
			}
		})
		return out
	}
	a := bodies("3")
	assert.Equal(t, a, bodies("3"))
	assert.NotEqual(t, a, bodies("4"))
}

// TestWorkloadSameSessionsConcurrently: with concurrent sessions the same
// sessions are received whatever the timing (their first turns' bodies, as a
// set; later turns carry answers, which depend on the server's order).
func TestWorkloadSameSessionsConcurrently(t *testing.T) {
	firstTurns := func(speedup string) []string {
		var out []string
		synctest.Test(t, func(t *testing.T) {
			reqs, code, stderr, _ := runWorkload(t, t.TempDir(), "-concurrency", "3", "-requests", "6", "-repeats", "2", "-speedup", speedup,
				"-turns", "2", "-input-tokens", "uniform:10-90", "-output-tokens", "uniform:1-9")
			require.Equal(t, exitOK, code, stderr)
			for _, r := range reqs {
				if _, msgs := chatMessages(t, r.body); len(msgs) == 1 {
					out = append(out, string(r.body))
				}
			}
		})
		slices.Sort(out)
		return out
	}
	a := firstTurns("20")
	assert.Len(t, a, 6, "3 sessions of 2 turns in each of 2 repeats")
	assert.Equal(t, a, firstTurns("3"))
}

// TestWorkloadBadInput: the user's mistakes exit 2 and say where.
func TestWorkloadBadInput(t *testing.T) {
	tmp := t.TempDir()
	back := filepath.Join(tmp, "back.jsonl")
	require.NoError(t, os.WriteFile(back, []byte("{\"timestamp\": 5, \"input_length\": 9, \"output_length\": 1}\n{\"timestamp\": 4, \"input_length\": 9, \"output_length\": 1}\n"), 0o644))
	bad := filepath.Join(tmp, "bad.jsonl")
	require.NoError(t, os.WriteFile(bad, []byte("{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}\n{\"messages\": \n"), 0o644))
	empty := filepath.Join(tmp, "empty.txt")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unparseable distribution", []string{"-input-tokens", "normal:100"}, "-input-tokens: bad length"},
		{"output distribution", []string{"-output-tokens", "zipf:1,2"}, "unknown distribution"},
		{"unknown API", []string{"-api", "grpc"}, "-api"},
		{"ignore-eos without a knob", []string{"-api", "anthropic", "-ignore-eos"}, "no ignore-EOS"},
		{"unknown profile", []string{"-workload", "poetry"}, "-workload"},
		{"trace with concurrency", []string{"-trace", back, "-concurrency", "2"}, "drop -concurrency"},
		{"time-scale without trace", []string{"-time-scale", "2"}, "-time-scale needs -trace"},
		{"trace going back", []string{"-trace", back}, "back.jsonl:2: timestamp 4 ms goes back"},
		{"malformed dataset line", []string{"-dataset", bad}, "bad.jsonl:2:"},
		{"empty dataset", []string{"-dataset", empty}, "empty dataset"},
		{"groups without prefix", []string{"-prefix-groups", "3"}, "-prefix-groups needs -prefix-tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				reqs, code, stderr, _ := runWorkload(t, t.TempDir(), tc.args...)
				assert.Equal(t, exitUsage, code)
				assert.Contains(t, stderr, tc.want)
				assert.Empty(t, reqs)
			})
		})
	}
}

// TestWorkloadProfile: -workload sets the lengths and the SLO; a flag given
// explicitly wins.
func TestWorkloadProfile(t *testing.T) {
	o, err := parseFlags([]string{"-workload", "summarize", "-output-tokens", "50"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "normal:2000,400", o.wl.input)
	assert.Equal(t, "50", o.wl.output)
	assert.Equal(t, 3*time.Second, o.slo.TTFT)
	o, err = parseFlags([]string{"-workload", "rag", "-slo", "ttft=1s"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 2000, o.wl.prefixTokens)
	assert.Equal(t, 8, o.wl.prefixGroups)
	assert.Equal(t, time.Second, o.slo.TTFT)
	assert.Zero(t, o.slo.TPOT, "an explicit -slo replaces the profile's")
}
