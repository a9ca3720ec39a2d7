package llmmetricstest

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// What the scheduler does with prompts, and what it says of each
// request's phases.
//
// Without ServerConfig.PrefillChunk a step prefills every new request's
// prompt whole, and the requests decoding in that step get their next
// token only when the step ends: a 2,000-token prompt at the default
// 50 µs a token holds every running request for 115 ms instead of 10 ms
// (a prefill stall, as on an engine without chunked prefill). With
// PrefillChunk = C, a step prefills at most C prompt tokens, taken from
// the new requests in the order they were admitted, so the decoding
// requests' steps lengthen by at most PrefillBase + C × PrefillPerToken.
//
// Each request's phases are timed on the scheduler's clock as vLLM v1
// times them (vllm/v1/metrics/stats.py): queued when the scheduler
// receives it, scheduled when it first enters the batch (a preempted
// request keeps its first scheduling), its first token at the end of its
// prefill's last step, and its end. At the end they are observed in three
// histograms that /metrics serves under vLLM's names and buckets
// (vllm/v1/metrics/loggers.py, request_latency_buckets):
// vllm:request_queue_time_seconds (scheduled − queued),
// vllm:request_prefill_time_seconds (first token − scheduled) and
// vllm:request_decode_time_seconds (end − first token). Ollama's
// prompt_eval_duration is the same prefill time: Ollama's runner starts a
// sequence's prompt clock when the sequence gets a slot
// (runner/llamarunner/runner.go, startProcessingTime), so waiting for a
// slot is not in it.

// phases are a job's instants on the scheduler's clock. The scheduler
// writes each once, before the token that follows it is counted
// (job.produced), so a handler that has seen that token may read them.
type phases struct {
	queued, scheduled, first time.Time
}

// schedule notes the first admission into the batch.
func (p *phases) schedule() {
	if p.scheduled.IsZero() {
		p.scheduled = time.Now()
	}
}

// token notes the first token.
func (p *phases) token() {
	if p.first.IsZero() {
		p.first = time.Now()
	}
}

// prefill returns first token − scheduled (0 before the first token).
func (p *phases) prefill() time.Duration {
	if p.first.IsZero() {
		return 0
	}
	return p.first.Sub(p.scheduled)
}

// prefillBudget is the prompt tokens a step may prefill: PrefillChunk, or
// no limit.
func (s *Server) prefillBudget() int {
	if s.cfg.PrefillChunk > 0 {
		return s.cfg.PrefillChunk
	}
	return math.MaxInt
}

// takeChunk sets the prompt tokens j prefills in the next step, taken
// from what is left of the step's budget, and returns them.
func (j *job) takeChunk(budget *int) int {
	j.chunk = min(j.needPref, *budget)
	*budget -= j.chunk
	return j.chunk
}

// phaseBuckets are vLLM's request_latency_buckets, in seconds.
var phaseBuckets = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0,
	40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}

// histogram is one cumulative Prometheus histogram.
type histogram struct {
	counts []uint64 // per bucket of phaseBuckets, not cumulative; then +Inf
	sum    float64  // seconds
	n      uint64
}

func (h *histogram) add(d time.Duration) {
	if h.counts == nil {
		h.counts = make([]uint64, len(phaseBuckets)+1)
	}
	v := d.Seconds()
	i := 0
	for i < len(phaseBuckets) && v > phaseBuckets[i] {
		i++
	}
	h.counts[i]++
	h.sum += v
	h.n++
}

// The phase histograms, in the order of phaseHelp.
const (
	phaseQueue = iota
	phasePrefill
	phaseDecode
	numPhases
)

var phaseHelp = [numPhases][2]string{
	{"vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request."},
	{"vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request."},
	{"vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request."},
}

// observe adds a finished job's phases to the histograms.
func (s *Server) observe(j *job) {
	p, now := j.phases, time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.phases[phaseQueue].add(p.scheduled.Sub(p.queued))
	s.phases[phasePrefill].add(p.first.Sub(p.scheduled))
	s.phases[phaseDecode].add(now.Sub(p.first))
}

// writePhases writes the phase histograms in the text format 0.0.4, as
// prometheus_client does (cumulative buckets, then _count and _sum).
func (s *Server) writePhases(w io.Writer, labels string) {
	s.mu.Lock()
	hs := s.phases
	for i := range hs {
		hs[i].counts = append([]uint64(nil), hs[i].counts...)
	}
	s.mu.Unlock()
	for i, h := range hs {
		name := phaseHelp[i][0]
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s histogram\n", name, phaseHelp[i][1], name)
		var cum uint64
		for k := range len(phaseBuckets) + 1 {
			if h.counts != nil {
				cum += h.counts[k]
			}
			le := "+Inf"
			if k < len(phaseBuckets) {
				le = strconv.FormatFloat(phaseBuckets[k], 'f', -1, 64)
				if !strings.Contains(le, ".") {
					le += ".0"
				}
			}
			fmt.Fprintf(w, "%s_bucket{%s,le=%q} %d.0\n", name, labels, le, cum)
		}
		fmt.Fprintf(w, "%s_count{%s} %d.0\n%s_sum{%s} %s\n", name, labels, h.n, name, labels, strconv.FormatFloat(h.sum, 'g', -1, 64))
	}
}
