package workload

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func mustDist(t *testing.T, s string) Dist {
	t.Helper()
	d, err := ParseDist(s)
	require.NoError(t, err)
	return d
}

func TestParseDist(t *testing.T) {
	for _, tc := range []struct {
		in      string
		kind    string
		a, b    float64
		wantErr bool
	}{
		{"128", "fixed", 128, 0, false},
		{"uniform:10-20", "uniform", 10, 20, false},
		{"normal:100,30", "normal", 100, 30, false},
		{"lognormal:500, 200", "lognormal", 500, 200, false},
		{"0", "", 0, 0, true},
		{"-3", "", 0, 0, true},
		{"uniform:20-10", "", 0, 0, true},
		{"uniform:10,20", "", 0, 0, true},
		{"normal:100", "", 0, 0, true},
		{"normal:-1,2", "", 0, 0, true},
		{"gamma:1,2", "", 0, 0, true},
		{"normal:NaN,2", "", 0, 0, true},
		{"abc", "", 0, 0, true},
		{"1000001", "", 0, 0, true},
		{"uniform:1-2000000", "", 0, 0, true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			d, err := ParseDist(tc.in)
			if tc.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.kind, d.Kind)
			assert.Equal(t, tc.a, d.A)
			assert.Equal(t, tc.b, d.B)
			again, err := ParseDist(d.String())
			require.NoError(t, err)
			assert.Equal(t, d.Kind+d.String(), again.Kind+again.String())
		})
	}
}

func TestDistDraw(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 20000
	for _, tc := range []struct {
		spec      string
		max       int
		mean, tol float64
		lo, hi    int
	}{
		{"7", 0, 7, 0, 7, 7},
		{"uniform:10-13", 0, 11.5, 0.05, 10, 13},
		{"normal:100,10", 0, 100, 0.5, 1, 1 << 30},
		{"lognormal:100,50", 0, 100, 2, 1, 1 << 30},
		{"normal:2,10", 0, 0, 0, 1, 1 << 30},     // clamped at 1
		{"uniform:100-200", 150, 0, 0, 100, 150}, // clamped at the context
	} {
		t.Run(tc.spec, func(t *testing.T) {
			d := mustDist(t, tc.spec)
			d.Max = tc.max
			sum, seen := 0.0, map[int]bool{}
			for range n {
				v := d.Draw(rng)
				require.GreaterOrEqual(t, v, tc.lo)
				require.LessOrEqual(t, v, tc.hi)
				sum += float64(v)
				seen[v] = true
			}
			if tc.tol > 0 {
				assert.InDelta(t, tc.mean, sum/n, tc.tol)
			}
			if tc.spec == "uniform:10-13" {
				assert.Len(t, seen, 4, "every whole number of MIN…MAX is drawn")
			}
		})
	}
}

func TestTextExactLength(t *testing.T) {
	tx := Text{CharsPerToken: 4}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 2, 17, 512, 4000} {
		s := tx.Words(rng, n)
		assert.Len(t, s, 4*n)
		assert.Equal(t, n, tx.Tokens(len(s)))
	}
	assert.Equal(t, 0, tx.Tokens(0))
	assert.Equal(t, 1, tx.Tokens(1))
	assert.Equal(t, 2, tx.Tokens(5)) // ⌈5/4⌉
}

func open(t *testing.T, c Config) *Workload {
	t.Helper()
	w, err := Open(c)
	require.NoError(t, err)
	t.Cleanup(w.Close)
	return w
}

// drain returns the first n requests of w, answering each turn with
// answer(turn).
func drain(t *testing.T, w *Workload, n int, answer func(Request) string) []Request {
	t.Helper()
	var out []Request
	for len(out) < n {
		s, err := w.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		for len(out) < n {
			r, ok := s.Next()
			if !ok {
				break
			}
			out = append(out, r)
			s.Answer(answer(r), 0)
		}
	}
	return out
}

func fixedAnswer(Request) string { return "the answer" }

func TestSyntheticLengthsAndPrefix(t *testing.T) {
	w := open(t, Config{Input: mustDist(t, "uniform:50-60"), Output: mustDist(t, "9"),
		PrefixTokens: 100, PrefixGroups: 3, Seed: 7})
	reqs := drain(t, w, 12, fixedAnswer)
	require.Len(t, reqs, 12)
	prefixes := map[int]string{}
	for i, r := range reqs {
		assert.Equal(t, i%3, r.PrefixGroup)
		assert.Equal(t, i, r.Session)
		assert.Equal(t, 1, r.Turn)
		assert.Len(t, r.System, 400)
		if p, ok := prefixes[r.PrefixGroup]; ok {
			assert.Equal(t, p, r.System, "one system prompt per group, byte for byte")
		}
		prefixes[r.PrefixGroup] = r.System
		require.Len(t, r.Messages, 1)
		user := len(r.Messages[0].Content) / 4
		assert.GreaterOrEqual(t, user, 50)
		assert.LessOrEqual(t, user, 60)
		assert.Equal(t, 100+user, r.InputTokens, "asked = prefix + prompt")
		assert.Equal(t, 9, r.OutputTokens)
	}
	assert.NotEqual(t, prefixes[0], prefixes[1])
}

func TestSessionsCarryTheAnswersReceived(t *testing.T) {
	w := open(t, Config{Input: mustDist(t, "10"), Turns: 3, ThinkTime: time.Second, Seed: 1})
	reqs := drain(t, w, 6, func(r Request) string { return "answer to turn " + string(rune('0'+r.Turn)) })
	require.Len(t, reqs, 6)
	for i, r := range reqs {
		assert.Equal(t, i/3, r.Session)
		assert.Equal(t, i%3+1, r.Turn)
		require.Len(t, r.Messages, 2*(i%3)+1)
	}
	third := reqs[2]
	assert.Equal(t, reqs[0].Messages[0], third.Messages[0])
	assert.Equal(t, Message{Role: "assistant", Content: "answer to turn 1"}, third.Messages[1])
	assert.Equal(t, reqs[1].Messages[2], third.Messages[2])
	assert.Equal(t, Message{Role: "assistant", Content: "answer to turn 2"}, third.Messages[3])
	chars := 0
	for _, m := range third.Messages {
		chars += len(m.Content)
	}
	assert.Equal(t, (chars+3)/4, third.InputTokens)
}

func TestSessionEndsOnAFailedTurn(t *testing.T) {
	w := open(t, Config{Input: mustDist(t, "10"), Turns: 3})
	s, err := w.Next()
	require.NoError(t, err)
	_, ok := s.Next()
	require.True(t, ok)
	s.Answer("", 0)
	_, ok = s.Next()
	assert.False(t, ok)
}

// bodiesHash hashes the bodies of the first n requests of every API.
func bodiesHash(t *testing.T, c Config, n int) string {
	h := sha256.New()
	for _, api := range APIs {
		w := open(t, c)
		for _, r := range drain(t, w, n, fixedAnswer) {
			h.Write(Body(api, "m", r, false))
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

func TestSameSeedSameBodies(t *testing.T) {
	trace := filepath.Join("testdata", "trace.jsonl")
	for name, c := range map[string]Config{
		"synthetic": {Input: mustDist(t, "lognormal:200,80"), Output: mustDist(t, "normal:50,10"), PrefixTokens: 30, PrefixGroups: 2, Turns: 2},
		"dataset":   {Dataset: filepath.Join("testdata", "sharegpt.json"), Output: mustDist(t, "uniform:1-9")},
		"trace":     {Trace: trace},
	} {
		t.Run(name, func(t *testing.T) {
			c.Seed = 42
			a, b := bodiesHash(t, c, 20), bodiesHash(t, c, 20)
			assert.Equal(t, a, b)
			c.Seed = 43
			assert.NotEqual(t, a, bodiesHash(t, c, 20), "another seed, other bodies")
		})
	}
}

func TestDatasets(t *testing.T) {
	for _, tc := range []struct {
		file, format string
		entries      int
		skipped      []string
		first        Request // System, Messages, OutputTokens, Turn checked
		turns        int     // of the first session
	}{
		{"sharegpt.json", FormatShareGPT, 2, []string{`sharegpt.json: entry 2 (id "b2"): no human turn`},
			Request{Messages: []Message{{Role: "user", Content: "What is a token?"}}, OutputTokens: 13, Turn: 1}, 1},
		{"openai.jsonl", FormatOpenAI, 2, []string{"openai.jsonl:4: a user message with non-text content"},
			Request{System: "You are terse.", Messages: []Message{{Role: "user", Content: "Say hi."}}, OutputTokens: 7, Turn: 1}, 1},
		{"prompts.txt", FormatPrompts, 3, nil,
			Request{Messages: []Message{{Role: "user", Content: "First prompt"}}, OutputTokens: 5, Turn: 1}, 1},
		{"aiperf_single.jsonl", FormatAIPerfSingle, 2, nil,
			Request{Messages: []Message{{Role: "user", Content: "Explain caching."}}, OutputTokens: 12, Turn: 1}, 1},
		{"aiperf_multi.jsonl", FormatAIPerfMulti, 1, nil,
			Request{Messages: []Message{{Role: "user", Content: "Hello."}}, OutputTokens: 5, Turn: 1}, 2},
	} {
		t.Run(tc.format, func(t *testing.T) {
			path := filepath.Join("testdata", tc.file)
			w := open(t, Config{Dataset: path, Output: mustDist(t, "5")})
			info := w.Info()
			assert.Equal(t, tc.format, info.Format)
			assert.Equal(t, tc.entries, info.Entries)
			var skipped []string
			for _, s := range info.Skipped {
				skipped = append(skipped, strings.TrimPrefix(s, "testdata"+string(filepath.Separator)))
			}
			assert.Equal(t, tc.skipped, skipped)
			assert.Equal(t, len(tc.skipped), info.SkippedCount)
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			sum := sha256.Sum256(data)
			assert.Equal(t, hex.EncodeToString(sum[:]), info.SHA256)
			s, err := w.Next()
			require.NoError(t, err)
			assert.Equal(t, tc.turns, s.Len())
			r, ok := s.Next()
			require.True(t, ok)
			assert.Equal(t, tc.first.System, r.System)
			assert.Equal(t, tc.first.Messages, r.Messages)
			assert.Equal(t, tc.first.OutputTokens, r.OutputTokens)
			assert.NotEmpty(t, r.Origin)
		})
	}
}

func TestShareGPTTurns(t *testing.T) {
	w := open(t, Config{Dataset: filepath.Join("testdata", "sharegpt.json"), Turns: 3})
	reqs := drain(t, w, 2, func(Request) string { return "received" })
	require.Len(t, reqs, 2)
	assert.Equal(t, []Message{{Role: "user", Content: "What is a token?"}, {Role: "assistant", Content: "received"}, {Role: "user", Content: "And a prefix cache?"}}, reqs[1].Messages)
	assert.Equal(t, 8, reqs[1].OutputTokens, "⌈32 characters / 4⌉ of the recorded reply")
}

func TestDatasetCyclesAndKeepsHistory(t *testing.T) {
	w := open(t, Config{Dataset: filepath.Join("testdata", "openai.jsonl"), Turns: 1})
	reqs := drain(t, w, 5, fixedAnswer)
	require.Len(t, reqs, 5)
	assert.Equal(t, []Message{{Role: "user", Content: "Two parts."}, {Role: "assistant", Content: "Ok."}, {Role: "user", Content: "Again."}}, reqs[1].Messages)
	assert.Equal(t, reqs[0].Messages, reqs[2].Messages, "the third request starts the file again")
	assert.Equal(t, 0, reqs[1].OutputTokens, "no max_tokens and no -output-tokens: none asked")
}

func TestBadInput(t *testing.T) {
	long := filepath.Join(t.TempDir(), "long.txt")
	require.NoError(t, os.WriteFile(long, []byte("short\n"+strings.Repeat("x", 4000)+"\n"), 0o644))
	for _, tc := range []struct {
		name string
		c    Config
		want string
	}{
		{"malformed line", Config{Dataset: "testdata/openai_bad.jsonl"}, "openai_bad.jsonl:2: not a JSON chat request"},
		{"empty", Config{Dataset: "testdata/empty.txt"}, "empty.txt: empty dataset"},
		{"missing", Config{Dataset: "testdata/none.json"}, "none.json"},
		{"backwards", Config{Trace: "testdata/trace_backwards.jsonl"}, "trace_backwards.jsonl:2: timestamp 5 ms goes back"},
		{"longer than context", Config{Dataset: long, Context: 500}, "long.txt:2: a prompt of about 1000 tokens is longer than the model's context (500)"},
		{"trace longer than context", Config{Trace: "testdata/trace.jsonl", Context: 1100}, "trace.jsonl:3: input_length 1200"},
		{"trace as dataset", Config{Dataset: "testdata/trace.jsonl"}, "replay it with -trace"},
		{"trace and turns", Config{Trace: "testdata/trace.jsonl", Turns: 2}, "no sessions"},
		{"groups without prefix", Config{PrefixGroups: 2}, "-prefix-groups needs -prefix-tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open(tc.c)
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrBadInput))
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestTraceBlocksAndArrivals(t *testing.T) {
	w := open(t, Config{Trace: filepath.Join("testdata", "trace.jsonl"), TimeScale: 2})
	assert.True(t, w.Replay())
	assert.Equal(t, 4, w.Info().Entries)
	assert.Equal(t, 80*time.Millisecond, w.Info().Span)
	reqs := drain(t, w, 10, fixedAnswer)
	require.Len(t, reqs, 4, "a trace ends")
	var arrivals []time.Duration
	var prompts []string
	for _, r := range reqs {
		arrivals = append(arrivals, r.Arrival)
		prompts = append(prompts, r.Messages[0].Content)
	}
	assert.Equal(t, []time.Duration{0, 0, 50 * time.Millisecond, 80 * time.Millisecond}, arrivals)
	assert.Equal(t, []int{1000, 700, 1200, 300}, []int{reqs[0].InputTokens, reqs[1].InputTokens, reqs[2].InputTokens, reqs[3].InputTokens})
	assert.Equal(t, []int{5, 3, 4, 2}, []int{reqs[0].OutputTokens, reqs[1].OutputTokens, reqs[2].OutputTokens, reqs[3].OutputTokens})
	const block = 512 * 4
	assert.Equal(t, prompts[0][:block], prompts[1][:block], "hash id 0 shared")
	assert.NotEqual(t, prompts[0][block:700*4], prompts[1][block:], "ids 1 and 2 differ")
	assert.Equal(t, prompts[0], prompts[2][:1000*4], "ids 0, 1 shared, the 1000 tokens byte for byte")
	assert.NotEqual(t, prompts[3][:100], prompts[0][:100])
}

func TestBodies(t *testing.T) {
	r := Request{System: "SYS", Messages: []Message{{Role: "user", Content: "hi"}, {Role: "assistant", Content: "yo"}, {Role: "user", Content: "more"}}, OutputTokens: 9}
	for _, tc := range []struct {
		api, path, want string
		eos             bool
	}{
		{"chat", "/chat/completions", `{"model":"m","messages":[{"role":"system","content":"SYS"},{"role":"user","content":"hi"},{"role":"assistant","content":"yo"},{"role":"user","content":"more"}],"stream":true,"stream_options":{"include_usage":true},"max_tokens":9,"ignore_eos":true}`, true},
		{"completions", "/completions", `{"model":"m","prompt":"SYS\nhi\nyo\nmore","stream":true,"stream_options":{"include_usage":true},"max_tokens":9}`, false},
		{"responses", "/responses", `{"model":"m","instructions":"SYS","input":[{"role":"user","content":"hi"},{"role":"assistant","content":"yo"},{"role":"user","content":"more"}],"stream":true,"max_output_tokens":9}`, false},
		{"anthropic", "/messages", `{"model":"m","system":"SYS","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"yo"},{"role":"user","content":"more"}],"max_tokens":9,"stream":true}`, false},
		{"gemini", "/models/m:streamGenerateContent?alt=sse", `{"contents":[{"role":"user","parts":[{"text":"hi"}]},{"role":"model","parts":[{"text":"yo"}]},{"role":"user","parts":[{"text":"more"}]}],"systemInstruction":{"parts":[{"text":"SYS"}]},"generationConfig":{"maxOutputTokens":9}}`, false},
		{"ollama", "/api/chat", `{"model":"m","messages":[{"role":"system","content":"SYS"},{"role":"user","content":"hi"},{"role":"assistant","content":"yo"},{"role":"user","content":"more"}],"stream":true,"options":{"num_predict":9}}`, false},
	} {
		t.Run(tc.api, func(t *testing.T) {
			assert.Equal(t, tc.want, string(Body(tc.api, "m", r, tc.eos)))
			assert.Equal(t, tc.path, Path(tc.api, "m"))
			assert.True(t, json.Valid(Body(tc.api, "m", Request{Messages: []Message{{Role: "user", Content: `"quoted" \ <tag>`}}}, false)))
		})
	}
}

func TestAnswerText(t *testing.T) {
	for _, tc := range []struct{ api, stream string }{
		{"chat", "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"lo\"}}]}\n\ndata: {\"choices\":[],\"usage\":{}}\n\ndata: [DONE]\n\n"},
		{"completions", "data: {\"choices\":[{\"text\":\"Hel\"}]}\n\ndata:{\"choices\":[{\"text\":\"lo\"}]}\n\ndata: [DONE]\n\n"},
		{"responses", "event: response.created\ndata: {\"type\":\"response.created\"}\n\nevent: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"Hel\"}\n\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"lo\"}\n\ndata: {\"type\":\"response.output_text.done\",\"text\":\"Hello\"}\n\n"},
		{"anthropic", "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hel\"}}\n\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"lo\"}}\n\ndata: {\"type\":\"message_stop\"}\n\n"},
		{"gemini", "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hel\"}],\"role\":\"model\"}}]}\r\n\r\ndata: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"lo\"}]}}]}\r\n\r\n"},
		{"ollama", "{\"message\":{\"role\":\"assistant\",\"content\":\"Hel\"},\"done\":false}\n{\"message\":{\"role\":\"assistant\",\"content\":\"lo\"},\"done\":false}\n{\"done\":true}\n"},
	} {
		t.Run(tc.api, func(t *testing.T) {
			got, err := AnswerText(tc.api, strings.NewReader(tc.stream))
			require.NoError(t, err)
			assert.Equal(t, "Hello", got)
		})
	}
}

func TestProfilesParse(t *testing.T) {
	for _, p := range Profiles {
		t.Run(p.Name, func(t *testing.T) {
			_, err := ParseDist(p.Input)
			assert.NoError(t, err)
			_, err = ParseDist(p.Output)
			assert.NoError(t, err)
			assert.NoError(t, p.SLO.Validate())
			assert.False(t, p.SLO.IsZero())
		})
	}
	_, ok := ProfileNamed("nope")
	assert.False(t, ok)
}
