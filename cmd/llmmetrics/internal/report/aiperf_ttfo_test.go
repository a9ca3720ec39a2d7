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

// aiperf's http_req_waiting (time to the first body byte) and
// http_req_connecting are kept beside the Summary, per level, on both
// decoding paths: by hand, 100 and 300 ms (mean 200 ms), 1 and 3 ms.
func TestAIPerfHTTPPhases(t *testing.T) {
	line := readLines(t, "testdata/aiperf_docs.jsonl")[0]
	fast := strings.Replace(line, `"time_to_first_token":`, `"http_req_waiting":{"value":100.0,"unit":"ms"},"http_req_connecting":{"value":1000,"unit":"us"},"time_to_first_token":`, 1)
	slow := strings.Replace(line, `"time_to_first_token":`, `"http_req_waiting":{"value":0.3,"unit":"sec"},"http_req_connecting":{"value":3.0,"unit":"ms"},"http_req_dns_lookup":{"value":NaN,"unit":"ms"},"time_to_first_token":`, 1)
	f := filepath.Join(t.TempDir(), "p.jsonl")
	require.NoError(t, os.WriteFile(f, []byte(fast+"\n"+slow+"\n"), 0o600))
	code, out, errOut := runReport(t, "-json", f)
	require.Equal(t, 0, code, errOut)
	var doc struct {
		HTTP map[string]struct {
			Count int           `json:"count"`
			Mean  time.Duration `json:"mean_ns"`
			Max   time.Duration `json:"max_ns"`
		} `json:"http_req"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.Equal(t, 2, doc.HTTP["time_to_first_byte"].Count)
	assert.Equal(t, 200*time.Millisecond, doc.HTTP["time_to_first_byte"].Mean)
	assert.Equal(t, 2*time.Millisecond, doc.HTTP["connecting"].Mean)
	assert.Equal(t, 3*time.Millisecond, doc.HTTP["connecting"].Max)
	_, text, _ := runReport(t, f)
	assert.Regexp(t, `TTFB\s+2\s+200\.00`, text)
	assert.Contains(t, text, "(TTFB: aiperf's http_req_waiting; connect: aiperf's http_req_connecting: the request's transport phases, of completed requests)")
	_, text, _ = runReport(t, "testdata/aiperf_docs.jsonl")
	assert.NotContains(t, text, "TTFB")
}
