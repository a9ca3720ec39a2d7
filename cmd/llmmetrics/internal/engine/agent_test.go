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
// every task still runs its steps, its context growing by the answer and
// the tool's result as Ollama counts it, and is measured.
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
		// the system message and the tools calibrated); a later one
		// counts each earlier answer at the output tokens Ollama reported
		// for it, which its text re-tokenized in the prompt may exceed by
		// a token or a few.
		if l.Step == 1 {
			assert.Equal(t, l.AskedInput, l.Record.InputTokens, "task %d step 1", l.Session)
		} else {
			assert.InDelta(t, l.AskedInput, l.Record.InputTokens, float64(3*(l.Step-1)), "task %d step %d", l.Session, l.Step)
		}
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
	for _, b := range bodies {
		var req struct {
			Tools    []json.RawMessage `json:"tools"`
			Messages []struct {
				Role string `json:"role"`
			} `json:"messages"`
		}
		require.NoError(t, json.Unmarshal(b, &req))
		if len(req.Tools) > 0 {
			withTools++
			assert.Len(t, req.Tools, 6, "the agent's tools")
		}
	}
	assert.Equal(t, 8, withTools, "the requests of steps 1 and 2 offer the tools")

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
