package llmmetricstest

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// Kind is the kind of instrument a Metric came from.
type Kind uint8

const (
	// KindUnknown is an aggregation the collector does not decode
	// (summaries); such a metric has no points.
	KindUnknown Kind = iota
	// KindHistogram is an explicit-bucket histogram.
	KindHistogram
	// KindCounter is a monotonic sum (a Counter or an observable counter).
	KindCounter
	// KindUpDownCounter is a non-monotonic sum.
	KindUpDownCounter
	// KindGauge is a last-value gauge.
	KindGauge
	// KindExponentialHistogram is a base-2 exponential histogram (the
	// aggregation of a sdkmetric.AggregationBase2ExponentialHistogram view):
	// its points have Count, Sum, Min, Max and Exponential.
	KindExponentialHistogram
)

var kindNames = [...]string{"unknown", "histogram", "counter", "updowncounter", "gauge", "exponentialhistogram"}

// String returns "histogram", "exponentialhistogram", "counter",
// "updowncounter", "gauge" or "unknown".
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Point is one time series of a Metric (one attribute set), as plain values.
// int64 data is converted to float64.
type Point struct {
	// Attributes is the point's attribute set.
	Attributes attribute.Set
	// Count is the number of recorded values (histograms, explicit or
	// exponential, only).
	Count uint64
	// Sum is the sum of recorded values (histograms), or the value of a
	// counter, up-down counter or gauge.
	Sum float64
	// Min and Max are the extreme recorded values (histograms, explicit or
	// exponential, with min/max recording on, the SDK default); 0 otherwise.
	Min, Max float64
	// Bounds are the histogram's explicit upper bucket bounds (the +Inf
	// bucket is implied); nil for other kinds.
	Bounds []float64
	// Buckets holds the count per bucket, len(Bounds)+1 entries (histograms only).
	Buckets []uint64
	// Exponential holds the buckets of an exponential histogram; nil for
	// other kinds.
	Exponential *ExponentialBuckets
}

// ExponentialBuckets are the buckets of one exponential histogram point,
// as OpenTelemetry defines them: with base = 2^(2^−Scale), the positive
// bucket of index i holds the values in (base^i, base^(i+1)], and the
// negative bucket of index i the values in [−base^(i+1), −base^i).
// Positive[k] is the count of index PositiveOffset + k (Negative alike);
// values within ZeroThreshold of zero count in ZeroCount. So Count =
// ZeroCount + Σ Positive + Σ Negative.
type ExponentialBuckets struct {
	// Scale sets the resolution: each power of two is split into 2^Scale
	// buckets (Scale may be negative).
	Scale int32
	// ZeroCount is the number of values in the zero bucket.
	ZeroCount uint64
	// ZeroThreshold is the zero bucket's width (0: exact zeros only).
	ZeroThreshold float64
	// PositiveOffset is the bucket index of Positive[0].
	PositiveOffset int32
	// Positive holds the counts of consecutive positive buckets.
	Positive []uint64
	// NegativeOffset is the bucket index of Negative[0].
	NegativeOffset int32
	// Negative holds the counts of consecutive negative buckets (by
	// magnitude).
	Negative []uint64
}

// Base returns the ratio between consecutive bucket bounds, 2^(2^−Scale).
func (e ExponentialBuckets) Base() float64 { return math.Exp2(math.Exp2(-float64(e.Scale))) }

// PositiveBounds returns the lower and upper bound of Positive[k]:
// (base^(PositiveOffset+k), base^(PositiveOffset+k+1)].
func (e ExponentialBuckets) PositiveBounds(k int) (lower, upper float64) {
	// 2^((i)·2^−Scale) computed from the exponent directly, so that
	// bounds at Scale ≤ 0 are exact powers of two.
	i := float64(e.PositiveOffset) + float64(k)
	w := math.Exp2(-float64(e.Scale))
	return math.Exp2(i * w), math.Exp2((i + 1) * w)
}

// Attrs returns the point's attributes as a map from key to the value's
// string form (attribute.Value.String).
func (p Point) Attrs() map[string]string {
	m := make(map[string]string, p.Attributes.Len())
	for _, kv := range p.Attributes.ToSlice() {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

// matches reports whether the point's attribute set holds every attribute
// in attrs with an equal value.
func (p Point) matches(attrs []attribute.KeyValue) bool {
	for _, kv := range attrs {
		v, ok := p.Attributes.Value(kv.Key)
		if !ok || v.Type() != kv.Value.Type() || v.String() != kv.Value.String() {
			return false
		}
	}
	return true
}

// Metric is one instrument's data as plain values.
type Metric struct {
	// Name, Unit and Description are the instrument's.
	Name, Unit, Description string
	// Scope is the instrumentation scope (meter) name that created it.
	Scope string
	// Kind is the instrument kind.
	Kind Kind
	// Points holds one entry per attribute set, in the SDK's order.
	Points []Point
}

// Metrics holds what a collection returned, keyed by metric name. When two
// meters created instruments with the same name, their points are merged
// under that name (the first one's unit, description and kind are kept).
//
// The readers (Count, Sum, Value, Buckets, …) take attribute filters: a
// point matches when its attribute set contains every given attribute with
// an equal value (other attributes are ignored), and matching points are
// added up. With no filter, every point matches. A missing metric reads as
// zero; use Has to tell the difference.
type Metrics map[string]Metric

// Has reports whether a metric with that name was collected.
func (m Metrics) Has(name string) bool {
	_, ok := m[name]
	return ok
}

// Names returns the collected metric names, sorted.
func (m Metrics) Names() []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Points returns the points of metric name whose attributes include attrs.
func (m Metrics) Points(name string, attrs ...attribute.KeyValue) []Point {
	var out []Point
	for _, p := range m[name].Points {
		if p.matches(attrs) {
			out = append(out, p)
		}
	}
	return out
}

// Count returns the number of values recorded into histogram name, summed
// over the points whose attributes include attrs (0 for other kinds).
func (m Metrics) Count(name string, attrs ...attribute.KeyValue) uint64 {
	var n uint64
	for _, p := range m.Points(name, attrs...) {
		n += p.Count
	}
	return n
}

// Sum returns the sum of the values recorded into histogram name, or the
// total of counter (up-down counter, gauge) name, added up over the points
// whose attributes include attrs.
func (m Metrics) Sum(name string, attrs ...attribute.KeyValue) float64 {
	var s float64
	for _, p := range m.Points(name, attrs...) {
		s += p.Sum
	}
	return s
}

// Value returns the value of counter (up-down counter, gauge) name, added
// up over the points whose attributes include attrs. It is the same as Sum
// and reads better for counters.
func (m Metrics) Value(name string, attrs ...attribute.KeyValue) float64 {
	return m.Sum(name, attrs...)
}

// SumBy returns Sum of metric name split by the value of attribute key
// (its string form): e.g. SumBy("llmmetrics.requests", "llmmetrics.outcome") →
// {"ok": 9, "error": 1}. Points without key are left out; attrs filter as
// in Sum.
func (m Metrics) SumBy(name string, key attribute.Key, attrs ...attribute.KeyValue) map[string]float64 {
	out := map[string]float64{}
	for _, p := range m.Points(name, attrs...) {
		if v, ok := p.Attributes.Value(key); ok {
			out[v.String()] += p.Sum
		}
	}
	return out
}

// CountBy returns Count of histogram name split by the value of attribute
// key (its string form), like SumBy.
func (m Metrics) CountBy(name string, key attribute.Key, attrs ...attribute.KeyValue) map[string]uint64 {
	out := map[string]uint64{}
	for _, p := range m.Points(name, attrs...) {
		if v, ok := p.Attributes.Value(key); ok {
			out[v.String()] += p.Count
		}
	}
	return out
}

// Bounds returns the explicit bucket bounds of histogram name (those of its
// first point), or nil when it has no points.
func (m Metrics) Bounds(name string) []float64 {
	for _, p := range m[name].Points {
		if p.Bounds != nil {
			return slices.Clone(p.Bounds)
		}
	}
	return nil
}

// Buckets returns the bucket counts of histogram name (len(Bounds)+1
// entries, the last one for +Inf), added up element-wise over the points
// whose attributes include attrs. Points whose bounds differ from Bounds(name)
// are skipped. It returns nil when no point matches.
func (m Metrics) Buckets(name string, attrs ...attribute.KeyValue) []uint64 {
	bounds := m.Bounds(name)
	var out []uint64
	for _, p := range m.Points(name, attrs...) {
		if p.Buckets == nil || !slices.Equal(p.Bounds, bounds) {
			continue
		}
		if out == nil {
			out = make([]uint64, len(p.Buckets))
		}
		for i, c := range p.Buckets {
			out[i] += c
		}
	}
	return out
}

// String lists every metric and point, one line each, sorted by name: handy
// in failure messages.
func (m Metrics) String() string {
	var b strings.Builder
	for _, n := range m.Names() {
		mt := m[n]
		fmt.Fprintf(&b, "%s (%s, unit %q)\n", n, mt.Kind, mt.Unit)
		for _, p := range mt.Points {
			fmt.Fprintf(&b, "  %s:", p.Attributes.Encoded(attribute.DefaultEncoder()))
			switch {
			case mt.Kind == KindHistogram:
				fmt.Fprintf(&b, " count=%d sum=%g buckets=%v\n", p.Count, p.Sum, p.Buckets)
			case p.Exponential != nil:
				e := p.Exponential
				fmt.Fprintf(&b, " count=%d sum=%g scale=%d zero=%d positive=%d%v negative=%d%v\n", p.Count, p.Sum,
					e.Scale, e.ZeroCount, e.PositiveOffset, e.Positive, e.NegativeOffset, e.Negative)
			default:
				fmt.Fprintf(&b, " value=%g\n", p.Sum)
			}
		}
	}
	return b.String()
}

// Collector reads what instruments of a MeterProvider recorded, on demand.
// It wraps an sdkmetric.ManualReader (cumulative temporality).
//
// Create one with NewMeterProvider, or with NewCollector and register
// Reader() with your own provider. A Collector is safe for concurrent use.
type Collector struct {
	reader *sdkmetric.ManualReader
}

// NewCollector returns a Collector whose Reader must be registered with a
// MeterProvider (sdkmetric.WithReader(c.Reader())).
func NewCollector() *Collector {
	return &Collector{reader: sdkmetric.NewManualReader()}
}

// NewMeterProvider returns an SDK MeterProvider that reports to the
// returned Collector, with opts (views, resource, …) applied. Shut the
// provider down when done if the test cares (it holds no goroutine).
func NewMeterProvider(opts ...sdkmetric.Option) (*sdkmetric.MeterProvider, *Collector) {
	c := NewCollector()
	opts = append(slices.Clone(opts), sdkmetric.WithReader(c.reader))
	return sdkmetric.NewMeterProvider(opts...), c
}

// Reader returns the reader to register with a MeterProvider.
func (c *Collector) Reader() sdkmetric.Reader { return c.reader }

// Collect gathers the current data and returns it as plain values. It marks
// tb failed (tb.Fatal) when collection fails.
func (c *Collector) Collect(tb testing.TB) Metrics {
	tb.Helper()
	m, err := c.Read(context.Background())
	if err != nil {
		tb.Fatalf("llmmetricstest: collect: %v", err)
	}
	return m
}

// Read gathers the current data and returns it as plain values, for code
// outside tests.
func (c *Collector) Read(ctx context.Context) (Metrics, error) {
	var rm metricdata.ResourceMetrics
	if err := c.reader.Collect(ctx, &rm); err != nil {
		return nil, err
	}
	return FromResourceMetrics(rm), nil
}

// FromResourceMetrics converts SDK metric data to plain values.
func FromResourceMetrics(rm metricdata.ResourceMetrics) Metrics {
	out := Metrics{}
	for _, sm := range rm.ScopeMetrics {
		for _, md := range sm.Metrics {
			mt := Metric{Name: md.Name, Unit: md.Unit, Description: md.Description, Scope: sm.Scope.Name}
			switch d := md.Data.(type) {
			case metricdata.Histogram[int64]:
				mt.Kind, mt.Points = KindHistogram, histPoints(d.DataPoints)
			case metricdata.Histogram[float64]:
				mt.Kind, mt.Points = KindHistogram, histPoints(d.DataPoints)
			case metricdata.ExponentialHistogram[int64]:
				mt.Kind, mt.Points = KindExponentialHistogram, expHistPoints(d.DataPoints)
			case metricdata.ExponentialHistogram[float64]:
				mt.Kind, mt.Points = KindExponentialHistogram, expHistPoints(d.DataPoints)
			case metricdata.Sum[int64]:
				mt.Kind, mt.Points = sumKind(d.IsMonotonic), valuePoints(d.DataPoints)
			case metricdata.Sum[float64]:
				mt.Kind, mt.Points = sumKind(d.IsMonotonic), valuePoints(d.DataPoints)
			case metricdata.Gauge[int64]:
				mt.Kind, mt.Points = KindGauge, valuePoints(d.DataPoints)
			case metricdata.Gauge[float64]:
				mt.Kind, mt.Points = KindGauge, valuePoints(d.DataPoints)
			}
			if prev, ok := out[md.Name]; ok {
				prev.Points = append(prev.Points, mt.Points...)
				mt = prev
			}
			out[md.Name] = mt
		}
	}
	return out
}

func sumKind(monotonic bool) Kind {
	if monotonic {
		return KindCounter
	}
	return KindUpDownCounter
}

func histPoints[N int64 | float64](dps []metricdata.HistogramDataPoint[N]) []Point {
	out := make([]Point, 0, len(dps))
	for _, dp := range dps {
		p := Point{
			Attributes: dp.Attributes,
			Count:      dp.Count,
			Sum:        float64(dp.Sum),
			Bounds:     slices.Clone(dp.Bounds),
			Buckets:    slices.Clone(dp.BucketCounts),
		}
		if v, ok := dp.Min.Value(); ok {
			p.Min = float64(v)
		}
		if v, ok := dp.Max.Value(); ok {
			p.Max = float64(v)
		}
		out = append(out, p)
	}
	return out
}

func expHistPoints[N int64 | float64](dps []metricdata.ExponentialHistogramDataPoint[N]) []Point {
	out := make([]Point, 0, len(dps))
	for _, dp := range dps {
		p := Point{
			Attributes: dp.Attributes,
			Count:      dp.Count,
			Sum:        float64(dp.Sum),
			Exponential: &ExponentialBuckets{
				Scale:          dp.Scale,
				ZeroCount:      dp.ZeroCount,
				ZeroThreshold:  dp.ZeroThreshold,
				PositiveOffset: dp.PositiveBucket.Offset,
				Positive:       slices.Clone(dp.PositiveBucket.Counts),
				NegativeOffset: dp.NegativeBucket.Offset,
				Negative:       slices.Clone(dp.NegativeBucket.Counts),
			},
		}
		if v, ok := dp.Min.Value(); ok {
			p.Min = float64(v)
		}
		if v, ok := dp.Max.Value(); ok {
			p.Max = float64(v)
		}
		out = append(out, p)
	}
	return out
}

func valuePoints[N int64 | float64](dps []metricdata.DataPoint[N]) []Point {
	out := make([]Point, 0, len(dps))
	for _, dp := range dps {
		out = append(out, Point{Attributes: dp.Attributes, Sum: float64(dp.Value)})
	}
	return out
}
