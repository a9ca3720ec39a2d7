package workload

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// agentConfig is an agent workload of fixed lengths: 3 steps, a 40-token
// system prompt, a 20-token task, 30-token results, 2 s tools.
func agentConfig(t *testing.T, api string) Config {
	return Config{API: api, Input: mustDist(t, "20"), Output: mustDist(t, "50"), PrefixTokens: 40, Seed: 9,
		Agent: &AgentConfig{Steps: mustDist(t, "3"), ToolResult: mustDist(t, "30"), Final: mustDist(t, "70"),
			ToolTime: DurationDist{Kind: "fixed", A: 2 * time.Second}}}
}

// call is the server's answer to step k of session s: one call of
// read_file with arguments of 9 characters.
func call(s, k int) Answer {
	return Answer{ToolCalls: []ToolCall{{ID: "call_" + string(rune('a'+s)) + string(rune('0'+k)), Name: "read_file", Arguments: `{"p":"x"}`}}}
}

// TestAgentSteps follows one task: what each step sends, asks and counts.
func TestAgentSteps(t *testing.T) {
	w := open(t, agentConfig(t, "chat"))
	s, err := w.Next()
	require.NoError(t, err)
	require.True(t, s.Agent())
	require.Equal(t, 3, s.Len())
	tools := 0
	for _, tl := range AgentTools {
		for _, x := range tl.toolTexts() {
			tools += len(x)
		}
	}

	r1, ok := s.Next()
	require.True(t, ok)
	assert.Equal(t, 1, r1.Turn)
	assert.Equal(t, ChoiceRequired, r1.ToolChoice)
	assert.Equal(t, AgentTools, r1.Tools)
	assert.Len(t, r1.System, 160, "the 40-token system prompt")
	require.Len(t, r1.Messages, 1)
	assert.Len(t, r1.Messages[0].Content, 80, "the 20-token task")
	assert.Equal(t, 50, r1.OutputTokens)
	assert.Equal(t, (160+80+tools+3)/4, r1.InputTokens, "⌈characters/4⌉ of the system prompt, the task and the tools")
	assert.Equal(t, time.Duration(0), s.ThinkTime(), "no pause before the first step")

	s.AnswerWith(call(0, 1), 7)
	assert.Equal(t, 2*time.Second, s.ThinkTime(), "the tool's time")
	r2, ok := s.Next()
	require.True(t, ok)
	assert.Equal(t, ChoiceRequired, r2.ToolChoice)
	require.Len(t, r2.Messages, 3)
	assert.Equal(t, Message{Role: "assistant", ToolCalls: call(0, 1).ToolCalls}, r2.Messages[1])
	res := r2.Messages[2]
	assert.Equal(t, "tool", res.Role)
	assert.Equal(t, "call_a1", res.ToolCallID)
	assert.Equal(t, "read_file", res.ToolName)
	assert.Len(t, res.Content, 120, "a 30-token result")
	callChars := len("read_file") + len(`{"p":"x"}`)
	assert.Equal(t, (160+80+tools+callChars+120+3)/4, r2.InputTokens)

	s.AnswerWith(call(0, 2), 7)
	r3, ok := s.Next()
	require.True(t, ok)
	assert.Equal(t, ChoiceNone, r3.ToolChoice, "the last step asks for the answer")
	assert.Equal(t, 70, r3.OutputTokens, "the final answer's length")
	assert.Len(t, r3.Messages, 5)
	assert.Greater(t, r3.InputTokens, r2.InputTokens)
	s.AnswerWith(Answer{Text: "done"}, 3)
	_, ok = s.Next()
	assert.False(t, ok)
	assert.Equal(t, 4*time.Second, s.ToolTime())
	assert.Equal(t, 0, s.Missed())
}

// TestAgentStepWithoutCall: an answer without the forced call goes on as
// the assistant's text and the result as a user message; a failed step
// ends the task.
func TestAgentStepWithoutCall(t *testing.T) {
	w := open(t, agentConfig(t, "anthropic"))
	s, err := w.Next()
	require.NoError(t, err)
	_, _ = s.Next()
	s.AnswerWith(Answer{Text: "I would rather not."}, 5)
	assert.Equal(t, 1, s.Missed())
	r2, ok := s.Next()
	require.True(t, ok)
	require.Len(t, r2.Messages, 3)
	assert.Equal(t, Message{Role: "assistant", Content: "I would rather not."}, r2.Messages[1])
	assert.Equal(t, "user", r2.Messages[2].Role)
	s.AnswerWith(Answer{}, 0) // failed
	_, ok = s.Next()
	assert.False(t, ok, "a failed step ends the task")
}

// TestAgentOllamaLastStep: Ollama cannot refuse a call, so its last step
// offers no tools, and its count leaves them out.
func TestAgentOllamaLastStep(t *testing.T) {
	c := agentConfig(t, "ollama")
	c.Agent.Steps = mustDist(t, "1")
	w := open(t, c)
	s, err := w.Next()
	require.NoError(t, err)
	r, _ := s.Next()
	assert.Equal(t, ChoiceNone, r.ToolChoice)
	assert.Equal(t, (160+80+3)/4, r.InputTokens, "no tools counted")
	var body map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(Body("ollama", "m", r, false), &body))
	assert.NotContains(t, body, "tools")
}

// TestAgentDeterministic: tasks are drawn in session order from the seed.
func TestAgentDeterministic(t *testing.T) {
	c := agentConfig(t, "chat")
	c.Agent.Steps, c.Agent.ToolResult, c.Agent.ToolTime = mustDist(t, "uniform:1-9"), mustDist(t, "lognormal:300,200"),
		DurationDist{Kind: "lognormal", A: time.Second, B: 2 * time.Second}
	run := func(seed uint64) []string {
		c.Seed = seed
		w := open(t, c)
		var out []string
		for i := range 5 {
			s, err := w.Next()
			require.NoError(t, err)
			for k := 0; ; k++ {
				r, ok := s.Next()
				if !ok {
					break
				}
				out = append(out, string(Body("chat", "m", r, false)), s.ThinkTime().String())
				s.AnswerWith(call(i, k), 9)
			}
		}
		return out
	}
	a := run(1)
	assert.Equal(t, a, run(1))
	assert.NotEqual(t, a, run(2))
}

// TestAgentBodies checks a step of a task in every API against the shape
// its documents give: the tools, the tool choice, the assistant's call and
// the tool's result.
func TestAgentBodies(t *testing.T) {
	tool := Tool{Name: "read_file", Description: "Read a file.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)}
	r := Request{System: "S", OutputTokens: 9, Tools: []Tool{tool}, ToolChoice: ChoiceRequired, Messages: []Message{
		{Role: "user", Content: "fix it"},
		{Role: "assistant", ToolCalls: []ToolCall{{ID: "c1", Name: "read_file", Arguments: `{"path":"a.go"}`, Signature: "c2ln"}}},
		{Role: "tool", Content: "package a", ToolCallID: "c1", ToolName: "read_file"},
	}}
	params := `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`
	for _, tc := range []struct{ api, want string }{
		{"chat", `{"model":"m","messages":[{"role":"system","content":"S"},{"role":"user","content":"fix it"},` +
			`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a.go\"}"}}]},` +
			`{"role":"tool","content":"package a","tool_call_id":"c1"}],"stream":true,"stream_options":{"include_usage":true},"max_tokens":9,` +
			`"tools":[{"type":"function","function":{"name":"read_file","description":"Read a file.","parameters":` + params + `}}],"tool_choice":"required"}`},
		{"responses", `{"model":"m","instructions":"S","input":[{"role":"user","content":"fix it"},` +
			`{"type":"function_call","call_id":"c1","name":"read_file","arguments":"{\"path\":\"a.go\"}"},` +
			`{"type":"function_call_output","call_id":"c1","output":"package a"}],"stream":true,"max_output_tokens":9,` +
			`"tools":[{"type":"function","name":"read_file","description":"Read a file.","parameters":` + params + `,"strict":false}],"tool_choice":"required"}`},
		{"anthropic", `{"model":"m","system":"S","messages":[{"role":"user","content":"fix it"},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"c1","name":"read_file","input":{"path":"a.go"}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"package a"}]}],"max_tokens":9,"stream":true,` +
			`"tools":[{"name":"read_file","description":"Read a file.","input_schema":` + params + `}],"tool_choice":{"type":"any"}}`},
		{"gemini", `{"contents":[{"role":"user","parts":[{"text":"fix it"}]},` +
			`{"role":"model","parts":[{"functionCall":{"id":"c1","name":"read_file","args":{"path":"a.go"}},"thoughtSignature":"c2ln"}]},` +
			`{"role":"user","parts":[{"functionResponse":{"id":"c1","name":"read_file","response":{"result":"package a"}}}]}],` +
			`"systemInstruction":{"parts":[{"text":"S"}]},"generationConfig":{"maxOutputTokens":9},` +
			`"tools":[{"functionDeclarations":[{"name":"read_file","description":"Read a file.","parameters":` + params + `}]}],"toolConfig":{"functionCallingConfig":{"mode":"ANY"}}}`},
		{"ollama", `{"model":"m","messages":[{"role":"system","content":"S"},{"role":"user","content":"fix it"},` +
			`{"role":"assistant","content":"","tool_calls":[{"id":"c1","function":{"name":"read_file","arguments":{"path":"a.go"}}}]},` +
			`{"role":"tool","content":"package a","tool_name":"read_file","tool_call_id":"c1"}],"stream":true,"options":{"num_predict":9},` +
			`"tools":[{"type":"function","function":{"name":"read_file","description":"Read a file.","parameters":` + params + `}}]}`},
	} {
		t.Run(tc.api, func(t *testing.T) {
			assert.Equal(t, tc.want, string(Body(tc.api, "m", r, false)))
		})
	}
	t.Run("none and parallel results", func(t *testing.T) {
		r := r
		r.ToolChoice = ChoiceNone
		r.Messages = append(r.Messages[:1:1],
			Message{Role: "assistant", Content: "two", ToolCalls: []ToolCall{{ID: "a", Name: "f", Arguments: `{}`}, {ID: "b", Name: "g", Arguments: `not json`}}},
			Message{Role: "tool", Content: "ra", ToolCallID: "a", ToolName: "f"}, Message{Role: "tool", Content: "rb", ToolCallID: "b", ToolName: "g"})
		a := string(Body("anthropic", "m", r, false))
		assert.Contains(t, a, `{"role":"assistant","content":[{"type":"text","text":"two"},{"type":"tool_use","id":"a","name":"f","input":{}},{"type":"tool_use","id":"b","name":"g","input":{"arguments":"not json"}}]}`,
			"arguments that are not an object are sent as one")
		assert.Contains(t, a, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"ra"},{"type":"tool_result","tool_use_id":"b","content":"rb"}]}`, "one turn's results in one message")
		assert.Contains(t, a, `"tool_choice":{"type":"none"}`)
		g := string(Body("gemini", "m", r, false))
		assert.Contains(t, g, `{"role":"user","parts":[{"functionResponse":{"id":"a","name":"f","response":{"result":"ra"}}},{"functionResponse":{"id":"b","name":"g","response":{"result":"rb"}}}]}`)
		assert.Contains(t, g, `"toolConfig":{"functionCallingConfig":{"mode":"NONE"}}`)
		assert.Contains(t, string(Body("chat", "m", r, false)), `"tool_choice":"none"`)
		assert.NotContains(t, string(Body("ollama", "m", r, false)), `"tools"`, "Ollama asks for no call by offering none")
	})
}

// TestReadAnswer reads each API's streamed tool calls as its documents
// show them.
func TestReadAnswer(t *testing.T) {
	for _, tc := range []struct {
		api, stream string
		want        Answer
	}{
		{"chat", `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":null}}]}
data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]}}]}
data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_2","type":"function","function":{"name":"g","arguments":"{\"b\""}}]}}]}
data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":"}}]}}]}
data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}},{"index":1,"function":{"arguments":":2}"}}]}}]}
data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
data: [DONE]
`, Answer{ToolCalls: []ToolCall{{ID: "call_1", Name: "f", Arguments: `{"a":1}`}, {ID: "call_2", Name: "g", Arguments: `{"b":2}`}}}},
		{"responses", `event: response.output_item.added
data: {"type":"response.output_item.added","output_index":0,"item":{"id":"fc_1","type":"function_call","status":"in_progress","arguments":"","call_id":"call_1","name":"f"}}

data: {"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":0,"delta":"{\"a\":"}
data: {"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":0,"delta":"1}"}
data: {"type":"response.output_item.added","output_index":1,"item":{"id":"fc_2","type":"function_call","arguments":"","call_id":"call_2","name":"g"}}
data: {"type":"response.function_call_arguments.delta","item_id":"fc_2","output_index":1,"delta":"{\"cut"}
data: {"type":"response.output_item.done","output_index":0,"item":{"id":"fc_1","type":"function_call","status":"completed","arguments":"{\"a\": 1}","call_id":"call_1","name":"f"}}
`, Answer{ToolCalls: []ToolCall{{ID: "call_1", Name: "f", Arguments: `{"a": 1}`}, {ID: "call_2", Name: "g", Arguments: `{"cut`}}}},
		{"anthropic", `event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me look."}}
data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"f","input":{}}}
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\": 1}"}}
data: {"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_2","name":"g","input":{}}}
data: {"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}}
`, Answer{Text: "Let me look.", ToolCalls: []ToolCall{{ID: "toolu_1", Name: "f", Arguments: `{"a": 1}`}, {ID: "toolu_2", Name: "g", Arguments: `{}`}}}},
		{"gemini", `data: {"candidates":[{"content":{"parts":[{"text":"thinking","thought":true},{"text":"Calling."}],"role":"model"}}]}
data: {"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{"a": 1}},"thoughtSignature":"c2ln"},{"functionCall":{"id":"x","name":"g"}}],"role":"model"},"finishReason":"STOP"}]}
`, Answer{Text: "Calling.", ToolCalls: []ToolCall{{Name: "f", Arguments: `{"a":1}`, Signature: "c2ln"}, {ID: "x", Name: "g", Arguments: `{}`}}}},
		{"ollama", `{"model":"m","message":{"role":"assistant","content":""},"done":false}
{"model":"m","message":{"role":"assistant","content":"","tool_calls":[{"id":"call_k","function":{"index":0,"name":"f","arguments":{"a":1}}}]},"done":false}
{"model":"m","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop"}
`, Answer{ToolCalls: []ToolCall{{ID: "call_k", Name: "f", Arguments: `{"a":1}`}}}},
	} {
		t.Run(tc.api, func(t *testing.T) {
			a, err := ReadAnswer(tc.api, strings.NewReader(tc.stream))
			require.NoError(t, err)
			assert.Equal(t, tc.want, a)
		})
	}
}

// TestReadAnswerRealFiles reads tool calls recorded from real services,
// from beside the directory LLMMETRICS_REALDATA names (its parent's
// sse-real/ and real-more/; run by hand, the files are not in the
// repository): Groq's whole call in one chunk, Gemini's call with its
// thought signature.
func TestReadAnswerRealFiles(t *testing.T) {
	dir := os.Getenv("LLMMETRICS_REALDATA")
	if dir == "" {
		t.Skip("LLMMETRICS_REALDATA not set")
	}
	dir = filepath.Dir(filepath.Clean(dir))
	for _, tc := range []struct {
		file, api, name, args string
		id, signature         bool
	}{
		{"sse-real/groq_reasoning_tool_call.sse", "chat", "get_something_by_name", `{"name":"example"}`, true, false},
		{"real-more/gemini_sse_function_call_signature.sse", "gemini", "get_country", `{}`, false, true},
	} {
		t.Run(tc.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join(dir, tc.file))
			require.NoError(t, err)
			defer f.Close()
			a, err := ReadAnswer(tc.api, f)
			require.NoError(t, err)
			require.Len(t, a.ToolCalls, 1)
			c := a.ToolCalls[0]
			assert.Equal(t, tc.name, c.Name)
			assert.Equal(t, tc.args, c.Arguments)
			assert.Equal(t, tc.id, c.ID != "", c.ID)
			assert.Equal(t, tc.signature, c.Signature != "")
		})
	}
}

func TestParseDurationDist(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    DurationDist
		wantErr bool
	}{
		{"250ms", DurationDist{Kind: "fixed", A: 250 * time.Millisecond}, false},
		{"0s", DurationDist{Kind: "fixed"}, false},
		{"uniform:1s-3s", DurationDist{Kind: "uniform", A: time.Second, B: 3 * time.Second}, false},
		{"lognormal:16.8s, 704s", DurationDist{Kind: "lognormal", A: 16800 * time.Millisecond, B: 704 * time.Second}, false},
		{"normal:1s,0s", DurationDist{Kind: "normal", A: time.Second}, false},
		{"-1s", DurationDist{}, true},
		{"uniform:3s-1s", DurationDist{}, true},
		{"lognormal:0s,1s", DurationDist{}, true},
		{"lognormal:2s", DurationDist{}, true},
		{"gamma:1s,2s", DurationDist{}, true},
		{"2", DurationDist{}, true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			d, err := ParseDurationDist(tc.in)
			if tc.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, d)
			again, err := ParseDurationDist(d.String())
			require.NoError(t, err)
			assert.Equal(t, d, again)
		})
	}
}

// TestDurationDistDraw checks the draws' mean (and, for the default tool
// time, its median and the share over a minute: 0.4 s and 3.3 %).
func TestDurationDistDraw(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	mean := func(d DurationDist, n int) (float64, []time.Duration) {
		var sum float64
		xs := make([]time.Duration, n)
		for i := range xs {
			xs[i] = d.Draw(rng)
			require.GreaterOrEqual(t, xs[i], time.Duration(0))
			require.LessOrEqual(t, xs[i], MaxToolTime)
			sum += xs[i].Seconds()
		}
		return sum / float64(n), xs
	}
	m, _ := mean(DurationDist{Kind: "uniform", A: time.Second, B: 3 * time.Second}, 20000)
	assert.InDelta(t, 2, m, 0.02)
	m, _ = mean(DurationDist{Kind: "lognormal", A: 2 * time.Second, B: time.Second}, 40000)
	assert.InDelta(t, 2, m, 0.03)
	m, xs := mean(DurationDist{Kind: "normal", A: 100 * time.Millisecond, B: time.Second}, 1000)
	assert.Positive(t, m, "clamped at 0")
	for _, x := range xs {
		assert.GreaterOrEqual(t, x, time.Duration(0))
	}
	d, err := ParseDurationDist(DefaultToolTime)
	require.NoError(t, err)
	_, xs = mean(d, 100000)
	over, under := 0, 0
	for _, x := range xs {
		if x > time.Minute {
			over++
		}
		if x < 400*time.Millisecond {
			under++
		}
	}
	assert.InDelta(t, 0.5, float64(under)/float64(len(xs)), 0.01, "median 0.4 s")
	assert.InDelta(t, 0.033, float64(over)/float64(len(xs)), 0.003, "3.3 % over a minute")
}

// TestAgentDefaults checks the defaults against what docs/agents.md
// derives them from: the steps' mean 8.8 and median 2, the results'
// median 251, the outputs' median 214.
func TestAgentDefaults(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	median := func(spec string, n int) (float64, float64) {
		d := mustDist(t, spec)
		xs := make([]float64, n)
		sum := 0.0
		for i := range xs {
			xs[i] = float64(d.Draw(rng))
			sum += xs[i]
		}
		return quantile(xs, 0.5), sum / float64(n)
	}
	med, _ := median(DefaultSteps, 100000)
	assert.Equal(t, 2.0, med)
	med, _ = median(DefaultToolResultTokens, 100000)
	assert.InDelta(t, 251, med, 6)
	med, _ = median(DefaultStepOutputTokens, 100000)
	assert.InDelta(t, 218, med, 5, "the lognormal of mean 523 and SD 1,140 has median 218 (TraceLab: 214)")
}

// quantile returns the value at rank q·(n−1) of xs, sorted.
func quantile(xs []float64, q float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}
