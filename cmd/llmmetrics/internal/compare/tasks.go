package compare

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/llmmetrics/llmmetrics"
)

// Agents' tasks (bench -workload agent, or a dataset of agent
// conversations): records.jsonl keeps each request's session and step and
// its task's steps; a task is the session's steps. Its latency runs from
// its first step's send to its final answer's last token; it is good when
// it completed, every step met the SLO and, when the run bounded it
// (-task-latency), its latency did.

// Task metric names, as -fail-on takes them.
const (
	taskLatencyName = "task_latency"
	taskGoodputName = "task_goodput"
)

// taskMetricNames are the task metrics, in table order.
func taskMetricNames() []string {
	var ns []string
	for _, s := range latencyStats {
		ns = append(ns, statName(s)+" "+taskLatencyName)
	}
	return append(ns, taskGoodputName)
}

// taskSample is one level's tasks as synthetic records, one per task:
// Start its first step's, LastToken its final answer's, End its last
// step's.
type taskSample struct {
	// done holds the completed tasks (outcome OK), for their latency;
	// judged every task, OK when it was good under slo and limit.
	done, judged [][]llmmetrics.Record // per repeat
	limit        time.Duration         // -task-latency of the run (0: none)
}

// taskTag is what records.jsonl keeps of a request's task.
type taskTag struct {
	Mode      string  `json:"mode"`
	Load      float64 `json:"load"`
	Repeat    int     `json:"repeat"`
	Session   int     `json:"session"`
	Step      int     `json:"step"`
	TaskSteps int     `json:"task_steps"`
}

// readTasks finds the tasks of a bench directory's records.jsonl (file)
// and keeps each level's steps by task (nothing when no line has a step).
func readTasks(file string, in *Input) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	var tags []taskTag
	br := bufio.NewReaderSize(f, 256<<10)
	any := false
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if t := bytes.TrimSpace(line); len(t) > 0 {
			var tg taskTag
			if err := json.Unmarshal(t, &tg); err != nil {
				return fmt.Errorf("%s:%d: %v", file, n, err)
			}
			any = any || tg.Step > 0
			tags = append(tags, tg)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
	}
	if !any {
		return nil
	}
	limit, err := readTaskLimit(filepath.Join(filepath.Dir(file), "results.json"))
	if err != nil {
		return err
	}
	k := 0
	for li := range in.Levels {
		l := &in.Levels[li]
		var steps []taskTag
		for _, t := range tags {
			if t.Mode == l.Mode && t.Load == l.Load {
				steps = append(steps, t)
			}
		}
		if len(steps) != len(l.recs) {
			return fmt.Errorf("%s: %d task tags for %d records at %s", file, len(steps), len(l.recs), l.Label())
		}
		l.tasks = &taskSample{limit: limit}
		l.stepTags = steps
		k += len(steps)
	}
	if k != len(tags) {
		return fmt.Errorf("%s: %d task tags for %d records", file, len(tags), k)
	}
	return nil
}

// readTaskLimit returns the -task-latency a bench run's results.json
// records (0: none, or no results.json).
func readTaskLimit(name string) (time.Duration, error) {
	b, err := os.ReadFile(name)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var r struct {
		Levels []struct {
			Tasks *struct {
				LatencyLimit time.Duration `json:"latency_limit_ns"`
			} `json:"tasks"`
		} `json:"levels"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return 0, fmt.Errorf("%s: %v", name, err)
	}
	for _, l := range r.Levels {
		if l.Tasks != nil && l.Tasks.LatencyLimit > 0 {
			return l.Tasks.LatencyLimit, nil
		}
	}
	return 0, nil
}

// buildTasks turns a level's steps into its tasks under slo: per repeat,
// one synthetic record per task.
func (l *Level) buildTasks(slo llmmetrics.SLO) {
	t := l.tasks
	if t == nil {
		return
	}
	t.done, t.judged = nil, nil
	type acc struct {
		repeat, steps int
		recs          []llmmetrics.Record
		order         []int
	}
	var tasks []*acc
	by := map[[2]int]*acc{}
	for i, tg := range l.stepTags {
		if tg.Step <= 0 {
			continue
		}
		key := [2]int{tg.Repeat, tg.Session}
		a := by[key]
		if a == nil {
			a = &acc{repeat: tg.Repeat, steps: tg.TaskSteps}
			by[key] = a
			tasks = append(tasks, a)
		}
		a.recs, a.order = append(a.recs, l.recs[i]), append(a.order, tg.Step)
	}
	repeats := map[int]int{} // repeat → index
	for _, a := range tasks {
		ri, ok := repeats[a.repeat]
		if !ok {
			ri = len(t.done)
			repeats[a.repeat] = ri
			t.done, t.judged = append(t.done, nil), append(t.judged, nil)
		}
		first, last := a.recs[slices.Index(a.order, slices.Min(a.order))], a.recs[slices.Index(a.order, slices.Max(a.order))]
		end := last.LastToken
		if end.IsZero() {
			end = last.End
		}
		complete := len(a.recs) == a.steps
		good := true
		for _, r := range a.recs {
			complete = complete && r.Outcome == llmmetrics.OutcomeOK
			good = good && slo.Met(r)
		}
		rec := llmmetrics.Record{Start: first.Start, LastToken: end, End: last.End, Outcome: llmmetrics.OutcomeError}
		if complete {
			rec.Outcome = llmmetrics.OutcomeOK
			t.done[ri] = append(t.done[ri], rec)
		}
		good = good && complete && (t.limit == 0 || end.Sub(first.Start) <= t.limit)
		j := rec
		if !good {
			j.Outcome = llmmetrics.OutcomeError
		}
		t.judged[ri] = append(t.judged[ri], j)
	}
}

// pooled returns the records of every repeat.
func pooled(reps [][]llmmetrics.Record) []llmmetrics.Record {
	var out []llmmetrics.Record
	for _, r := range reps {
		out = append(out, r...)
	}
	return out
}

// compareTasks compares the task latency (by a bootstrap over tasks, or
// over the repeats when both levels were repeated) and the task goodput
// (good tasks per second, as the other rates) of two levels; nothing when
// neither has tasks.
func compareTasks(b, n Level, s settings) []Result {
	if b.tasks == nil && n.tasks == nil {
		return nil
	}
	if b.tasks == nil || n.tasks == nil {
		var out []Result
		for _, name := range taskMetricNames() {
			out = append(out, Result{Metric: name, Verdict: NotCompared, Reason: "only one run has agents' tasks"})
		}
		return out
	}
	b.buildTasks(b.slo)
	n.buildTasks(n.slo)
	bt, nt := b.tasks, n.tasks
	var out []Result
	e2el := llmmetrics.Record.E2EL // a task record's E2EL is its latency
	if len(bt.done) >= 2 && len(nt.done) >= 2 {
		vals := func(r llmmetrics.Record) []float64 {
			if d, ok := e2el(r); ok && r.Outcome == llmmetrics.OutcomeOK {
				return []float64{ms(d)}
			}
			return nil
		}
		out = append(out, compareRepeated(taskLatencyName, bt.done, nt.done, vals, latencyStats, s)...)
	} else {
		rng := rand.New(rand.NewPCG(s.seed, 200))
		out = append(out, compareIID(taskLatencyName, values(pooled(bt.done), e2el), values(pooled(nt.done), e2el), latencyStats, s, rng)...)
		for i := range out {
			out[i].Method = fmt.Sprintf("bootstrap over tasks, %d resamples, percentile interval", s.resamples)
		}
	}
	return append(out, compareTaskGoodput(b, n, s))
}

// compareTaskGoodput compares good tasks per second as compareRates does
// its rates: over each repeat, or over time batches of one run, a task
// counting in the batch of its end.
func compareTaskGoodput(b, n Level, s settings) Result {
	res := Result{Metric: taskGoodputName, Unit: "tasks/s", higherIsBetter: true}
	if b.slo.IsZero() || n.slo.IsZero() {
		res.Verdict, res.Reason = NotCompared, "no SLO (give -slo)"
		return res
	}
	side := func(l Level) sample {
		t := l.tasks
		x := sample{recs: pooled(t.judged)}
		if len(t.judged) >= 2 {
			x.repeats = t.judged
		}
		return x
	}
	sb, sn := side(b), side(n)
	good := func(r llmmetrics.Record) float64 { return b2f(r.Outcome == llmmetrics.OutcomeOK) }
	pb, rb, mb := rateReps(sb, good)
	pn, rn, mn := rateReps(sn, good)
	res.Base, res.New, res.BaseN, res.NewN = pb, pn, len(rb), len(rn)
	res.Method = mb
	repeated := len(sb.repeats) >= 2 && len(sn.repeats) >= 2
	if repeated {
		res.Method = repeatMethod(len(rb), len(rn), false)
	} else if mn != mb {
		res.Method = "BASE: " + mb + "; NEW: " + mn
	}
	if rb == nil || rn == nil {
		res.Verdict, res.Reason = NotCompared, "a run has no duration"
		return res
	}
	res.setWelch(rb, rn)
	if repeated {
		res.keepRepeats(rb, rn)
	}
	res.judge(s.minChange)
	return res
}
