package llmmetrics

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/llmmetrics/llmmetrics/llmmetricstest"
)

// spanT0 is the start of the span tests' manual clocks.
var spanT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// newSpanProvider returns an SDK TracerProvider that samples every span
// (or none: sampler) and the recorder of its ended spans.
func newSpanProvider(t *testing.T, sampler sdktrace.Sampler) (*sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sampler), sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, rec
}

// spanTracker returns a Tracker on a manual clock (at spanT0) whose spans
// go to the returned recorder, and whose ended Records go to *ended.
func spanTracker(t *testing.T, opts ...Option) (*Tracker, *tracetest.SpanRecorder, *llmmetricstest.Clock, *[]Record) {
	t.Helper()
	tp, rec := newSpanProvider(t, sdktrace.AlwaysSample())
	clock := llmmetricstest.NewClock(spanT0)
	ended := new([]Record)
	tr, _ := sdkTracker(t, append([]Option{
		WithTracerProvider(tp), WithClock(clock.Now), WithoutWindow(),
		WithOnEnd(func(_ context.Context, r Record) { *ended = append(*ended, r) }),
	}, opts...)...)
	return tr, rec, clock, ended
}

// onlySpan returns the one span the recorder holds.
func onlySpan(t *testing.T, rec *tracetest.SpanRecorder) sdktrace.ReadOnlySpan {
	t.Helper()
	spans := rec.Ended()
	require.Len(t, spans, 1, "ended spans")
	require.Empty(t, rec.Started()[len(rec.Ended()):], "spans started and not ended")
	return spans[0]
}

// attrMap returns a span's attributes by key.
func attrMap(kvs []attribute.KeyValue) map[attribute.Key]attribute.Value {
	m := make(map[attribute.Key]attribute.Value, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = kv.Value
	}
	return m
}

// TestSpanOfATrackerRequest: Start and StartClient make one span each, a
// child of the context's span, of the role's kind, named
// "{operation} {model}", from the Record's Start to its End, with every
// attribute the request told, computed here by hand.
func TestSpanOfATrackerRequest(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start func(tr *Tracker, ctx context.Context, attrs ...attribute.KeyValue) *Request
		kind  trace.SpanKind
	}{
		{"Start", (*Tracker).Start, trace.SpanKindServer},
		{"StartClient", (*Tracker).StartClient, trace.SpanKindClient},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, rec, clock, _ := spanTracker(t, WithAttributes(semconv.GenAIProviderNameOpenAI))
			parentCtx, parent := tr.tracer.Start(context.Background(), "parent")

			r := tc.start(tr, parentCtx, semconv.GenAIOperationNameChat, semconv.GenAIRequestModel("gpt-4o"))
			assert.Equal(t, trace.SpanFromContext(r.Context()).SpanContext().TraceID(), parent.SpanContext().TraceID(),
				"the request's context carries its span, in the parent's trace")
			r.ReasoningChunkAt(spanT0.Add(100*time.Millisecond), 2)
			r.ChunkAt(spanT0.Add(250*time.Millisecond), 3)
			r.ChunkAt(spanT0.Add(400*time.Millisecond), 1)
			r.SetUsage(50, 10)
			r.SetReasoningTokens(4)
			r.SetCachedInputTokens(20, 5)
			r.SetResponse("gpt-4o-2024-08-06", "chatcmpl-1")
			r.SetResponse("", "", "stop", "length")
			clock.Set(spanT0.Add(500 * time.Millisecond))
			got := r.End(nil)
			parent.End()

			spans := rec.Ended()
			require.Len(t, spans, 2)
			s := spans[0]
			assert.Equal(t, "chat gpt-4o", s.Name())
			assert.Equal(t, tc.kind, s.SpanKind())
			assert.Equal(t, spanT0, s.StartTime())
			assert.Equal(t, spanT0.Add(500*time.Millisecond), s.EndTime())
			assert.Equal(t, got.Start, s.StartTime(), "the span starts at the Record's Start")
			assert.Equal(t, got.End, s.EndTime(), "and ends at its End")
			assert.Equal(t, parent.SpanContext().SpanID(), s.Parent().SpanID())
			assert.Equal(t, codes.Unset, s.Status().Code)
			assert.Equal(t, ScopeName, s.InstrumentationScope().Name)
			assert.Equal(t, map[attribute.Key]attribute.Value{
				semconv.GenAIOperationNameKey:                 attribute.StringValue("chat"),
				semconv.GenAIProviderNameKey:                  attribute.StringValue("openai"),
				semconv.GenAIRequestModelKey:                  attribute.StringValue("gpt-4o"),
				semconv.GenAIResponseModelKey:                 attribute.StringValue("gpt-4o-2024-08-06"),
				semconv.GenAIResponseIDKey:                    attribute.StringValue("chatcmpl-1"),
				semconv.GenAIResponseFinishReasonsKey:         attribute.StringSliceValue([]string{"stop", "length"}),
				semconv.GenAIResponseTimeToFirstChunkKey:      attribute.Float64Value(0.1),
				attrTTFO:                                      attribute.Float64Value(0.25),
				attrTPOT:                                      attribute.Float64Value(0.033333333), // (400 − 100) ms / (10 − 1), to the ns
				attrE2EL:                                      attribute.Float64Value(0.4),
				semconv.GenAIUsageInputTokensKey:              attribute.IntValue(50),
				semconv.GenAIUsageOutputTokensKey:             attribute.IntValue(10),
				semconv.GenAIUsageCacheReadInputTokensKey:     attribute.IntValue(20),
				semconv.GenAIUsageCacheCreationInputTokensKey: attribute.IntValue(5),
				semconv.GenAIUsageReasoningOutputTokensKey:    attribute.IntValue(4),
				OutcomeKey: attribute.StringValue("ok"),
			}, attrMap(s.Attributes()))
			assert.Empty(t, s.Events(), "no chunk events unless asked")
			assert.Equal(t, "gpt-4o-2024-08-06", got.ResponseModel)
			assert.Equal(t, "chatcmpl-1", got.ResponseID)
			assert.Equal(t, []string{"stop", "length"}, got.FinishReasons)
		})
	}
}

// TestSpanNames: the span name is "{operation} {model}", the operation
// alone without a model, and llmmetrics.request without an operation.
func TestSpanNames(t *testing.T) {
	for _, tc := range []struct {
		attrs []attribute.KeyValue
		want  string
	}{
		{[]attribute.KeyValue{semconv.GenAIOperationNameChat, semconv.GenAIRequestModel("llama-3-8b")}, "chat llama-3-8b"},
		{[]attribute.KeyValue{semconv.GenAIOperationNameTextCompletion}, "text_completion"},
		{[]attribute.KeyValue{semconv.GenAIRequestModel("llama-3-8b")}, "llmmetrics.request"},
		{nil, "llmmetrics.request"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			tr, rec, _, _ := spanTracker(t)
			tr.Start(context.Background(), tc.attrs...).End(nil)
			assert.Equal(t, tc.want, onlySpan(t, rec).Name())
		})
	}
}

// TestSpanOfAFailedRequest: status Error and error.type follow otelhttp's
// rule: on a client any error but a consumer that stopped reading early;
// on a server, errors that are not the client's (not a 4xx, not a client
// that went away). llmmetrics.outcome says how every request ended.
func TestSpanOfAFailedRequest(t *testing.T) {
	for _, tc := range []struct {
		name      string
		client    bool
		err       error
		outcome   string
		errorType string // "": status Unset and no error.type
	}{
		{"client 503", true, &HTTPStatusError{StatusCode: 503}, "error", "503"},
		{"client 429", true, &HTTPStatusError{StatusCode: 429}, "error", "429"},
		{"client stream error", true, &StreamError{Type: "overloaded_error"}, "error", "overloaded_error"},
		{"client deadline", true, context.DeadlineExceeded, "canceled", "timeout"},
		{"client canceled", true, context.Canceled, "canceled", "canceled"},
		{"client stopped reading", true, errStopped, "canceled", ""},
		{"server 500", false, &HTTPStatusError{StatusCode: 500}, "error", "500"},
		{"server 400", false, &HTTPStatusError{StatusCode: 400}, "error", ""},
		{"server panic", false, &panicError{v: "boom"}, "error", "panic"},
		{"server client went away", false, context.Canceled, "canceled", ""},
		{"server stream error", false, &StreamError{Code: "500"}, "error", "500"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, rec, _, _ := spanTracker(t)
			start := tr.Start
			if tc.client {
				start = tr.StartClient
			}
			got := start(context.Background(), semconv.GenAIOperationNameChat).End(tc.err)
			s := onlySpan(t, rec)
			attrs := attrMap(s.Attributes())
			assert.Equal(t, attribute.StringValue(tc.outcome), attrs[OutcomeKey])
			if tc.errorType == "" {
				assert.Equal(t, codes.Unset, s.Status().Code)
				assert.NotContains(t, attrs, semconv.ErrorTypeKey)
				return
			}
			assert.Equal(t, codes.Error, s.Status().Code)
			assert.Equal(t, tc.err.Error(), s.Status().Description)
			assert.Equal(t, attribute.StringValue(tc.errorType), attrs[semconv.ErrorTypeKey])
			assert.Equal(t, tc.errorType, got.ErrorType, "the Record's error type")
		})
	}
}

// TestSpanUnknownCountsLeftOut: a request told no usage and no token has
// no usage attributes, no TTFT and no TPOT, not zeros; its E2EL is End −
// Start.
func TestSpanUnknownCountsLeftOut(t *testing.T) {
	tr, rec, clock, _ := spanTracker(t)
	r := tr.StartClient(context.Background(), semconv.GenAIOperationNameChat)
	clock.Advance(30 * time.Millisecond)
	r.End(nil)
	assert.Equal(t, map[attribute.Key]attribute.Value{
		semconv.GenAIOperationNameKey: attribute.StringValue("chat"),
		attrE2EL:                      attribute.Float64Value(0.03),
		OutcomeKey:                    attribute.StringValue("ok"),
	}, attrMap(onlySpan(t, rec).Attributes()))
}

// TestSpanChunkEvents: WithChunkEvents adds one event per token-carrying
// chunk at its arrival, with its tokens, reasoning ones marked; chunks of
// no tokens add none.
func TestSpanChunkEvents(t *testing.T) {
	tr, rec, _, _ := spanTracker(t, WithChunkEvents())
	r := tr.Start(context.Background())
	r.ReasoningChunkAt(spanT0.Add(10*time.Millisecond), 2)
	r.ChunkAt(spanT0.Add(20*time.Millisecond), 0)
	r.ChunkAt(spanT0.Add(30*time.Millisecond), 3)
	r.ChunkAt(spanT0.Add(25*time.Millisecond), 1) // before the previous one: taken as at it
	r.EndAt(spanT0.Add(40*time.Millisecond), nil)
	events := onlySpan(t, rec).Events()
	require.Len(t, events, 3)
	want := []struct {
		at    time.Duration
		attrs []attribute.KeyValue
	}{
		{10 * time.Millisecond, []attribute.KeyValue{attrChunkTokens.Int(2), attrChunkReasoning.Bool(true)}},
		{30 * time.Millisecond, []attribute.KeyValue{attrChunkTokens.Int(3)}},
		{30 * time.Millisecond, []attribute.KeyValue{attrChunkTokens.Int(1)}},
	}
	for i, e := range events {
		assert.Equal(t, eventChunk, e.Name)
		assert.Equal(t, spanT0.Add(want[i].at), e.Time, "event %d", i)
		assert.Equal(t, want[i].attrs, e.Attributes, "event %d", i)
	}
}

// TestSpanNotSampledOrNoProvider: a span that is not sampled is not
// recorded, yet its context (a span of its own, not sampled) is the
// request's, so what the request calls is not sampled either; a no-op
// provider, and the global one before an SDK is installed, leave the
// caller's context as it is.
func TestSpanNotSampledOrNoProvider(t *testing.T) {
	t.Run("not sampled", func(t *testing.T) {
		tp, rec := newSpanProvider(t, sdktrace.NeverSample())
		tr, _ := sdkTracker(t, WithTracerProvider(tp))
		r := tr.StartClient(context.Background(), semconv.GenAIOperationNameChat)
		sc := trace.SpanContextFromContext(r.Context())
		assert.True(t, sc.IsValid(), "a span context of its own")
		assert.False(t, sc.IsSampled())
		r.End(nil)
		assert.Empty(t, rec.Ended())
	})
	for name, opts := range map[string][]Option{
		"noop provider":                 {WithTracerProvider(noop.NewTracerProvider())},
		"global provider, no SDK (yet)": nil,
	} {
		t.Run(name, func(t *testing.T) {
			require.True(t, isDefaultGlobal(otel.GetTracerProvider()), "no test installs a global TracerProvider")
			tr, _ := sdkTracker(t, opts...)
			ctx := context.WithValue(context.Background(), ctxKey{}, 1)
			r := tr.Start(ctx)
			assert.Equal(t, ctx, r.Context(), "the caller's context, unchanged")
			assert.Nil(t, r.span)
			r.End(nil)
		})
	}
}

type ctxKey struct{}

// TestSpanGlobalProviderInstalledLater: a Tracker made with the default
// (global) provider before an SDK is installed makes spans once it is,
// through otel's delegation, as does one made after. It runs in a child
// process, which alone sets the global provider.
func TestSpanGlobalProviderInstalledLater(t *testing.T) {
	if os.Getenv("LLMMETRICS_SPAN_GLOBAL_CHILD") == "1" {
		tr, err := NewTracker(WithMeterProvider(sdkmetric.NewMeterProvider()))
		require.NoError(t, err)
		tr.Start(context.Background(), semconv.GenAIOperationNameChat).End(nil)
		rec := tracetest.NewSpanRecorder()
		otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
		tr.Start(context.Background(), semconv.GenAIOperationNameEmbeddings).End(nil)
		later, err := NewTracker(WithMeterProvider(sdkmetric.NewMeterProvider()))
		require.NoError(t, err)
		later.Start(context.Background(), semconv.GenAIOperationNameTextCompletion).End(nil)
		spans := rec.Ended()
		require.Len(t, spans, 2, "only the requests after the SDK was installed")
		require.Equal(t, "embeddings", spans[0].Name())
		require.Equal(t, "text_completion", spans[1].Name(), "a Tracker made after it uses it")
		fmt.Println("child ok")
		return
	}
	if testing.Short() {
		t.Skip("runs the test binary again")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSpanGlobalProviderInstalledLater$", "-test.count=1")
	cmd.Env = append(os.Environ(), "LLMMETRICS_SPAN_GLOBAL_CHILD=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "child ok")
}

// TestSpanExemplars: the measurements are made with the span's context, so
// the SDK's trace-based exemplar filter (its default) links the TTFT, ITL,
// E2EL and TPOT points of a sampled request to its span; an unsampled
// request's points have no exemplar.
func TestSpanExemplars(t *testing.T) {
	for _, sampled := range []bool{true, false} {
		t.Run(fmt.Sprintf("sampled=%v", sampled), func(t *testing.T) {
			sampler := sdktrace.NeverSample()
			if sampled {
				sampler = sdktrace.AlwaysSample()
			}
			tp, rec := newSpanProvider(t, sampler)
			tr, reader := sdkTracker(t, WithTracerProvider(tp))
			r := tr.StartClientAt(context.Background(), spanT0, semconv.GenAIOperationNameChat)
			r.ChunkAt(spanT0.Add(100*time.Millisecond), 1)
			r.ChunkAt(spanT0.Add(150*time.Millisecond), 1)
			r.EndAt(spanT0.Add(200*time.Millisecond), nil)
			sc := trace.SpanContextFromContext(r.Context())

			names := ClientMetricNames()
			got := collect(t, reader)
			for _, tc := range []struct {
				name  string
				value float64
			}{{names.TTFT, 0.1}, {names.ITL, 0.05}, {names.E2EL, 0.15}, {names.TPOT, 0.05}, {names.TTFO, 0.1}} {
				h, ok := got[tc.name].Data.(metricdata.Histogram[float64])
				require.True(t, ok, tc.name)
				require.Len(t, h.DataPoints, 1, tc.name)
				ex := h.DataPoints[0].Exemplars
				if !sampled {
					assert.Empty(t, ex, tc.name)
					continue
				}
				require.Len(t, ex, 1, tc.name)
				assert.Equal(t, tc.value, ex[0].Value, tc.name)
				assert.Equal(t, sc.TraceID().String(), trace.TraceID(ex[0].TraceID).String(), tc.name)
				assert.Equal(t, sc.SpanID().String(), trace.SpanID(ex[0].SpanID).String(), tc.name)
			}
			if sampled {
				require.Len(t, rec.Ended(), 1)
				assert.Equal(t, sc.SpanID(), rec.Ended()[0].SpanContext().SpanID())
			}
		})
	}
}

// TestSetResponse: a non-empty model or id replaces the one recorded,
// finish reasons are appended in order; after End nothing changes, and a
// request keeps at most maxFinishReasons of them, reporting the rest once.
func TestSetResponse(t *testing.T) {
	tr, _ := newTestTracker(t)
	r := tr.Start(context.Background())
	r.SetResponse("m1", "id1")
	r.SetResponse("", "", "stop")
	r.SetResponse("m2", "", "length", "tool_calls")
	rec := r.End(nil)
	r.SetResponse("m3", "id3", "stop")
	assert.Equal(t, "m2", rec.ResponseModel)
	assert.Equal(t, "id1", rec.ResponseID)
	assert.Equal(t, []string{"stop", "length", "tool_calls"}, rec.FinishReasons)
	assert.Equal(t, rec, r.End(nil), "SetResponse after End changes nothing")

	t.Run("bounded", func(t *testing.T) {
		var reports []error
		handleOtel(t, func(err error) { reports = append(reports, err) })
		r := tr.Start(context.Background())
		for i := range maxFinishReasons + 10 {
			r.SetResponse("", "", fmt.Sprint(i))
		}
		r.SetResponse("", "", "a", "b")
		rec := r.End(nil)
		require.Len(t, rec.FinishReasons, maxFinishReasons)
		assert.Equal(t, fmt.Sprint(maxFinishReasons-1), rec.FinishReasons[maxFinishReasons-1])
		require.Len(t, reports, 1)
		assert.ErrorIs(t, reports[0], errTooManyFinishReasons)
	})
}

// frameDecoder is a hand-written Decoder: each Decode call emits the next
// of its frames, whatever the bytes, then reuses the frame's FinishReasons
// slice, as the contract allows.
type frameDecoder struct {
	frames []Frame
}

func (d *frameDecoder) Decode(_ []byte, emit func(Frame)) {
	if len(d.frames) > 0 {
		f := d.frames[0]
		d.frames = d.frames[1:]
		emit(f)
		for i := range f.FinishReasons {
			f.FinishReasons[i] = "reused by the decoder"
		}
	}
}
func (d *frameDecoder) Flush(func(Frame)) {}
func (d *frameDecoder) Err() error        { return nil }

// oneByteReader returns one byte per Read, so a frameDecoder emits one
// frame per Read.
type oneByteReader struct{ n int }

func (r *oneByteReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	r.n--
	p[0] = 'x'
	return 1, nil
}

// TestFrameResponseFieldsReachTheRecordAndTheSpan: a decoder's
// ResponseModel, ResponseID and FinishReasons go through NewReader to the
// Record (the model and id as last told, the reasons in order) and to the
// span; the decoder's slice is copied, not kept.
func TestFrameResponseFieldsReachTheRecordAndTheSpan(t *testing.T) {
	tr, rec, _, ended := spanTracker(t)
	dec := &frameDecoder{frames: []Frame{
		{ResponseModel: "m-2024", ResponseID: "resp-1"},
		{Tokens: 1},
		{Tokens: 1, FinishReasons: []string{"stop"}},
		{ResponseModel: "m-2025", FinishReasons: []string{"length"}},
		{HasUsage: true, InputTokens: 7, OutputTokens: 2, Done: true},
	}}
	body := NewReader(tr.StartClient(context.Background(), semconv.GenAIOperationNameChat), &oneByteReader{n: 5}, dec)
	_, err := io.Copy(io.Discard, body)
	require.NoError(t, err)
	require.NoError(t, body.Close())
	s := onlySpan(t, rec)
	attrs := attrMap(s.Attributes())
	assert.Equal(t, attribute.StringValue("m-2025"), attrs[semconv.GenAIResponseModelKey])
	assert.Equal(t, attribute.StringValue("resp-1"), attrs[semconv.GenAIResponseIDKey])
	assert.Equal(t, attribute.StringSliceValue([]string{"stop", "length"}), attrs[semconv.GenAIResponseFinishReasonsKey])
	assert.Equal(t, attribute.IntValue(7), attrs[semconv.GenAIUsageInputTokensKey])
	assert.Equal(t, attribute.IntValue(2), attrs[semconv.GenAIUsageOutputTokensKey])
	require.Len(t, *ended, 1)
	got := (*ended)[0]
	assert.Equal(t, "m-2025", got.ResponseModel)
	assert.Equal(t, "resp-1", got.ResponseID)
	assert.Equal(t, []string{"stop", "length"}, got.FinishReasons)
}

// TestNoteFrameResponseDoesNotAllocate: a frame that repeats the model and
// id (a decoder may tell them on every chunk) costs no allocation, and one
// that tells nothing of them costs only a test.
func TestNoteFrameResponseDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are for a normal build")
	}
	tr, _ := newTestTracker(t)
	r := tr.Start(context.Background())
	var streamErr error
	for name, f := range map[string]Frame{
		"model and id": {Tokens: 1, ResponseModel: "gpt-4o-2024-08-06", ResponseID: "chatcmpl-1"},
		"neither":      {Tokens: 1},
	} {
		assert.Zero(t, testing.AllocsPerRun(100, func() { noteFrame(r, f, &streamErr) }), name)
	}
}

// TestSpanHandsItsContextDown: what NewTransport's base transport and
// NewHandler's next receive carries the GenAI span, so a span they start
// (as otelhttp's do) is its child.
func TestSpanHandsItsContextDown(t *testing.T) {
	t.Run("NewTransport", func(t *testing.T) {
		tr, rec, _, _ := spanTracker(t)
		var inner trace.SpanContext
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			_, span := tr.tracer.Start(req.Context(), "HTTP POST", trace.WithSpanKind(trace.SpanKindClient))
			inner = span.SpanContext()
			span.End()
			return &http.Response{StatusCode: 204, Body: http.NoBody, Request: req}, nil
		})
		req, err := http.NewRequest(http.MethodPost, "https://api.openai.com/v1/chat/completions", nil)
		require.NoError(t, err)
		resp, err := NewTransport(tr, base).RoundTrip(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		spans := rec.Ended()
		require.Len(t, spans, 2)
		genai := spans[1]
		assert.Equal(t, "chat", genai.Name())
		assert.Equal(t, genai.SpanContext().SpanID(), spans[0].Parent().SpanID(), "the HTTP span is the GenAI span's child")
		assert.Equal(t, inner.TraceID(), genai.SpanContext().TraceID())
		assert.Nil(t, req.Context().Value(ctxKey{}), "the caller's request is not modified")
		assert.False(t, trace.SpanContextFromContext(req.Context()).IsValid(), "the caller's request is not modified")
	})
	t.Run("NewHandler", func(t *testing.T) {
		tr, rec, _, _ := spanTracker(t)
		next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, span := tr.tracer.Start(r.Context(), "db query")
			span.End()
			w.WriteHeader(204)
		})
		serve(NewHandler(tr, next), "/v1/chat/completions", `{"model":"m"}`)
		spans := rec.Ended()
		require.Len(t, spans, 2)
		assert.Equal(t, spans[1].SpanContext().SpanID(), spans[0].Parent().SpanID(), "next's span is the GenAI span's child")
		assert.Equal(t, trace.SpanKindServer, spans[1].SpanKind())
	})
}
