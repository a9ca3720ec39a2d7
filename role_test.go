package llmmetrics

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/embedded"
	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// emittedNames returns the names of the metrics reader has, sorted.
func emittedNames(t *testing.T, reader *sdkmetric.ManualReader) []string {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	var names []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			names = append(names, m.Name)
		}
	}
	sort.Strings(names)
	return names
}

// roleTracker returns a Tracker on a fresh SDK provider, failing the test
// on any problem reported through otel.Handle.
func roleTracker(t *testing.T) (*Tracker, *sdkmetric.ManualReader) {
	t.Helper()
	handleOtel(t, func(err error) { t.Errorf("otel.Handle: %v", err) })
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	tr, err := NewTracker(WithMeterProvider(mp))
	require.NoError(t, err)
	return tr, reader
}

var (
	clientNames = []string{
		"gen_ai.client.operation.duration", "gen_ai.client.operation.time_per_output_chunk",
		"gen_ai.client.operation.time_to_first_chunk", "gen_ai.client.token.usage",
		metricTTFO, metricRequests, metricActive, metricClientTPOT, metricTokens,
	}
	serverNames = []string{
		"gen_ai.server.request.duration", "gen_ai.server.time_per_output_token", "gen_ai.server.time_to_first_token",
		metricTTFO, metricServerITL, metricRequests, metricActive, metricTokens,
	}
)

func sorted(names ...[]string) []string {
	set := map[string]bool{}
	for _, ns := range names {
		for _, n := range ns {
			set[n] = true
		}
	}
	var out []string
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// streamServer answers every request with an OpenAI chat stream of 7
// tokens, so every instrument gets a measurement.
func chatStreamServer(t *testing.T, wrap func(http.Handler) http.Handler) *httptest.Server {
	t.Helper()
	stream := testdataFile(t, "sse", "openai_chat.sse")
	srv := httptest.NewServer(wrap(answer(200, "text/event-stream", stream)))
	t.Cleanup(srv.Close)
	return srv
}

func callStream(t *testing.T, rt http.RoundTripper, url string) {
	t.Helper()
	resp, err := (&http.Client{Transport: rt}).Do(post(t, t.Context(), url+"/v1/chat/completions", chatBody))
	require.NoError(t, err)
	_, err = io.Copy(io.Discard, resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
}

// TestHTTPWrappersDecideTheRole: NewTransport and Middleware record the
// client-role instruments, NewHandler the server-role ones, Start the
// server's and StartClient the client's: the call decides, no option.
func TestHTTPWrappersDecideTheRole(t *testing.T) {
	noWrap := func(h http.Handler) http.Handler { return h }
	t.Run("NewTransport: gen_ai.client.*", func(t *testing.T) {
		tr, reader := roleTracker(t)
		srv := chatStreamServer(t, noWrap)
		base := &http.Transport{}
		defer base.CloseIdleConnections()
		callStream(t, NewTransport(tr, base), srv.URL)
		assert.Equal(t, sorted(clientNames), emittedNames(t, reader))
	})
	t.Run("Middleware: gen_ai.client.*", func(t *testing.T) {
		tr, reader := roleTracker(t)
		srv := chatStreamServer(t, noWrap)
		base := &http.Transport{}
		defer base.CloseIdleConnections()
		mw := Middleware(tr)
		callStream(t, roundTripFunc(func(r *http.Request) (*http.Response, error) { return mw(r, base.RoundTrip) }), srv.URL)
		assert.Equal(t, sorted(clientNames), emittedNames(t, reader))
	})
	t.Run("NewHandler: gen_ai.server.*", func(t *testing.T) {
		tr, reader := roleTracker(t)
		srv := chatStreamServer(t, func(h http.Handler) http.Handler { return NewHandler(tr, h) })
		base := &http.Transport{}
		defer base.CloseIdleConnections()
		callStream(t, base, srv.URL)
		srv.Close() // the handler has returned
		assert.Equal(t, sorted(serverNames), emittedNames(t, reader))
	})
	t.Run("one Tracker for a gateway's two sides", func(t *testing.T) {
		tr, reader := roleTracker(t)
		srv := chatStreamServer(t, func(h http.Handler) http.Handler { return NewHandler(tr, h) })
		base := &http.Transport{}
		defer base.CloseIdleConnections()
		callStream(t, NewTransport(tr, base), srv.URL)
		srv.Close()
		assert.Equal(t, sorted(clientNames, serverNames), emittedNames(t, reader))
		recs := tr.Snapshot()
		assert.Equal(t, 2, recs.Completed, "both sides")
		// The instruments both roles share by name count each side apart.
		byRole := map[string]int64{}
		for attrs, n := range requestSets(t, reader) {
			for _, kv := range strings.Fields(attrs) {
				if role, ok := strings.CutPrefix(kv, string(RoleKey)+"="); ok {
					byRole[role] += n
				}
			}
		}
		assert.Equal(t, map[string]int64{"client": 1, "server": 1}, byRole, "llmmetrics.requests by llmmetrics.role")
	})
	for _, tc := range []struct {
		name  string
		start func(*Tracker) func(context.Context, time.Time, ...attribute.KeyValue) *Request
		names []string
	}{
		{"StartAt: gen_ai.server.*", func(tr *Tracker) func(context.Context, time.Time, ...attribute.KeyValue) *Request { return tr.StartAt }, serverNames},
		{"StartClientAt: gen_ai.client.*", func(tr *Tracker) func(context.Context, time.Time, ...attribute.KeyValue) *Request {
			return tr.StartClientAt
		}, clientNames},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, reader := roleTracker(t)
			r := tc.start(tr)(context.Background(), t0, baseAttrs...)
			r.ChunkAt(t0.Add(1), 1)
			r.ChunkAt(t0.Add(2), 1)
			r.SetUsage(3, 2)
			r.EndAt(t0.Add(3), nil)
			assert.Equal(t, sorted(tc.names), emittedNames(t, reader))
		})
	}
}

// TestNewTrackerCreatesBothRoles: NewTracker creates every instrument of
// both roles, so a provider that refuses one makes NewTracker fail, whichever
// role the refused instrument belongs to, and nothing goes to otel.Handle
// later.
func TestNewTrackerCreatesBothRoles(t *testing.T) {
	for _, name := range []string{"gen_ai.server.time_to_first_token", "gen_ai.client.operation.time_to_first_chunk", metricRequests} {
		t.Run(name, func(t *testing.T) {
			handleOtel(t, func(err error) { t.Errorf("otel.Handle: %v", err) })
			mp := refusingProvider{refuse: name}
			_, err := NewTracker(WithMeterProvider(mp))
			require.Error(t, err)
			assert.ErrorContains(t, err, "refused "+name)
		})
	}
	t.Run("every instrument is created at once", func(t *testing.T) {
		mp := &recordingProvider{}
		_, err := NewTracker(WithMeterProvider(mp))
		require.NoError(t, err)
		assert.Equal(t, sorted(clientNames, serverNames,
			[]string{metricCachedInputTokens, metricCacheWriteInputTokens}), sorted(mp.names))
	})
}

// refusingProvider's meter fails to create the instrument named refuse.
type refusingProvider struct {
	embedded.MeterProvider
	refuse string
}

func (p refusingProvider) Meter(string, ...metric.MeterOption) metric.Meter {
	return refusingMeter{Meter: noop.Meter{}, refuse: p.refuse}
}

type refusingMeter struct {
	metric.Meter
	refuse string
}

func (m refusingMeter) err(name string) error {
	if name == m.refuse {
		return errors.New("refused " + name)
	}
	return nil
}

func (m refusingMeter) Float64Histogram(name string, o ...metric.Float64HistogramOption) (metric.Float64Histogram, error) {
	h, _ := m.Meter.Float64Histogram(name, o...)
	return h, m.err(name)
}

func (m refusingMeter) Int64Histogram(name string, o ...metric.Int64HistogramOption) (metric.Int64Histogram, error) {
	h, _ := m.Meter.Int64Histogram(name, o...)
	return h, m.err(name)
}

func (m refusingMeter) Int64Counter(name string, o ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	c, _ := m.Meter.Int64Counter(name, o...)
	return c, m.err(name)
}

// recordingProvider's meters note the name of every instrument created.
type recordingProvider struct {
	embedded.MeterProvider
	names []string
}

func (p *recordingProvider) Meter(string, ...metric.MeterOption) metric.Meter {
	return recordingMeter{Meter: noop.Meter{}, p: p}
}

type recordingMeter struct {
	metric.Meter
	p *recordingProvider
}

func (m recordingMeter) Float64Histogram(name string, o ...metric.Float64HistogramOption) (metric.Float64Histogram, error) {
	m.p.names = append(m.p.names, name)
	return m.Meter.Float64Histogram(name, o...)
}

func (m recordingMeter) Int64Histogram(name string, o ...metric.Int64HistogramOption) (metric.Int64Histogram, error) {
	m.p.names = append(m.p.names, name)
	return m.Meter.Int64Histogram(name, o...)
}

func (m recordingMeter) Int64Counter(name string, o ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	m.p.names = append(m.p.names, name)
	return m.Meter.Int64Counter(name, o...)
}

func (m recordingMeter) Int64UpDownCounter(name string, o ...metric.Int64UpDownCounterOption) (metric.Int64UpDownCounter, error) {
	m.p.names = append(m.p.names, name)
	return m.Meter.Int64UpDownCounter(name, o...)
}

// TestOtherRoleDoesNotAllocatePerChunk: a request measured with the client
// role's instruments records a chunk without allocating.
func TestOtherRoleDoesNotAllocatePerChunk(t *testing.T) {
	tr, _ := roleTracker(t)
	r := tr.StartClientAt(context.Background(), t0)
	r.ChunkAt(t0, 1)
	allocs := testing.AllocsPerRun(1000, func() { r.ChunkAt(t0.Add(1), 1) })
	assert.Zero(t, allocs)
}
