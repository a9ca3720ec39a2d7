package bench

import (
	"cmp"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/cmd/llmmetrics/internal/workload"
	"gonum.org/v1/gonum/stat/distuv"
)

// reqMeta is what a request asked for, kept beside its Record in
// records.jsonl.
type reqMeta struct {
	askedIn, askedOut int
	group             int // −1: none
	session, turn     int
	// An agent's task: its steps, the step's tool choice and the calls
	// its answer made.
	agent  bool
	steps  int
	choice string
	calls  int
}

func metaOf(r workload.Request) reqMeta {
	return reqMeta{askedIn: r.InputTokens, askedOut: r.OutputTokens, group: r.PrefixGroup, session: r.Session, turn: r.Turn, choice: r.ToolChoice}
}

// repeatRun is one repeat's shared state: request slots (warm-up first),
// their Records and what each asked for.
type repeatRun struct {
	b    *bench
	warm int
	// Agents' tasks are sent whole (see start): the first warm tasks are
	// warm-up in all their steps (warmSlot, up to warmEnd), and tasks
	// start while fewer than n measured slots are taken.
	agent     bool
	n         int
	warmTasks int // tasks started as warm-up
	warmEnd   int
	warmSlot  []bool
	records   []llmmetrics.Record
	metas     []reqMeta
	timings   []reqTiming  // each slot's schedule and lags, in step with metas
	msgs      []string     // why each failed ("" for an OK one)
	used      []bool       // the slot's request was sent
	flight    *inFlight    // requests in flight, for the progress line
	retries   atomic.Int64 // measured requests sent twice (see send)
	startMu   sync.Mutex   // makes taking a session and its slots one step
	slots     atomic.Int64 // next free slot
	done      atomic.Int64 // measured requests ended
	tokens    atomic.Int64 // their output tokens
	errMu     sync.Mutex
	err       error // the workload could not give a request
}

// start takes the workload's next session and reserves a slot for each of
// its turns (fewer when the repeat fills up), in one step: which sessions
// a repeat sends, and so the request bodies, do not depend on timing.
// ok is false when the repeat is full, the trace ended or the workload
// failed.
func (r *repeatRun) start() (s *workload.Session, first, count int, ok bool) {
	r.startMu.Lock()
	defer r.startMu.Unlock()
	first = int(r.slots.Load())
	if first >= r.limit() {
		return nil, 0, 0, false
	}
	if s = r.nextSession(); s == nil {
		return nil, 0, 0, false
	}
	if r.agent {
		// A task runs whole: its steps fit, as the slots hold
		// workload.MaxSteps beyond the limit.
		count = min(s.Len(), len(r.records)-first)
		if r.warmTasks < r.warm {
			r.warmTasks++
			for i := first; i < first+count; i++ {
				r.warmSlot[i] = true
			}
			r.warmEnd = first + count
		}
	} else {
		count = min(s.Len(), len(r.records)-first)
	}
	r.slots.Add(int64(count))
	return s, first, count, true
}

// limit is the slot from which no session starts: the end of the slots,
// or, for agents' tasks, n measured slots after the warm-up tasks.
func (r *repeatRun) limit() int {
	if r.agent {
		if r.warmTasks < r.warm {
			return len(r.records) // the warm-up tasks are still being taken
		}
		return r.warmEnd + r.n
	}
	return len(r.records)
}

// isWarm reports whether slot i is a warm-up request.
func (r *repeatRun) isWarm(i int) bool {
	if r.agent {
		return r.warmSlot[i]
	}
	return i < r.warm
}

func (r *repeatRun) fail(err error) {
	r.errMu.Lock()
	if r.err == nil {
		r.err = err
	}
	r.errMu.Unlock()
}

// nextSession returns the workload's next session (nil when there is
// none: the trace ended, or an error was recorded).
func (r *repeatRun) nextSession() *workload.Session {
	s, err := r.b.wl.Next()
	if err != nil {
		if !errors.Is(err, io.EOF) {
			r.fail(err)
		}
		return nil
	}
	return s
}

// body is req's request body in the -api's shape.
func (r *repeatRun) body(req workload.Request) []byte {
	return workload.Body(r.b.o.wl.api, r.b.model, req, r.b.o.wl.ignoreEOS)
}

// taken is a session taken for sending, its first request built: building
// it ahead of its time leaves only the wait between the schedule and the
// send.
type taken struct {
	s            *workload.Session
	first, count int
	req          workload.Request // the first turn's request
	body         []byte           // its body (nil: the session gave no request)
}

// take takes the workload's next session (see start) and builds its
// first request; nil when the repeat is full, the trace ended or the
// workload failed.
func (r *repeatRun) take() *taken {
	t := r.claim()
	if t != nil {
		t.build(r)
	}
	return t
}

// claim takes the workload's next session (see start) without building
// its first request (build); nil as take.
func (r *repeatRun) claim() *taken {
	s, first, count, ok := r.start()
	if !ok {
		return nil
	}
	return &taken{s: s, first: first, count: count}
}

// build builds t's first request.
func (t *taken) build(r *repeatRun) {
	if req, ok := t.s.Next(); ok {
		t.req, t.body = req, r.body(req)
	}
}

// ahead takes sessions for a closed-loop client one ahead of it, once
// every client has taken its first, on a goroutine of its own that runs
// while the client waits for its answer:
// the client's next request is built before its previous one ends. The
// channel closes when the repeat is full or ctx ends. It costs a client
// one more parked goroutine (about 4 KB of stack after a collection) and
// the next request's body; at the end of a repeat a client may send one
// session that an idle client could have taken.
func (r *repeatRun) ahead(ctx context.Context, wg, firsts *sync.WaitGroup) <-chan *taken {
	ch := make(chan *taken)
	wg.Go(func() {
		defer close(ch)
		firsts.Wait() // every client has taken its first
		for {
			t := r.take()
			if t == nil {
				return
			}
			select {
			case ch <- t:
			case <-ctx.Done():
				return
			}
		}
	})
	return ch
}

// send sends req (its body built) in slot i and returns the answer (its
// text and tool calls) when keepText (a session's next turn sends it
// back).
func (r *repeatRun) send(ctx context.Context, i int, req workload.Request, body []byte, keepText bool) workload.Answer {
	r.metas[i], r.used[i] = metaOf(req), true
	k := keepNothing
	if keepText {
		k = keepAnswer
	}
	r.flight.start(i)
	s := r.b.send(context.WithValue(ctx, timingKey{}, &r.timings[i]), body, &r.records[i], k)
	r.flight.end(i)
	if !r.isWarm(i) {
		r.tokens.Add(int64(r.records[i].OutputTokens))
		r.done.Add(1)
		if s.retried {
			r.retries.Add(1)
		}
	}
	r.metas[i].calls = len(s.answer.ToolCalls)
	if r.records[i].Outcome != llmmetrics.OutcomeOK {
		r.msgs[i] = s.msg
		return workload.Answer{}
	}
	return s.answer
}

// session sends t's first count turns in the slots from first, the first
// scheduled at due (its write held by h until then; nil: sent now), each
// next one the think time after the previous answer's end. It returns
// when the last request sent ended (due when none was): a closed-loop
// client's next request is due then.
func (r *repeatRun) session(ctx context.Context, t *taken, due time.Time, h *hold) time.Time {
	s := t.s
	multi := s.Len() > 1
	for turn := 0; turn < t.count && ctx.Err() == nil; turn++ {
		req, body := t.req, t.body
		if turn > 0 {
			due = due.Add(s.ThinkTime())
			if !sleep(ctx, time.Until(due)) {
				return due
			}
			var ok bool
			if req, ok = s.Next(); ok {
				body = r.body(req)
			} else {
				body = nil
			}
		}
		if body == nil {
			return due // a failed turn ended the session
		}
		i := t.first + turn
		r.timings[i].scheduled = due
		if turn == 0 {
			r.timings[i].hold = h
		}
		ans := r.send(ctx, i, req, body, multi)
		r.metas[i].agent, r.metas[i].steps = s.Agent(), s.Len()
		due = cmp.Or(r.records[i].End, time.Now())
		if multi {
			s.AnswerWith(ans, r.records[i].OutputTokens)
		}
	}
	return due
}

// sleep waits d or until ctx ends; false if ctx ended.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// runRepeat runs one repeat of a level: the warm-up requests, then the
// measured ones. Requests are built from the workload as they are sent.
func (b *bench) runRepeat(ctx context.Context, load float64, repeat int) (repeatResult, error) {
	warm, n := b.warmups(load), b.requests(load)
	total := warm + n
	agent := b.wl.Agent()
	if agent {
		// -warmup counts tasks: each may take workload.MaxSteps slots,
		// and the last measured task may run that far past the limit.
		total = (warm+1)*workload.MaxSteps + n
	}
	r := &repeatRun{b: b, warm: warm, n: n, agent: agent, records: make([]llmmetrics.Record, total), metas: make([]reqMeta, total),
		timings: make([]reqTiming, total), msgs: make([]string, total), used: make([]bool, total), flight: newInFlight(total)}
	if agent {
		r.warmSlot = make([]bool, total)
	}
	stop := b.prog.watch(b.o.mode, load, repeat, n, &r.done, &r.tokens, r.flight)
	defer stop()
	var wg sync.WaitGroup
	switch b.o.mode {
	case ModeReplay:
		w := newWorkers(&wg)
		b.replay(ctx, r, w)
		w.close()
	case ModeRate:
		rng := rand.New(rand.NewPCG(b.o.seed, uint64(load*1000)<<8|uint64(repeat)))
		gaps := distuv.Gamma{Alpha: b.o.burstiness, Beta: b.o.burstiness * load, Src: rng}
		p, w := b.pacer(), newWorkers(&wg)
		defer p.close()
		lead := b.lead()
		due, first := time.Now().Add(lead), true
		paced(ctx, p, w, lead, func() (time.Time, func(*hold), bool) {
			if !first {
				due = due.Add(time.Duration(gaps.Rand() * float64(time.Second)))
			}
			first = false
			// The session is claimed here, so the order of the sessions
			// does not depend on timing. Its first request is built before
			// its time: with a lead, by the request's own goroutine, which
			// starts lead early (the pacer's goroutine, busy building, could
			// miss a release); else here, so only the wait is left.
			t := r.claim()
			if t == nil {
				return time.Time{}, nil, false
			}
			if lead == 0 {
				t.build(r)
			}
			at := due
			return at, func(h *hold) {
				if lead > 0 {
					t.build(r)
				}
				r.session(ctx, t, at, h)
			}, true
		})
		w.close()
	default:
		// Every client's first session is taken before any client takes
		// its second (ahead waits for firsts): the first sessions, the
		// warm-up ones when -warmup is one per client, are then the first
		// of every client, and no measured request is sent in the opening
		// wave on a connection not yet dialed. Each client takes and
		// builds its own first, so the first sends do not wait for every
		// body to be built.
		var firsts sync.WaitGroup
		firsts.Add(int(load))
		began := time.Now()
		for range int(load) {
			wg.Go(func() {
				first := r.take()
				firsts.Done()
				if first == nil {
					return
				}
				next := r.ahead(ctx, &wg, &firsts)
				due := r.session(ctx, first, began, nil) // a client's next request is due when its previous one ends
				for t := range next {
					due = r.session(ctx, t, due, nil)
				}
			})
		}
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return repeatResult{}, err
	}
	if r.err != nil {
		return repeatResult{}, r.err
	}
	// Keep the slots whose request was sent: a trace may end first, a
	// failed turn ends its session before its reserved slots.
	rep := repeatResult{retries: int(r.retries.Load())}
	for i := range total {
		if r.used[i] && !r.isWarm(i) {
			rep.records, rep.metas, rep.msgs = append(rep.records, r.records[i]), append(rep.metas, r.metas[i]), append(rep.msgs, r.msgs[i])
			rep.timings = append(rep.timings, r.timings[i])
		}
	}
	return rep, nil
}

// workers run an open loop's requests on goroutines kept between them. A
// new goroutine's stack starts at a few KB and is copied as it grows
// through the request's first steps (building the body, the Tracker's
// attribute set, the HTTP client), spent again for every request: a
// quarter of the client's CPU in a profile at 2,000 requests/s of short
// answers. A kept goroutine has its stack grown already, and waits for its
// next request in a frame of idleFrame bytes so that the collector, which
// halves the stack of a goroutine using less than a quarter of it, does
// not shrink it between requests, to be copied back up during the next
// one: runtime.copystack fell from 2-8 % to 0-1 % of the client's CPU at
// 1,000 requests/s of short answers (fidelity -rates 1000 -cpuprofile, on
// a shared machine).
type workers struct {
	wg   *sync.WaitGroup
	jobs chan func() // unbuffered: a send succeeds only to an idle worker
	quit chan struct{}
	n    int // workers started (by run's goroutine)
}

func newWorkers(wg *sync.WaitGroup) *workers {
	return &workers{wg: wg, jobs: make(chan func()), quit: make(chan struct{})}
}

// run runs f on an idle worker, or on a new one when none is idle. It is
// called from one goroutine, never after close.
func (w *workers) run(f func()) {
	select {
	case w.jobs <- f:
		return
	default:
	}
	w.n++
	w.wg.Go(func() {
		for f != nil {
			f()
			f = w.next()
		}
	})
}

// idleFrame is the stack a worker keeps in use while it waits: a quarter
// of the 32 KB a request's path grows it to, so a collection leaves it.
const idleFrame = 8 << 10

// next waits for the worker's next job (nil: the workers are closed). Its
// frame holds idleFrame bytes (see workers).
//
//go:noinline
func (w *workers) next() func() {
	var pin [idleFrame]byte
	select {
	case f := <-w.jobs:
		pin[len(pin)-1] = 1 // the frame stays in use until the wait ends
		if pin[0] != 0 {
			return nil
		}
		return f
	case <-w.quit:
		return nil
	}
}

// close lets the workers end once their requests have.
func (w *workers) close() { close(w.quit) }

// pacer returns the open loop's pacer. It spins before each time only
// when the chunks are timed by the kernel (see timerfdPacer.noSpin).
func (b *bench) pacer() pacer {
	if b.e.newPacer == nil {
		return timerPacer{}
	}
	p := b.e.newPacer()
	if s, ok := p.(interface{ noSpin() }); ok && !b.kernelTimed() {
		s.noSpin()
	}
	return p
}

// kernelTimed says whether the answers' chunks are timed by the kernel's
// receive timestamps: plain HTTP on connections bench dialed, on Linux,
// unless LLMMETRICS_TIMING=user.
func (b *bench) kernelTimed() bool {
	return b.holds && runtime.GOOS == "linux" && os.Getenv("LLMMETRICS_TIMING") != "user"
}

// replay sends the trace's requests open-loop: each built, then sent at
// the run's start plus its arrival time.
func (b *bench) replay(ctx context.Context, r *repeatRun, w *workers) {
	p := b.pacer()
	defer p.close()
	lead := b.lead()
	start := time.Now().Add(lead)
	paced(ctx, p, w, lead, func() (time.Time, func(*hold), bool) {
		s, i, _, ok := r.start()
		if !ok {
			return time.Time{}, nil, false
		}
		req, _ := s.Next()
		var body []byte
		if lead == 0 {
			body = r.body(req) // built before its time (with a lead, by its own goroutine)
		}
		at := start.Add(req.Arrival)
		r.timings[i].scheduled = at
		return at, func(h *hold) {
			if body == nil {
				body = r.body(req)
			}
			r.timings[i].hold = h
			r.send(ctx, i, req, body, false)
		}, true
	})
}

// lead is how early an open-loop request starts, its write held until its
// time: sendLead when bench dialed the connections its writes go through
// (plain HTTP through its own transport), else 0 (the request starts at
// its time).
func (b *bench) lead() time.Duration {
	if b.holds {
		return sendLead
	}
	return 0
}

// setHeaders sets the content type and the API key in the header each API
// reads it from.
func (b *bench) setHeaders(req *http.Request) {
	req.Header.Set("Content-Type", "application/json")
	if b.o.wl.api == "ollama" {
		req.Header.Set("Accept", "application/x-ndjson")
	} else {
		req.Header.Set("Accept", "text/event-stream")
	}
	if b.o.wl.api == "anthropic" {
		req.Header.Set("anthropic-version", "2023-06-01")
	}
	if b.apiKey == "" {
		return
	}
	switch b.o.wl.api {
	case "anthropic":
		req.Header.Set("x-api-key", b.apiKey)
	case "gemini":
		req.Header.Set("x-goog-api-key", b.apiKey)
	default:
		req.Header.Set("Authorization", "Bearer "+b.apiKey)
	}
}

// apiURL returns the endpoint of the -api on the base URL: the fake
// server's root gets each API's version prefix.
func apiURL(base, api, model string, fake bool) string {
	base = trimSlash(base)
	if fake {
		switch api {
		case "gemini":
			base += "/v1beta"
		case "ollama":
		default:
			base += "/v1"
		}
	}
	return base + workload.Path(api, model)
}

func trimSlash(s string) string {
	for len(s) > 0 && s[len(s)-1] == '/' {
		s = s[:len(s)-1]
	}
	return s
}
