package bench

import (
	"cmp"
	"encoding/json"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/cmd/llmmetrics/internal/workload"
)

// Tasks is what agents' tasks measured at a level (results.json
// levels[].tasks): a task is one session of -workload agent (or one
// recorded conversation of a dataset), its steps the requests.
type Tasks struct {
	// Tasks counts the measured tasks; Completed those whose every step
	// was answered; Failed those that a failed step ended (or an answer
	// with neither text nor a call: the next step would not be the
	// conversation asked for).
	Tasks     int `json:"tasks"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	// Good counts the completed tasks whose every step met the SLO and,
	// with a LatencyLimit, whose latency met it too; Attainment is Good
	// over Tasks.
	Good       int     `json:"good"`
	Attainment float64 `json:"attainment"`
	// PerSecond is completed tasks, GoodPerSecond (task goodput) good
	// tasks, over the level's duration (its repeats' durations summed).
	PerSecond     float64 `json:"per_second"`
	GoodPerSecond float64 `json:"good_per_second"`
	// LatencyLimit is -task-latency (absent: none).
	LatencyLimit time.Duration `json:"latency_limit_ns,omitempty"`
	// Latency is the completed tasks' latency: the first step's send to
	// the final answer's last token.
	Latency TaskDistribution `json:"latency"`
	// ModelTime is the time a completed task's steps were in flight (each
	// step's send to its end, summed); ToolTime the rest of its latency,
	// spent between steps (the tools' time, and the client's own).
	ModelTime TaskDistribution `json:"model_time"`
	ToolTime  TaskDistribution `json:"tool_time"`
	// Steps, InputTokens and OutputTokens are a completed task's steps
	// and its steps' tokens summed (as the server counted them); absent
	// when no task completed.
	Steps        *Spread `json:"steps,omitempty"`
	InputTokens  *Spread `json:"input_tokens,omitempty"`
	OutputTokens *Spread `json:"output_tokens,omitempty"`
	// MissedToolCalls counts the answered steps that forced a tool call
	// (tool choice "required") and got none; FinalToolCalls the last
	// steps that asked for no call and got one.
	MissedToolCalls int `json:"missed_tool_calls"`
	FinalToolCalls  int `json:"final_tool_calls"`
	// CacheHitByStep is the prefix-cache hit rate of the completed
	// requests at each step index (Σ cached / Σ input tokens; steps
	// whose usage reported no input are left out).
	CacheHitByStep []StepCacheHit `json:"prefix_cache_hit_rate_by_step,omitempty"`
}

// TaskDistribution summarizes task durations: with Count 0 (no completed
// task) its JSON holds the count alone, never zeros for the rest.
type TaskDistribution struct {
	Count int           `json:"count"`
	Mean  time.Duration `json:"mean_ns"`
	P50   time.Duration `json:"p50_ns"`
	P90   time.Duration `json:"p90_ns"`
	P99   time.Duration `json:"p99_ns"`
	Max   time.Duration `json:"max_ns"`
}

// MarshalJSON encodes d, its figures only when it has values.
func (d TaskDistribution) MarshalJSON() ([]byte, error) {
	if d.Count == 0 {
		return []byte(`{"count":0}`), nil
	}
	type plain TaskDistribution
	return json.Marshal(plain(d))
}

// StepCacheHit is the prefix-cache hit rate at one step index.
type StepCacheHit struct {
	Step     int     `json:"step"`
	Requests int     `json:"requests"`
	HitRate  float64 `json:"hit_rate"`
}

// task is one task's measured steps.
type task struct {
	session, steps int
	recs           []llmmetrics.Record
	metas          []reqMeta
}

// taskSLO is what a good task meets.
type taskSLO struct {
	slo     llmmetrics.SLO
	latency time.Duration // 0: no limit
}

// groupTasks returns the agent requests of recs grouped by task, in the
// order their tasks were first seen, each task's steps in step order.
func groupTasks(recs []llmmetrics.Record, metas []reqMeta) []*task {
	var ts []*task
	by := map[int]*task{}
	for i, m := range metas {
		if !m.agent {
			continue
		}
		t := by[m.session]
		if t == nil {
			t = &task{session: m.session, steps: m.steps}
			by[m.session] = t
			ts = append(ts, t)
		}
		t.recs, t.metas = append(t.recs, recs[i]), append(t.metas, m)
	}
	for _, t := range ts {
		idx := make([]int, len(t.recs))
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(t.metas[a].turn, t.metas[b].turn) })
		recs, metas := make([]llmmetrics.Record, len(idx)), make([]reqMeta, len(idx))
		for k, i := range idx {
			recs[k], metas[k] = t.recs[i], t.metas[i]
		}
		t.recs, t.metas = recs, metas
	}
	return ts
}

// completed reports whether every step of t was answered.
func (t *task) completed() bool {
	if len(t.recs) != t.steps {
		return false
	}
	for _, r := range t.recs {
		if r.Outcome != llmmetrics.OutcomeOK {
			return false
		}
	}
	return true
}

// latency returns the completed task's latency: the first step's start
// to the last step's last token (its end when it has none).
func (t *task) latency() time.Duration {
	last := t.recs[len(t.recs)-1]
	end := last.LastToken
	if end.IsZero() {
		end = last.End
	}
	return end.Sub(t.recs[0].Start)
}

// computeTasks measures the tasks of a level's records over its duration.
func computeTasks(recs []llmmetrics.Record, metas []reqMeta, slo taskSLO, duration time.Duration) *Tasks {
	ts := groupTasks(recs, metas)
	if len(ts) == 0 {
		return nil
	}
	out := &Tasks{Tasks: len(ts), LatencyLimit: slo.latency}
	var lat, model, tool []time.Duration
	var steps, in, outTok []float64
	type acc struct{ n, cached, input int }
	byStep := map[int]*acc{}
	for _, t := range ts {
		for i, r := range t.recs {
			m := t.metas[i]
			if r.Outcome != llmmetrics.OutcomeOK {
				continue
			}
			switch {
			case m.choice == workload.ChoiceRequired && m.calls == 0:
				out.MissedToolCalls++
			case m.choice == workload.ChoiceNone && m.calls > 0:
				out.FinalToolCalls++
			}
			if r.InputTokens > 0 {
				a := byStep[m.turn]
				if a == nil {
					a = &acc{}
					byStep[m.turn] = a
				}
				a.n++
				a.cached += r.CachedInputTokens
				a.input += r.InputTokens
			}
		}
		if !t.completed() {
			out.Failed++
			continue
		}
		out.Completed++
		l := t.latency()
		var busy time.Duration
		good := slo.latency == 0 || l <= slo.latency
		ti, to := 0, 0
		for _, r := range t.recs {
			busy += r.End.Sub(r.Start)
			good = good && slo.slo.Met(r)
			ti, to = ti+r.InputTokens, to+r.OutputTokens
		}
		if good {
			out.Good++
		}
		lat, model, tool = append(lat, l), append(model, busy), append(tool, max(l-busy, 0))
		steps, in, outTok = append(steps, float64(len(t.recs))), append(in, float64(ti)), append(outTok, float64(to))
	}
	out.Attainment = float64(out.Good) / float64(out.Tasks)
	if duration > 0 {
		out.PerSecond = float64(out.Completed) / duration.Seconds()
		out.GoodPerSecond = float64(out.Good) / duration.Seconds()
	}
	out.Latency, out.ModelTime, out.ToolTime = taskDistribution(lat), taskDistribution(model), taskDistribution(tool)
	if out.Completed > 0 {
		out.Steps, out.InputTokens, out.OutputTokens = spread(steps), spread(in), spread(outTok)
	}
	for _, k := range slices.Sorted(maps.Keys(byStep)) {
		a := byStep[k]
		out.CacheHitByStep = append(out.CacheHitByStep, StepCacheHit{Step: k, Requests: a.n, HitRate: float64(a.cached) / float64(a.input)})
	}
	return out
}

// taskDistribution summarizes ds (numpy's linear percentiles).
func taskDistribution(ds []time.Duration) TaskDistribution {
	d := TaskDistribution{Count: len(ds)}
	if len(ds) == 0 {
		return d
	}
	xs := make([]float64, len(ds))
	sum := 0.0
	for i, v := range ds {
		xs[i] = float64(v)
		sum += xs[i]
		d.Max = max(d.Max, v)
	}
	at := func(p float64) time.Duration {
		v, _ := llmmetrics.Percentile(xs, p) // xs is not empty, p in range
		return time.Duration(math.Round(v))
	}
	d.Mean = time.Duration(math.Round(sum / float64(len(xs))))
	d.P50, d.P90, d.P99 = at(50), at(90), at(99)
	return d
}

// spread summarizes xs (not empty).
func spread(xs []float64) *Spread {
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	p50, _ := llmmetrics.Percentile(xs, 50)
	p99, _ := llmmetrics.Percentile(xs, 99)
	return &Spread{Mean: sum / float64(len(xs)), P50: p50, P99: p99}
}
