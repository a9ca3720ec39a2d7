package compare

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/llmmetrics/llmmetrics"
)

// serverLatencies are the times a server reports of each request in its
// answers (llama.cpp's timings, Ollama's durations): the wait before the
// engine began the prompt (Record.Wait: the client's TTFT less the
// server's prefill), and the server's own prefill and decode times. They
// are compared as the latencies are, where both runs have them; a run
// whose answers carried none has no rows, and when only one side has
// them, the rows say so (not a regression: the runs recorded different
// things).
var serverLatencies = []struct {
	name string
	get  func(r llmmetrics.Record) (time.Duration, bool)
}{
	{"wait", llmmetrics.Record.Wait},
	{"server_prefill", func(r llmmetrics.Record) (time.Duration, bool) { return r.ServerPrefill, r.ServerPrefill > 0 }},
	{"server_decode", func(r llmmetrics.Record) (time.Duration, bool) { return r.ServerDecode, r.ServerDecode > 0 }},
}

// compareServerTimes returns the results of the server's times that
// either run has (see serverLatencies).
func compareServerTimes(b, n sample, s settings) []Result {
	var out []Result
	repeated := len(b.repeats) >= 2 && len(n.repeats) >= 2
	for i, l := range serverLatencies {
		xb, xn := values(b.recs, l.get), values(n.recs, l.get)
		switch {
		case len(xb) == 0 && len(xn) == 0:
			continue
		case len(xb) == 0 || len(xn) == 0:
			side, other := "BASE", "NEW"
			if len(xb) == 0 {
				side, other = "NEW", "BASE"
			}
			for _, st := range latencyStats {
				r := Result{Metric: statName(st) + " " + l.name, Unit: "ms", BaseN: len(xb), NewN: len(xn), Verdict: NotCompared,
					Reason: fmt.Sprintf("only %s has the server's times (its answers carried them); %s's did not", side, other)}
				if len(xb) > 0 {
					r.Base = point(xb, st)
				} else {
					r.New = point(xn, st)
				}
				out = append(out, r)
			}
		case repeated:
			vals := func(r llmmetrics.Record) []float64 {
				if d, ok := l.get(r); ok && r.Outcome == llmmetrics.OutcomeOK {
					return []float64{ms(d)}
				}
				return nil
			}
			out = append(out, compareRepeated(l.name, b.repeats, n.repeats, vals, latencyStats, s)...)
		default:
			rng := rand.New(rand.NewPCG(s.seed, uint64(300+i)))
			out = append(out, compareIID(l.name, xb, xn, latencyStats, s, rng)...)
		}
	}
	return out
}

// isServerTime reports whether metric is one of serverLatencies' ("p99
// wait").
func isServerTime(metric string) bool {
	for _, l := range serverLatencies {
		if strings.HasSuffix(metric, " "+l.name) {
			return true
		}
	}
	return false
}
