package bench

import (
	"bytes"
	"context"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/cmd/llmmetrics/internal/present"
	"github.com/llmmetrics/llmmetrics/cmd/llmmetrics/internal/report"
)

// writePage writes DIR/report.html, the run on one self-contained page:
// the findings printed after the table, the levels, the CDFs of TTFT and
// ITL over every measured request, throughput and p99 TTFT against load,
// the server's KV cache and queue, the workload and the command line. The
// samples are read back from records.jsonl, the file a user would give
// "llmmetrics report".
func (b *bench) writePage(r Results) error {
	var findings bytes.Buffer
	writeFindings(&findings, r)
	rep := present.BenchReport{
		Command:  present.CommandLine(append([]string{"llmmetrics", "bench"}, b.args...)),
		LoadUnit: unit(r.Mode),
		CDFLabel: "every measured request",
	}
	for line := range strings.Lines(findings.String()) {
		if line = strings.TrimSpace(line); line != "" {
			rep.Findings = append(rep.Findings, strings.TrimPrefix(line, "- "))
		}
	}
	for _, l := range r.Levels {
		rep.Levels = append(rep.Levels, presentLevel(l))
	}
	if w := r.Workload; w != nil {
		rep.Workload = append(rep.Workload, [2]string{"api", w.API}, [2]string{"source", w.Source})
		for _, k := range slices.Sorted(maps.Keys(w.Flags)) {
			rep.Workload = append(rep.Workload, [2]string{k, w.Flags[k]})
		}
		if w.Path != "" {
			rep.Workload = append(rep.Workload, [2]string{"file", w.Path + " (sha256 " + w.SHA256 + ")"})
		}
	}
	recs, err := report.ReadRecords(context.Background(), []string{filepath.Join(b.o.out, "records.jsonl")}, "records", nil)
	if err != nil {
		return err
	}
	for _, rec := range recs.Records {
		if rec.Outcome != llmmetrics.OutcomeOK {
			continue
		}
		if d, ok := rec.TTFT(); ok {
			rep.TTFT = append(rep.TTFT, d)
		}
		rep.ITL = append(rep.ITL, rec.ITL...)
	}
	p := filepath.Join(b.o.out, "report.html")
	if err := present.WriteFile(p, present.BenchPage(rep)); err != nil {
		return err
	}
	b.written = append(b.written, p)
	return nil
}

// presentLevel is l as the page shows it.
func presentLevel(l *Level) present.Level {
	pl := present.Level{Load: l.Load, Summary: l.Summary, Server: l.Server}
	if l.Lengths != nil {
		for _, b := range l.Lengths.TTFTByInput {
			pl.TTFTByInput = append(pl.TTFTByInput, present.InputBucket{Min: b.Min, Max: b.Max, Range: b.Range, Requests: b.Requests, P50: b.P50, P99: b.P99})
		}
	}
	if t := l.Tasks; t != nil {
		pt := &present.Tasks{Tasks: t.Tasks, Completed: t.Completed, Failed: t.Failed, Count: t.Latency.Count,
			LatencyP50: t.Latency.P50, LatencyP90: t.Latency.P90, LatencyP99: t.Latency.P99,
			GoodPerSecond: t.GoodPerSecond, Attainment: t.Attainment, Missed: t.MissedToolCalls}
		if t.Latency.Mean > 0 {
			pt.ToolShare = float64(t.ToolTime.Mean) / float64(t.Latency.Mean)
		}
		if t.Steps != nil {
			pt.StepsMean = t.Steps.Mean
		}
		for _, h := range t.CacheHitByStep {
			pt.CacheHitByStep = append(pt.CacheHitByStep, present.StepHit{Step: h.Step, Requests: h.Requests, HitRate: h.HitRate})
		}
		pl.Tasks = pt
	}
	return pl
}
