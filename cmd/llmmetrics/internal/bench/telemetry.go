package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// exportVars are the environment variables that turn on the export of
// bench's metrics and spans while it runs. Any one set (even to "none")
// hands the choice of exporter, endpoint, protocol, temporality, histogram
// aggregation and interval to the OpenTelemetry environment, as read by
// go.opentelemetry.io/contrib/exporters/autoexport and the OTLP exporters.
var exportVars = []string{
	"OTEL_EXPORTER_OTLP_ENDPOINT",
	"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
	"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
	"OTEL_METRICS_EXPORTER",
	"OTEL_TRACES_EXPORTER",
}

// serviceName is bench's service.name unless OTEL_SERVICE_NAME or
// OTEL_RESOURCE_ATTRIBUTES says otherwise.
const serviceName = "llmmetrics-bench"

// shutdownTimeout bounds the final export at exit.
const shutdownTimeout = 10 * time.Second

// telemetry is the export of bench's metrics and spans: the global
// MeterProvider and TracerProvider, which the Tracker uses by default,
// replaced by SDK providers with the exporters the environment names.
type telemetry struct {
	mp *sdkmetric.MeterProvider
	tp *sdktrace.TracerProvider
	// what the global providers were before, put back by shutdown
	prevMP metric.MeterProvider
	prevTP trace.TracerProvider
}

// startTelemetry sets up the export when one of exportVars is set in the
// environment (getenv), and returns nil, nil when none is. Export errors
// while bench runs (an unreachable endpoint) are written to stderr; they
// do not stop the run. The resource is service.name "llmmetrics-bench", a
// new random service.instance.id (so that two runs are two series), then
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, which win.
func startTelemetry(ctx context.Context, getenv func(string) string, stderr io.Writer) (*telemetry, error) {
	on := false
	for _, k := range exportVars {
		if getenv(k) != "" {
			on = true
		}
	}
	if !on {
		return nil, nil
	}
	res, err := resource.New(ctx,
		resource.WithService(), // a random service.instance.id (and a service.name replaced below)
		resource.WithAttributes(semconv.ServiceName(serviceName)),
		resource.WithFromEnv(),
		resource.WithTelemetrySDK())
	if err != nil {
		return nil, fmt.Errorf("telemetry resource: %w", err)
	}
	reader, err := autoexport.NewMetricReader(ctx)
	if err != nil {
		return nil, fmt.Errorf("metrics exporter: %w%s", err, settings(getenv, "OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"))
	}
	spans, err := autoexport.NewSpanExporter(ctx)
	if err != nil {
		_ = reader.Shutdown(ctx)
		return nil, fmt.Errorf("span exporter: %w%s", err, settings(getenv, "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"))
	}
	t := &telemetry{
		mp:     sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithResource(res)),
		tp:     sdktrace.NewTracerProvider(sdktrace.WithBatcher(spans), sdktrace.WithResource(res)),
		prevMP: otel.GetMeterProvider(),
		prevTP: otel.GetTracerProvider(),
	}
	otel.SetMeterProvider(t.mp)
	otel.SetTracerProvider(t.tp)
	exportErrors.to(stderr)
	return t, nil
}

// settings lists the variables among keys that are set, for an error
// message: " (NAME=value, …)", or "" when none is.
func settings(getenv func(string) string, keys ...string) string {
	var set []string
	for _, k := range keys {
		if v := getenv(k); v != "" {
			set = append(set, fmt.Sprintf("%s=%q", k, v))
		}
	}
	if len(set) == 0 {
		return ""
	}
	return " (" + strings.Join(set, ", ") + ")"
}

// shutdown exports what is left and stops the exporters, within
// shutdownTimeout, and puts the previous global providers back.
func (t *telemetry) shutdown() error {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	err := errors.Join(t.mp.Shutdown(ctx), t.tp.Shutdown(ctx))
	otel.SetMeterProvider(t.prevMP)
	otel.SetTracerProvider(t.prevTP)
	exportErrors.to(nil)
	return err
}

// exportErrors receives OpenTelemetry's errors (a failed export) from the
// moment a run first exports. It is set as otel's error handler once and
// never replaced: otel's default handler delegates, for good, to the first
// handler ever set, so a handler swapped per run would keep receiving
// another run's errors.
var exportErrors = &errorSink{}

// errorSink writes OpenTelemetry's errors to the standard error of the run
// that exports, each distinct message once (an endpoint that is down fails
// every export the same way); with no run exporting, to the standard
// logger, as otel's default handler does.
type errorSink struct {
	once sync.Once
	mu   sync.Mutex
	w    io.Writer
	seen map[string]bool
}

// to sends the errors to w from now on (nil: the standard logger).
func (s *errorSink) to(w io.Writer) {
	s.once.Do(func() { otel.SetErrorHandler(s) })
	s.mu.Lock()
	defer s.mu.Unlock()
	s.w, s.seen = w, nil
}

func (s *errorSink) Handle(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w == nil {
		log.Print(err)
		return
	}
	msg := err.Error()
	if s.seen[msg] {
		return
	}
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	s.seen[msg] = true
	fmt.Fprintf(s.w, "llmmetrics bench: telemetry export: %s\n", msg)
}
