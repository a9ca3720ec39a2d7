package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// aiperf's time_to_first_output_token (its TTFO: the first answer token
// after any reasoning) is the Record's FirstOutput, on both decoding paths
// (a plain record takes the fast one, an error the encoding/json one); a
// file without it says TTFO cannot be known.
func TestAIPerfTTFO(t *testing.T) {
	line := readLines(t, "testdata/aiperf_docs.jsonl")[0]
	require.Contains(t, line, `"time_to_first_token":{"value":255.88656799999998,"unit":"ms"}`)
	with := strings.Replace(line, `"time_to_first_token":`, `"time_to_first_output_token":{"value":300.5,"unit":"ms"},"time_to_first_token":`, 1)
	short := strings.Replace(line, `"time_to_first_token":`, `"time_to_first_output":{"value":0.3005,"unit":"sec"},"time_to_first_token":`, 1)
	dir := t.TempDir()
	for name, body := range map[string]string{"long": with, "short": short} {
		f := filepath.Join(dir, name+".jsonl")
		require.NoError(t, os.WriteFile(f, []byte(body+"\n"), 0o600))
		s := summaryOf(t, f)
		require.Equal(t, 1, s.TTFO.Count, name)
		assert.Equal(t, 300500*time.Microsecond, s.TTFO.Mean, name)
	}
	code, out, _ := runReport(t, "testdata/aiperf_docs.jsonl")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "no TTFO: this aiperf version saves no time_to_first_output_token")
}

// Checked against aiperf's own aggregates of a real file (the project's
// real data beside the repository, not copied into it): TTFO mean, median
// and population standard deviation within 0.5 ns of aiperf's (which
// writes milliseconds with six decimals).
func TestAIPerfTTFOReal(t *testing.T) {
	const dir = "../../../../../shared/realdata/saved-results/"
	if _, err := os.Stat(dir + "aiperf_qwen_concurrency8.jsonl"); err != nil {
		t.Skip("the real data is not beside the repository:", err)
	}
	s := summaryOf(t, dir+"aiperf_qwen_concurrency8.jsonl")
	b, err := os.ReadFile(dir + "aiperf_qwen_concurrency8_summary.json")
	require.NoError(t, err)
	var agg struct {
		TTFO struct {
			Unit          string
			Avg, P50, Std float64
		} `json:"time_to_first_output_token"`
	}
	require.NoError(t, json.Unmarshal(b, &agg))
	require.Equal(t, "ms", agg.TTFO.Unit)
	assert.Equal(t, 64, s.TTFO.Count)
	assert.InDelta(t, agg.TTFO.Avg*1e6, float64(s.TTFO.Mean), 0.5)
	assert.InDelta(t, agg.TTFO.P50*1e6, float64(s.TTFO.Median), 0.5)
	assert.InDelta(t, agg.TTFO.Std*1e6, float64(s.TTFO.Std), 1)
}
