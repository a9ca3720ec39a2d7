package bench

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/llmmetrics/llmmetrics/llmmetricstest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	collmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	colltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an OTLP/HTTP receiver (protobuf) in the test's process:
// it keeps every metrics and traces export request it is sent.
type otlpReceiver struct {
	URL     string
	mu      sync.Mutex
	metrics []*collmetricpb.ExportMetricsServiceRequest
	traces  []*colltracepb.ExportTraceServiceRequest
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err != nil || req.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		var out proto.Message
		switch req.URL.Path {
		case "/v1/metrics":
			m := &collmetricpb.ExportMetricsServiceRequest{}
			err, out = proto.Unmarshal(body, m), &collmetricpb.ExportMetricsServiceResponse{}
			r.metrics = append(r.metrics, m)
		case "/v1/traces":
			m := &colltracepb.ExportTraceServiceRequest{}
			err, out = proto.Unmarshal(body, m), &colltracepb.ExportTraceServiceResponse{}
			r.traces = append(r.traces, m)
		default:
			http.NotFound(w, req)
			return
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		b, _ := proto.Marshal(out)
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(b)
	}))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

// lastSum returns the value of the cumulative sum metric name in the last
// export that has it, added over its points whose attributes include
// match, and the resource of that export.
func (r *otlpReceiver) lastSum(t *testing.T, name string, match ...attribute.KeyValue) (int64, map[string]string) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.metrics) - 1; i >= 0; i-- {
		for _, rm := range r.metrics[i].ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					s := m.GetSum()
					if m.Name != name || s == nil {
						continue
					}
					require.Equal(t, metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE, s.AggregationTemporality)
					var total int64
					for _, p := range s.DataPoints {
						if hasAll(p.Attributes, match) {
							total += p.GetAsInt()
						}
					}
					return total, resourceMap(rm.Resource)
				}
			}
		}
	}
	t.Fatalf("no export has %s", name)
	return 0, nil
}

func hasAll(kvs []*commonpb.KeyValue, match []attribute.KeyValue) bool {
	for _, want := range match {
		found := false
		for _, kv := range kvs {
			if kv.Key == string(want.Key) && kv.Value.GetStringValue() == want.Value.AsString() {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func resourceMap(r *resourcepb.Resource) map[string]string {
	m := map[string]string{}
	for _, kv := range r.GetAttributes() {
		m[kv.Key] = kv.Value.GetStringValue()
	}
	return m
}

func (r *otlpReceiver) spans() []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*tracepb.Span
	for _, req := range r.traces {
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				out = append(out, ss.Spans...)
			}
		}
	}
	return out
}

// TestBenchExportsOverOTLP runs bench against the fake server with
// OTEL_EXPORTER_OTLP_ENDPOINT set: the metrics its Tracker records reach
// the OTLP receiver, the last export (the flush at exit) counting every
// request and output token the fake server served, under bench's
// resource, with the cumulative temporality the environment asks for.
func TestBenchExportsOverOTLP(t *testing.T) {
	recv := newOTLPReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", "cumulative")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=test")
	prevMP, prevTP := otel.GetMeterProvider(), otel.GetTracerProvider()

	var stdout, stderr bytes.Buffer
	var srv *llmmetricstest.Server
	e := env{stdout: &stdout, stderr: &stderr, newFake: func(cfg llmmetricstest.ServerConfig) *llmmetricstest.Server {
		srv = llmmetricstest.NewServer(cfg)
		return srv
	}}
	code := run(context.Background(), []string{"-speedup", "20", "-max-tokens", "8", "-prompt-words", "10",
		"-concurrency", "2", "-requests", "6", "-warmup", "0", "-repeats", "1", "-out", t.TempDir()}, e)
	require.Equal(t, exitOK, code, "stderr: %s", stderr.String())
	require.NotNil(t, srv)
	served := srv.Stats()
	require.Positive(t, served.Requests)

	requests, res := recv.lastSum(t, "llmmetrics.requests", attribute.String("llmmetrics.role", "client"))
	assert.Equal(t, int64(served.Requests), requests, "every request bench sent, in the export at exit")
	tokens, _ := recv.lastSum(t, "llmmetrics.tokens", attribute.String("gen_ai.token.type", "output"))
	assert.Equal(t, int64(served.CompletionTokens), tokens)
	assert.Equal(t, serviceName, res["service.name"])
	assert.Equal(t, "test", res["deployment.environment.name"], "OTEL_RESOURCE_ATTRIBUTES")
	assert.NotEmpty(t, res["service.instance.id"], "each run is its own series")
	assert.NotContains(t, stderr.String(), "telemetry export")

	assert.Same(t, prevMP, otel.GetMeterProvider(), "the global providers are put back at exit")
	assert.Same(t, prevTP, otel.GetTracerProvider())
}

// TestTelemetrySpans checks the trace half of startTelemetry: a span
// started from the global TracerProvider while it is set up (as the
// Tracker's spans are) is exported by the shutdown at exit, under the
// resource OTEL_SERVICE_NAME names.
func TestTelemetrySpans(t *testing.T) {
	recv := newOTLPReceiver(t)
	env := map[string]string{
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": recv.URL + "/v1/traces",
		"OTEL_TRACES_EXPORTER":               "otlp",
		"OTEL_METRICS_EXPORTER":              "none",
		"OTEL_SERVICE_NAME":                  "my-load-test",
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	var stderr bytes.Buffer
	tel, err := startTelemetry(context.Background(), func(k string) string { return env[k] }, &stderr)
	require.NoError(t, err)
	require.NotNil(t, tel)
	_, s := otel.Tracer("test").Start(context.Background(), "chat llmmetricstest-model")
	s.End()
	require.NoError(t, tel.shutdown())

	spans := recv.spans()
	require.Len(t, spans, 1)
	assert.Equal(t, "chat llmmetricstest-model", spans[0].Name)
	recv.mu.Lock()
	res := resourceMap(recv.traces[0].ResourceSpans[0].Resource)
	recv.mu.Unlock()
	assert.Equal(t, "my-load-test", res["service.name"])
	assert.Empty(t, recv.metrics, "OTEL_METRICS_EXPORTER=none")
	assert.Empty(t, stderr.String())
}

func TestTelemetry(t *testing.T) {
	t.Run("off without the variables", func(t *testing.T) {
		tel, err := startTelemetry(context.Background(), func(string) string { return "" }, io.Discard)
		assert.NoError(t, err)
		assert.Nil(t, tel)
	})
	t.Run("a bad protocol is a usage error", func(t *testing.T) {
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
		t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "carrier-pigeon")
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"-out", t.TempDir()}, env{stdout: &stdout, stderr: &stderr, newFake: func(llmmetricstest.ServerConfig) *llmmetricstest.Server {
			t.Fatal("no server starts when the exporter cannot be made")
			return nil
		}})
		assert.Equal(t, exitUsage, code)
		assert.Contains(t, stderr.String(), "llmmetrics bench: metrics exporter: ")
		assert.Contains(t, stderr.String(), "carrier-pigeon")
	})
	t.Run("an error is said once per message", func(t *testing.T) {
		var buf bytes.Buffer
		exportErrors.to(&buf)
		otel.Handle(io.ErrUnexpectedEOF)
		otel.Handle(io.ErrUnexpectedEOF)
		exportErrors.to(nil)
		assert.Equal(t, "llmmetrics bench: telemetry export: unexpected EOF\n", buf.String())
	})
}
