package report

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// serverLines are three records.jsonl lines whose records carry the
// server's times, and one that does not: TTFT 100, 200 and 300 ms, prefill
// 40, 50 and 100 ms, decode 900, 0 (not reported) and 700 ms. By hand:
// waits 60, 150, 200 ms (mean 136.67, p50 150, max 200); prefill mean
// 63.33, p50 50, max 100; decode over the two that have one, mean 800,
// p50 800.
const serverLines = `{"mode":"concurrency","load":2,"repeat":0,"record":{"start":"2026-01-01T00:00:00Z","first_token":"2026-01-01T00:00:00.1Z","last_token":"2026-01-01T00:00:01Z","end":"2026-01-01T00:00:01Z","input_tokens":10,"output_tokens":10,"chunks":10,"outcome":"ok","server_prefill_ns":40000000,"server_decode_ns":900000000}}
{"mode":"concurrency","load":2,"repeat":0,"record":{"start":"2026-01-01T00:00:00Z","first_token":"2026-01-01T00:00:00.2Z","last_token":"2026-01-01T00:00:01Z","end":"2026-01-01T00:00:01Z","input_tokens":10,"output_tokens":10,"chunks":10,"outcome":"ok","server_prefill_ns":50000000}}
{"mode":"concurrency","load":2,"repeat":0,"record":{"start":"2026-01-01T00:00:00Z","first_token":"2026-01-01T00:00:00.3Z","last_token":"2026-01-01T00:00:01Z","end":"2026-01-01T00:00:01Z","input_tokens":10,"output_tokens":10,"chunks":10,"outcome":"ok","server_prefill_ns":100000000,"server_decode_ns":700000000}}
{"mode":"concurrency","load":2,"repeat":0,"record":{"start":"2026-01-01T00:00:00Z","first_token":"2026-01-01T00:00:00.4Z","last_token":"2026-01-01T00:00:01Z","end":"2026-01-01T00:00:01Z","input_tokens":10,"output_tokens":10,"chunks":10,"outcome":"ok"}}
`

func TestReportServerTimes(t *testing.T) {
	f := writeFile(t, t.TempDir(), "records.jsonl", serverLines)

	s := summaryOf(t, f)
	assert.Equal(t, 3, s.Wait.Count)
	assert.Equal(t, 150*time.Millisecond, s.Wait.Median)
	assert.Equal(t, 200*time.Millisecond, s.Wait.Max)
	assert.InDelta(t, float64(136666667), float64(s.Wait.Mean), 1)
	assert.Equal(t, 3, s.ServerPrefill.Count)
	assert.Equal(t, 50*time.Millisecond, s.ServerPrefill.Median)
	assert.Equal(t, 2, s.ServerDecode.Count)
	assert.Equal(t, 800*time.Millisecond, s.ServerDecode.Mean)

	code, out, errOut := runReport(t, f)
	require.Equal(t, 0, code, errOut)
	row := func(name string) string {
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) > 0 && strings.HasPrefix(strings.TrimSpace(l), name+" ") {
				return strings.Join(f, " ")
			}
		}
		return ""
	}
	// count, mean, p50, p90, p95, p99, max.
	assert.Equal(t, "wait 3 136.67 150.00 190.00 195.00 199.00 200.00", row("wait"))
	assert.Equal(t, "srv prefill 3 63.33 50.00 90.00 95.00 99.00 100.00", row("srv prefill"))
	assert.Equal(t, "srv decode 2 800.00 800.00 880.00 890.00 898.00 900.00", row("srv decode"))
	assert.Contains(t, out, serverNote)

	// Without the server's times: no rows, no note.
	plain := writeFile(t, t.TempDir(), "records.jsonl", strings.Split(serverLines, "\n")[3]+"\n")
	code, out, errOut = runReport(t, plain)
	require.Equal(t, 0, code, errOut)
	assert.NotContains(t, out, "wait")
	assert.NotContains(t, out, "srv prefill")
	code, out, _ = runReport(t, "-json", plain)
	require.Equal(t, 0, code)
	var raw map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(out), &raw))
	for _, k := range []string{"wait", "server_prefill", "server_decode"} {
		assert.NotContains(t, raw, k, "absent, never a zero distribution")
	}
}

// A negative server time is bad input: exit 2 with the file and line.
func TestReportServerTimeNegative(t *testing.T) {
	bad := strings.Replace(strings.Split(serverLines, "\n")[1], `"server_prefill_ns":50000000`, `"server_prefill_ns":-5`, 1)
	f := writeFile(t, t.TempDir(), "records.jsonl", strings.Split(serverLines, "\n")[0]+"\n"+bad+"\n")
	code, _, errOut := runReport(t, f)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, f+":2")
	assert.Contains(t, errOut, "server_prefill_ns -5 is negative")
}
