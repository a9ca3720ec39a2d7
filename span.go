package llmmetrics

import (
	"context"
	"errors"
	"net"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/llmmetrics/llmmetrics/internal/jsonstream"
)

// This file makes the span of each request, after the GenAI conventions of
// semconv v1.41.0: started at the request's Start, ended at its End, with
// counts and times, never text. docs/http.md ("Spans") is the reference.

// Span attributes the GenAI conventions have no name for, in seconds.
const (
	attrTTFO = attribute.Key("llmmetrics.time_to_first_output_token")
	attrTPOT = attribute.Key("llmmetrics.time_per_output_token")
	attrE2EL = attribute.Key("llmmetrics.end_to_end_latency")
)

// The span event of a token-carrying chunk (WithChunkEvents) and its
// attributes: the chunk's tokens, and whether they are reasoning tokens
// (present only when they are).
const (
	eventChunk         = "llmmetrics.chunk"
	attrChunkTokens    = attribute.Key("llmmetrics.chunk.tokens")
	attrChunkReasoning = attribute.Key("llmmetrics.chunk.reasoning")
)

// spanNameUnknown names the span of a request whose operation is not
// known (gen_ai.operation.name is not among its attributes).
const spanNameUnknown = "llmmetrics.request"

// maxFinishReasons bounds the finish reasons a request keeps: one per
// choice, and OpenAI's n is at most 128. A stream that tells more is
// faulty; the extra ones are dropped and reported through otel.Handle.
const maxFinishReasons = 128

var errTooManyFinishReasons = errors.New("llmmetrics: more than 128 finish reasons in one answer; the rest are dropped")

// spanKinds are the prebuilt kind options, by side.
var spanKinds = [2]trace.SpanStartOption{
	sideServer: trace.WithSpanKind(trace.SpanKindServer),
	sideClient: trace.WithSpanKind(trace.SpanKindClient),
}

// newTracer returns the Tracer of tp, or nil when tp is the no-op
// provider (then no span is started at all).
func newTracer(tp trace.TracerProvider) trace.Tracer {
	if _, ok := tp.(noop.TracerProvider); ok {
		return nil
	}
	return tp.Tracer(ScopeName, trace.WithInstrumentationVersion(version), trace.WithSchemaURL(semconv.SchemaURL))
}

// isDefaultGlobal reports whether tp is the global TracerProvider as otel
// makes it before any is installed (a type of its internal package). If
// otel's internals change, this is false, which costs only the allocations
// of a Start that records nothing. (OpenTelemetry's eBPF
// auto-instrumentation, which turns that provider's spans on from outside
// the process, does not see a Tracker's spans while none is installed.)
func isDefaultGlobal(tp trace.TracerProvider) bool {
	t := reflect.TypeOf(tp)
	return t.Kind() == reflect.Pointer && t.Elem().PkgPath() == "go.opentelemetry.io/otel/internal/global" &&
		t.Elem().Name() == "tracerProvider"
}

// spanName is the span name of the GenAI conventions,
// "{gen_ai.operation.name} {gen_ai.request.model}", without the model when
// it is not known, and spanNameUnknown without an operation.
func spanName(op, model string) string {
	switch {
	case op == "":
		return spanNameUnknown
	case model == "":
		return op
	}
	return op + " " + model
}

// spanNameOf is the span name of a set of attributes.
func spanNameOf(attrs []attribute.KeyValue) string {
	var op, model string
	for _, kv := range attrs {
		switch kv.Key {
		case semconv.GenAIOperationNameKey:
			op = kv.Value.AsString()
		case semconv.GenAIRequestModelKey:
			model = kv.Value.AsString()
		}
	}
	return spanName(op, model)
}

// startSpan starts the span of a request in role at start, named name, as
// a child of ctx's span. It returns the context to measure with and to
// hand down, and the span when it records (nil otherwise). A span that
// does not record but has a span context of its own (not sampled) is still
// handed down, so that what the request calls is not sampled either; a
// no-op tracer's, which only repeats its parent's, is not.
func (t *Tracker) startSpan(ctx context.Context, role side, start time.Time, name string) (context.Context, trace.Span) {
	if !t.tracing() {
		return ctx, nil
	}
	sctx, span := t.tracer.Start(ctx, name, spanKinds[role], trace.WithTimestamp(start))
	switch {
	case span.IsRecording():
		return sctx, span
	case span.SpanContext().Equal(trace.SpanContextFromContext(ctx)):
		return ctx, nil
	}
	return sctx, nil
}

// tracing reports whether the Tracker may make spans: not with a no-op
// provider, nor with the global one while no SDK is installed, whose spans
// record nothing and carry only their parent's context (and whose Start
// costs 5 allocations). The wrappers ask it before they build a span's
// start.
func (t *Tracker) tracing() bool {
	return t.tracer != nil && !(t.cfg.tracersGlobal && t.cfg.tracers == otel.GetTracerProvider())
}

// Context returns the context given to Start with the request's span, if
// one is made: pass it on so what the request calls is the span's child.
// The request's measurements are made with it (exemplars link to the span).
func (r *Request) Context() context.Context { return r.ctx }

// SetResponse records who answered and why it stopped (Record.ResponseModel,
// ResponseID, FinishReasons): a non-empty model or id replaces the last,
// finish reasons are appended. The HTTP wrappers and NewReader call it.
func (r *Request) SetResponse(model, id string, finishReasons ...string) {
	r.mu.Lock()
	if r.ended {
		r.mu.Unlock()
		return
	}
	if model != "" {
		r.respModel = model
	}
	if id != "" {
		r.respID = id
	}
	report := false
	if room := maxFinishReasons - len(r.finish); len(finishReasons) > room {
		report = !r.finishDropped
		r.finishDropped = true
		finishReasons = finishReasons[:room]
	}
	if len(finishReasons) > 0 {
		r.finish = append(r.finish, finishReasons...)
	}
	r.mu.Unlock()
	if report {
		otel.Handle(errTooManyFinishReasons)
	}
}

// chunkEvent adds the span event of a token-carrying chunk that arrived
// at t (WithChunkEvents).
func (r *Request) chunkEvent(t time.Time, tokens int, answer bool) {
	attrs := []attribute.KeyValue{attrChunkTokens.Int(tokens)}
	if !answer {
		attrs = append(attrs, attrChunkReasoning.Bool(true))
	}
	r.span.AddEvent(eventChunk, trace.WithTimestamp(t), trace.WithAttributes(attrs...))
}

// spanFacts are what the span's end needs beyond the Record: which counts
// the request was told.
type spanFacts struct {
	inputKnown, outputKnown bool
}

// addSpanFacts adds to the span's attributes what the request body
// scanned by s tells (requestFacts), unless the request has ended.
func (r *Request) addSpanFacts(s *jsonstream.Scanner, ep endpoint) {
	r.mu.Lock()
	if !r.ended {
		r.spanKVs = requestFacts(s, ep, r.spanKVs)
	}
	r.mu.Unlock()
}

// endSpan sets the span's attributes, those gathered before and the
// request's own from rec, in one call; its status from err; and ends it at
// rec.End. kvs are r.spanKVs, which it owns now.
func (r *Request) endSpan(rec Record, err error, f spanFacts, kvs []attribute.KeyValue) {
	kvs = slices.Grow(kvs, len(r.set.attrs)+16)
	kvs = append(kvs, r.set.attrs...)
	kvs = append(kvs, OutcomeKey.String(rec.Outcome.String()))
	if rec.ResponseModel != "" {
		kvs = append(kvs, semconv.GenAIResponseModel(rec.ResponseModel))
	}
	if rec.ResponseID != "" {
		kvs = append(kvs, semconv.GenAIResponseID(rec.ResponseID))
	}
	if len(rec.FinishReasons) > 0 {
		kvs = append(kvs, semconv.GenAIResponseFinishReasons(rec.FinishReasons...))
	}
	if d, ok := rec.TTFT(); ok {
		kvs = append(kvs, semconv.GenAIResponseTimeToFirstChunk(d.Seconds()))
	}
	if d, ok := rec.TTFO(); ok {
		kvs = append(kvs, attrTTFO.Float64(d.Seconds()))
	}
	if d, ok := rec.TPOT(); ok {
		kvs = append(kvs, attrTPOT.Float64(d.Seconds()))
	}
	if d, ok := rec.E2EL(); ok {
		kvs = append(kvs, attrE2EL.Float64(d.Seconds()))
	}
	if f.inputKnown {
		kvs = append(kvs, semconv.GenAIUsageInputTokens(rec.InputTokens))
	}
	if f.outputKnown {
		kvs = append(kvs, semconv.GenAIUsageOutputTokens(rec.OutputTokens))
	}
	// A count of 0 is not told apart from one not reported: left out.
	if rec.CachedInputTokens > 0 {
		kvs = append(kvs, semconv.GenAIUsageCacheReadInputTokens(rec.CachedInputTokens))
	}
	if rec.CacheWriteInputTokens > 0 {
		kvs = append(kvs, semconv.GenAIUsageCacheCreationInputTokens(rec.CacheWriteInputTokens))
	}
	if rec.ReasoningTokens > 0 {
		kvs = append(kvs, semconv.GenAIUsageReasoningOutputTokens(rec.ReasoningTokens))
	}
	if spanFailed(r.inst.role, rec, err) {
		kvs = append(kvs, semconv.ErrorTypeKey.String(rec.ErrorType))
		r.span.SetStatus(codes.Error, err.Error())
	}
	r.span.SetAttributes(kvs...)
	r.span.End(trace.WithTimestamp(rec.End))
}

// spanFailed reports whether a request that ended with rec and err is a
// failure by the span status rules otelhttp follows: on a client, any
// error (a consumer that stopped reading early is not one: otelhttp ends
// such a span without error); on a server, an error that is not the
// client's (a 4xx answer, a client that went away).
func spanFailed(role side, rec Record, err error) bool {
	switch {
	case rec.Outcome == OutcomeOK || err == nil:
		return false
	case role == sideClient:
		return !errors.Is(err, errStopped)
	case rec.Outcome == OutcomeCanceled:
		return false
	}
	var st *HTTPStatusError
	return !errors.As(err, &st) || st.StatusCode >= 500
}

// endHopSpan ends now the span of a redirect hop, which is not a request:
// it has the request's attributes and those gathered (kvs, r.spanKVs), and
// the redirect's status, but no measurement and no outcome.
func (r *Request) endHopSpan(kvs []attribute.KeyValue, status int) {
	kvs = append(append(kvs, r.set.attrs...), semconv.HTTPResponseStatusCode(status))
	r.span.SetAttributes(kvs...)
	r.span.End(trace.WithTimestamp(r.t.cfg.now()))
}

// serverAttrs returns server.address and server.port of a request sent to
// u's host (client) or received for host (server, the Host header): the
// port as written, else the scheme's default.
func serverAttrs(hostport string, tls bool, kvs []attribute.KeyValue) []attribute.KeyValue {
	if hostport == "" {
		return kvs
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil { // no port
		host, port = strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]"), ""
	}
	kvs = append(kvs, semconv.ServerAddress(host))
	if p, err := strconv.Atoi(port); err == nil && p > 0 {
		return append(kvs, semconv.ServerPort(p))
	}
	if port == "" {
		p := 80
		if tls {
			p = 443
		}
		kvs = append(kvs, semconv.ServerPort(p))
	}
	return kvs
}

// clientServerAttrs returns server.address and server.port of a request a
// client sends.
func clientServerAttrs(req *http.Request, kvs []attribute.KeyValue) []attribute.KeyValue {
	host := req.URL.Host
	if host == "" {
		host = req.Host
	}
	return serverAttrs(host, req.URL.Scheme == "https", kvs)
}
