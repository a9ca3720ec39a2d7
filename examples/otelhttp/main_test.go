package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// TestSpansComposeWithOtelhttp: with otelhttp under llmmetrics on the
// client and over it on the server, one request is one trace of four
// spans, each the child of the one before: the GenAI client span, otelhttp's
// HTTP client span, otelhttp's HTTP server span (joined through the
// traceparent header otelhttp's transport sent) and the GenAI server span.
func TestSpansComposeWithOtelhttp(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	require.NoError(t, run(tp))

	spans := rec.Ended()
	require.Len(t, spans, 4)
	byKind := func(kind trace.SpanKind, genai bool) sdktrace.ReadOnlySpan {
		t.Helper()
		for _, s := range spans {
			if s.SpanKind() == kind && (s.InstrumentationScope().Name == "github.com/llmmetrics/llmmetrics") == genai {
				return s
			}
		}
		require.Failf(t, "span not found", "kind %v, GenAI %v", kind, genai)
		return nil
	}
	genaiClient, httpClient := byKind(trace.SpanKindClient, true), byKind(trace.SpanKindClient, false)
	httpServer, genaiServer := byKind(trace.SpanKindServer, false), byKind(trace.SpanKindServer, true)

	assert.Equal(t, "chat gpt-4o-mini", genaiClient.Name())
	assert.Equal(t, "chat gpt-4o-mini", genaiServer.Name())
	assert.False(t, genaiClient.Parent().IsValid(), "the GenAI client span is the root")
	for _, pair := range []struct {
		name          string
		child, parent sdktrace.ReadOnlySpan
	}{
		{"HTTP client under GenAI client", httpClient, genaiClient},
		{"HTTP server under HTTP client (traceparent)", httpServer, httpClient},
		{"GenAI server under HTTP server", genaiServer, httpServer},
	} {
		assert.Equal(t, pair.parent.SpanContext().SpanID(), pair.child.Parent().SpanID(), pair.name)
		assert.Equal(t, genaiClient.SpanContext().TraceID(), pair.child.SpanContext().TraceID(), pair.name)
	}
	assert.False(t, httpClient.StartTime().Before(genaiClient.StartTime()), "the child starts within its parent")
	assert.False(t, httpClient.EndTime().After(genaiClient.EndTime()), "and ends within it")

	attrs := map[string]string{}
	for _, kv := range genaiClient.Attributes() {
		attrs[string(kv.Key)] = kv.Value.String()
	}
	assert.Equal(t, "8", attrs[string(semconv.GenAIRequestMaxTokensKey)])
	assert.Equal(t, "true", attrs[string(semconv.GenAIRequestStreamKey)])
	assert.Equal(t, "8", attrs[string(semconv.GenAIUsageOutputTokensKey)], "the fake server answers max_tokens tokens")
}
