package bench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// writeTasks prints the levels' tasks (agents' sessions): how many, their
// latency, where it went, task goodput, the steps that asked for a tool
// call and got none, and the prefix-cache hit rate by step.
func writeTasks(w io.Writer, r Results) {
	var any bool
	for _, l := range r.Levels {
		any = any || l.Tasks != nil
	}
	if !any {
		return
	}
	good := "every step met the SLO"
	if lim := r.Levels[0].taskLimit(); lim > 0 {
		good += fmt.Sprintf(" and the task took at most %v", lim)
	}
	fmt.Fprintf(w, "Tasks (an agent's session; good: %s):\n", good)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "load\ttasks\tdone\tfailed\tsteps\tlatency p50\tp90\tp99\tin tools\tgood tasks/s\ttask attain\tno call\t")
	fmt.Fprintln(tw, "\t\t\t\tmean\ts\ts\ts\tmean\t\t\t\t")
	for _, l := range r.Levels {
		t := l.Tasks
		if t == nil {
			continue
		}
		share := "-"
		if t.Latency.Mean > 0 {
			share = fmt.Sprintf("%.0f%%", 100*float64(t.ToolTime.Mean)/float64(t.Latency.Mean))
		}
		steps := "-"
		if t.Steps != nil {
			steps = fmt.Sprintf("%.1f", t.Steps.Mean)
		}
		fmt.Fprintf(tw, "%g\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%.3f\t%.0f%%\t%d\t\n", l.Load, t.Tasks, t.Completed, t.Failed, steps,
			secs(t.Latency.P50, t.Latency.Count), secs(t.Latency.P90, t.Latency.Count), secs(t.Latency.P99, t.Latency.Count),
			share, t.GoodPerSecond, 100*t.Attainment, t.MissedToolCalls)
	}
	tw.Flush()
	fmt.Fprintln(w, "(latency: first send to the final answer; in tools: its share spent between steps; no call: steps that asked for a tool call and were answered without one)")
	for _, l := range r.Levels {
		t := l.Tasks
		if t == nil || len(t.CacheHitByStep) < 2 {
			continue
		}
		var parts []string
		for i, h := range t.CacheHitByStep {
			if i == 12 {
				parts = append(parts, "…")
				break
			}
			parts = append(parts, fmt.Sprintf("%d: %.0f%% (%d)", h.Step, 100*h.HitRate, h.Requests))
		}
		fmt.Fprintf(w, "Prefix-cache hit rate by step at %g: %s\n", l.Load, strings.Join(parts, ", "))
	}
	for _, l := range r.Levels {
		t := l.Tasks
		if t == nil {
			continue
		}
		if t.MissedToolCalls > 0 {
			fmt.Fprintf(w, "At %g %s: %d step(s) asked for a tool call and were answered without one (the model did not call: each task went on with the answer's text and the tool's result as a user message).\n",
				l.Load, unit(r.Mode), t.MissedToolCalls)
		}
		if t.FinalToolCalls > 0 {
			fmt.Fprintf(w, "At %g %s: %d task(s) asked for the final answer and got a tool call.\n", l.Load, unit(r.Mode), t.FinalToolCalls)
		}
		if t.Tasks < minTasks {
			fmt.Fprintf(w, "At %g %s: only %d task(s) measured: their figures are rough; raise -requests.\n", l.Load, unit(r.Mode), t.Tasks)
		}
	}
	fmt.Fprintln(w)
}

// minTasks is how many tasks a level needs for its task figures to be
// more than an anecdote.
const minTasks = 10

// taskLimit returns the level's -task-latency (0: none).
func (l *Level) taskLimit() time.Duration {
	if l.Tasks == nil {
		return 0
	}
	return l.Tasks.LatencyLimit
}

// secs formats a duration in seconds ("-" when there is none).
func secs(d time.Duration, n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", d.Seconds())
}
