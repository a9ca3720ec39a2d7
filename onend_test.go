package llmmetrics

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

type onEndKey struct{}

// TestWithOnEnd checks that the hook gets each ended request's Record once,
// with the request's context.
func TestWithOnEnd(t *testing.T) {
	type got struct {
		tag string
		rec Record
	}
	var seen []got
	tr, err := NewTracker(WithMeterProvider(sdkmetric.NewMeterProvider()), WithOnEnd(func(ctx context.Context, r Record) {
		tag, _ := ctx.Value(onEndKey{}).(string)
		seen = append(seen, got{tag, r})
	}))
	require.NoError(t, err)
	t0 := time.Unix(100, 0)

	ctx := context.WithValue(context.Background(), onEndKey{}, "a")
	r := tr.StartAt(ctx, t0)
	r.ChunkAt(t0.Add(20*time.Millisecond), 1)
	r.ChunkAt(t0.Add(30*time.Millisecond), 2)
	rec := r.EndAt(t0.Add(40*time.Millisecond), nil)
	r.EndAt(t0.Add(50*time.Millisecond), errors.New("late")) // idempotent: no second call

	r2 := tr.StartAt(context.WithValue(context.Background(), onEndKey{}, "b"), t0)
	r2.EndAt(t0.Add(5*time.Millisecond), context.Canceled)

	require.Len(t, seen, 2)
	assert.Equal(t, "a", seen[0].tag)
	assert.Equal(t, rec, seen[0].rec)
	assert.Equal(t, 3, seen[0].rec.OutputTokens)
	assert.Equal(t, []time.Duration{10 * time.Millisecond}, seen[0].rec.ITL)
	assert.Equal(t, "b", seen[1].tag)
	assert.Equal(t, OutcomeCanceled, seen[1].rec.Outcome)
}

func TestWithOnEndNilIgnored(t *testing.T) {
	tr, err := NewTracker(WithMeterProvider(sdkmetric.NewMeterProvider()), WithOnEnd(nil))
	require.NoError(t, err)
	tr.Start(context.Background()).End(nil) // must not panic
}
