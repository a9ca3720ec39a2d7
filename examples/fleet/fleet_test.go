package fleet_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/examples/fleet"
	"github.com/llmmetrics/llmmetrics/llmmetricstest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The binaries the test runs, built by scripts/otelcol.sh,
// scripts/prometheus.sh and scripts/jaeger.sh (each prints its binary's
// path).
const (
	envOtelcol    = "LLMMETRICS_OTELCOL"
	envPrometheus = "LLMMETRICS_PROMETHEUS"
	envJaeger     = "LLMMETRICS_JAEGER"
)

// sloText is the SLO the replicas count llmmetrics.slo_met against: about
// half the successful requests meet it (their E2EL is the fake server's
// 300 ms prefill, 16 short decode steps and the prefills of the requests
// that arrive meanwhile), and the 404s never do (only OK requests can be
// good). Which requests meet it depends on the machine's speed; the test
// compares the counters with SLO.Met over the same Records, whatever the
// split.
const sloText = "e2el=650ms"

// TestFleet runs the production path of docs/production.md with the real
// components: three replica processes (package replica: a gateway measured
// by NewHandler in front of the fake server, and clients measured by
// NewTransport) export OTLP through the OpenTelemetry Collector of
// examples/otelcol (its manifest and config file as they are) into
// Prometheus 3 (native histograms from the exponential ones) and Jaeger.
// One replica is restarted while the others send. It runs twice, the
// replicas exporting cumulative temporality over OTLP/gRPC, then delta over
// OTLP/HTTP (which the Collector's delta_to_cumulative processor turns
// into cumulative), and checks each run against the Records the replicas
// measured:
//
//   - the request and token counters, by role, outcome, error.type and
//     token type, equal the Records' counts and sums exactly
//     (increase(…[1h] anchored) over the whole run: no extrapolation, and
//     the zero Prometheus stores at each series' start time counts the
//     first export and shows the restart's counter reset);
//   - p50 and p99 of TTFT and of the E2EL of successful requests, for both
//     roles, histogram_quantile over the sum of every replica's native
//     histogram, are within the relative bound the merged scale s gives,
//     2^(2^-s) − 1, of the exact percentile over the Records (the bound is
//     at most 2%: the workload keeps each histogram's range narrow enough
//     for s ≥ 6, a bound of 1.09%); the E2EL of every request, the 404s
//     (about a millisecond) included, within the bound of its coarser
//     merged scale;
//   - the goodput ratio (requests with llmmetrics.slo_met="true" over all)
//     equals the Records' exactly;
//   - the restarted replica's counters show one reset with cumulative
//     temporality (the restart began a new series of values that the
//     exact totals above went through) and none with delta (the Collector
//     keeps adding its deltas to one sum);
//   - every client request's span, which the replica starts around the
//     request, is in Jaeger under its trace id, with its replica's
//     service.name and service.instance.id;
//   - the exemplars Prometheus holds for the client TTFT histogram each
//     name a request's trace and span and hold that request's TTFT, and
//     Jaeger returns the trace with that span.
//
// It also shows what happens without the conversion: a replica that sends
// delta temporality straight to Prometheus has every export refused, its
// cumulative metrics with its delta ones.
//
// It needs the three binaries (LLMMETRICS_OTELCOL, LLMMETRICS_PROMETHEUS,
// LLMMETRICS_JAEGER) and skips, saying so, without them.
func TestFleet(t *testing.T) {
	bins := lookBinaries(t)
	start := time.Now()
	replicaBin := build(t, "github.com/llmmetrics/llmmetrics/examples/fleet/replica", t.TempDir())
	hc := &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
	t.Cleanup(hc.CloseIdleConnections)

	jaeger := startJaeger(t, bins.jaeger, hc)
	prom := startPrometheus(t, bins.prometheus, hc)
	col := startCollector(t, bins.otelcol, prom.url+"/api/v1/otlp", jaeger.otlpGRPC)

	runs := []fleetRun{
		{name: "cumulative", temporality: "cumulative", protocol: "grpc", endpoint: "http://" + col.grpc},
		{name: "delta", temporality: "delta", protocol: "http/protobuf", endpoint: "http://" + col.http},
	}
	for i := range runs {
		runs[i].lines = runFleet(t, replicaBin, runs[i])
	}
	unconverted := runUnconvertedDelta(t, replicaBin, prom.url)
	// A Collector that stops drains its pipelines: once it has exited,
	// Prometheus and Jaeger hold everything the replicas sent.
	require.NoError(t, col.stop(t), "collector exit")
	at := time.Now()

	for _, run := range runs {
		t.Run(run.name, func(t *testing.T) {
			job := `job="fleet-` + run.name + `"`
			checkCounters(t, prom.promClient, job, at, run.lines)
			checkPercentiles(t, prom.promClient, job, at, run.lines)
			checkGoodput(t, prom.promClient, job, at, run.lines)
			checkRestart(t, prom.promClient, job, at, run.temporality)
			checkTraces(t, jaeger.client, "fleet-"+run.name, run.lines)
			checkExemplars(t, prom.promClient, jaeger.client, job, start, at, run.lines)
		})
	}
	t.Run("delta without conversion", func(t *testing.T) {
		// Prometheus refuses a request that holds a delta metric, and
		// stores none of it: not even the cumulative
		// llmmetrics.requests.active (an UpDownCounter, which the SDK
		// keeps cumulative under the delta preference), nor target_info.
		assert.Empty(t, prom.query(t, `{job="fleet-delta-unconverted"}`, at))
		assert.Contains(t, unconverted, "invalid temporality and type combination")
	})
}

type binaries struct{ otelcol, prometheus, jaeger string }

func lookBinaries(t *testing.T) binaries {
	b := binaries{os.Getenv(envOtelcol), os.Getenv(envPrometheus), os.Getenv(envJaeger)}
	var missing []string
	for name, path := range map[string]string{envOtelcol: b.otelcol, envPrometheus: b.prometheus, envJaeger: b.jaeger} {
		if path == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		t.Skipf("the fleet test runs a real Collector, Prometheus 3 and Jaeger: set %s to the binaries "+
			"scripts/otelcol.sh, scripts/prometheus.sh and scripts/jaeger.sh print (CI does)", strings.Join(missing, ", "))
	}
	return b
}

// A fleetRun is one run of the three replicas with one temporality.
type fleetRun struct {
	name        string // the replicas' service.name is "fleet-" + name
	temporality string // OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE
	protocol    string // OTEL_EXPORTER_OTLP_PROTOCOL
	endpoint    string // OTEL_EXPORTER_OTLP_ENDPOINT
	lines       []fleet.Line
}

// The requests each replica sends, in two rounds: 201 successful and 100
// refused in all. Every histogram then holds 100k+1 values (TTFT: the 201
// successful requests; E2EL: those, and all 301), for which the rank
// histogram_quantile looks for and the index of numpy's linear
// interpolation fall on the same value (p99: the (99k+1)-th smallest, p50:
// the (50k+1)-th), so the estimate and the exact percentile lie in one
// bucket.
var rounds = [2][3]struct{ ok, failed int }{
	{{35, 17}, {35, 16}, {35, 17}}, // replicas 1, 2, 3
	{{35, 17}, {31, 16}, {30, 17}}, // replica 2 restarted
}

// runFleet runs three replicas through the two rounds, restarting replica
// 2 between them while replicas 1 and 3 send their second round, and
// returns every Record they measured.
func runFleet(t *testing.T, bin string, run fleetRun) []fleet.Line {
	t.Helper()
	dir := t.TempDir()
	env := []string{
		"OTEL_SERVICE_NAME=fleet-" + run.name,
		"OTEL_METRICS_EXPORTER=otlp",
		"OTEL_TRACES_EXPORTER=otlp",
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + run.endpoint,
		"OTEL_EXPORTER_OTLP_PROTOCOL=" + run.protocol,
		"OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE=" + run.temporality,
		"OTEL_METRIC_EXPORT_INTERVAL=500", // ms: several exports per round
		"OTEL_BSP_SCHEDULE_DELAY=500",
	}
	var files []string
	startOne := func(name string, i, seed int) *replica {
		records := filepath.Join(dir, name+".jsonl")
		files = append(files, records)
		return startReplica(t, run.name+"-"+name, bin, records,
			[]string{"-slo", sloText, "-seed", fmt.Sprint(seed)},
			append(slices.Clip(env), fmt.Sprintf("OTEL_RESOURCE_ATTRIBUTES=service.instance.id=replica-%d", i+1)))
	}
	r := []*replica{startOne("replica-1", 0, 1), startOne("replica-2", 1, 2), startOne("replica-3", 2, 3)}
	for i, rr := range r {
		rr.command(t, rounds[0][i].ok, rounds[0][i].failed)
	}
	for i, rr := range r {
		rr.expectSent(t, rounds[0][i].ok, rounds[0][i].failed)
	}
	// Replicas 1 and 3 send their second round while replica 2 stops (its
	// last metrics flushed) and starts again with the same
	// service.instance.id, as a container restarted in its pod.
	r[0].command(t, rounds[1][0].ok, rounds[1][0].failed)
	r[2].command(t, rounds[1][2].ok, rounds[1][2].failed)
	r[1].finish(t)
	r[1] = startOne("replica-2-restarted", 1, 4)
	r[1].command(t, rounds[1][1].ok, rounds[1][1].failed)
	for i, rr := range r {
		rr.expectSent(t, rounds[1][i].ok, rounds[1][i].failed)
	}
	for _, rr := range r {
		rr.finish(t)
	}
	var lines []fleet.Line
	for _, f := range files {
		lines = append(lines, readLines(t, f)...)
	}
	return lines
}

// runUnconvertedDelta runs one replica that exports delta temporality
// straight to Prometheus's OTLP receiver (promURL), with no Collector to
// convert it, and returns its log. Its final export fails, so it exits
// with an error.
func runUnconvertedDelta(t *testing.T, bin, promURL string) string {
	t.Helper()
	r := startReplica(t, "delta-unconverted", bin, filepath.Join(t.TempDir(), "records.jsonl"),
		[]string{"-slo", sloText}, []string{
			"OTEL_SERVICE_NAME=fleet-delta-unconverted",
			"OTEL_RESOURCE_ATTRIBUTES=service.instance.id=replica-1",
			"OTEL_METRICS_EXPORTER=otlp",
			"OTEL_TRACES_EXPORTER=none",
			"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT=" + promURL + "/api/v1/otlp/v1/metrics",
			"OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
			"OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE=delta",
		})
	r.command(t, 5, 0)
	r.expectSent(t, 5, 0)
	require.NoError(t, r.in.Close())
	require.Error(t, r.wait(t, stopTimeout), "the replica's last export fails")
	b, err := os.ReadFile(r.logPath)
	require.NoError(t, err)
	return string(b)
}

func readLines(t *testing.T, path string) []fleet.Line {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []fleet.Line
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l fleet.Line
		require.NoError(t, json.Unmarshal(sc.Bytes(), &l), "%s: %s", path, sc.Bytes())
		out = append(out, l)
	}
	require.NoError(t, sc.Err())
	return out
}

// increase is the exact increase of a counter or histogram over the whole
// test: anchored, so not extrapolated; the range is far longer than the
// test.
func increase(metric, job string) string {
	return fmt.Sprintf("increase(%s{%s}[1h] anchored)", metric, job)
}

// checkCounters compares llmmetrics.requests and llmmetrics.tokens with
// the Records, per role, outcome, error.type and token type.
func checkCounters(t *testing.T, prom promClient, job string, at time.Time, lines []fleet.Line) {
	t.Helper()
	wantRequests, wantTokens := map[string]float64{}, map[string]float64{}
	for _, l := range lines {
		r := l.Record
		wantRequests[l.Role+"|"+r.Outcome.String()+"|"+r.ErrorType]++
		wantTokens[l.Role+"|input"] += float64(r.InputTokens)
		wantTokens[l.Role+"|output"] += float64(r.OutputTokens)
	}
	require.Equal(t, 602.0, sum(wantRequests), "301 requests, each measured by the client and the server")
	require.Equal(t, 201.0, wantRequests["client|ok|"])
	require.Equal(t, 100.0, wantRequests["client|error|404"])

	gotRequests := prom.byLabels(t, "sum by (llmmetrics_role, llmmetrics_outcome, error_type) ("+increase("llmmetrics_requests_total", job)+")",
		at, "llmmetrics_role", "llmmetrics_outcome", "error_type")
	assert.Equal(t, wantRequests, gotRequests, "requests by role|outcome|error.type")
	gotTokens := prom.byLabels(t, "sum by (llmmetrics_role, gen_ai_token_type) ("+increase("llmmetrics_tokens_total", job)+")",
		at, "llmmetrics_role", "gen_ai_token_type")
	assert.Equal(t, wantTokens, gotTokens, "tokens by role|type")
}

func sum(m map[string]float64) float64 {
	s := 0.0
	for _, v := range m {
		s += v
	}
	return s
}

// latencies are the histograms checked, each with the Records' value,
// the series selected and whether the bound must be at most 2%.
var latencies = []struct {
	role, metric, sel string
	value             func(llmmetrics.Record) (time.Duration, bool)
	ok, within2       bool // ok: successful requests only
}{
	{"server", "gen_ai_server_time_to_first_token_seconds", "", llmmetrics.Record.TTFT, true, true},
	{"server", "gen_ai_server_request_duration_seconds", `error_type=""`, llmmetrics.Record.E2EL, true, true},
	{"server", "gen_ai_server_request_duration_seconds", "", llmmetrics.Record.E2EL, false, false},
	{"client", "gen_ai_client_operation_time_to_first_chunk_seconds", "", llmmetrics.Record.TTFT, true, true},
	{"client", "gen_ai_client_operation_duration_seconds", `error_type=""`, llmmetrics.Record.E2EL, true, true},
	{"client", "gen_ai_client_operation_duration_seconds", "", llmmetrics.Record.E2EL, false, false},
}

// checkPercentiles compares p50 and p99 of the merged native histograms
// with the exact percentiles of the Records.
func checkPercentiles(t *testing.T, prom promClient, job string, at time.Time, lines []fleet.Line) {
	t.Helper()
	for _, h := range latencies {
		var values []float64
		for _, l := range lines {
			if v, ok := h.value(l.Record); ok && l.Role == h.role && (!h.ok || l.Record.Outcome == llmmetrics.OutcomeOK) {
				values = append(values, v.Seconds())
			}
		}
		name := h.metric + "{" + h.sel + "}"
		n := len(values)
		require.Equal(t, 1, n%100, "%s: %d values; the rounds are chosen for 100k+1", name, n)
		sel := job
		if h.sel != "" {
			sel += "," + h.sel
		}
		merged := "sum(" + increase(h.metric, sel) + ")"
		assert.Equal(t, float64(n), prom.scalar(t, "histogram_count("+merged+")", at), "%s count", name)
		hist := prom.query(t, merged, at)
		require.Len(t, hist, 1, merged)
		growth := hist[0].histogram(t).growth(t)
		bound := growth - 1
		scale := -math.Log2(math.Log2(growth))
		if h.within2 {
			require.LessOrEqual(t, bound, 0.02, "%s: merged scale %.0f gives buckets %.2f%% wide, over the 2%% this test promises (values from %v to %v s)",
				name, scale, 100*bound, slices.Min(values), slices.Max(values))
		}
		for _, p := range []float64{50, 99} {
			exact, err := llmmetrics.Percentile(values, p)
			require.NoError(t, err)
			got := prom.scalar(t, fmt.Sprintf("histogram_quantile(%g, %s)", p/100, merged), at)
			rel := got/exact - 1
			t.Logf("%s p%g: exact %.4f s, Prometheus %.4f s (%+.3f%%; scale %.0f, bound %.3f%%)", name, p, exact, got, 100*rel, scale, 100*bound)
			assert.LessOrEqual(t, math.Abs(rel), bound*(1+1e-9), "%s p%g: exact %v, Prometheus %v", name, p, exact, got)
		}
	}
}

// checkGoodput compares the goodput ratio of each role with the Records'.
func checkGoodput(t *testing.T, prom promClient, job string, at time.Time, lines []fleet.Line) {
	t.Helper()
	slo, err := llmmetrics.ParseSLO(sloText)
	require.NoError(t, err)
	for _, role := range []string{"server", "client"} {
		good, all := 0, 0
		for _, l := range lines {
			if l.Role != role {
				continue
			}
			all++
			if slo.Met(l.Record) {
				good++
			}
		}
		sel := fmt.Sprintf(`llmmetrics_role="%s",%s`, role, job)
		// "or vector(0)": no request met the SLO, no series says so.
		got := prom.scalar(t, fmt.Sprintf(`(sum(increase(llmmetrics_requests_total{llmmetrics_slo_met="true",%s}[1h] anchored)) or vector(0)) / sum(increase(llmmetrics_requests_total{%s}[1h] anchored))`, sel, sel), at)
		t.Logf("%s goodput ratio: %d/%d", role, good, all)
		assert.Equal(t, float64(good)/float64(all), got, "%s goodput ratio (%d of %d requests met %s)", role, good, all, sloText)
	}
}

// checkRestart counts the resets of the restarted replica's counter of
// refused client requests (one series: the 404s never meet the SLO): one
// with cumulative temporality, none with delta.
func checkRestart(t *testing.T, prom promClient, job string, at time.Time, temporality string) {
	t.Helper()
	want := 1.0
	if temporality == "delta" {
		want = 0
	}
	got := prom.scalar(t, fmt.Sprintf(`resets(llmmetrics_requests_total{%s,instance="replica-2",llmmetrics_role="client",error_type="404"}[1h])`, job), at)
	assert.Equal(t, want, got, "counter resets of the restarted replica (%s)", temporality)
}

// checkTraces finds every client request's span in Jaeger by its trace
// id: the request span the replica started, and the span the Record ended
// in (the same one while the Tracker makes no span of its own).
func checkTraces(t *testing.T, jaeger jaegerClient, service string, lines []fleet.Line) {
	t.Helper()
	n := 0
	for _, l := range lines {
		if l.Role != "client" {
			continue
		}
		require.NotEmpty(t, l.RequestSpanID, "a client Record is measured in its request's span")
		require.NotEmpty(t, l.TraceID, "a client Record ends in a span")
		require.True(t, l.Sampled)
		n++
		spans, ok := jaeger.trace(t, l.TraceID)
		if !assert.True(t, ok, "trace %s not in Jaeger", l.TraceID) {
			continue
		}
		i := slices.IndexFunc(spans, func(s span) bool { return s.SpanID == l.RequestSpanID })
		if !assert.GreaterOrEqual(t, i, 0, "request span %s of trace %s: %+v", l.RequestSpanID, l.TraceID, spans) {
			continue
		}
		req := spans[i]
		assert.Equal(t, fleet.RequestSpan, req.Name)
		assert.Equal(t, service, req.Resource["service.name"])
		assert.Contains(t, []string{"replica-1", "replica-2", "replica-3"}, req.Resource["service.instance.id"])
		// The request span holds the Record (the replica stamps both ends
		// of it with the wall clock, as the Record's times are).
		assert.False(t, req.Start.After(l.Record.Start), "the request span starts before the Record: %v, %v", req.Start, l.Record.Start)
		assert.False(t, req.End.Before(l.Record.End), "the request span ends after the Record: %v, %v", req.End, l.Record.End)
		j := slices.IndexFunc(spans, func(s span) bool { return s.SpanID == l.SpanID })
		if !assert.GreaterOrEqual(t, j, 0, "the span the Record ended in, %s, is in trace %s", l.SpanID, l.TraceID) {
			continue
		}
		checkGenAISpan(t, spans[j], l)
	}
	assert.Equal(t, 301, n)
}

// otlpKindClient is OTLP's SPAN_KIND_CLIENT.
const otlpKindClient = 3

// checkGenAISpan checks the GenAI span NewTransport made for a client
// request, as Jaeger returns it, against the request's Record: the child
// of the replica's request span, named by the operation and model, a
// client span with the Record's Start and End, its attributes those the
// Record tells (gen_ai.response.time_to_first_chunk its TTFT, the token
// counts, who answered and why it ended), and a refused request's error.
func checkGenAISpan(t *testing.T, s span, l fleet.Line) {
	t.Helper()
	r := l.Record
	assert.NotEqual(t, l.RequestSpanID, s.SpanID, "the Tracker makes a span of its own")
	assert.Equal(t, l.RequestSpanID, s.ParentSpanID, "the GenAI span is the request span's child")
	// The replica's WithModels names the model it serves; a refused
	// request's model (fleet.Missing) is "_OTHER", in its span as in its
	// metrics.
	model := llmmetricstest.DefaultModel
	if r.Outcome != llmmetrics.OutcomeOK {
		model = "_OTHER"
	}
	assert.Equal(t, "chat "+model, s.Name)
	assert.Equal(t, otlpKindClient, s.Kind)
	assert.True(t, s.Start.Equal(r.Start), "span start %v, Record start %v", s.Start, r.Start)
	assert.True(t, s.End.Equal(r.End), "span end %v, Record end %v", s.End, r.End)
	a := s.Attributes
	assert.Equal(t, "chat", a["gen_ai.operation.name"])
	assert.Equal(t, model, a["gen_ai.request.model"])
	if r.Outcome != llmmetrics.OutcomeOK {
		assert.Equal(t, "404", a["error.type"], "a refused request's span")
		assert.Equal(t, "404", r.ErrorType)
		return
	}
	assert.NotContains(t, a, "error.type")
	ttft, ok := r.TTFT()
	require.True(t, ok)
	assert.Equal(t, strconv.FormatFloat(ttft.Seconds(), 'g', -1, 64), a["gen_ai.response.time_to_first_chunk"])
	assert.Equal(t, strconv.Itoa(r.InputTokens), a["gen_ai.usage.input_tokens"])
	assert.Equal(t, strconv.Itoa(r.OutputTokens), a["gen_ai.usage.output_tokens"])
	assert.Equal(t, r.ResponseModel, a["gen_ai.response.model"])
	assert.NotEmpty(t, r.ResponseModel, "the answer names its model")
	assert.Equal(t, r.ResponseID, a["gen_ai.response.id"])
	reasons, err := json.Marshal(r.FinishReasons)
	require.NoError(t, err)
	assert.JSONEq(t, string(reasons), finishReasonsJSON(t, a["gen_ai.response.finish_reasons"]), "finish reasons")
}

// finishReasonsJSON turns an OTLP JSON array of string values, as
// keyValue.text writes it ([{"stringValue":"stop"}]), into a JSON array of
// strings.
func finishReasonsJSON(t *testing.T, text string) string {
	t.Helper()
	var vals []struct {
		S string `json:"stringValue"`
	}
	require.NoError(t, json.Unmarshal([]byte(text), &vals), "%q", text)
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = v.S
	}
	b, err := json.Marshal(out)
	require.NoError(t, err)
	return string(b)
}

// checkExemplars reads the exemplars Prometheus holds for the client TTFT
// histogram: each names the trace id and span id of the span a client
// request was measured in (the GenAI span NewTransport made, a child of the
// request span the replica started) and holds that request's TTFT, and
// Jaeger returns that trace with that span.
func checkExemplars(t *testing.T, prom promClient, jaeger jaegerClient, job string, from, to time.Time, lines []fleet.Line) {
	t.Helper()
	bySpan := map[string]fleet.Line{}
	for _, l := range lines {
		if l.Role == "client" {
			bySpan[l.SpanID] = l
		}
	}
	ex := prom.exemplars(t, "gen_ai_client_operation_time_to_first_chunk_seconds{"+job+"}", from, to)
	require.NotEmpty(t, ex, "the SDK attaches exemplars to measurements made in a sampled span's context")
	for _, e := range ex {
		l, ok := bySpan[e.Labels["span_id"]]
		if !assert.True(t, ok, "exemplar %+v names no client request's span", e) {
			continue
		}
		assert.Equal(t, l.TraceID, e.Labels["trace_id"])
		ttft, ok := l.Record.TTFT()
		require.True(t, ok)
		assert.Equal(t, ttft.Seconds(), e.Value, "exemplar of span %s", l.SpanID)
		spans, ok := jaeger.trace(t, e.Labels["trace_id"])
		if assert.True(t, ok, "the exemplar's trace %s is in Jaeger", e.Labels["trace_id"]) {
			assert.True(t, slices.ContainsFunc(spans, func(s span) bool { return s.SpanID == e.Labels["span_id"] }))
		}
	}
	t.Logf("%d exemplars on the client TTFT histogram, each a request's TTFT and span", len(ex))
}

// Patterns of the logs the test reads addresses from.
var (
	promListening      = regexp.MustCompile(`msg="Listening on".*? address=(\S+)`)
	otlpGRPCListening  = regexp.MustCompile(`Starting GRPC server.*"endpoint": "([^"]+)"`)
	otlpHTTPListening  = regexp.MustCompile(`Starting HTTP server.*"endpoint": "([^"]+)"`)
	collectorReady     = regexp.MustCompile(`(Everything is ready)`)
	jaegerQueryStarted = regexp.MustCompile(`Query server started.*"http_addr": "([^"]+)"`)
)

type prometheus struct {
	promClient
	proc *proc
}

// startPrometheus runs Prometheus 3 with examples/otelcol/prometheus.yml
// and the flags docs/production.md gives, on a port the kernel picks.
func startPrometheus(t *testing.T, bin string, hc *http.Client) prometheus {
	t.Helper()
	dir := t.TempDir()
	p := start(t, "prometheus", bin, []string{
		"--config.file=" + filepath.Join("..", "otelcol", "prometheus.yml"),
		"--storage.tsdb.path=" + filepath.Join(dir, "data"),
		"--web.listen-address=127.0.0.1:0",
		"--web.enable-otlp-receiver",
		"--enable-feature=created-timestamp-zero-ingestion,exemplar-storage",
	}, nil, nil, nil)
	addr := p.awaitLog(t, promListening)[0]
	c := promClient{url: "http://" + addr, hc: hc}
	require.Eventually(t, func() bool {
		resp, err := hc.Get(c.url + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, startTimeout, 100*time.Millisecond, "Prometheus did not become ready")
	return prometheus{promClient: c, proc: p}
}

type jaeger struct {
	client   jaegerClient
	otlpGRPC string // host:port of its OTLP/gRPC receiver
}

// startJaeger runs Jaeger v2 with in-memory storage (testdata/jaeger.yaml),
// every port picked by the kernel and read from its log.
func startJaeger(t *testing.T, bin string, hc *http.Client) jaeger {
	t.Helper()
	p := start(t, "jaeger", bin, []string{"--config=" + filepath.Join("testdata", "jaeger.yaml")}, nil, nil, nil)
	found := p.awaitLog(t, otlpGRPCListening, jaegerQueryStarted, collectorReady)
	return jaeger{client: jaegerClient{url: "http://" + found[1], hc: hc}, otlpGRPC: found[0]}
}

type collector struct {
	*proc
	grpc, http string // host:port of its OTLP receivers
}

// startCollector runs the Collector with examples/otelcol/config.yaml,
// exporting to prometheus (Prometheus's OTLP base URL) and jaeger (Jaeger's
// OTLP/gRPC host:port), its receivers on ports the kernel picks. Its own
// metrics, which it would serve on port 8888, are off.
func startCollector(t *testing.T, bin, prometheus, jaeger string) collector {
	t.Helper()
	p := start(t, "otelcol", bin, []string{
		"--config=" + filepath.Join("..", "otelcol", "config.yaml"),
		"--set=service::telemetry::metrics::level=none",
	}, []string{
		"OTELCOL_OTLP_GRPC_ENDPOINT=127.0.0.1:0",
		"OTELCOL_OTLP_HTTP_ENDPOINT=127.0.0.1:0",
		"PROMETHEUS_OTLP_ENDPOINT=" + prometheus,
		"JAEGER_OTLP_GRPC_ENDPOINT=" + jaeger,
	}, nil, nil)
	found := p.awaitLog(t, otlpGRPCListening, otlpHTTPListening, collectorReady)
	return collector{proc: p, grpc: found[0], http: found[1]}
}
