package report

import (
	"fmt"

	"github.com/llmmetrics/llmmetrics"
)

// The server's own account of each request, where a file keeps it
// (llmmetrics' records.jsonl: server_prefill_ns and server_decode_ns, from
// the server's answers): the wait before the engine began the prompt
// (TTFT − the server's prefill), and the server's prefill and decode
// times. A level whose requests carry none has no such rows: never a row
// of zeros for what was not said.

// serverNote follows the table when it has the server's rows.
const serverNote = "(wait: TTFT − the server's prefill time, the time before the engine began the prompt; srv prefill, srv decode: the times the server reported in its answers)"

type row = struct {
	name string
	d    llmmetrics.Distribution
}

// serverRows are the rows of the server's times that s has.
func serverRows(s llmmetrics.Summary) []row {
	var out []row
	for _, r := range []row{{"wait", s.Wait}, {"srv prefill", s.ServerPrefill}, {"srv decode", s.ServerDecode}} {
		if r.d.Count > 0 {
			out = append(out, r)
		}
	}
	return out
}

// badServerTime says which server time of r is negative ("" when none):
// 0 means not reported, and a negative time is no time at all.
func badServerTime(r *llmmetrics.Record) string {
	for _, t := range []struct {
		name string
		ns   int64
	}{{"server_prefill_ns", int64(r.ServerPrefill)}, {"server_decode_ns", int64(r.ServerDecode)}} {
		if t.ns < 0 {
			return fmt.Sprintf("%s %d is negative (a duration the server measured, 0 when not reported)", t.name, t.ns)
		}
	}
	return ""
}
