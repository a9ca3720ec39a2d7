package report

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// testdata/genai_perf_docs.json, by hand: one non-streaming chat request,
// its one response 1741134590728534586 − 1741134590669919999 = 58,614,587
// ns after the request, usage 33 prompt and 32 completion tokens.
func TestGenAIPerfDocs(t *testing.T) {
	s := summaryOf(t, "testdata/genai_perf_docs.json")
	assert.Equal(t, 1, s.Requests)
	assert.Equal(t, 1, s.Completed)
	assert.Equal(t, 58614587*time.Nanosecond, s.Duration)
	assert.Equal(t, 33, s.InputTokens)
	assert.Equal(t, 32, s.OutputTokens)
	assert.Equal(t, 58614587*time.Nanosecond, s.TTFT.Mean)
	assert.Equal(t, 58614587*time.Nanosecond, s.E2EL.Mean)
	assert.Equal(t, time.Duration(0), s.TPOT.Mean) // 32 tokens in one response
	assert.Equal(t, 0, s.ITL.Count)
}

// testdata/genai_perf_triton_test.json, by hand (times in ns): requests at
// 1, 2, 5, 3 with responses [3 5 8], [4 7 11], [7 8 13 18], [6 8 11]; TTFTs
// 2 2 2 3, E2ELs 7 9 13 8, gaps 2 3 3 4 1 5 5 2 3, no usage so one token
// per response (13), TPOTs 2.5 3.5 3.667 2.5; the run spans 1–18.
func TestGenAIPerfTritonTest(t *testing.T) {
	s := summaryOf(t, "testdata/genai_perf_triton_test.json")
	assert.Equal(t, 4, s.Requests)
	assert.Equal(t, 4, s.Completed)
	assert.Equal(t, 17*time.Nanosecond, s.Duration)
	assert.Equal(t, 13, s.OutputTokens)
	assert.Equal(t, 0, s.InputTokens)
	assert.Equal(t, 2*time.Nanosecond, s.TTFT.Mean) // 2.25 rounded
	assert.Equal(t, 3*time.Nanosecond, s.TTFT.Max)
	assert.Equal(t, 9, s.ITL.Count)
	assert.Equal(t, 3*time.Nanosecond, s.ITL.Mean) // 28 / 9 rounded
	assert.Equal(t, 5*time.Nanosecond, s.ITL.Max)
	assert.Equal(t, 9*time.Nanosecond, s.E2EL.Mean) // 37 / 4 rounded
	assert.Equal(t, 13*time.Nanosecond, s.E2EL.Max)
	assert.Equal(t, 3*time.Nanosecond, s.TPOT.Mean) // 3.04 rounded
	assert.InDelta(t, 4/17e-9, s.RequestThroughput, 1)

	code, out, _ := runReport(t, "testdata/genai_perf_triton_test.json")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "holds 2 experiments")
	assert.Contains(t, out, "4 requests report no usage")
	assert.Contains(t, out, "4 requests report no prompt_tokens")
}

func TestGenAIPerfStreaming(t *testing.T) {
	// An OpenAI streaming request as perf_analyzer records it: one
	// response output per SSE event; the role-only first event, the usage
	// event and [DONE] carry no token.
	text := `{"experiments":[{"experiment":{"mode":"concurrency","value":1},"requests":[{"timestamp":1000,
"request_inputs":{"payload":"{}"},"response_timestamps":[1100,1200,1300,1400,1500],
"response_outputs":[{"response":"data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n"},
{"response":"data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n"},
{"response":"data: {\"choices\":[{\"delta\":{\"content\":\" there\"}}]}\n\n"},
{"response":"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":3}}\n\n"},
{"response":"data: [DONE]\n\n"}]}]}],"version":"","service_kind":"openai","endpoint":"v1/chat/completions"}`
	f := writeFile(t, t.TempDir(), "p.json", text)
	s := summaryOf(t, f)
	assert.Equal(t, 1, s.Completed)
	assert.Equal(t, 500*time.Nanosecond, s.Duration)
	assert.Equal(t, 200*time.Nanosecond, s.TTFT.Mean)
	assert.Equal(t, 300*time.Nanosecond, s.E2EL.Mean) // to the last token
	assert.Equal(t, 1, s.ITL.Count)
	assert.Equal(t, 3, s.OutputTokens)
	assert.Equal(t, 7, s.InputTokens)
	assert.Equal(t, 50*time.Nanosecond, s.TPOT.Mean) // 100 / (3 − 1)
}
