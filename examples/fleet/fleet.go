// Package fleet holds what the fleet test and its replica program share.
// The test (fleet_test.go) runs the production path of docs/production.md
// with the real components: replica processes (./replica) measured with
// llmmetrics export OTLP through the OpenTelemetry Collector of
// examples/otelcol into Prometheus 3 and Jaeger, and the test checks what
// Prometheus and Jaeger hold against the Records the replicas measured.
package fleet

import "github.com/llmmetrics/llmmetrics"

// Line is one line of a replica's -records file: one Record and where it
// was measured.
type Line struct {
	// Role is "client" (NewTransport) or "server" (NewHandler).
	Role string `json:"role"`
	// TraceID and SpanID are those of the span in the context the Record
	// ended with, in hex ("" when it held none); Sampled says whether that
	// span was sampled (exported). For a client Record that is the GenAI
	// span NewTransport made, a child of the request's span (RequestSpan).
	TraceID string `json:"trace_id,omitempty"`
	SpanID  string `json:"span_id,omitempty"`
	Sampled bool   `json:"sampled,omitempty"`
	// RequestSpanID is the id of the client's request span (RequestSpan)
	// the Record was measured in; "" for a server Record.
	RequestSpanID string `json:"request_span_id,omitempty"`
	// Record is the Record, without its ITL gaps.
	Record llmmetrics.Record `json:"record"`
}

// Missing is the model a replica's failing requests ask for: the fake
// server answers 404.
const Missing = "no-such-model"

// RequestSpan is the name of the span a replica's client starts around
// each request, as an application does; the client's Record ends with it in
// its context.
const RequestSpan = "fleet.request"
