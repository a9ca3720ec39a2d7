// Package otelsdk holds what needs the OpenTelemetry SDK
// (go.opentelemetry.io/otel/sdk/metric): ExponentialHistograms, a
// MeterProvider option that makes every llmmetrics histogram a base-2
// exponential histogram. The root package llmmetrics imports the
// OpenTelemetry API only, as instrumentation libraries do, so that the SDK
// stays the application's choice; import this package where the
// application builds its MeterProvider.
//
// docs/fleet-percentiles.md explains when to turn it on (percentiles read
// from exported histograms across replicas) and what Prometheus needs.
package otelsdk

import (
	"github.com/llmmetrics/llmmetrics"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// Size and resolution of the exponential histograms of ExponentialHistograms:
// the OpenTelemetry specification's defaults, also what the OTLP exporters
// choose for OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION=
// base2_exponential_bucket_histogram (go.opentelemetry.io/otel/exporters/otlp/
// otlpmetric/otlpmetrichttp/internal/oconf/envconfig.go).
const (
	// ExponentialMaxSize is the largest number of buckets per histogram
	// point. The SDK picks the finest scale at which every recorded value
	// fits in that many buckets: values spanning 10 ms to 60 s (a factor
	// of 6000, 12.6 doublings) get scale 3, 8 buckets per doubling, each
	// bucket 9% wide; values spanning 50 ms to 5 s get scale 4 (4.4%).
	ExponentialMaxSize = 160
	// ExponentialMaxScale is the finest scale allowed: each bucket's upper
	// bound is 2^(2^-20) ≈ 1.0000007 times its lower bound. The SDK starts
	// there and lowers the scale as the range of the values grows. The
	// OpenTelemetry Prometheus exporter lowers any scale above 8 to 8, the
	// finest that Prometheus native histograms have.
	ExponentialMaxScale = 20
)

// ExponentialHistograms returns a MeterProvider option that records every
// histogram of every Tracker on that provider (TTFT, TPOT, ITL, E2EL and,
// for the client role, gen_ai.client.token.usage) as a base-2 exponential
// histogram (sdkmetric.AggregationBase2ExponentialHistogram with
// ExponentialMaxSize buckets and ExponentialMaxScale) instead of the
// explicit buckets the GenAI conventions advise:
//
//	mp := sdkmetric.NewMeterProvider(
//		sdkmetric.WithReader(reader),
//		otelsdk.ExponentialHistograms(),
//	)
//	tracker, err := llmmetrics.NewTracker(llmmetrics.WithMeterProvider(mp))
//
// Turn it on when percentiles are read from the exported histograms across
// replicas (histogram_quantile in Prometheus, a backend's percentile of an
// OTLP histogram): explicit buckets give errors of tens of percent between
// bounds and clamp everything beyond the last bound (10 s for server TTFT),
// while an exponential histogram bounds the error by its bucket width (4–9%
// for latencies spanning 7–13 doublings) over any range, with no tuning;
// measured, under 1% (BENCHMARKS.md, "Accuracy"). Record costs about the
// same (BENCHMARKS.md, "Exponential histograms: the cost per token"). The
// catch is Prometheus: the OpenTelemetry Prometheus exporter
// (go.opentelemetry.io/otel/exporters/prometheus) exposes exponential
// histograms as native histograms, only in the protobuf format, which
// Prometheus 2.40–3.7 scrapes with --enable-feature=native-histograms and
// 3.8 and later with the scrape_native_histograms setting. Without that, Prometheus scrapes the text format, where these
// histograms are only a count, a sum and a single +Inf bucket: means still
// work, percentiles do not. That is why explicit buckets stay the default.
//
// The option is a View (sdkmetric.WithView) that matches only histograms of
// this library's instrumentation scope (llmmetrics.ScopeName), so it leaves the other
// instruments on the provider alone, and it adds to the provider's other
// views and readers rather than replacing them. Two interactions:
//
//   - A view wins over a reader's default aggregation, so these histograms
//     are exponential on every reader of the provider, whatever the reader
//     or exporter prefers. Conversely, an OTLP exporter configured with
//     OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION=
//     base2_exponential_bucket_histogram (or WithAggregationSelector) already
//     makes every histogram without a view exponential with the same size
//     and scale, this library's included, and the explicit-bucket advice of
//     the instruments is then ignored: that variable alone is enough for an
//     OTLP-only setup, and this option is for the rest (Prometheus, several
//     readers, or exponential for this library's histograms only).
//   - If another view of the provider also matches one of these histograms
//     (a "*" name pattern, say), the SDK makes one stream per matching view,
//     so the histogram is exported twice under one name. Leave out this
//     option then and set the aggregation in that view.
//
// Exemplars, attributes, names, units and descriptions are unchanged. For
// another size or scale, leave out this option and write the view:
//
//	sdkmetric.WithView(sdkmetric.NewView(
//		sdkmetric.Instrument{Kind: sdkmetric.InstrumentKindHistogram, Scope: instrumentation.Scope{Name: llmmetrics.ScopeName}},
//		sdkmetric.Stream{Aggregation: sdkmetric.AggregationBase2ExponentialHistogram{MaxSize: 320, MaxScale: 20}},
//	))
func ExponentialHistograms() sdkmetric.Option {
	return sdkmetric.WithView(exponentialView)
}

// exponentialView is written out rather than built with sdkmetric.NewView,
// whose scope criterion (an instrumentation.Scope) would make the library
// require go.opentelemetry.io/otel/sdk directly. Like a NewView mask, it
// keeps the instrument's name, description and unit.
func exponentialView(i sdkmetric.Instrument) (sdkmetric.Stream, bool) {
	if i.Kind != sdkmetric.InstrumentKindHistogram || i.Scope.Name != llmmetrics.ScopeName {
		return sdkmetric.Stream{}, false
	}
	return sdkmetric.Stream{
		Name:        i.Name,
		Description: i.Description,
		Unit:        i.Unit,
		Aggregation: sdkmetric.AggregationBase2ExponentialHistogram{
			MaxSize:  ExponentialMaxSize,
			MaxScale: ExponentialMaxScale,
		},
	}, true
}
