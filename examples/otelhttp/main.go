// Command otelhttp shows llmmetrics composed with otelhttp, the
// OpenTelemetry instrumentation of net/http, on both sides of an LLM call:
//
//   - the client: llmmetrics.NewTransport over otelhttp.NewTransport, so the
//     HTTP span is the child of the GenAI client span and its traceparent
//     header carries the trace to the server (llmmetrics never modifies a
//     request; propagation is otelhttp's job);
//   - the server: otelhttp.NewHandler over llmmetrics.NewHandler, so the
//     GenAI server span is the child of the HTTP server span, which joins
//     the client's trace.
//
// It runs the fake LLM server of llmmetricstest on 127.0.0.1 and prints the
// spans of one streamed chat request, each under its parent.
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/llmmetricstest"
)

func main() {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	if err := run(tp); err != nil {
		panic(err)
	}
	printTree(rec.Ended())
}

// run serves the fake server behind both wrappers and sends one streamed
// chat request through the client's.
func run(tp *sdktrace.TracerProvider) error {
	tracker, err := llmmetrics.NewTracker(llmmetrics.WithTracerProvider(tp))
	if err != nil {
		return err
	}
	prop := propagation.TraceContext{}
	fake := llmmetricstest.NewInMemoryServer(llmmetricstest.ServerConfig{Model: "gpt-4o-mini"})
	defer fake.Close()

	// The server: otelhttp outside, llmmetrics inside.
	srv := httptest.NewServer(otelhttp.NewHandler(
		llmmetrics.NewHandler(tracker, fake.Handler(), llmmetrics.WithModels("gpt-4o-mini")),
		"llm", otelhttp.WithTracerProvider(tp), otelhttp.WithPropagators(prop)))
	defer srv.Close()

	// The client: llmmetrics outside, otelhttp inside.
	inner := srv.Client().Transport.(*http.Transport).Clone()
	defer inner.CloseIdleConnections()
	client := &http.Client{Transport: llmmetrics.NewTransport(tracker,
		otelhttp.NewTransport(inner, otelhttp.WithTracerProvider(tp), otelhttp.WithPropagators(prop)))}

	body := `{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true},"max_tokens":8,"ignore_eos":true,` +
		`"messages":[{"role":"user","content":"hi"}]}`
	resp, err := client.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		return err
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	return resp.Body.Close()
}

// printTree prints spans under their parents.
func printTree(spans []sdktrace.ReadOnlySpan) {
	children := map[string][]sdktrace.ReadOnlySpan{}
	ids := map[string]bool{}
	for _, s := range spans {
		ids[s.SpanContext().SpanID().String()] = true
	}
	var roots []sdktrace.ReadOnlySpan
	for _, s := range spans {
		p := s.Parent().SpanID().String()
		if !ids[p] {
			roots = append(roots, s)
			continue
		}
		children[p] = append(children[p], s)
	}
	var walk func(s sdktrace.ReadOnlySpan, depth int)
	walk = func(s sdktrace.ReadOnlySpan, depth int) {
		fmt.Printf("%s%s (%s)\n", strings.Repeat("  ", depth), s.Name(), s.SpanKind())
		for _, c := range children[s.SpanContext().SpanID().String()] {
			walk(c, depth+1)
		}
	}
	for _, r := range roots {
		walk(r, 0)
	}
}
