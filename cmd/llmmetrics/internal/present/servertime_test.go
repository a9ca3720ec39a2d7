package present

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmmetrics/llmmetrics"
)

// The latency table ends with the server's times where the answers
// carried them: TTFT 100 ms, the server's prefill 40 ms (wait 60 ms),
// decode 150 ms; a run without them has only the client's five rows.
func TestLatencyTableServerTimes(t *testing.T) {
	t0 := time.Unix(0, 0)
	r := llmmetrics.Record{Start: t0, FirstToken: t0.Add(100 * time.Millisecond), LastToken: t0.Add(300 * time.Millisecond),
		End: t0.Add(300 * time.Millisecond), OutputTokens: 3, Chunks: 3, Outcome: llmmetrics.OutcomeOK,
		ServerPrefill: 40 * time.Millisecond, ServerDecode: 150 * time.Millisecond}
	tab := latencyTable(llmmetrics.Summarize([]llmmetrics.Record{r}, llmmetrics.SummaryOptions{}))
	require.Len(t, tab.Rows, 8)
	assert.Equal(t, []string{"wait", "1", "60.00", "60.00", "60.00", "60.00", "60.00", "60.00"}, tab.Rows[5].Cells)
	assert.Equal(t, []string{"srv prefill", "1", "40.00", "40.00", "40.00", "40.00", "40.00", "40.00"}, tab.Rows[6].Cells)
	assert.Equal(t, []string{"srv decode", "1", "150.00", "150.00", "150.00", "150.00", "150.00", "150.00"}, tab.Rows[7].Cells)

	r.ServerPrefill, r.ServerDecode = 0, 0
	assert.Len(t, latencyTable(llmmetrics.Summarize([]llmmetrics.Record{r}, llmmetrics.SummaryOptions{})).Rows, 5)
}
