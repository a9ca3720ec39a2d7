// Command grafana writes llmmetrics.json, a Grafana dashboard of the
// metrics an llmmetrics Tracker exports through the OpenTelemetry
// Prometheus exporter, built with the Grafana Foundation SDK:
//
//	go generate ./examples/grafana   # or: go run ./examples/grafana -o llmmetrics.json
//
// One row per role (a server or gateway measured by NewHandler, a client
// measured by NewTransport): TTFT, TTFO, TPOT, ITL and E2EL percentiles
// (p50, p90, p99 from classic buckets and from native histograms: each
// panel shows whichever the Prometheus has), tokens/s in and out, the
// cached-token share, requests by outcome, SLO attainment and goodput
// from the counters, and requests in flight, per model ($model). The p99
// of every latency panel shows its exemplars: single requests, each linked
// to its trace when the Prometheus data source is set up as
// provisioning/datasources.yaml does (exemplar trace ids to a Jaeger data
// source).
package main

//go:generate go run . -o llmmetrics.json

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// role is one side a Tracker measures, with its Prometheus metric names
// (the histograms' base names, without _bucket; docs/fleet-percentiles.md).
type role struct {
	name, title                string
	ttft, ttfo, tpot, itl, e2e string
}

var roles = []role{
	{name: "server", title: "Server (NewHandler: a model server or gateway)",
		ttft: "gen_ai_server_time_to_first_token_seconds", ttfo: "llmmetrics_time_to_first_output_token_seconds",
		tpot: "gen_ai_server_time_per_output_token_seconds", itl: "llmmetrics_inter_token_latency_seconds",
		e2e: "gen_ai_server_request_duration_seconds"},
	{name: "client", title: "Client (NewTransport: calls to a provider)",
		ttft: "gen_ai_client_operation_time_to_first_chunk_seconds", ttfo: "llmmetrics_time_to_first_output_token_seconds",
		tpot: "llmmetrics_time_per_output_token_seconds", itl: "gen_ai_client_operation_time_per_output_chunk_seconds",
		e2e: "gen_ai_client_operation_duration_seconds"},
}

// Panel geometry: two panels a row of the grid (24 wide).
const (
	panelWidth  = 12
	panelHeight = 8
)

func main() {
	out := flag.String("o", "llmmetrics.json", "file to write the dashboard to")
	flag.Parse()
	b, err := Dashboard()
	if err == nil {
		err = os.WriteFile(*out, b, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "grafana:", err)
		os.Exit(1)
	}
}

// Dashboard returns the dashboard JSON.
func Dashboard() ([]byte, error) {
	// The classic (v1) dashboard model, which every Grafana imports; the
	// SDK prefers dashboardv2, which needs Grafana 12's v2 API.
	//lint:ignore SA1019 the v1 model is the one Grafana 9–12 import from a JSON file
	d := dashboard.NewDashboardBuilder("llmmetrics").
		Uid("llmmetrics").
		Description("LLM serving metrics of the llmmetrics library (TTFT, TTFO, TPOT, ITL, E2EL, tokens, goodput), per model and role.").
		Tags([]string{"llmmetrics", "llm", "genai"}).
		Refresh("30s").
		Time("now-1h", "now").
		Timezone(common.TimeZoneBrowser).
		WithVariable(dashboard.NewDatasourceVariableBuilder("datasource").Label("Prometheus").Type("prometheus")).
		WithVariable(dashboard.NewQueryVariableBuilder("model").Label("model").
			Datasource(datasourceRef).
			Query(dashboard.StringOrMap{String: ptr("label_values(llmmetrics_requests_total, gen_ai_request_model)")}).
			Multi(true).IncludeAll(true).AllValue(".*").
			Refresh(dashboard.VariableRefreshOnTimeRangeChanged))
	for _, r := range roles {
		d = d.WithRow(dashboard.NewRowBuilder(r.title))
		for _, p := range panels(r) {
			d = d.WithPanel(p.PanelBuilder)
		}
	}
	built, err := d.Build()
	if err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(built, "", "  ")
	return append(b, '\n'), err
}

var datasourceRef = common.DataSourceRef{Type: ptr("prometheus"), Uid: ptr("${datasource}")}

func ptr[T any](v T) *T { return &v }

// Selectors every query shares.
const (
	window = "$__rate_interval"
	model  = `gen_ai_request_model=~"$model"`
	by     = "gen_ai_request_model"
)

// panels returns the panels of one role.
func panels(r role) []*panelBuilder {
	sel := fmt.Sprintf(`llmmetrics_role=%q, %s`, r.name, model)
	var ps []*panelBuilder
	for _, l := range []struct{ title, metric, sel, desc string }{
		{"TTFT: time to first token", r.ttft, model, "Time from the request's start to the first chunk that carries tokens."},
		{"TTFO: time to first output token", r.ttfo, sel, "Time to the first answer token, after any reasoning."},
		{"TPOT: time per output token", r.tpot, model, "(last token − first token) / (output tokens − 1), one value a request."},
		{"ITL: inter-token latency", r.itl, model, "Every gap between chunks that carry tokens."},
		{"E2EL: end-to-end latency", r.e2e, model, "Time from the request's start to its last token (or its end)."},
	} {
		p := panel(l.title, l.desc, "s")
		for _, q := range []float64{0.50, 0.90, 0.99} {
			// The p99 queries also ask for the exemplars of the series they
			// read (the _bucket series or the native histogram, whichever
			// exists, so each exemplar shows once): points of single
			// requests, each with the trace id of its span, which the
			// Prometheus data source links to the trace data source
			// (provisioning/datasources.yaml).
			exemplars := q == 0.99
			p = p.withTarget(fmt.Sprintf(`histogram_quantile(%g, sum by (le, %s) (rate(%s_bucket{%s}[%s])))`, q, by, l.metric, l.sel, window),
				fmt.Sprintf("p%g {{%s}}", 100*q, by), exemplars)
			p = p.withTarget(fmt.Sprintf(`histogram_quantile(%g, sum by (%s) (rate(%s{%s}[%s])))`, q, by, l.metric, l.sel, window),
				fmt.Sprintf("p%g {{%s}} (native)", 100*q, by), exemplars)
		}
		ps = append(ps, p)
	}
	counter := func(name, extra string) string {
		return fmt.Sprintf(`%s{%s%s}`, name, sel, extra)
	}
	ps = append(ps,
		panel("Tokens per second", "Input and output tokens per second of ended requests.", "short").
			WithTarget(fmt.Sprintf(`sum by (%s, gen_ai_token_type) (rate(%s[%s]))`, by, counter("llmmetrics_tokens_total", `, gen_ai_token_type=~"input|output"`), window),
				"{{gen_ai_token_type}} {{"+by+"}}"),
		panel("Cached-token share", "Share of input tokens read from the provider's prompt cache (prefix cache hit rate).", "percentunit").
			WithTarget(fmt.Sprintf(`sum by (%s) (rate(%s[%s])) / sum by (%s) (rate(%s[%s]))`,
				by, counter("llmmetrics_tokens_cached_input_total", ""), window, by, counter("llmmetrics_tokens_total", `, gen_ai_token_type="input"`), window),
				"{{"+by+"}}"),
		panel("Requests by outcome", "Ended requests per second by outcome (ok, error, canceled).", "reqps").
			WithTarget(fmt.Sprintf(`sum by (%s, llmmetrics_outcome) (rate(%s[%s]))`, by, counter("llmmetrics_requests_total", ""), window),
				"{{llmmetrics_outcome}} {{"+by+"}}"),
		panel("SLO attainment", "Share of ended requests that met the Tracker's SLO (WithSLO): requests{slo_met=true} / requests.", "percentunit").
			WithTarget(fmt.Sprintf(`sum by (%s) (rate(%s[%s])) / sum by (%s) (rate(%s[%s]))`,
				by, counter("llmmetrics_requests_total", `, llmmetrics_slo_met="true"`), window, by, counter("llmmetrics_requests_total", `, llmmetrics_slo_met=~"true|false"`), window),
				"{{"+by+"}}"),
		panel("Goodput", "Requests per second that met the SLO, and their output tokens per second.", "short").
			WithTarget(fmt.Sprintf(`sum by (%s) (rate(%s[%s]))`, by, counter("llmmetrics_requests_total", `, llmmetrics_slo_met="true"`), window),
				"good requests/s {{"+by+"}}").
			WithTarget(fmt.Sprintf(`sum by (%s) (rate(%s[%s]))`, by, counter("llmmetrics_tokens_total", `, gen_ai_token_type="output", llmmetrics_slo_met="true"`), window),
				"good output tokens/s {{"+by+"}}"),
		panel("Requests in flight", "Requests started and not yet ended.", "short").
			WithTarget(fmt.Sprintf(`sum by (%s) (%s)`, by, counter("llmmetrics_requests_active", "")), "{{"+by+"}}"),
	)
	return ps
}

// panelBuilder is a time series panel that names its queries A, B, C….
type panelBuilder struct {
	*timeseries.PanelBuilder
	queries int
}

func panel(title, desc, unit string) *panelBuilder {
	return &panelBuilder{PanelBuilder: timeseries.NewPanelBuilder().Title(title).Description(desc).Unit(unit).Min(0).
		Datasource(datasourceRef).Height(panelHeight).Span(panelWidth)}
}

// WithTarget adds the query expr, its series named by legend.
func (p *panelBuilder) WithTarget(expr, legend string) *panelBuilder {
	return p.withTarget(expr, legend, false)
}

// withTarget adds the query expr, its series named by legend, and with
// exemplars, the exemplars of the series it reads.
func (p *panelBuilder) withTarget(expr, legend string, exemplars bool) *panelBuilder {
	q := prometheus.NewDataqueryBuilder().Expr(expr).LegendFormat(legend).
		Datasource(datasourceRef).RefId(string(rune('A' + p.queries)))
	if exemplars {
		q = q.Exemplar(true)
	}
	p.PanelBuilder.WithTarget(q)
	p.queries++
	return p
}
