package present

import (
	"fmt"
	"math"
	"time"

	"gonum.org/v1/plot/plotter"
)

// Tasks is what agents' tasks measured at a level (bench's
// levels[].tasks), for the page's task table and charts.
type Tasks struct {
	Tasks, Completed, Failed int
	StepsMean                float64
	// Latency percentiles of the completed tasks (Count 0: none).
	Count                              int
	LatencyP50, LatencyP90, LatencyP99 time.Duration
	// ToolShare is the share of a task's mean latency spent between steps.
	ToolShare     float64
	GoodPerSecond float64
	Attainment    float64
	// Missed counts steps that asked for a tool call and got none.
	Missed int
	// CacheHitByStep is the prefix-cache hit rate at each step index.
	CacheHitByStep []StepHit
}

// StepHit is the prefix-cache hit rate (0–1) at one step index.
type StepHit struct {
	Step     int
	Requests int
	HitRate  float64
}

// InputBucket is the TTFT of a level's requests whose input (the context
// a step carried) is in [Min, Max] tokens.
type InputBucket struct {
	Min, Max int
	Range    string
	Requests int
	P50, P99 time.Duration
}

// tasksTable is the task table of a bench run's levels (nil: no tasks).
func tasksTable(levels []Level, unit string) *Table {
	t := Table{Caption: "Tasks (" + unit + "): an agent's session, good when every step met the SLO", Header: []string{"load", "tasks", "done",
		"failed", "steps mean", "latency p50 s", "p90 s", "p99 s", "in tools", "good tasks/s", "task attainment", "no tool call"}}
	for _, l := range levels {
		k := l.Tasks
		if k == nil {
			continue
		}
		sec := func(d time.Duration) string {
			if k.Count == 0 {
				return "-"
			}
			return fmt.Sprintf("%.2f", d.Seconds())
		}
		steps, share := "-", "-"
		if k.Count > 0 {
			steps, share = fmt.Sprintf("%.1f", k.StepsMean), fmt.Sprintf("%.0f%%", 100*k.ToolShare)
		}
		t.Rows = append(t.Rows, Row{Cells: []string{fmt.Sprintf("%g", l.Load), fmt.Sprint(k.Tasks), fmt.Sprint(k.Completed), fmt.Sprint(k.Failed),
			steps, sec(k.LatencyP50), sec(k.LatencyP90), sec(k.LatencyP99), share,
			fmt.Sprintf("%.3f", k.GoodPerSecond), fmt.Sprintf("%.1f%%", 100*k.Attainment), fmt.Sprint(k.Missed)}})
	}
	if len(t.Rows) == 0 {
		return nil
	}
	return &t
}

// contextTable is TTFT by the context a request carried, one row per
// level and input bucket (nil: no level has two buckets).
func contextTable(levels []Level) *Table {
	t := Table{Caption: "TTFT by context length (input tokens the server counted)", Header: []string{"load", "input tokens", "requests", "TTFT p50 ms", "TTFT p99 ms"}}
	for _, l := range levels {
		if len(l.TTFTByInput) < 2 {
			continue
		}
		for _, b := range l.TTFTByInput {
			t.Rows = append(t.Rows, Row{Cells: []string{fmt.Sprintf("%g", l.Load), b.Range, fmt.Sprint(b.Requests), ms(b.P50), ms(b.P99)}})
		}
	}
	if len(t.Rows) == 0 {
		return nil
	}
	return &t
}

// contextCharts are p50 TTFT against the context a request carried and
// the prefix-cache hit rate against the step index, one line per level
// of each run.
func contextCharts(runs []Run) []chartSpec {
	ttft := chartSpec{title: "TTFT by context length", xLabel: "input tokens (bucket's middle, log scale)", yLabel: "p50 TTFT (ms)", logX: true,
		caption: "Median time to first token of the requests whose input falls in each power-of-two bucket, per load level: what a longer context costs."}
	hit := chartSpec{title: "Prefix-cache hit rate by step", xLabel: "step of the task", yLabel: "prefix-cache hit rate (%)", yMax: 100,
		caption: "Cached input tokens over input tokens at each step index of the agents' tasks, per load level: each step resends the conversation so far."}
	k := 0
	for i, r := range runs {
		for _, l := range r.Levels {
			c := runColors[(i+k)%len(runColors)]
			name := fmt.Sprintf("%s at %g", r.Name, l.Load)
			if len(runs) == 1 {
				name = fmt.Sprintf("load %g", l.Load)
			}
			var xy plotter.XYs
			if len(l.TTFTByInput) >= 2 {
				for _, b := range l.TTFTByInput {
					mid := math.Sqrt(float64(max(b.Min, 1)) * float64(max(b.Max, 1)))
					xy = append(xy, plotter.XY{X: mid, Y: float64(b.P50) / float64(time.Millisecond)})
				}
			}
			ttft.lines = appendLine(ttft.lines, line{name: name, xys: xy, color: c, points: true})
			xy = nil
			if l.Tasks != nil && len(l.Tasks.CacheHitByStep) >= 2 {
				for _, h := range l.Tasks.CacheHitByStep {
					xy = append(xy, plotter.XY{X: float64(h.Step), Y: 100 * h.HitRate})
				}
			}
			hit.lines = appendLine(hit.lines, line{name: name, xys: xy, color: c, points: true, dashed: k%2 == 1})
			k++
		}
	}
	var out []chartSpec
	for _, s := range []chartSpec{ttft, hit} {
		if len(s.lines) > 0 {
			out = append(out, s)
		}
	}
	return out
}
