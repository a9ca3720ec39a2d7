package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/examples/internal/promtest"
	"github.com/llmmetrics/llmmetrics/otelsdk"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/otlptranslator"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.yaml.in/yaml/v3"
)

// TestDashboardIsGenerated: llmmetrics.json is what the generator writes
// (run "go generate ./examples/grafana" after changing main.go).
func TestDashboardIsGenerated(t *testing.T) {
	want, err := Dashboard()
	require.NoError(t, err)
	got, err := os.ReadFile("llmmetrics.json")
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got), "llmmetrics.json is stale: run go generate ./examples/grafana")
}

// target is one query of the dashboard file.
type target struct {
	panel, role, legend, expr string
}

// targets reads every panel's queries from llmmetrics.json, with the role
// of the row they are under.
func targets(t *testing.T) []target {
	b, err := os.ReadFile("llmmetrics.json")
	require.NoError(t, err)
	var d struct {
		Panels []struct {
			Type, Title string
			Targets     []struct{ Expr, LegendFormat string }
		}
	}
	require.NoError(t, json.Unmarshal(b, &d))
	var ts []target
	role := ""
	for _, p := range d.Panels {
		if p.Type == "row" {
			role = strings.ToLower(strings.Fields(p.Title)[0])
			continue
		}
		for _, q := range p.Targets {
			ts = append(ts, target{panel: p.Title, role: role, legend: q.LegendFormat, expr: q.Expr})
		}
	}
	return ts
}

// TestQueriesInPrometheus evaluates every query of the dashboard in a real
// Prometheus that scrapes two exporters fed with the same requests, one
// with classic buckets and one with native histograms
// (otelsdk.ExponentialHistograms), each through a server-role and a
// client-role Tracker. Every query must return series, with values checked
// against Summarize of the requests: percentiles within the classic
// bucket that holds them, or 2 % for native histograms (their stated error
// is under 1 %); rates and ratios of rates against the counts within
// rateTolerance.
//
// rateTolerance: rate() divides a series' increase by its sampled span and
// extrapolates towards the window's edges, each series by up to half a
// scrape interval (500 ms here) and no further than where it would reach
// zero, so two series of one job scaled by slightly different factors
// (1.2 % apart seen, once each series holds the first batch over several
// scrapes) and a ratio of rates differs from the ratio of counts by that
// much; a wrong selector (a label missed or misspelt) is off by far more
// (e.g. attainment 100 % instead of 86 %).
const rateTolerance = 0.03

func TestQueriesInPrometheus(t *testing.T) {
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus binary not installed (.ci/run installs Debian's prometheus package)")
	}
	classic, native := newExporter(t), newExporter(t, otelsdk.ExponentialHistograms())
	slo := llmmetrics.SLO{TTFT: 400 * time.Millisecond}
	feeder := newFeeder(t, slo, classic, native)

	// The first batch is scraped before the second is recorded, so every
	// rate() over the window sees exactly the second (see
	// examples/prometheus/native_test.go for why the gate).
	var gate sync.RWMutex
	// Equal batches: Prometheus' rate() extrapolates a series towards the
	// window's start no further than to where it would reach zero, so a
	// first batch small against the second would scale some series less
	// than others.
	const first, second = 1000, 1000
	feeder.feed(first)
	api := startPrometheus(t, bin, map[string]string{"classic": promtest.Serve(t, gated(&gate, classic)), "native": promtest.Serve(t, gated(&gate, native))})
	for _, job := range []string{"classic", "native"} {
		api.waitFor(t, fmt.Sprintf(`sum(llmmetrics_requests_total{job=%q, llmmetrics_role="client"})`, job), first)
		// Every counter series holds the first batch over several scrapes
		// (3 s) before the second is recorded: rate() extrapolates a series
		// towards the window's start no further than to where it would
		// reach zero, and over one or two samples that limit differs
		// between series by tens of percent.
		api.waitAtLeast(t, fmt.Sprintf(`min(count_over_time({__name__=~"llmmetrics_requests_total|llmmetrics_tokens_total", job=%q}[10m]))`, job), 6)
	}
	gate.Lock()
	records := feeder.feed(second)
	gate.Unlock()
	for _, job := range []string{"classic", "native"} {
		api.waitFor(t, fmt.Sprintf(`sum(llmmetrics_requests_total{job=%q, llmmetrics_role="client"})`, job), first+second)
	}
	// Every query is evaluated at one instant in the past, once each job
	// has a sample after it: scrapes go on while the queries run, and an
	// instant still to come (or one whose last scrape is not stored yet)
	// would let a later query see one more sample than an earlier one, so
	// rate()'s extrapolation, and the factor below, would differ between
	// them by several percent.
	at := time.Now()
	api.at = float64(at.UnixMilli()) / 1000
	for _, job := range []string{"classic", "native"} {
		api.waitAtLeast(t, fmt.Sprintf(`min(timestamp(llmmetrics_requests_total{job=%q}))`, job), api.at+0.001)
	}
	sum := llmmetrics.Summarize(records, llmmetrics.SummaryOptions{SLO: slo, Percentiles: []float64{50, 90, 99}})
	require.Equal(t, second, sum.Requests)
	require.Greater(t, sum.Failed, 0)

	// factor is rate() ÷ increase for every counter query (both jobs summed).
	factor := func(t *testing.T, role string) float64 {
		v := api.vector(t, fmt.Sprintf(`sum(rate(llmmetrics_requests_total{llmmetrics_role=%q}[10m]))`, role))
		require.Len(t, v, 1)
		return v[0].value / float64(sum.Requests)
	}
	for _, tg := range targets(t) {
		t.Run(tg.role+"/"+tg.panel+"/"+tg.legend, func(t *testing.T) {
			q := strings.NewReplacer("$__rate_interval", "10m", "$model", ".*").Replace(tg.expr)
			v := api.vector(t, q)
			require.NotEmpty(t, v, "no series for %s", q)
			got := v[0]
			assert.Equal(t, "m1", got.labels["gen_ai_request_model"])
			if tg.panel != "Tokens per second" && tg.panel != "Requests by outcome" {
				require.Len(t, v, 1, "one model, one series")
			}
			f := factor(t, tg.role)
			switch {
			case strings.HasPrefix(q, "histogram_quantile("):
				checkQuantile(t, tg, q, got.value, records)
			case tg.panel == "Tokens per second":
				t.Skip("two series: checked below")
			case tg.panel == "Requests by outcome":
				t.Skip("two series: checked below")
			case tg.panel == "Cached-token share":
				// The token counters count every ended request (the
				// Summary's totals only completed ones).
				var cached, input int
				for _, r := range records {
					cached += r.CachedInputTokens
					input += r.InputTokens
				}
				assert.InEpsilon(t, float64(cached)/float64(input), got.value, rateTolerance)
			case tg.panel == "SLO attainment":
				assert.InEpsilon(t, sum.Goodput.Attainment, got.value, rateTolerance)
			case strings.HasPrefix(tg.legend, "good requests/s"):
				assert.InEpsilon(t, float64(sum.Goodput.Good)*f, got.value, rateTolerance)
			case strings.HasPrefix(tg.legend, "good output tokens/s"):
				assert.InEpsilon(t, float64(sum.Goodput.GoodTokens)*f, got.value, rateTolerance)
			case tg.panel == "Requests in flight":
				assert.Equal(t, 0.0, got.value, "every request ended")
			default:
				t.Fatalf("no check for %q", tg.panel)
			}
		})
	}
	for _, role := range []string{"server", "client"} {
		t.Run(role+"/series by label", func(t *testing.T) {
			f := factor(t, role)
			for _, tg := range targets(t) {
				if tg.role != role || (tg.panel != "Tokens per second" && tg.panel != "Requests by outcome") {
					continue
				}
				v := api.vector(t, strings.NewReplacer("$__rate_interval", "10m", "$model", ".*").Replace(tg.expr))
				got := map[string]float64{}
				for _, s := range v {
					got[s.labels["gen_ai_token_type"]+s.labels["llmmetrics_outcome"]] = s.value
				}
				if tg.panel == "Tokens per second" {
					// The token counters count every ended request.
					var input, output int
					for _, r := range records {
						input += r.InputTokens
						output += r.OutputTokens
					}
					assert.InEpsilon(t, float64(input)*f, got["input"], rateTolerance)
					assert.InEpsilon(t, float64(output)*f, got["output"], rateTolerance)
				} else {
					assert.InEpsilon(t, float64(sum.Completed)*f, got["ok"], rateTolerance)
					assert.InEpsilon(t, float64(sum.Failed)*f, got["error"], rateTolerance)
				}
			}
		})
	}
}

// checkQuantile checks a histogram_quantile query against the exact
// percentile of the metric it reads.
func checkQuantile(t *testing.T, tg target, q string, got float64, records []llmmetrics.Record) {
	m := regexp.MustCompile(`^histogram_quantile\(([0-9.]+), sum by \([^)]*\) \(rate\(([a-z_]+?)(_bucket)?\{`).FindStringSubmatch(q)
	require.NotNil(t, m, q)
	p, _ := strconv.ParseFloat(m[1], 64)
	name, isClassic := m[2], m[3] != ""
	var xs []float64
	var buckets []float64
	get := func(f func(llmmetrics.Record) (time.Duration, bool)) {
		for _, r := range records {
			if d, ok := f(r); ok { // recorded whatever the outcome (DESIGN §3)
				xs = append(xs, d.Seconds())
			}
		}
	}
	switch {
	case strings.Contains(name, "first_token") || strings.Contains(name, "first_chunk"):
		get(llmmetrics.Record.TTFT)
		buckets = serverTTFTBuckets
		if tg.role == "client" {
			buckets = durationBuckets
		}
	case strings.Contains(name, "first_output"):
		// Both roles' Trackers on one MeterProvider create this one
		// instrument name; the SDK keeps the first one's buckets (the
		// server's, here).
		get(llmmetrics.Record.TTFO)
		buckets = serverTTFTBuckets
	case strings.Contains(name, "per_output_token"):
		get(llmmetrics.Record.TPOT)
		buckets = tpotBuckets
	case strings.Contains(name, "inter_token") || strings.Contains(name, "per_output_chunk"):
		for _, r := range records {
			for _, g := range r.ITL {
				xs = append(xs, g.Seconds())
			}
		}
		buckets = itlBuckets
	case strings.Contains(name, "duration"):
		// Every ended request is in the E2EL histogram, whatever its outcome.
		for _, r := range records {
			d, _ := r.E2EL()
			xs = append(xs, d.Seconds())
		}
		buckets = durationBuckets
	default:
		t.Fatalf("unknown histogram %s", name)
	}
	require.NotEmpty(t, xs)
	exact := percentile(xs, 100*p)
	if !isClassic {
		assert.InEpsilon(t, exact, got, 0.02, "native p%g of %s: exact %.4f s", 100*p, name, exact)
		return
	}
	// numpy's percentile lies between two order statistics; Prometheus
	// interpolates inside the bucket holding the p·N-th value: both lie
	// between the lower bound of the lower neighbour's bucket and the upper
	// bound of the upper one's.
	rank := p * float64(len(xs)-1)
	lo, _ := bucketOf(buckets, xs[int(rank)])
	_, hi := bucketOf(buckets, xs[min(int(rank)+1, len(xs)-1)])
	assert.GreaterOrEqual(t, got, lo, "classic p%g of %s: exact %.4f s", 100*p, name, exact)
	assert.LessOrEqual(t, got, hi, "classic p%g of %s: exact %.4f s", 100*p, name, exact)
}

// percentile sorts xs and returns numpy's linear percentile p.
func percentile(xs []float64, p float64) float64 {
	slices.Sort(xs)
	h := float64(len(xs)-1) * p / 100
	lo := int(math.Floor(h))
	hi := min(lo+1, len(xs)-1)
	return xs[lo] + (h-float64(lo))*(xs[hi]-xs[lo])
}

// bucketOf returns the bounds (lower exclusive, upper inclusive) of the
// bucket that holds v.
func bucketOf(b []float64, v float64) (lo, hi float64) {
	for i, ub := range b {
		if v <= ub {
			if i > 0 {
				lo = b[i-1]
			}
			return lo, ub
		}
	}
	return b[len(b)-1], b[len(b)-1] // +Inf: Prometheus answers the last finite bound
}

// feeder records requests with explicit times into a server-role and a
// client-role Tracker on every exporter.
type feeder struct {
	trackers []*llmmetrics.Tracker
	client   []bool // whether each tracker measures the client side
	rng      *rand.Rand
	n        int
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newFeeder(t *testing.T, slo llmmetrics.SLO, mps ...*exporter) *feeder {
	f := &feeder{rng: rand.New(rand.NewPCG(27, 1))}
	for _, mp := range mps {
		for _, client := range []bool{false, true} {
			tr, err := llmmetrics.NewTracker(llmmetrics.WithMeterProvider(mp.provider), llmmetrics.WithSLO(slo),
				llmmetrics.WithAttributes(semconv.GenAIRequestModel("m1")), llmmetrics.WithoutWindow())
			require.NoError(t, err)
			f.trackers = append(f.trackers, tr)
			f.client = append(f.client, client)
		}
	}
	return f
}

// feed records count requests (one in 25 fails after its first token;
// one in 3 reasons before it answers) and returns them.
func (f *feeder) feed(count int) []llmmetrics.Record {
	ctx := context.Background()
	out := make([]llmmetrics.Record, count)
	for i := range out {
		start := t0.Add(time.Duration(f.n) * 50 * time.Millisecond)
		f.n++
		at := start.Add(dur(0.25 * math.Exp(0.4*f.rng.NormFloat64())))
		reqs := make([]*llmmetrics.Request, len(f.trackers))
		for j, tr := range f.trackers {
			if f.client[j] {
				reqs[j] = tr.StartClientAt(ctx, start)
			} else {
				reqs[j] = tr.StartAt(ctx, start)
			}
		}
		reasoning := f.n%3 == 0
		chunks := 8 + f.rng.IntN(24)
		for c := range chunks {
			if c > 0 {
				at = at.Add(dur(0.03 * math.Exp(0.5*f.rng.NormFloat64())))
			}
			for _, r := range reqs {
				if reasoning && c < 4 {
					r.ReasoningChunkAt(at, 2)
				} else {
					r.ChunkAt(at, 2)
				}
			}
		}
		var err error
		if f.n%25 == 0 {
			err = errors.New("upstream reset")
		}
		input := 200 + f.rng.IntN(800)
		for j, r := range reqs {
			r.SetUsage(input, 2*chunks)
			r.SetCachedInputTokens(input/4, 0)
			rec := r.EndAt(at.Add(time.Millisecond), err)
			if j == 0 {
				out[i] = rec
			}
		}
	}
	return out
}

func dur(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }

// exporter is a MeterProvider whose metrics its handler serves in the
// Prometheus format (protobuf when asked, so native histograms pass).
type exporter struct {
	provider *sdkmetric.MeterProvider
	http.Handler
}

func newExporter(t *testing.T, opts ...sdkmetric.Option) *exporter {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	require.NoError(t, err)
	return &exporter{provider: sdkmetric.NewMeterProvider(append([]sdkmetric.Option{sdkmetric.WithReader(exp)}, opts...)...),
		Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{})}
}

func gated(gate *sync.RWMutex, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gate.RLock()
		defer gate.RUnlock()
		h.ServeHTTP(w, r)
	})
}

type promAPI struct {
	url string
	hc  *http.Client
	at  float64 // evaluation time of vector (Unix seconds)
}

// startPrometheus runs Prometheus on a loopback port the kernel picks,
// scraping the jobs every 500 ms, native histograms on.
func startPrometheus(t *testing.T, bin string, jobs map[string]string) promAPI {
	cfg := "global:\n  scrape_interval: 500ms\nscrape_configs:\n"
	for _, job := range []string{"classic", "native"} {
		cfg += fmt.Sprintf("  - job_name: %q\n    static_configs:\n      - targets: [%q]\n", job, jobs[job])
	}
	url, hc := promtest.Start(t, bin, cfg, "--enable-feature=native-histograms")
	return promAPI{url: url, hc: hc}
}

// series is one element of an instant vector.
type series struct {
	labels map[string]string
	value  float64
}

// vector runs the instant query q and returns its series.
func (p promAPI) vector(t *testing.T, q string) []series {
	resp, err := p.hc.Get(p.url + "/api/v1/query?query=" + url.QueryEscape(q) + "&time=" + strconv.FormatFloat(p.at, 'f', 3, 64))
	require.NoError(t, err)
	defer resp.Body.Close()
	var body struct {
		Status, Error string
		Data          struct {
			ResultType string
			Result     []struct {
				Metric map[string]string
				Value  [2]any
			}
		}
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	require.Equal(t, "success", body.Status, "%s: %s", q, body.Error)
	var out []series
	for _, r := range body.Data.Result {
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		require.NoError(t, err)
		out = append(out, series{labels: r.Metric, value: v})
	}
	return out
}

func (p promAPI) waitFor(t *testing.T, q string, want float64) {
	p.waitUntil(t, q, want, func(v float64) bool { return v == want })
}

// waitAtLeast waits until the instant query q (one series) is at least min.
func (p promAPI) waitAtLeast(t *testing.T, q string, min float64) {
	p.waitUntil(t, q, min, func(v float64) bool { return v >= min })
}

func (p promAPI) waitUntil(t *testing.T, q string, want float64, ok func(float64) bool) {
	require.Eventually(t, func() bool {
		resp, err := p.hc.Get(p.url + "/api/v1/query?query=" + url.QueryEscape(q))
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var body struct {
			Data struct{ Result []struct{ Value [2]any } }
		}
		if json.NewDecoder(resp.Body).Decode(&body) != nil || len(body.Data.Result) != 1 {
			return false
		}
		s, _ := body.Data.Result[0].Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		return err == nil && ok(v)
	}, 60*time.Second, 100*time.Millisecond, "Prometheus never answered %s = %v", q, want)
}

// The explicit bucket boundaries (seconds) the library passes to its
// histograms: the GenAI semantic conventions' advice, as the README's
// metric table lists them.
var (
	serverTTFTBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}
	tpotBuckets       = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5}
	itlBuckets        = []float64{0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1, 2.5}
	durationBuckets   = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
)

// TestExemplars: every latency panel asks for exemplars on its two p99
// queries (classic and native: only one has series, so each exemplar
// shows once) and on no other, and the provisioned Prometheus data source
// links the exemplars' trace id label, the one Prometheus stores OTLP and
// scraped exemplars under, to a Jaeger data source of the same file.
func TestExemplars(t *testing.T) {
	b, err := os.ReadFile("llmmetrics.json")
	require.NoError(t, err)
	var d struct {
		Panels []struct {
			PanelTitle string `json:"title"`
			Targets    []struct {
				Expr     string
				Exemplar bool
			}
		}
	}
	require.NoError(t, json.Unmarshal(b, &d))
	latencyPanels := 0
	for _, p := range d.Panels {
		var with []string
		for _, q := range p.Targets {
			if q.Exemplar {
				with = append(with, q.Expr)
			}
		}
		latency := slices.ContainsFunc([]string{"TTFT:", "TTFO:", "TPOT:", "ITL:", "E2EL:"}, func(prefix string) bool {
			return strings.HasPrefix(p.PanelTitle, prefix)
		})
		if !latency {
			assert.Empty(t, with, "panel %q", p.PanelTitle)
			continue
		}
		latencyPanels++
		require.Len(t, with, 2, "panel %q", p.PanelTitle)
		for _, e := range with {
			assert.True(t, strings.HasPrefix(e, "histogram_quantile(0.99, "), "panel %q: %s", p.PanelTitle, e)
		}
	}
	assert.Equal(t, 10, latencyPanels, "TTFT, TTFO, TPOT, ITL and E2EL of both roles")

	b, err = os.ReadFile("provisioning/datasources.yaml")
	require.NoError(t, err)
	var prov struct {
		APIVersion  int `yaml:"apiVersion"`
		Datasources []struct {
			UID      string `yaml:"uid"`
			Type     string `yaml:"type"`
			JSONData struct {
				Destinations []struct {
					Name          string `yaml:"name"`
					DatasourceUID string `yaml:"datasourceUid"`
				} `yaml:"exemplarTraceIdDestinations"`
			} `yaml:"jsonData"`
		} `yaml:"datasources"`
	}
	require.NoError(t, yaml.Unmarshal(b, &prov))
	assert.Equal(t, 1, prov.APIVersion)
	types := map[string]string{}
	for _, ds := range prov.Datasources {
		types[ds.UID] = ds.Type
	}
	links := 0
	for _, ds := range prov.Datasources {
		if ds.Type != "prometheus" {
			continue
		}
		for _, dest := range ds.JSONData.Destinations {
			links++
			assert.Equal(t, otlptranslator.ExemplarTraceIDKey, dest.Name)
			assert.Equal(t, "jaeger", types[dest.DatasourceUID], "destination %q", dest.DatasourceUID)
		}
	}
	assert.Equal(t, 1, links)
}
