package otelsdk

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// baseAttrs are the Tracker attributes of the tests.
var baseAttrs = []attribute.KeyValue{
	semconv.GenAIOperationNameChat,
	semconv.GenAIProviderNameOpenAI,
	semconv.GenAIRequestModel("m1"),
}

// staticAttrs are the Tracker attributes of the benchmarks.
var staticAttrs = []attribute.KeyValue{
	semconv.GenAIOperationNameChat, semconv.GenAIProviderNameOpenAI, semconv.GenAIRequestModel("llama-3-8b"),
}

// set is baseAttrs plus kvs.
func set(kvs ...attribute.KeyValue) attribute.Set {
	return attribute.NewSet(append(append([]attribute.KeyValue{}, baseAttrs...), kvs...)...)
}

// collect returns the metrics of the llmmetrics scope by name.
func collect(t *testing.T, r *sdkmetric.ManualReader) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.Collect(context.Background(), &rm))
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		require.Equal(t, llmmetrics.ScopeName, sm.Scope.Name)
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// seconds converts seconds to a Duration, rounded to the nanosecond.
func seconds(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }
