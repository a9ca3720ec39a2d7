package llmmetrics

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// sloChat is the SLO of an interactive chat (docs/definitions.md, "Suggested
// SLOs"): TTFT ≤ 200 ms, TPOT ≤ 100 ms.
var sloChat = SLO{TTFT: 200 * time.Millisecond, TPOT: 100 * time.Millisecond}

// The Tracker factories of the root package's tests, in one place. Each
// returns a Tracker on a fresh SDK MeterProvider (shut down by t.Cleanup)
// and the provider's manual reader; opts come last, so a test can override
// any default.

// sdkTracker is the factory the others share: a Tracker with opts on a
// fresh provider.
func sdkTracker(t *testing.T, opts ...Option) (*Tracker, *sdkmetric.ManualReader) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	tr, err := NewTracker(append([]Option{WithMeterProvider(mp)}, opts...)...)
	require.NoError(t, err)
	return tr, reader
}

// newTestTracker returns a Tracker with baseAttrs and its reader.
func newTestTracker(t *testing.T, opts ...Option) (*Tracker, *sdkmetric.ManualReader) {
	t.Helper()
	return sdkTracker(t, append([]Option{WithAttributes(baseAttrs...)}, opts...)...)
}

// httpTracker returns a client-role Tracker whose window keeps every ended
// request (read them with ended).
func httpTracker(t *testing.T, opts ...Option) (*Tracker, *sdkmetric.ManualReader) {
	t.Helper()
	return sdkTracker(t, append([]Option{WithWindow(100, 0)}, opts...)...)
}

// serverTracker returns a server-role Tracker on a manual clock (advance it
// with *now) whose window keeps every ended request (read them with ended).
func serverTracker(t *testing.T, opts ...Option) (*Tracker, *sdkmetric.ManualReader, *time.Time) {
	t.Helper()
	now := new(time.Time)
	*now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tr, reader := sdkTracker(t, append([]Option{WithClock(func() time.Time { return *now }), WithWindow(100, 0)}, opts...)...)
	return tr, reader, now
}
