package present

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBenchPageTasks: a bench run of agents' tasks shows their table, TTFT
// by context length (table and chart) and the hit rate by step.
func TestBenchPageTasks(t *testing.T) {
	lvl := func(load float64, tasks *Tasks) Level {
		s := llmmetrics.Summary{OutputThroughput: 100 * load}
		s.TTFT = llmmetrics.Distribution{Count: 10, Percentiles: []llmmetrics.PercentileValue{{P: 50, Value: 20 * time.Millisecond}, {P: 99, Value: 90 * time.Millisecond}}}
		return Level{Load: load, Summary: s, Tasks: tasks, TTFTByInput: []InputBucket{
			{Min: 1024, Max: 2047, Range: "1024-2047", Requests: 6, P50: 12 * time.Millisecond, P99: 30 * time.Millisecond},
			{Min: 2048, Max: 4095, Range: "2048-4095", Requests: 4, P50: 25 * time.Millisecond, P99: 61500 * time.Microsecond},
		}}
	}
	done := &Tasks{Tasks: 12, Completed: 11, Failed: 1, StepsMean: 4.5, Count: 11, LatencyP50: 1500 * time.Millisecond,
		LatencyP90: 4 * time.Second, LatencyP99: 9 * time.Second, ToolShare: 0.7, GoodPerSecond: 0.25, Attainment: 10.0 / 12, Missed: 2,
		CacheHitByStep: []StepHit{{1, 12, 0.5}, {2, 10, 0.8}, {3, 7, 0.9}}}
	none := &Tasks{Tasks: 3, Failed: 3}
	p := BenchPage(BenchReport{Command: "llmmetrics bench -workload agent", LoadUnit: "concurrent requests",
		Levels: []Level{lvl(1, done), lvl(2, none)}, CDFLabel: "every measured request"})
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, p))
	html := buf.String()
	assert.Contains(t, html, "<caption>Tasks (concurrent requests): an agent&#39;s session, good when every step met the SLO</caption>")
	assert.Contains(t, html, "<tr><td>1</td><td>12</td><td>11</td><td>1</td><td>4.5</td><td>1.50</td><td>4.00</td><td>9.00</td><td>70%</td><td>0.250</td><td>83.3%</td><td>2</td></tr>")
	assert.Contains(t, html, "<tr><td>2</td><td>3</td><td>0</td><td>3</td><td>-</td><td>-</td><td>-</td><td>-</td><td>-</td><td>0.000</td><td>0.0%</td><td>0</td></tr>",
		"no completed task: no steps, latency or share")
	assert.Contains(t, html, "<caption>TTFT by context length (input tokens the server counted)</caption>")
	assert.Contains(t, html, "<tr><td>1</td><td>2048-4095</td><td>4</td><td>25.00</td><td>61.50</td></tr>")
	for _, title := range []string{"TTFT by context length", "Prefix-cache hit rate by step"} {
		assert.Contains(t, html, title)
	}
	// The CDFs have no samples here: throughput, p99 TTFT, and the two.
	assert.Equal(t, 4, strings.Count(html, "<svg"))

	// A run without tasks or context buckets has neither.
	plain := BenchPage(BenchReport{LoadUnit: "concurrent requests", Levels: []Level{{Load: 1, Summary: llmmetrics.Summary{OutputThroughput: 1}}}})
	buf.Reset()
	require.NoError(t, Write(&buf, plain))
	assert.NotContains(t, buf.String(), "Tasks (")
	assert.NotContains(t, buf.String(), "TTFT by context length")
	assert.NotContains(t, buf.String(), "by step")
}
