package present

import (
	"bytes"
	"testing"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/saturation"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRunPage(t *testing.T) {
	s := llmmetrics.Summarize([]llmmetrics.Record{
		{Start: time.Unix(0, 0), FirstToken: time.Unix(0, 0).Add(100 * time.Millisecond), LastToken: time.Unix(0, 0).Add(300 * time.Millisecond),
			End: time.Unix(0, 0).Add(300 * time.Millisecond), OutputTokens: 3, Chunks: 3, ITL: []time.Duration{100 * time.Millisecond, 100 * time.Millisecond}, Outcome: llmmetrics.OutcomeOK},
		{Start: time.Unix(0, 0), End: time.Unix(1, 0), Outcome: llmmetrics.OutcomeError},
	}, llmmetrics.SummaryOptions{Percentiles: []float64{50, 90, 95, 99}})
	p := RunPage("llmmetrics report: f", "llmmetrics report f", []RunLevel{{Summary: s, TTFT: []time.Duration{100 * time.Millisecond}}}, []string{"f: records"})
	require.Len(t, p.Tables, 2)
	// 2 requests over 1 s: 1 ok, 1 failed; 1 request/s; TTFT 100 ms; TPOT (300−100)/2 = 100 ms.
	assert.Equal(t, []string{"requests", "2 (1 ok, 1 failed, 0 canceled)"}, p.Tables[0].Rows[0].Cells)
	assert.Equal(t, []string{"request throughput", "1.00 requests/s"}, p.Tables[0].Rows[2].Cells)
	assert.Equal(t, []string{"TTFT", "1", "100.00", "100.00", "100.00", "100.00", "100.00", "100.00"}, p.Tables[1].Rows[0].Cells)
	assert.Equal(t, []string{"TPOT", "1", "100.00", "100.00", "100.00", "100.00", "100.00", "100.00"}, p.Tables[1].Rows[2].Cells)
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, p))
	assert.Contains(t, buf.String(), "TTFT: cumulative distribution")
	assert.NotContains(t, buf.String(), "ITL: cumulative distribution", "no gaps, no chart")
}

// TestRunPageUnknown: what the files do not give is printed "unknown",
// never the 0 the Summary holds; each level has its tables and its line
// in the CDFs.
func TestRunPageUnknown(t *testing.T) {
	s := llmmetrics.Summarize([]llmmetrics.Record{
		{Start: time.Unix(0, 0), FirstToken: time.Unix(0, 0).Add(100 * time.Millisecond), End: time.Unix(0, 0).Add(100 * time.Millisecond),
			OutputTokens: 1, Chunks: 1, Outcome: llmmetrics.OutcomeOK},
	}, llmmetrics.SummaryOptions{})
	p := RunPage("t", "c", []RunLevel{
		{Label: "rate 1", Summary: s, TTFT: []time.Duration{time.Millisecond}, Unknown: Unknown{Input: true, Cached: true, Concurrency: true, Duration: true}},
		{Label: "rate 2", Summary: s, TTFT: []time.Duration{2 * time.Millisecond}},
	}, nil)
	require.Len(t, p.Tables, 4)
	rows := map[string]string{}
	for _, r := range p.Tables[0].Rows {
		rows[r.Cells[0]] = r.Cells[1]
	}
	assert.Equal(t, "Run at rate 1", p.Tables[0].Caption)
	assert.Equal(t, "unknown", rows["duration"])
	assert.Equal(t, "unknown", rows["request throughput"])
	assert.Equal(t, "unknown", rows["total token throughput"])
	assert.Equal(t, "unknown input (unknown cached), 1 output", rows["tokens"])
	assert.NotContains(t, rows, "peak concurrency")
	known := map[string]string{}
	for _, r := range p.Tables[2].Rows {
		known[r.Cells[0]] = r.Cells[1]
	}
	assert.Equal(t, "0 input (0 cached), 1 output", known["tokens"])
	assert.Equal(t, "1", known["peak concurrency"])
	require.Len(t, p.Runs, 2)
	assert.Equal(t, "rate 2", p.Runs[1].Name)
}

func TestBenchPage(t *testing.T) {
	kv, wait := 0.5, 3.0
	sum := llmmetrics.Summary{RequestThroughput: 2, OutputThroughput: 256, Failed: 1, Canceled: 1}
	sum.Goodput.Attainment = 0.75
	sum.TTFT = llmmetrics.Distribution{Count: 4, Median: 20 * time.Millisecond, Percentiles: []llmmetrics.PercentileValue{{P: 99, Value: 90 * time.Millisecond}}}
	p := BenchPage(BenchReport{Command: "llmmetrics bench", LoadUnit: "concurrent requests", CDFLabel: "all levels",
		Levels:   []Level{{Load: 4, Summary: sum, Server: &saturation.Server{KVCacheUsage: &kv, RequestsWaiting: &wait}}},
		Findings: []string{"Saturation point: 4 concurrent requests. Why:", "KV cache at 50%"}})
	require.Len(t, p.Tables, 1)
	assert.Equal(t, []string{"4", "2.00", "256", "20.00", "90.00", "-", "-", "-", "75.0%", "2", "50%", "3.0"}, p.Tables[0].Rows[0].Cells)
	require.NotNil(t, p.Verdict)
	assert.Equal(t, "Saturation point: 4 concurrent requests. Why:", p.Verdict.Headline)
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, p))
	for _, title := range []string{"Output throughput against load", "p99 TTFT against load", "Server KV cache against load", "Server queue against load"} {
		assert.Contains(t, buf.String(), title)
	}
}

func TestCommandLine(t *testing.T) {
	assert.Equal(t, `llmmetrics compare -fail-on 'p99 ttft,output_throughput' a b ''`,
		CommandLine([]string{"llmmetrics", "compare", "-fail-on", "p99 ttft,output_throughput", "a", "b", ""}))
	assert.Equal(t, `x 'it'\''s'`, CommandLine([]string{"x", "it's"}))
}

// TestBenchPageDegenerate: pages of runs a user can produce without any
// unusual flag — one level, every sample equal (a fake server in a
// synctest bubble, a server that answers at once), zero durations, no
// samples at all — draw without panicking (a log axis cannot hold 0, and
// gonum widens a one-value axis down to 0).
func TestBenchPageDegenerate(t *testing.T) {
	ms := time.Millisecond
	sum := llmmetrics.Summary{RequestThroughput: 1, OutputThroughput: 10}
	sum.TTFT = llmmetrics.Distribution{Count: 2, Median: ms, Percentiles: []llmmetrics.PercentileValue{{P: 99, Value: ms}}}
	for _, tc := range []struct {
		name      string
		levels    []Level
		ttft, itl []time.Duration
	}{
		{"nothing", nil, nil, nil},
		{"one level, equal samples", []Level{{Load: 1, Summary: sum}}, []time.Duration{ms, ms}, []time.Duration{ms}},
		{"zero durations", []Level{{Load: 2, Summary: llmmetrics.Summary{}}}, []time.Duration{0, 0}, []time.Duration{0}},
		{"two levels, one sample", []Level{{Load: 1, Summary: sum}, {Load: 2, Summary: sum}}, []time.Duration{ms}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			require.NoError(t, Write(&buf, BenchPage(BenchReport{LoadUnit: "requests/s", Levels: tc.levels, TTFT: tc.ttft, ITL: tc.itl})))
			assert.Contains(t, buf.String(), "</html>")
			if len(tc.ttft) > 0 {
				assert.Contains(t, buf.String(), "TTFT: cumulative distribution")
			}
		})
	}
}
