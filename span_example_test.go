package llmmetrics_test

import (
	"context"
	"fmt"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/llmmetrics/llmmetrics"
)

// A call to a model measured with StartClient makes a client span; its
// context, from Request.Context, goes to what the call uses (here nothing),
// and SetResponse tells who answered and why it stopped.
func ExampleWithTracerProvider() {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	tracker, err := llmmetrics.NewTracker(
		llmmetrics.WithMeterProvider(sdkmetric.NewMeterProvider()),
		llmmetrics.WithTracerProvider(tp),
		llmmetrics.WithAttributes(semconv.GenAIProviderNameOpenAI),
	)
	if err != nil {
		panic(err)
	}
	t0 := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	req := tracker.StartClientAt(context.Background(), t0, semconv.GenAIOperationNameChat, semconv.GenAIRequestModel("gpt-4o"))
	fmt.Println("the call's context carries the span:", trace.SpanContextFromContext(req.Context()).IsValid())
	req.ChunkAt(t0.Add(240*time.Millisecond), 1)
	req.ChunkAt(t0.Add(300*time.Millisecond), 1)
	req.SetUsage(57, 2)
	req.SetResponse("gpt-4o-2024-08-06", "chatcmpl-1", "stop")
	req.EndAt(t0.Add(310*time.Millisecond), nil)

	s := spans.Ended()[0]
	fmt.Println(s.Name(), s.SpanKind(), s.EndTime().Sub(s.StartTime()))
	for _, kv := range s.Attributes() {
		switch kv.Key {
		case semconv.GenAIResponseModelKey, semconv.GenAIResponseFinishReasonsKey,
			semconv.GenAIResponseTimeToFirstChunkKey, semconv.GenAIUsageOutputTokensKey:
			fmt.Println(kv.Key, kv.Value.String())
		}
	}
	// Output:
	// the call's context carries the span: true
	// chat gpt-4o client 310ms
	// gen_ai.response.model gpt-4o-2024-08-06
	// gen_ai.response.finish_reasons ["stop"]
	// gen_ai.response.time_to_first_chunk 0.24
	// gen_ai.usage.output_tokens 2
}
