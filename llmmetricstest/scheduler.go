package llmmetricstest

// The fake server's engine: the scheduler that admits requests into its
// slots and KV cache, plans each request's prefill and decode, and steps
// the batch.

import (
	"errors"
	"net/http"
	"sync/atomic"
	"time"
)

// job is one scheduled request. The scheduler owns the plain fields; the
// handler reads produced, finished and the plan (fixed before ready closes).
type job struct {
	id       int
	prompt   int
	maxOut   int // cap from max_tokens (0: none)
	ready    chan struct{}
	notify   chan struct{} // cap 1: new tokens or finished
	produced atomic.Int64
	finished atomic.Bool
	canceled atomic.Bool

	// plan, set by the scheduler before ready is closed.
	fail      int // HTTP status of an injected failure (500 or 429); 0: none
	target    int
	length    bool     // target capped by maxOut
	exact     bool     // ignore_eos: the target is maxOut
	tool      bool     // the request asks for a tool call
	noTool    bool     // answered with text all the same (SkipToolCallRate)
	blocks    []uint64 // chained hashes of the prompt's blocks (content prefix cache)
	cutAt     int      // tokens sent before the cut; -1: none
	errAt     int      // tokens sent before the error event; -1: none
	pauseAt   int      // tokens sent before the pause; -1: none
	needPref  int      // tokens to prefill in the next step (0: decoding)
	cached    int      // prompt tokens served from the prefix cache
	prefilled bool     // the first prefill (the one the cache shortens) is done
	chunk     int      // prompt tokens prefilled in the current step (prefill.go)
	phases    phases   // when it was queued, scheduled and got its first token (prefill.go)
}

// run is the scheduler goroutine.
// maxLag bounds how far the step schedule may fall behind real time
// before it restarts from now (see run).
const maxLag = 20 * time.Millisecond

func (s *Server) run() {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	stepping := false
	// due is when the current step ends. Steps are paced on this absolute
	// schedule rather than "step duration from now", so the process's own
	// scheduling and timer overshoot do not pile up and slow the simulated
	// server down: a late step is caught up by the next ones (up to
	// maxLag). On fake time (synctest) timers fire exactly and nothing
	// changes.
	var due time.Time
	for {
		if !stepping {
			s.prune()
			s.admit()
			if len(s.running) > 0 {
				now := time.Now()
				if due.IsZero() || now.Sub(due) > maxLag {
					due = now
				}
				due = due.Add(s.stepDuration())
				timer.Reset(due.Sub(now))
				stepping = true
			} else {
				due = time.Time{} // idle: the next step starts a new schedule
			}
		}
		var tc <-chan time.Time
		if stepping {
			tc = timer.C
		}
		select {
		case j := <-s.arrive:
			s.plan(j)
		case <-tc:
			stepping = false
			s.finishStep()
		case <-s.quit:
			timer.Stop()
			return
		}
	}
}

// plan draws the request's fate and queues it.
func (s *Server) plan(j *job) {
	defer close(j.ready)
	c := &s.cfg
	r := s.rng
	if c.FailureRate > 0 && r.Float64() < c.FailureRate {
		j.fail = http.StatusInternalServerError
		return
	}
	if c.RateLimitRate > 0 && r.Float64() < c.RateLimitRate {
		j.fail = http.StatusTooManyRequests
		return
	}
	n := c.OutputMin
	if c.OutputTokens != nil {
		n = max(c.OutputTokens(r), 1)
	} else if c.OutputMax > c.OutputMin {
		n += r.IntN(c.OutputMax - c.OutputMin + 1)
	}
	if j.maxOut > 0 && (n > j.maxOut || j.exact) {
		n, j.length = j.maxOut, true
	}
	j.target = n
	j.cutAt, j.errAt, j.pauseAt = -1, -1, -1
	if c.CutRate > 0 && r.Float64() < c.CutRate {
		j.cutAt = r.IntN(n)
	}
	if c.ErrorEventRate > 0 && r.Float64() < c.ErrorEventRate {
		j.errAt = r.IntN(n)
	}
	if c.PauseRate > 0 && r.Float64() < c.PauseRate {
		j.pauseAt = 1 + r.IntN(max(n-1, 1))
	}
	if j.tool && c.SkipToolCallRate > 0 && r.Float64() < c.SkipToolCallRate {
		j.noTool = true
	}
	j.cached = s.lookupPrefix(j)
	j.phases.queued = time.Now()
	s.waiting = append(s.waiting, j)
	s.publish()
}

// gauges are the scheduler's state as /metrics serves it.
type gauges struct {
	running, waiting, kvUsed int
	queries, hits            int // prefix-cache counters, in prompt tokens
}

// publish copies the scheduler's state for /metrics.
func (s *Server) publish() {
	used := 0
	for _, j := range s.running {
		used += j.kv()
	}
	s.mu.Lock()
	s.gauges.running, s.gauges.waiting, s.gauges.kvUsed = len(s.running), len(s.waiting), used
	s.mu.Unlock()
}

// prune drops canceled requests from the queue and the batch.
func (s *Server) prune() {
	keep := func(js []*job) []*job {
		out := js[:0]
		for _, j := range js {
			if !j.canceled.Load() {
				out = append(out, j)
			}
		}
		clear(js[len(out):])
		return out
	}
	s.waiting = keep(s.waiting)
	s.running = keep(s.running)
}

// kv returns the KV-cache tokens held by j.
func (j *job) kv() int { return j.prompt + int(j.produced.Load()) }

// admit moves the queue's head into the batch while it fits.
func (s *Server) admit() {
	used := 0
	for _, j := range s.running {
		used += j.kv()
	}
	for len(s.waiting) > 0 && len(s.running) < s.cfg.MaxBatch {
		j := s.waiting[0]
		if s.cfg.KVBudget > 0 && len(s.running) > 0 && used+j.kv() > s.cfg.KVBudget {
			break
		}
		used += j.kv()
		j.needPref = j.kv()
		if !j.prefilled {
			j.needPref = max(j.needPref-j.cached, 1)
		}
		s.waiting[0] = nil
		s.waiting = s.waiting[1:]
		s.running = append(s.running, j)
		j.phases.schedule()
	}
	s.mu.Lock()
	s.stats.MaxRunning = max(s.stats.MaxRunning, len(s.running))
	s.mu.Unlock()
	s.publish()
}

// stepDuration returns the duration of the next step (see ServerConfig).
func (s *Server) stepDuration() time.Duration {
	c := &s.cfg
	prefill, decoding := 0, 0
	budget := s.prefillBudget()
	for _, j := range s.running {
		if j.needPref > 0 {
			prefill += j.takeChunk(&budget)
		} else {
			decoding++
		}
	}
	var d float64
	if prefill > 0 {
		d += float64(c.PrefillBase) + float64(c.PrefillPerToken)*float64(prefill)
	}
	if decoding > 0 {
		d += float64(c.BaseTPOT) * (1 + c.BatchSlowdown*float64(decoding-1))
	}
	d += float64(c.QueueOverhead) * float64(len(s.waiting))
	if c.Jitter > 0 {
		d *= 1 + c.Jitter*(2*s.rng.Float64()-1)
	}
	return max(time.Duration(d/c.Speedup), time.Microsecond)
}

// finishStep gives every request in the batch its next token, retires the
// finished ones and preempts the newest while the KV cache overflows.
func (s *Server) finishStep() {
	// The step is counted before any request hears of its token: a client
	// that reads Stats right after its last token sees that step.
	s.mu.Lock()
	s.stats.Steps++
	s.mu.Unlock()
	out := s.running[:0]
	used := 0
	for _, j := range s.running {
		if j.canceled.Load() {
			continue
		}
		left := j.needPref - j.chunk
		j.chunk = 0
		if left > 0 { // more of its prompt in the next steps
			j.needPref = left
			out = append(out, j)
			used += j.kv()
			continue
		}
		j.needPref = 0
		j.prefilled = true
		j.phases.token()
		n := j.produced.Add(1)
		if int(n) >= j.target {
			s.observe(j)
			j.finished.Store(true)
		} else {
			out = append(out, j)
			used += j.kv()
		}
		select {
		case j.notify <- struct{}{}:
		default:
		}
	}
	clear(s.running[len(out):])
	s.running = out
	preempted := 0
	for s.cfg.KVBudget > 0 && used > s.cfg.KVBudget && len(s.running) > 1 {
		j := s.running[len(s.running)-1]
		s.running[len(s.running)-1] = nil
		s.running = s.running[:len(s.running)-1]
		used -= j.kv()
		s.waiting = append([]*job{j}, s.waiting...)
		preempted++
	}
	if preempted > 0 {
		s.mu.Lock()
		s.stats.Preemptions += preempted
		s.mu.Unlock()
	}
	s.publish()
}

// errServerClosed reports a request made after Close.
var errServerClosed = errors.New("llmmetricstest: server closed")
