package llmmetrics

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// TestRoleString: a side names itself as the RoleKey attribute does.
func TestRoleString(t *testing.T) {
	assert.Equal(t, "server", sideServer.String())
	assert.Equal(t, "client", sideClient.String())
	assert.Equal(t, "side(2)", side(2).String())
}

// TestProtocolString: every Protocol of the table names itself in lower
// case, and no two share a name.
func TestProtocolString(t *testing.T) {
	seen := map[string]Protocol{}
	for p := range protocolCount {
		name := p.String()
		require.NotNil(t, p.spec(), "protocol %d has no row in protocolSpecs", p)
		assert.Regexp(t, `^[a-z][a-z0-9]*$`, name, "protocol %d", p)
		if q, dup := seen[name]; dup {
			t.Errorf("protocols %d and %d are both named %q", q, p, name)
		}
		seen[name] = p
	}
	assert.Equal(t, "unknown", ProtocolUnknown.String())
	assert.Equal(t, "openai", ProtocolOpenAI.String())
	assert.Equal(t, "json", ProtocolJSON.String())
	assert.Equal(t, "Protocol(200)", Protocol(200).String())
	assert.Nil(t, Protocol(200).NewDecoder())
}

// TestErrStopped: errStopped is a plain error that wraps context.Canceled,
// so a stream the consumer stopped early ends OutcomeCanceled with
// error.type "canceled", and callers can match it (also wrapped).
func TestErrStopped(t *testing.T) {
	var err error = errStopped // a plain error variable
	assert.ErrorIs(t, err, context.Canceled)
	assert.True(t, errors.Is(fmt.Errorf("read: %w", errStopped), errStopped))
	canceled := fmt.Errorf("read: %w", context.Canceled)
	assert.NotErrorIs(t, canceled, errStopped, "a plain cancel is not a stop")
	assert.True(t, strings.HasPrefix(err.Error(), "llmmetrics: "), err.Error())

	tr, reader := newTestTracker(t)
	req := tr.Start(context.Background())
	for range WrapSeq(req, slices.Values([]string{"a", "b", "c"}), nil) {
		break // the consumer stops after the first item
	}
	rec := req.End(nil) // already ended: returns the first Record
	assert.Equal(t, OutcomeCanceled, rec.Outcome)
	assert.Equal(t, 1, rec.Chunks)

	sum, ok := collect(t, reader)[metricRequests].Data.(metricdata.Sum[int64])
	require.True(t, ok)
	require.Len(t, sum.DataPoints, 1)
	et, ok := sum.DataPoints[0].Attributes.Value(semconv.ErrorTypeKey)
	require.True(t, ok, "a stopped request carries error.type")
	assert.Equal(t, "canceled", et.AsString())
}
