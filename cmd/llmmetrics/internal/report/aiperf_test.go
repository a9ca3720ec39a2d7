package report

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/llmmetrics/llmmetrics/cmd/llmmetrics/internal/jsonscan"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testdata/aiperf_docs.jsonl, by hand: one successful streaming request
// (TTFT 255.886568 ms, request latency 297.525228 ms, 8 inter-chunk gaps
// summing to 41.638660 ms, 9 output and 550 input tokens) and one cancelled
// request of another run, 65,953,586,872,391 ns later.
func TestAIPerfDocs(t *testing.T) {
	s := summaryOf(t, "testdata/aiperf_docs.jsonl")
	assert.Equal(t, 2, s.Requests)
	assert.Equal(t, 1, s.Completed)
	assert.Equal(t, 1, s.Canceled)
	assert.Equal(t, time.Duration(1759879161119772754-1759813207532900363), s.Duration)
	assert.Equal(t, 550, s.InputTokens)
	assert.Equal(t, 9, s.OutputTokens)
	assert.Equal(t, 255886568*time.Nanosecond, s.TTFT.Mean)
	assert.Equal(t, 297525228*time.Nanosecond, s.E2EL.Mean)
	// (297.525228 − 255.886568) ms / 8 = 5.2048325 ms, aiperf's own
	// inter_token_latency, rounded half away from zero.
	assert.Equal(t, 5204833*time.Nanosecond, s.TPOT.Mean)
	assert.Equal(t, 8, s.ITL.Count)
	assert.Equal(t, 5674918*time.Nanosecond, s.ITL.Max)
	assert.Equal(t, 4801489*time.Nanosecond, s.ITL.Min)
	assert.Equal(t, 5204833*time.Nanosecond, s.ITL.Mean) // 41.638660 ms / 8
}

// testdata/aiperf_derived.jsonl, by hand: the warm-up record is left out;
// requests [0, 51 ms) ok (TTFT 20 ms, latency 50 ms, gaps 10 10 10 ms, 10
// tokens of which 4 reasoning, 100 input), [10, 15 ms) HTTP 500 (120 input
// tokens, not counted), [30, 101 ms) ok (TTFT 40 ms in us, latency 70 ms in
// ns, one gap of 0.03 sec, 2 tokens, 80 input).
func TestAIPerfDerived(t *testing.T) {
	s := summaryOf(t, "testdata/aiperf_derived.jsonl")
	assert.Equal(t, 3, s.Requests)
	assert.Equal(t, 2, s.Completed)
	assert.Equal(t, 1, s.Failed)
	assert.Equal(t, 101*ms, s.Duration)
	assert.Equal(t, 180, s.InputTokens)
	assert.Equal(t, 12, s.OutputTokens)
	assert.Equal(t, 4, s.ReasoningTokens)
	assert.Equal(t, 30*ms, s.TTFT.Mean)
	assert.Equal(t, 16666667*time.Nanosecond, s.TPOT.Mean) // (30/9 + 30/1) / 2 ms
	assert.Equal(t, 4, s.ITL.Count)
	assert.Equal(t, 15*ms, s.ITL.Mean)
	assert.Equal(t, 60*ms, s.E2EL.Mean)
	assert.Equal(t, 2, s.PeakConcurrency)

	code, out, _ := runReport(t, "testdata/aiperf_derived.jsonl")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, `1 warm-up records (benchmark_phase "warmup") left out`)
}

func TestAIPerfBadInput(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, text, msg string }{
		{"unknown unit", `{"metadata":{"request_start_ns":1,"request_end_ns":9},"metrics":{"time_to_first_token":{"value":1,"unit":"fortnights"},"request_latency":{"value":2,"unit":"ns"}},"error":null}`,
			`:1: time_to_first_token: unknown time unit "fortnights"`},
		{"latency past the end", `{"metadata":{"request_start_ns":1,"request_end_ns":2},"metrics":{"time_to_first_token":{"value":1,"unit":"ns"},"request_latency":{"value":5,"unit":"ns"}},"error":null}`,
			":1: record times out of order: end -4ns before the last token"},
		{"no metadata", `{"metadata":{"session_num":1},"metrics":{},"error":null,"request_start_ns":1}`, ":1: a record without metadata.request_start_ns"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := writeFile(t, dir, tc.name+".jsonl", tc.text+"\n")
			code, _, errOut := runReport(t, "-format", "aiperf", f)
			assert.Equal(t, 2, code)
			assert.Contains(t, errOut, tc.msg)
		})
	}
}

// The scanner's fast path and the encoding/json path give the same Record
// for every fixture line the fast path takes, and it takes the plain ones.
func TestAIPerfFastPathAgrees(t *testing.T) {
	fast := 0
	for _, name := range []string{"testdata/aiperf_docs.jsonl", "testdata/aiperf_derived.jsonl", "testdata/aiperf_20251009.jsonl"} {
		for i, line := range readLines(t, name) {
			var (
				j jsonscan.Scanner
				f aiFacts
				l aiperfLine
			)
			rec, skip, ok := aiperfFast(&j, []byte(line), &f)
			if !ok || skip {
				continue
			}
			fast++
			require.NoError(t, json.Unmarshal([]byte(line), &l))
			want, _, err := aiperfRecord(&l, &fileRun{run: &run{}, src: &source{name: name}})
			require.NoError(t, err)
			assert.Equal(t, want, rec, "%s line %d", name, i+1)
		}
	}
	assert.Equal(t, 5, fast) // the five successful streaming records
}
