package llmmetrics

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// roleTracker returns a Tracker of role (nil: the default) on a fresh SDK
// provider, failing the test on any problem reported through otel.Handle.
func roleTracker(t *testing.T, role *Role) (*Tracker, *sdkmetric.ManualReader) {
	t.Helper()
	handleOtel(t, func(err error) { t.Errorf("otel.Handle: %v", err) })
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	opts := []Option{WithMeterProvider(mp)}
	if role != nil {
		opts = append(opts, WithRole(*role))
	}
	tr, err := NewTracker(opts...)
	require.NoError(t, err)
	return tr, reader
}

var (
	clientNames = []string{
		"gen_ai.client.operation.duration", "gen_ai.client.operation.time_per_output_chunk",
		"gen_ai.client.operation.time_to_first_chunk", "gen_ai.client.token.usage",
		MetricTTFO, MetricRequests, MetricActive, MetricClientTPOT, MetricTokens,
	}
	serverNames = []string{
		"gen_ai.server.request.duration", "gen_ai.server.time_per_output_token", "gen_ai.server.time_to_first_token",
		MetricTTFO, MetricServerITL, MetricRequests, MetricActive, MetricTokens,
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
// client-role instruments and NewHandler the server-role ones, whatever
// the Tracker's WithRole says; Start keeps the Tracker's role.
func TestHTTPWrappersDecideTheRole(t *testing.T) {
	client, server := RoleClient, RoleServer
	noWrap := func(h http.Handler) http.Handler { return h }
	t.Run("NewTransport on a default Tracker: gen_ai.client.*", func(t *testing.T) {
		tr, reader := roleTracker(t, nil)
		srv := chatStreamServer(t, noWrap)
		base := &http.Transport{}
		defer base.CloseIdleConnections()
		callStream(t, NewTransport(tr, base), srv.URL)
		assert.Equal(t, sorted(clientNames), emittedNames(t, reader))
	})
	t.Run("Middleware on a server-role Tracker: gen_ai.client.*", func(t *testing.T) {
		tr, reader := roleTracker(t, &server)
		srv := chatStreamServer(t, noWrap)
		base := &http.Transport{}
		defer base.CloseIdleConnections()
		mw := Middleware(tr)
		callStream(t, roundTripFunc(func(r *http.Request) (*http.Response, error) { return mw(r, base.RoundTrip) }), srv.URL)
		assert.Equal(t, sorted(clientNames), emittedNames(t, reader))
	})
	t.Run("NewHandler on a client-role Tracker: gen_ai.server.*", func(t *testing.T) {
		tr, reader := roleTracker(t, &client)
		srv := chatStreamServer(t, func(h http.Handler) http.Handler { return NewHandler(tr, h) })
		base := &http.Transport{}
		defer base.CloseIdleConnections()
		callStream(t, base, srv.URL)
		srv.Close() // the handler has returned
		assert.Equal(t, sorted(serverNames), emittedNames(t, reader))
	})
	t.Run("one Tracker for a gateway's two sides", func(t *testing.T) {
		tr, reader := roleTracker(t, nil)
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
		role  *Role
		names []string
	}{
		{"Start on a default Tracker: gen_ai.server.*", nil, serverNames},
		{"Start on a client-role Tracker: gen_ai.client.*", &client, clientNames},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, reader := roleTracker(t, tc.role)
			r := tr.StartAt(context.Background(), t0, baseAttrs...)
			r.ChunkAt(t0.Add(1), 1)
			r.ChunkAt(t0.Add(2), 1)
			r.SetUsage(3, 2)
			r.EndAt(t0.Add(3), nil)
			assert.Equal(t, sorted(tc.names), emittedNames(t, reader))
		})
	}
}

// TestOtherRoleDoesNotAllocatePerChunk: a request measured with the other
// role's instruments records a chunk without allocating.
func TestOtherRoleDoesNotAllocatePerChunk(t *testing.T) {
	tr, _ := roleTracker(t, nil)
	r := tr.startAs(context.Background(), tr.instFor(RoleClient), t0, nil)
	r.ChunkAt(t0, 1)
	allocs := testing.AllocsPerRun(1000, func() { r.ChunkAt(t0.Add(1), 1) })
	assert.Zero(t, allocs)

}
