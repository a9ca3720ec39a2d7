package bench

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/cmd/llmmetrics/internal/workload"
	"github.com/llmmetrics/llmmetrics/llmmetricstest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// agentArgs are tasks of 4 steps with fixed lengths: a 64-token system
// prompt, a 1,000-token task, 300-token tool results, 1 s tools; every
// call completes (the fake server answers 96–160 tokens, under the 200
// asked).
var agentArgs = []string{"-workload", "agent", "-steps", "4", "-prefix-tokens", "64", "-input-tokens", "1000",
	"-tool-result-tokens", "300", "-tool-time", "1s", "-output-tokens", "200", "-final-tokens", "200"}

// tasksOf groups records.jsonl lines by session, each in step order.
func tasksOf(t *testing.T, lines []recordLine) [][]recordLine {
	t.Helper()
	var order []int
	by := map[int][]recordLine{}
	for _, l := range lines {
		require.Positive(t, l.Step, "every record of an agent run has its step")
		if _, ok := by[l.Session]; !ok {
			order = append(order, l.Session)
		}
		by[l.Session] = append(by[l.Session], l)
	}
	var out [][]recordLine
	for _, s := range order {
		steps := by[s]
		slices.SortFunc(steps, func(a, b recordLine) int { return a.Step - b.Step })
		out = append(out, steps)
	}
	return out
}

// TestAgentEveryAPI: in every API with tools, every step but the last gets
// a tool call back, the next step sends it and its result, the context
// grows step by step as the server counts it, and the prefix cache's hit
// rate rises with the step.
func TestAgentEveryAPI(t *testing.T) {
	for _, api := range []string{"chat", "responses", "anthropic", "gemini", "ollama"} {
		t.Run(api, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				dir := t.TempDir()
				reqs, code, stderr, srv := runWorkload(t, dir, append([]string{"-api", api, "-concurrency", "2", "-requests", "16"}, agentArgs...)...)
				require.Equal(t, exitOK, code, stderr)
				lines := readRecords(t, dir)
				require.Len(t, lines, 16, "4 tasks of 4 steps")
				require.Len(t, reqs, 16)
				tasks := tasksOf(t, lines)
				require.Len(t, tasks, 4)
				for _, steps := range tasks {
					require.Len(t, steps, 4)
					for k, l := range steps {
						assert.Equal(t, k+1, l.Step)
						assert.Equal(t, 4, l.TaskSteps)
						assert.Equal(t, l.AskedInputTokens, l.Record.InputTokens, "the server counts the conversation so far (session %d step %d)", l.Session, l.Step)
						require.NotNil(t, l.ToolCalls)
						if k < 3 {
							assert.Equal(t, workload.ChoiceRequired, l.ToolChoice)
							assert.Equal(t, 1, *l.ToolCalls, "a step before the last gets a tool call")
						} else {
							assert.Equal(t, workload.ChoiceNone, l.ToolChoice)
							assert.Equal(t, 0, *l.ToolCalls, "the last step gets the answer")
						}
						if k == 0 {
							continue
						}
						prev := steps[k-1]
						// The step adds the previous answer (a call of 96–160
						// tokens' words and its name) and a 300-token result.
						grew := l.AskedInputTokens - prev.AskedInputTokens
						if api == "ollama" && k == 3 {
							// Ollama cannot refuse a call: its last step
							// offers no tools, whose definitions leave the
							// prompt.
							assert.Less(t, grew, 300)
						} else {
							assert.Greater(t, grew, 300, "the context grows by the call and its result")
						}
						if api != "ollama" { // Ollama's usage has no cached count
							assert.GreaterOrEqual(t, l.Record.CachedInputTokens, prev.AskedInputTokens-2*llmmetricstest.PrefixBlockTokens, "the previous step's prompt is cached, but for its last block or two (the fake server leaves a prompt's last token out)")
							hit := float64(l.Record.CachedInputTokens) / float64(l.Record.InputTokens)
							prevHit := float64(prev.Record.CachedInputTokens) / float64(prev.Record.InputTokens)
							assert.Greater(t, hit, prevHit, "the hit rate rises with the step")
						}
					}
				}
				// Every call the server made is sent back in a later step
				// (Gemini's calls have no id: their name and arguments are).
				sent := 0
				for i, r := range reqs {
					a, err := workload.ReadAnswer(api, bytes.NewReader(r.answer))
					require.NoError(t, err)
					for _, c := range a.ToolCalls {
						key := c.ID
						if api == "gemini" {
							key = `"functionCall":{"name":"` + c.Name + `"`
						}
						require.NotEmpty(t, key)
						later := slices.ContainsFunc(reqs[i+1:], func(x *received) bool { return bytes.Contains(x.body, []byte(key)) })
						assert.True(t, later, "call %q sent back", key)
						sent++
					}
				}
				assert.Equal(t, 12, sent, "3 calls in each of 4 tasks")
				assert.Equal(t, 12, srv.Stats().ToolCalls)

				res := readResults(t, dir)
				require.Len(t, res.Levels, 1)
				tk := res.Levels[0].Tasks
				require.NotNil(t, tk)
				assert.Equal(t, 4, tk.Tasks)
				assert.Equal(t, 4, tk.Completed)
				assert.Equal(t, 0, tk.MissedToolCalls)
				assert.Equal(t, 4.0, tk.Steps.Mean)
				assert.Equal(t, "task", res.SLOBy)
				require.Len(t, tk.CacheHitByStep, 4)
				if api != "ollama" {
					for i := 1; i < 4; i++ {
						assert.Greater(t, tk.CacheHitByStep[i].HitRate, tk.CacheHitByStep[i-1].HitRate, "step %d", i+1)
					}
				}
				// Three 1 s tools a task, and the client's own time between
				// a step's answer and the next step's send (two agents share
				// the fake server's connections).
				assert.Equal(t, 4, tk.ToolTime.Count)
				assert.GreaterOrEqual(t, tk.ToolTime.P50, 3*time.Second)
				assert.Less(t, tk.ToolTime.Max, 3*time.Second+500*time.Millisecond)
			})
		})
	}
}

// TestAgentToolTimeDoubled: tools that take twice as long make the tasks
// longer by their time and leave every request's TTFT as it was (one agent:
// the server sees the same requests in the same order).
func TestAgentToolTimeDoubled(t *testing.T) {
	run := func(toolTime string) ([]recordLine, Results) {
		var lines []recordLine
		var res Results
		synctest.Test(t, func(t *testing.T) {
			dir := t.TempDir()
			args := slices.Clone(agentArgs)
			args[slices.Index(args, "-tool-time")+1] = toolTime
			_, code, stderr, _ := runWorkload(t, dir, append([]string{"-concurrency", "1", "-requests", "12"}, args...)...)
			require.Equal(t, exitOK, code, stderr)
			lines, res = readRecords(t, dir), readResults(t, dir)
		})
		return lines, res
	}
	a, resA := run("1s")
	b, resB := run("2s")
	require.Len(t, a, 12)
	require.Len(t, b, 12)
	for i := range a {
		ta, okA := a[i].Record.TTFT()
		tb, okB := b[i].Record.TTFT()
		require.True(t, okA && okB)
		assert.Equal(t, ta, tb, "request %d: the same TTFT", i)
		assert.Equal(t, a[i].AskedInputTokens, b[i].AskedInputTokens)
	}
	la, lb := resA.Levels[0].Tasks.Latency, resB.Levels[0].Tasks.Latency
	require.Equal(t, 3, la.Count)
	require.Equal(t, 3, lb.Count)
	// Each task waits for three tools: 3 s more each.
	assert.Equal(t, la.Mean+3*time.Second, lb.Mean, "task latency")
	assert.Equal(t, resA.Levels[0].Tasks.ModelTime.Mean, resB.Levels[0].Tasks.ModelTime.Mean, "time waiting for the model")
}

// TestAgentMissedToolCalls: a model that answers text where a call was
// forced is counted and named; its tasks go on.
func TestAgentMissedToolCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		var stdout, stderr bytes.Buffer
		e := testEnv(&stdout, &stderr, nil)
		e.newFake = func(cfg llmmetricstest.ServerConfig) *llmmetricstest.Server {
			cfg.SkipToolCallRate = 1
			return llmmetricstest.NewInMemoryServer(cfg)
		}
		args := append([]string{"-concurrency", "2", "-requests", "8", "-speedup", "20", "-repeats", "1", "-warmup", "0", "-out", dir}, agentArgs...)
		require.Equal(t, exitOK, run(context.Background(), args, e), stderr.String())
		res := readResults(t, dir)
		tk := res.Levels[0].Tasks
		require.NotNil(t, tk)
		assert.Equal(t, 2, tk.Tasks)
		assert.Equal(t, 6, tk.MissedToolCalls, "3 forced steps in each of 2 tasks")
		assert.Equal(t, 2, tk.Completed, "the tasks went on")
		assert.Contains(t, stdout.String(), "6 step(s) asked for a tool call and were answered without one")
		for _, l := range readRecords(t, dir) {
			assert.Equal(t, l.AskedInputTokens, l.Record.InputTokens, "the text and the result are sent as the server counts them")
		}
	})
}

// writeConversations writes a dataset of two recorded agent conversations
// (3 and 2 assistant turns) and returns its path.
func writeConversations(t *testing.T) string {
	t.Helper()
	tools := `[{"type":"function","function":{"name":"read_file","description":"Read a file.","parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}}]`
	lines := []string{
		`{"tools":` + tools + `,"messages":[{"role":"system","content":"You fix bugs."},{"role":"user","content":"The parser drops the last line of a file."},` +
			`{"role":"assistant","content":null,"tool_calls":[{"id":"call_a1","type":"function","function":{"name":"read_file","arguments":"{\"path\": \"parse.go\"}"}}]},` +
			`{"role":"tool","tool_call_id":"call_a1","content":"func parse(b []byte) { for len(b) > 0 { i := bytes.IndexByte(b, '\\n'); if i < 0 { return } } }"},` +
			`{"role":"assistant","content":"It stops when no newline is left.","tool_calls":[{"id":"call_a2","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"parse_test.go\"}"}}]},` +
			`{"role":"tool","tool_call_id":"call_a2","content":"func TestParse(t *testing.T) {}"},` +
			`{"role":"assistant","content":"The loop returns before the last line: handle i < 0 by taking the rest of b."}]}`,
		`{"tools":` + tools + `,"messages":[{"role":"user","content":"What does main.go do?"},` +
			`{"role":"assistant","tool_calls":[{"id":"c9","type":"function","function":{"name":"read_file","arguments":{"path":"main.go"}}}]},` +
			`{"role":"tool","tool_call_id":"c9","content":"package main\nfunc main() { serve() }"},` +
			`{"role":"assistant","content":"It starts the server."}]}`,
	}
	p := filepath.Join(t.TempDir(), "agents.jsonl")
	require.NoError(t, os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	return p
}

// TestAgentReplay: each assistant turn of a recorded conversation is one
// request, sent once, its input the conversation before it as the server
// counts it, its output its recorded length.
func TestAgentReplay(t *testing.T) {
	for _, api := range []string{"chat", "responses", "anthropic", "gemini", "ollama"} {
		t.Run(api, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				dir := t.TempDir()
				reqs, code, stderr, _ := runWorkload(t, dir, "-api", api, "-dataset", writeConversations(t), "-concurrency", "1", "-requests", "5")
				require.Equal(t, exitOK, code, stderr)
				require.Len(t, reqs, 5, "3 + 2 assistant turns")
				lines := readRecords(t, dir)
				tasks := tasksOf(t, lines)
				require.Len(t, tasks, 2)
				assert.Len(t, tasks[0], 3)
				assert.Len(t, tasks[1], 2)
				for _, l := range lines {
					assert.True(t, withinBound(l.AskedInputTokens, l.Record.InputTokens), "asked %d, counted %d", l.AskedInputTokens, l.Record.InputTokens)
				}
				// The recorded output lengths at 4 characters a token: the
				// last turn of the first conversation has 76 characters.
				assert.Equal(t, 19, tasks[0][2].AskedOutputTokens)
				// The second turn sends the first call back with its result.
				assert.Contains(t, string(reqs[1].body), "call_a1")
				assert.NotContains(t, string(reqs[0].body), "call_a1")
				res := readResults(t, dir)
				require.NotNil(t, res.Workload)
				assert.Equal(t, 2, res.Workload.ToolConversations)
				require.NotNil(t, res.Levels[0].Tasks)
				assert.Equal(t, 2, res.Levels[0].Tasks.Completed)
			})
		})
	}
}

// TestAgentBadInput: flags that do not go with agents, and malformed
// conversations, exit 2 saying what and where.
func TestAgentBadInput(t *testing.T) {
	tmp := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(tmp, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	ok := `{"messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"r"},{"role":"assistant","content":"done"}]}`
	orphan := write("orphan.jsonl", ok+"\n"+`{"messages":[{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"c7","content":"r"}]}`+"\n")
	unanswered := write("unanswered.jsonl", `{"messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"user","content":"and?"}]}`+"\n")
	noName := write("noname.jsonl", `{"messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"arguments":"{}"}}]}]}`+"\n")
	badTools := write("badtools.jsonl", `{"tools":{"name":"f"},"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"x"}]}`+"\n")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no tools in completions", []string{"-workload", "agent", "-api", "completions"}, "needs an API with tools"},
		{"steps without agent", []string{"-steps", "3"}, "-steps needs -workload agent"},
		{"think time", []string{"-workload", "agent", "-think-time", "1s"}, "give -tool-time, not -think-time"},
		{"turns", []string{"-workload", "agent", "-turns", "3"}, "-steps, not -turns"},
		{"bad tool time", []string{"-workload", "agent", "-tool-time", "lognormal:2s"}, "-tool-time: bad duration"},
		{"bad steps", []string{"-workload", "agent", "-steps", "0"}, "-steps: bad length"},
		{"goodput-by", []string{"-workload", "agent", "-goodput-by", "token"}, "-goodput-by"},
		{"shape with a dataset", []string{"-workload", "agent", "-dataset", orphan, "-steps", "3"}, "recorded conversations give the tasks' shape"},
		{"result of no call", []string{"-dataset", orphan}, "orphan.jsonl:2: message 2 (tool): tool_call_id \"c7\" answers no earlier call"},
		{"call without a result", []string{"-dataset", unanswered}, "unanswered.jsonl:1: message 3 (user): the tool call \"c1\" has no result"},
		{"call without a name", []string{"-dataset", noName}, "noname.jsonl:1: message 2 (assistant): tool_calls[0]: a call without function.name"},
		{"tools not an array", []string{"-dataset", badTools}, "badtools.jsonl:1: tools: not an array"},
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

// TestAgentSameSeedSameBodies: the same flags and seed send byte-identical
// requests (one agent: the server's answers, sent back, come in the same
// order), another seed others.
func TestAgentSameSeedSameBodies(t *testing.T) {
	bodies := func(seed string) [][]byte {
		var out [][]byte
		synctest.Test(t, func(t *testing.T) {
			reqs, code, stderr, _ := runWorkload(t, t.TempDir(), "-workload", "agent", "-concurrency", "1", "-requests", "10", "-seed", seed,
				"-tool-time", "100ms", "-steps", "uniform:2-6")
			require.Equal(t, exitOK, code, stderr)
			for _, r := range reqs {
				out = append(out, r.body)
			}
		})
		return out
	}
	a := bodies("5")
	require.NotEmpty(t, a)
	assert.Equal(t, a, bodies("5"))
	assert.NotEqual(t, a, bodies("6"))
}

// TestAgentTaskSLO: a task latency limit makes a task not good when it is
// longer, though its every step met the SLO.
func TestAgentTaskSLO(t *testing.T) {
	for _, tc := range []struct {
		limit string
		good  int
	}{
		{"1m", 3},     // each task takes about 3 s of tools and less than 1 s of steps
		{"2500ms", 0}, // shorter than three 1 s tools
	} {
		t.Run(tc.limit, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				dir := t.TempDir()
				_, code, stderr, _ := runWorkload(t, dir, append([]string{"-concurrency", "1", "-requests", "12", "-task-latency", tc.limit}, agentArgs...)...)
				require.Equal(t, exitOK, code, stderr)
				res := readResults(t, dir)
				tk := res.Levels[0].Tasks
				require.NotNil(t, tk)
				assert.Equal(t, tc.good, tk.Good)
				assert.InDelta(t, float64(tc.good)/3, tk.Attainment, 1e-12)
				assert.Equal(t, res.Levels[0].Summary.Goodput.Attainment, 1.0, "every request met the SLO")
				assert.Equal(t, tc.good == 3, res.Levels[0].MeetsSLO, "judged by tasks")
			})
		})
	}
}

// TestComputeTasks checks the task figures by hand: three tasks of steps
// at fixed times, one failed.
func TestComputeTasks(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	step := func(start, ttft, end int, in, cached int) llmmetrics.Record {
		return llmmetrics.Record{Start: at(start), FirstToken: at(start + ttft), FirstOutput: at(start + ttft), LastToken: at(end), End: at(end),
			InputTokens: in, CachedInputTokens: cached, OutputTokens: 10, Chunks: 10, Outcome: llmmetrics.OutcomeOK}
	}
	meta := func(session, step, steps int, choice string, calls int) reqMeta {
		return reqMeta{session: session, turn: step, steps: steps, agent: true, choice: choice, calls: calls}
	}
	recs := []llmmetrics.Record{
		step(0, 100, 400, 1000, 800), step(1400, 100, 1600, 2000, 1800), // task 0: 1.6 s, 0.6 s of model
		step(0, 300, 500, 1000, 800), step(2500, 100, 3000, 3000, 2000), // task 1: 3 s, 1 s of model; its first TTFT 300 ms
		step(100, 50, 200, 1000, 0), // task 2: failed at its second step
		{Start: at(1200), End: at(1300), Outcome: llmmetrics.OutcomeError},
	}
	metas := []reqMeta{
		meta(0, 1, 2, workload.ChoiceRequired, 1), meta(0, 2, 2, workload.ChoiceNone, 0),
		meta(1, 1, 2, workload.ChoiceRequired, 0), meta(1, 2, 2, workload.ChoiceNone, 1),
		meta(2, 1, 2, workload.ChoiceRequired, 1), meta(2, 2, 2, workload.ChoiceNone, 0),
	}
	tk := computeTasks(recs, metas, taskSLO{slo: llmmetrics.SLO{TTFT: 200 * time.Millisecond}}, 10*time.Second)
	require.NotNil(t, tk)
	assert.Equal(t, 3, tk.Tasks)
	assert.Equal(t, 2, tk.Completed)
	assert.Equal(t, 1, tk.Failed)
	assert.Equal(t, 1, tk.Good, "task 1's first step missed the TTFT limit")
	assert.InDelta(t, 1.0/3, tk.Attainment, 1e-12)
	assert.InDelta(t, 0.2, tk.PerSecond, 1e-12, "2 completed in 10 s")
	assert.InDelta(t, 0.1, tk.GoodPerSecond, 1e-12)
	assert.Equal(t, TaskDistribution{Count: 2, Mean: 2300 * time.Millisecond, P50: 2300 * time.Millisecond,
		P90: 2860 * time.Millisecond, P99: 2986 * time.Millisecond, Max: 3 * time.Second}, tk.Latency)
	assert.Equal(t, 800*time.Millisecond, tk.ModelTime.Mean, "(0.6 s + 1 s) / 2")
	assert.Equal(t, 1500*time.Millisecond, tk.ToolTime.Mean, "(1 s + 2 s) / 2")
	assert.Equal(t, &Spread{Mean: 2, P50: 2, P99: 2}, tk.Steps)
	assert.Equal(t, &Spread{Mean: 3500, P50: 3500, P99: 3990}, tk.InputTokens)
	assert.Equal(t, 1, tk.MissedToolCalls, "task 1's first step")
	assert.Equal(t, 1, tk.FinalToolCalls, "task 1's last step")
	assert.Equal(t, []StepCacheHit{{Step: 1, Requests: 3, HitRate: 1600.0 / 3000}, {Step: 2, Requests: 2, HitRate: 3800.0 / 5000}}, tk.CacheHitByStep)
	assert.Nil(t, computeTasks(recs, make([]reqMeta, len(recs)), taskSLO{}, time.Second), "no agent requests: no tasks")
}
