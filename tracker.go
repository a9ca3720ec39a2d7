package llmmetrics

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// Tracker measures requests and emits their OpenTelemetry metrics and
// spans. It owns the instruments and the prebuilt attribute sets; a Request
// is cheap. A Tracker is safe for concurrent use.
type Tracker struct {
	cfg    config
	inst   [2]instruments // by side
	base   [2]*attrSet    // the Tracker's attributes, by side
	tracer trace.Tracer   // nil: no spans (a no-op TracerProvider)

	cacheMu sync.RWMutex
	cache   map[setKey]*attrSet

	win *window
}

// NewTracker returns a Tracker configured by opts, with the instruments of
// both roles. Invalid options give an error wrapping ErrInvalid; a
// MeterProvider that refuses an instrument gives its error.
func NewTracker(opts ...Option) (*Tracker, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	inst, err := newInstruments(cfg)
	if err != nil {
		return nil, fmt.Errorf("llmmetrics: creating instruments: %w", err)
	}
	t := &Tracker{cfg: cfg, inst: inst, tracer: newTracer(cfg.tracers), cache: make(map[setKey]*attrSet)}
	for _, role := range []side{sideServer, sideClient} {
		t.base[role] = t.newAttrSet(attribute.NewSet(cfg.attrs...), role)
	}
	if cfg.windowN > 0 {
		t.win = newWindow(cfg.windowN, cfg.windowAge)
	}
	return t, nil
}

// sloState indexes the prebuilt end options of a successful request.
type sloState uint8

const (
	sloNone sloState = iota
	sloMet
	sloMissed
)

// maxErrorSets bounds the distinct (outcome, error.type) combinations kept
// per attribute set; beyond it error.type becomes "_OTHER".
const maxErrorSets = 32

// attrSet holds the prebuilt measurement options of one attribute set and
// role, so no measurement builds attributes. The instruments both roles share
// by name (llmmetrics.requests, .requests.active, .tokens, .tokens.cached_input,
// .tokens.cache_write_input, .time_to_first_output_token) also carry RoleKey,
// so a Tracker that measures both sides of a gateway counts each side apart;
// the role's own instruments do not need it.
type attrSet struct {
	attrs         []attribute.KeyValue
	name          string                     // the span name (spanNameOf)
	role          attribute.KeyValue         // RoleKey
	rec           []metric.RecordOption      // the role's own latency histograms
	ttfo          []metric.RecordOption      // shared by name: with RoleKey
	active        []metric.AddOption         // shared by name: with RoleKey
	inUse, outUse []metric.RecordOption      // gen_ai.client.token.usage
	ok            [3]atomic.Pointer[endOpts] // OutcomeOK, by sloState; built on first use

	mu   sync.Mutex
	errs map[errKey]*endOpts
}

// maxKeyAttrs is how many per-request attributes a setKey holds as given.
const maxKeyAttrs = 4

// setKey identifies a cached attrSet: by the attributes given to Start, in
// their order, when there are at most maxKeyAttrs, so a request finds its
// set without building an attribute.Set (which copies, sorts and hashes
// the attributes, and in OpenTelemetry v1.47 needs a deep stack that a
// pooled goroutine shrunk by the collector grows again: 9–17 % of a load
// generator's CPU per request measured at 5,000 requests/s); else by the
// whole set's Distinct. Two orders of the same attributes are two entries
// that hold equal sets.
type setKey struct {
	role side
	n    int                             // attributes in kvs; 0 when set is used
	kvs  [maxKeyAttrs]attribute.KeyValue // the request's attributes, as given
	set  attribute.Distinct
}

type errKey struct {
	outcome Outcome
	slo     sloState
	errType string // "" for none
}

// endOpts are the options of the measurements taken at End.
type endOpts struct {
	e2el     []metric.RecordOption // base + error.type
	requests []metric.AddOption    // base + role + outcome + slo_met + error.type
	in, out  []metric.AddOption    // base + role + token type + outcome + slo_met
}

func (t *Tracker) newAttrSet(s attribute.Set, role side) *attrSet {
	as := &attrSet{attrs: s.ToSlice(), role: RoleKey.String(role.String()), errs: make(map[errKey]*endOpts)}
	as.name = spanNameOf(as.attrs)
	as.rec = []metric.RecordOption{metric.WithAttributeSet(s)}
	as.ttfo = []metric.RecordOption{metric.WithAttributeSet(as.with(as.role))}
	as.active = []metric.AddOption{metric.WithAttributeSet(as.with(as.role))}
	// Both roles: a client request may use a server Tracker (NewTransport).
	as.inUse = []metric.RecordOption{metric.WithAttributeSet(as.with(semconv.GenAITokenTypeInput))}
	as.outUse = []metric.RecordOption{metric.WithAttributeSet(as.with(semconv.GenAITokenTypeOutput))}
	return as
}

// with returns the set's attributes plus extra, as a new Set.
func (as *attrSet) with(extra ...attribute.KeyValue) attribute.Set {
	kvs := make([]attribute.KeyValue, 0, len(as.attrs)+len(extra))
	return attribute.NewSet(append(append(kvs, as.attrs...), extra...)...)
}

func (as *attrSet) newEndOpts(o Outcome, st sloState, errType string) *endOpts {
	common := []attribute.KeyValue{as.role, OutcomeKey.String(o.String())}
	if st != sloNone {
		common = append(common, SLOMetKey.Bool(st == sloMet))
	}
	var e2el, req []attribute.KeyValue
	if errType != "" {
		et := semconv.ErrorTypeKey.String(errType)
		e2el = append(e2el, et)
		req = append(req, et)
	}
	req = append(req, common...)
	return &endOpts{
		e2el:     []metric.RecordOption{metric.WithAttributeSet(as.with(e2el...))},
		requests: []metric.AddOption{metric.WithAttributeSet(as.with(req...))},
		in:       []metric.AddOption{metric.WithAttributeSet(as.with(append(slices.Clip(common), semconv.GenAITokenTypeInput)...))},
		out:      []metric.AddOption{metric.WithAttributeSet(as.with(append(slices.Clip(common), semconv.GenAITokenTypeOutput)...))},
	}
}

// endOptsFor returns the prebuilt options for a request that ended with
// outcome o, SLO state st and error.type errType ("" for none).
func (as *attrSet) endOptsFor(o Outcome, st sloState, errType string) *endOpts {
	if o == OutcomeOK {
		if e := as.ok[st].Load(); e != nil {
			return e
		}
		e := as.newEndOpts(OutcomeOK, st, "")
		if as.ok[st].CompareAndSwap(nil, e) {
			return e
		}
		return as.ok[st].Load()
	}
	k := errKey{o, st, errType}
	as.mu.Lock()
	defer as.mu.Unlock()
	if e, ok := as.errs[k]; ok {
		return e
	}
	if len(as.errs) >= maxErrorSets {
		k.errType = semconv.ErrorTypeOther.Value.AsString()
		if e, ok := as.errs[k]; ok {
			return e
		}
	}
	e := as.newEndOpts(o, st, k.errType)
	as.errs[k] = e
	return e
}

// setFor returns the prebuilt options for the Tracker's attributes plus
// attrs in role, from the bounded cache when it can.
func (t *Tracker) setFor(role side, attrs []attribute.KeyValue) *attrSet {
	key := setKey{role: role}
	var s attribute.Set
	if len(attrs) <= maxKeyAttrs {
		key.n = copy(key.kvs[:], attrs)
	} else {
		s = t.fullSet(role, attrs)
		key.set = s.Equivalent()
	}
	t.cacheMu.RLock()
	as, ok := t.cache[key]
	t.cacheMu.RUnlock()
	if ok {
		return as
	}
	if key.n > 0 {
		s = t.fullSet(role, attrs)
	}
	as = t.newAttrSet(s, role)
	t.cacheMu.Lock()
	defer t.cacheMu.Unlock()
	if cached, ok := t.cache[key]; ok {
		return cached
	}
	if t.cfg.cacheSize == 0 {
		return as
	}
	if len(t.cache) >= t.cfg.cacheSize {
		for k := range t.cache { // evict an arbitrary entry: map order is random
			delete(t.cache, k)
			break
		}
	}
	t.cache[key] = as
	return as
}

// fullSet is the Tracker's attributes in role plus attrs, as a Set.
func (t *Tracker) fullSet(role side, attrs []attribute.KeyValue) attribute.Set {
	base := t.base[role].attrs
	kvs := make([]attribute.KeyValue, 0, len(base)+len(attrs))
	return attribute.NewSet(append(append(kvs, base...), attrs...)...)
}

// Start begins measuring, in the server role, a request received now (by
// the Tracker's clock); StartClient measures a call to a model. attrs are
// added to the Tracker's attributes for this request (each distinct set is
// built once and cached) and to its span, a child of ctx's span (a server
// span; a client span for StartClient). The request's Context carries the
// span and is passed to every measurement; a nil ctx is taken as
// context.Background().
func (t *Tracker) Start(ctx context.Context, attrs ...attribute.KeyValue) *Request {
	return t.StartAt(ctx, t.cfg.now(), attrs...)
}

// StartAt is Start with an explicit start time, which must not be the zero
// time.Time (a zero time in a Record means "unset").
func (t *Tracker) StartAt(ctx context.Context, start time.Time, attrs ...attribute.KeyValue) *Request {
	return t.startAs(ctx, sideServer, start, attrs)
}

// StartClient is Start in the client role (gen_ai.client.* instruments), for
// a call to a model the program sends now.
func (t *Tracker) StartClient(ctx context.Context, attrs ...attribute.KeyValue) *Request {
	return t.StartClientAt(ctx, t.cfg.now(), attrs...)
}

// StartClientAt is StartClient with an explicit start time (see StartAt).
func (t *Tracker) StartClientAt(ctx context.Context, start time.Time, attrs ...attribute.KeyValue) *Request {
	return t.startAs(ctx, sideClient, start, attrs)
}

// startAs is StartAt recording with the instruments of role.
func (t *Tracker) startAs(ctx context.Context, role side, start time.Time, attrs []attribute.KeyValue) *Request {
	if ctx == nil {
		ctx = context.Background()
	}
	set := t.setOf(role, attrs)
	ctx, span := t.startSpan(ctx, role, start, set.name)
	return t.newRequest(ctx, role, start, set, span, nil)
}

// setOf returns the prebuilt options of the Tracker's attributes in role
// plus attrs.
func (t *Tracker) setOf(role side, attrs []attribute.KeyValue) *attrSet {
	if len(attrs) > 0 {
		return t.setFor(role, attrs)
	}
	return t.base[role]
}

// newRequest returns a started request in role, measured with ctx, with
// its span (nil when none records) and the span attributes known so far
// (kvs, which it keeps).
func (t *Tracker) newRequest(ctx context.Context, role side, start time.Time, set *attrSet, span trace.Span, kvs []attribute.KeyValue) *Request {
	in := &t.inst[role]
	r := &Request{t: t, inst: in, set: set, ctx: ctx, start: start, span: span, spanKVs: kvs}
	in.active.Add(ctx, 1, set.active...)
	return r
}

// Request measures one request: feed it with Chunk, ReasoningChunk and
// SetUsage, and finish it with End, which returns its Record. Its methods
// are safe for concurrent use (a cancel watcher may End it while chunks
// still arrive: a chunk after End is ignored) and never panic. A time
// before the previous one is taken as the previous one, so no gap is
// negative.
type Request struct {
	t     *Tracker
	inst  *instruments // the role's: the Tracker's own, or the HTTP wrapper's
	set   *attrSet
	ctx   context.Context // the caller's, with the request's span
	start time.Time
	span  trace.Span // nil when no span records
	// spanKVs are span attributes gathered before End, which sets them
	// with its own in one call (each SetAttributes call of the SDK grows
	// the span's slice); guarded by mu.
	spanKVs []attribute.KeyValue

	mu              sync.Mutex
	first, last     time.Duration // offsets from start of the first and last token-carrying chunk
	firstOut        time.Duration // offset of the first answer chunk, when hasOut
	end             time.Duration // offset of End
	maxGap          time.Duration
	chunks, tokens  int
	input, output   int // usage, when hasUsage
	reasoning       int // reported reasoning tokens (SetReasoningTokens)
	cached, written int // prompt-cache reads and writes (SetCachedInputTokens)
	itl             []time.Duration
	hasUsage, ended bool
	hasInput        bool          // the input count was told (SetUsage, setInputTokens)
	hasOut          bool          // an answer chunk arrived
	srvPrefill      time.Duration // the server's own times (setServerTimes)
	srvDecode       time.Duration
	outcome         Outcome
	errType         string // the error.type of the error passed to End
	respModel       string // SetResponse
	respID          string
	finish          []string
	finishDropped   bool // finish reasons beyond maxFinishReasons were dropped
}

var (
	errNegativeTokens = errors.New("llmmetrics: negative token count ignored")
	errNegativeUsage  = errors.New("llmmetrics: negative usage count ignored")
)

// errUsageBelowChunks is the problem (wrapped, with both counts) a Request
// reports through otel.Handle when it ends with a reported output count
// (SetUsage) below its number of token-carrying chunks. Every such chunk
// holds at least one token, so the report is the server's fault (the
// Responses API can end with "output_tokens": 0 after 16 deltas): N is
// then the chunk count.
var errUsageBelowChunks = errors.New("llmmetrics: reported output tokens below the token-carrying chunks")

// Chunk records that a chunk of tokens answer tokens (content, refusal or
// tool calls) arrived now, by the Tracker's clock. The first token-carrying
// chunk records TTFT, the first answer chunk TTFO, each later one an ITL
// gap. A chunk of 0 tokens moves nothing; a negative count is ignored and
// reported through otel.Handle.
func (r *Request) Chunk(tokens int) {
	if tokens <= 0 {
		r.chunkAt(time.Time{}, tokens, true)
		return
	}
	r.chunkAt(r.t.cfg.now(), tokens, true)
}

// ChunkAt is Chunk with an explicit arrival time.
func (r *Request) ChunkAt(t time.Time, tokens int) { r.chunkAt(t, tokens, true) }

// ReasoningChunk is Chunk for reasoning ("thinking") tokens: they count for
// TTFT, ITL, TPOT and N, but not for TTFO.
func (r *Request) ReasoningChunk(tokens int) {
	if tokens <= 0 {
		r.chunkAt(time.Time{}, tokens, false)
		return
	}
	r.chunkAt(r.t.cfg.now(), tokens, false)
}

// ReasoningChunkAt is ReasoningChunk with an explicit arrival time.
func (r *Request) ReasoningChunkAt(t time.Time, tokens int) { r.chunkAt(t, tokens, false) }

func (r *Request) chunkAt(t time.Time, tokens int, answer bool) {
	if tokens <= 0 {
		if tokens < 0 {
			otel.Handle(errNegativeTokens)
		}
		return
	}
	r.mu.Lock()
	if r.ended {
		r.mu.Unlock()
		return
	}
	off := max(t.Sub(r.start), r.last)
	first := r.chunks == 0
	firstOut := answer && !r.hasOut
	var gap time.Duration
	if first {
		r.first = off
	} else {
		gap = off - r.last
		r.maxGap = max(r.maxGap, gap)
		if r.t.cfg.keepITL {
			r.itl = append(r.itl, gap)
		}
	}
	if firstOut {
		r.firstOut, r.hasOut = off, true
	}
	r.last = off
	r.chunks++
	r.tokens += tokens
	r.mu.Unlock()

	if first {
		r.inst.ttft.Record(r.ctx, off.Seconds(), r.set.rec...)
	} else {
		r.inst.itl.Record(r.ctx, gap.Seconds(), r.set.rec...)
	}
	if firstOut {
		r.inst.ttfo.Record(r.ctx, off.Seconds(), r.set.ttfo...)
	}
	if r.span != nil && r.t.cfg.events {
		r.chunkEvent(r.start.Add(off), tokens, answer)
	}
}

// SetUsage records the server's exact token counts (output includes
// reasoning): the output count replaces the sum of chunk counts as N, but N
// is never below the number of token-carrying chunks. The last call wins;
// negative counts are ignored and reported through otel.Handle.
func (r *Request) SetUsage(input, output int) {
	if input < 0 || output < 0 {
		otel.Handle(errNegativeUsage)
		return
	}
	r.mu.Lock()
	if !r.ended {
		r.input, r.output, r.hasUsage, r.hasInput = input, output, true, true
	}
	r.mu.Unlock()
}

// SetReasoningTokens records how many of the output tokens the server
// reports as reasoning tokens (Record.ReasoningTokens). The last call wins.
func (r *Request) SetReasoningTokens(n int) {
	if n < 0 {
		otel.Handle(errNegativeUsage)
		return
	}
	r.mu.Lock()
	if !r.ended {
		r.reasoning = n
	}
	r.mu.Unlock()
}

// SetCachedInputTokens records how many of the input tokens the provider
// read from its prompt cache and wrote to it (Record.CachedInputTokens,
// Record.CacheWriteInputTokens). The last call wins.
func (r *Request) SetCachedInputTokens(cached, written int) {
	if cached < 0 || written < 0 {
		otel.Handle(errNegativeUsage)
		return
	}
	r.mu.Lock()
	if !r.ended {
		r.cached, r.written = cached, written
	}
	r.mu.Unlock()
}

// setInputTokens records the prompt length when it is known before the
// usage (a server knows it at admission). A later SetUsage replaces it.
func (r *Request) setInputTokens(input int) {
	if input < 0 {
		otel.Handle(errNegativeUsage)
		return
	}
	r.mu.Lock()
	if !r.ended {
		r.input, r.hasInput = input, true
	}
	r.mu.Unlock()
}

// setServerTimes keeps the server's own account of the request (a
// decoder's Frame.ServerPrefill and ServerDecode): a time of 0 leaves the
// one told before.
func (r *Request) setServerTimes(prefill, decode time.Duration) {
	r.mu.Lock()
	if !r.ended {
		if prefill > 0 {
			r.srvPrefill = prefill
		}
		if decode > 0 {
			r.srvDecode = decode
		}
	}
	r.mu.Unlock()
}

// End finishes the request now (by the Tracker's clock) and returns its
// Record; see EndAt.
func (r *Request) End(err error) Record {
	return r.EndAt(r.t.cfg.now(), err)
}

// EndAt finishes the request at t, records its measurements and returns its
// Record. A nil err is OutcomeOK, context.Canceled or DeadlineExceeded
// (wrapped or not) OutcomeCanceled, any other error OutcomeError. A second
// call returns the first Record and records nothing.
func (r *Request) EndAt(t time.Time, err error) Record {
	r.mu.Lock()
	if r.ended {
		rec := r.record()
		r.mu.Unlock()
		return rec
	}
	r.ended = true
	r.end = max(t.Sub(r.start), r.last)
	r.outcome = outcomeOf(err)
	r.errType = r.t.errorType(err)
	rec := r.record()
	low := r.hasUsage && r.output < r.chunks
	facts := spanFacts{inputKnown: r.hasInput, outputKnown: r.hasUsage || r.chunks > 0}
	spanKVs := r.spanKVs
	r.mu.Unlock()
	if low {
		otel.Handle(fmt.Errorf("%w: usage says %d, %d chunks arrived; N is %d", errUsageBelowChunks, r.output, rec.Chunks, rec.OutputTokens))
	}
	r.t.finish(r.ctx, r.inst, r.set, &rec)
	if r.span != nil {
		r.endSpan(rec, err, facts, spanKVs)
	}
	return rec
}

func outcomeOf(err error) Outcome {
	switch {
	case err == nil:
		return OutcomeOK
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return OutcomeCanceled
	}
	return OutcomeError
}

// record builds the Record; r.mu must be held.
func (r *Request) record() Record {
	rec := Record{
		Start:                 r.start,
		End:                   r.start.Add(r.end),
		InputTokens:           r.input,
		OutputTokens:          r.tokens,
		ReasoningTokens:       r.reasoning,
		CachedInputTokens:     r.cached,
		CacheWriteInputTokens: r.written,
		Chunks:                r.chunks,
		ITL:                   r.itl,
		MaxITL:                r.maxGap,
		Outcome:               r.outcome,
		ErrorType:             r.errType,
		ServerPrefill:         r.srvPrefill,
		ServerDecode:          r.srvDecode,
		ResponseModel:         r.respModel,
		ResponseID:            r.respID,
		FinishReasons:         slices.Clip(r.finish),
	}
	if r.hasUsage {
		// Each token-carrying chunk holds at least one token: a usage below
		// the chunk count is the server's fault (reported at End).
		rec.OutputTokens = max(r.output, r.chunks)
	}
	if r.chunks > 0 {
		rec.FirstToken = r.start.Add(r.first)
		rec.LastToken = r.start.Add(r.last)
	}
	if r.hasOut {
		rec.FirstOutput = r.start.Add(r.firstOut)
	}
	return rec
}

// errorType returns the error.type value of err ("" for nil).
func (t *Tracker) errorType(err error) string {
	if err == nil {
		return ""
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	var typed interface{ ErrorType() string }
	if errors.As(err, &typed) {
		if v := typed.ErrorType(); v != "" {
			return v
		}
	}
	if v := transportErrorType(err); v != "" {
		return v
	}
	return semconv.ErrorType(err).Value.AsString()
}

// finish records the measurements of an ended request.
func (t *Tracker) finish(ctx context.Context, in *instruments, set *attrSet, rec *Record) {
	st := sloNone
	if t.cfg.hasSLO {
		st = sloMissed
		if t.cfg.slo.Met(*rec) {
			st = sloMet
		}
	}
	opts := set.endOptsFor(rec.Outcome, st, rec.ErrorType)
	if e2el, ok := rec.E2EL(); ok {
		in.e2el.Record(ctx, e2el.Seconds(), opts.e2el...)
	}
	if tpot, ok := rec.TPOT(); ok && rec.Outcome == OutcomeOK {
		in.tpot.Record(ctx, tpot.Seconds(), set.rec...)
	}
	if rec.InputTokens > 0 {
		in.tokens.Add(ctx, int64(rec.InputTokens), opts.in...)
	}
	if rec.OutputTokens > 0 {
		in.tokens.Add(ctx, int64(rec.OutputTokens), opts.out...)
	}
	if rec.CachedInputTokens > 0 {
		in.cachedInput.Add(ctx, int64(rec.CachedInputTokens), opts.in...)
	}
	if rec.CacheWriteInputTokens > 0 {
		in.cacheWrite.Add(ctx, int64(rec.CacheWriteInputTokens), opts.in...)
	}
	if in.tokenUsage != nil {
		if rec.InputTokens > 0 {
			in.tokenUsage.Record(ctx, int64(rec.InputTokens), set.inUse...)
		}
		if rec.OutputTokens > 0 || rec.Outcome == OutcomeOK {
			in.tokenUsage.Record(ctx, int64(rec.OutputTokens), set.outUse...)
		}
	}
	in.requests.Add(ctx, 1, opts.requests...)
	in.active.Add(ctx, -1, set.active...)
	if t.win != nil {
		t.win.add(*rec)
	}
	if t.cfg.onEnd != nil {
		t.cfg.onEnd(ctx, *rec)
	}
}
