package engine

import (
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
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/cmd/llmmetrics/internal/bench"
)

// toolsModel is the random model with a chat template that renders tools,
// tool calls and tool results: Ollama offers tools only to a model whose
// template uses them (its "tools" capability).
const toolsModel = modelName + "-tools"

// toolsModelfile builds toolsModel from the random model.
const toolsModelfile = `FROM ` + modelName + `
PARAMETER num_thread 1
TEMPLATE """{{- if .Tools }}tools:{{ range .Tools }} {{ .Function.Name }}: {{ .Function.Description }}{{ end }}
{{ end }}
{{- range .Messages }}{{ .Role }}: {{ .Content }}
{{- range .ToolCalls }} call {{ .Function.Name }}{{ end }}
{{ end }}assistant: """
`

// bodyRecorder is a reverse proxy that keeps the body of every request it
// forwards with max tokens other than 1 (bench's calibration probes).
type bodyRecorder struct {
	mu     sync.Mutex
	bodies [][]byte
	next   http.Handler
}

func (p *bodyRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req struct {
		Options struct {
			NumPredict int `json:"num_predict"`
		} `json:"options"`
	}
	if json.Unmarshal(body, &req) == nil && req.Options.NumPredict > 1 {
		p.mu.Lock()
		p.bodies = append(p.bodies, body)
		p.mu.Unlock()
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	p.next.ServeHTTP(w, r)
}

// TestBenchAgent runs "llmmetrics bench -workload agent" against Ollama's
// native /api/chat: tasks of 3 steps at 1 and 2 concurrent agents. Every
// step but the last offers the tools (Ollama cannot force a call); the
// random model does not call them, which the run counts and says, and
// every task still runs its steps and is measured. The first step's input
// is what bench asked, exactly; a later step's is what it asked plus what
// its earlier answers' texts take in the prompt beyond their 12 tokens
// (Ollama counts each), exactly.
func TestBenchAgent(t *testing.T) {
	s := startOllama(t, "OLLAMA_NUM_PARALLEL=4", "OLLAMA_CONTEXT_LENGTH=8192")
	require.NoError(t, s.createFrom(needOllama(t), toolsModel, toolsModelfile), "%s", s.log.tail(4000))
	load(t, s.base)
	u, err := url.Parse(s.base)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.FlushInterval = -1
	proxy.Transport = newClient(t).Transport
	rec := &bodyRecorder{next: proxy}
	front := httptest.NewServer(rec)
	t.Cleanup(front.Close)

	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	code := bench.Main(ctx, []string{
		"-url", front.URL, "-api", "ollama", "-model", toolsModel, "-workload", "agent",
		"-steps", "3", "-tool-time", "100ms", "-prefix-tokens", "24", "-input-tokens", "16",
		"-tool-result-tokens", "24", "-output-tokens", "12", "-final-tokens", "12",
		"-concurrency", "1,2", "-requests", "6", "-warmup", "0", "-repeats", "1",
		"-slo", "ttft=60s,tpot=10s", "-out", out,
	}, &stdout, &stderr)
	t.Logf("bench:\n%s%s", stdout.String(), stderr.String())
	require.Equal(t, 0, code)

	var lines []agentLine
	data, err := os.ReadFile(filepath.Join(out, "records.jsonl"))
	require.NoError(t, err)
	for l := range strings.Lines(string(data)) {
		var line agentLine
		require.NoError(t, json.Unmarshal([]byte(l), &line))
		lines = append(lines, line)
	}
	require.Len(t, lines, 12, "two tasks of 3 steps at each level")
	calls, forced := 0, 0
	inputs := map[[2]int][]int{} // (load, session) → input tokens by step
	asked := map[int]int{}       // step → asked input tokens
	counted := map[int][]int{}   // step → Ollama's counts of its requests
	for i, l := range lines {
		assert.Equal(t, llmmetrics.OutcomeOK, l.Record.Outcome, "record %d: %s", i, l.Record.ErrorType)
		assert.Equal(t, 3, l.TaskSteps)
		require.NotNil(t, l.ToolCalls)
		calls += *l.ToolCalls
		if l.ToolChoice == "required" {
			forced++
		}
		t.Logf("load %g task %d step %d: asked %d input tokens, Ollama counted %d", l.Load, l.Session, l.Step, l.AskedInput, l.Record.InputTokens)
		// The first step is sized exactly (the template's overheads for
		// the system message and the tools calibrated); a later one is
		// checked below, against the texts of its earlier answers.
		if l.Step == 1 {
			assert.Equal(t, l.AskedInput, l.Record.InputTokens, "task %d step 1", l.Session)
		}
		if l.Step < l.TaskSteps {
			assert.Equal(t, 12, l.Record.OutputTokens, "task %d step %d: the random model never stops before the limit", l.Session, l.Step)
		}
		if a, ok := asked[l.Step]; ok {
			assert.Equal(t, a, l.AskedInput, "step %d: every task's step asks the same (the lengths are constants)", l.Step)
		}
		asked[l.Step] = l.AskedInput
		counted[l.Step] = append(counted[l.Step], l.Record.InputTokens)
		key := [2]int{int(l.Load), l.Session}
		inputs[key] = append(inputs[key], l.Record.InputTokens)
	}
	assert.Equal(t, 8, forced, "steps 1 and 2 of 4 tasks ask for a call")
	for k, in := range inputs {
		require.Len(t, in, 3, "task %v", k)
		assert.Less(t, in[0], in[1], "task %v: the context grows", k)
	}

	// What Ollama received: the tools on every step but the last.
	rec.mu.Lock()
	bodies := rec.bodies
	rec.mu.Unlock()
	withTools := 0
	hc := newClient(t)
	resent := map[int][]int{} // step → Ollama's counts of the bodies sent
	for _, b := range bodies {
		var req struct {
			Tools    []json.RawMessage `json:"tools"`
			Messages []struct {
				Role      string            `json:"role"`
				Content   string            `json:"content"`
				ToolCalls []json.RawMessage `json:"tool_calls"`
			} `json:"messages"`
			Options struct {
				NumPredict int `json:"num_predict"`
			} `json:"options"`
		}
		require.NoError(t, json.Unmarshal(b, &req))
		if req.Options.NumPredict != 12 {
			continue // one of bench's calibration probes, not a step
		}
		if len(req.Tools) > 0 {
			withTools++
			assert.Len(t, req.Tools, 6, "the agent's tools")
		}
		// A later step counts each earlier answer at the 12 output tokens
		// Ollama reported for it; in the prompt the answer is its text
		// re-tokenized after the template's "assistant: ", which can take
		// another number of tokens (the random model's pieces merge or
		// split differently, and its text starts with a space of its
		// own). Ollama counts that text here: the same prefix with and
		// without it, raw (no template). The step's count is then exact.
		step, drift := 1, 0
		for _, m := range req.Messages {
			if m.Role != "assistant" {
				continue
			}
			step++
			require.Empty(t, m.ToolCalls, "the random model calls no tool")
			drift += rawCount(t, hc, s.base, "assistant: "+m.Content) - rawCount(t, hc, s.base, "assistant:") - 12
		}
		n := countBody(t, hc, s.base, b)
		resent[step] = append(resent[step], n)
		if step > 1 {
			assert.Equal(t, asked[step]+drift, n, "a step %d request: asked %d input tokens, its answers' texts %+d, Ollama counted %d", step, asked[step], drift, n)
		}
	}
	assert.Equal(t, 8, withTools, "the requests of steps 1 and 2 offer the tools")
	for step, c := range counted {
		assert.ElementsMatch(t, resent[step], c, "step %d: the records count what Ollama counts of the bodies sent", step)
	}

	var res struct {
		Levels []struct {
			Tasks *struct {
				Tasks           int `json:"tasks"`
				Completed       int `json:"completed"`
				MissedToolCalls int `json:"missed_tool_calls"`
			} `json:"tasks"`
		} `json:"levels"`
	}
	data, err = os.ReadFile(filepath.Join(out, "results.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &res))
	missed := 0
	for _, l := range res.Levels {
		require.NotNil(t, l.Tasks)
		assert.Equal(t, 2, l.Tasks.Tasks)
		assert.Equal(t, 2, l.Tasks.Completed)
		missed += l.Tasks.MissedToolCalls
	}
	assert.Equal(t, forced, missed+calls, "each forced step got a call or was counted as answered without one")
	if missed > 0 {
		assert.Contains(t, stdout.String(), "asked for a tool call and were answered without one")
	}
}

// rawCount is how many tokens Ollama counts in prompt, sent raw (no
// template) to toolsModel.
func rawCount(t *testing.T, hc *http.Client, base, prompt string) int {
	t.Helper()
	var a nativeAnswer
	require.NoError(t, post(t.Context(), hc, base+"/api/generate", map[string]any{
		"model": toolsModel, "prompt": prompt, "raw": true, "stream": false,
		"options": map[string]any{"num_predict": 1},
	}, &a))
	return a.PromptEvalCount
}

// countBody is how many input tokens Ollama counts in a chat request's
// body, sent again without streaming and asking one token (the prompt is
// the same).
func countBody(t *testing.T, hc *http.Client, base string, body []byte) int {
	t.Helper()
	var req map[string]any
	require.NoError(t, json.Unmarshal(body, &req))
	req["stream"] = false
	req["options"] = map[string]any{"num_predict": 1}
	var a nativeAnswer
	require.NoError(t, post(t.Context(), hc, base+"/api/chat", req, &a))
	return a.PromptEvalCount
}

// agentLine is what the test reads of a records.jsonl line.
type agentLine struct {
	Load       float64           `json:"load"`
	Session    int               `json:"session"`
	Step       int               `json:"step"`
	TaskSteps  int               `json:"task_steps"`
	ToolChoice string            `json:"tool_choice"`
	ToolCalls  *int              `json:"tool_calls"`
	AskedInput int               `json:"asked_input_tokens"`
	Record     llmmetrics.Record `json:"record"`
}
