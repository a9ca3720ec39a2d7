package llmmetrics

import (
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/genaiconv"
)

// This file names and creates the instruments a Tracker records with (the
// package documentation's metric table); tracker.go records with them.

// Attribute keys this library adds to its own counters.
const (
	// OutcomeKey is the attribute of the requests and tokens counters that
	// says how a request ended: "ok", "error" or "canceled".
	OutcomeKey = attribute.Key("llmmetrics.outcome")
	// SLOMetKey is the boolean attribute of the requests and tokens counters
	// that says whether the request met the Tracker's SLO. It is present only
	// when the Tracker has an SLO (WithSLO). Goodput ratio =
	// rate(requests{slo_met="true"}) / rate(requests).
	SLOMetKey = attribute.Key("llmmetrics.slo_met")
	// RoleKey is the attribute ("server" or "client") of the instruments
	// both roles share by name (the requests, in-flight and token counters
	// and the TTFO histogram), so a Tracker that measures both sides of a
	// gateway (NewHandler and NewTransport) counts each side apart.
	RoleKey = attribute.Key("llmmetrics.role")
)

// MetricNames are the instrument names of one role, the one way to name
// them in code (queries, dashboards, tests): see ServerMetricNames and
// ClientMetricNames.
type MetricNames struct {
	TTFT, TPOT, ITL, E2EL string
	// TTFO is the time to first output (answer) token histogram,
	// llmmetrics.time_to_first_output_token for both roles: the GenAI
	// conventions have none.
	TTFO string
	// TokenUsage is the gen_ai.client.token.usage histogram; empty for the
	// server role.
	TokenUsage               string
	Tokens, Requests, Active string
	// CachedInputTokens and CacheWriteInputTokens count the input tokens
	// that ended requests read from the provider's prompt cache and wrote
	// to it (llmmetrics.tokens.cached_input and .cache_write_input, both
	// roles), with the attributes of the tokens counter's input series:
	// rate(cached) / rate(tokens{gen_ai.token.type="input"}) is the
	// fleet's prefix cache hit rate. semconv v1.41.0 has no such
	// instrument.
	CachedInputTokens, CacheWriteInputTokens string
}

// Names of the instruments that are not (yet) in the GenAI conventions.
const (
	metricTTFO                  = "llmmetrics.time_to_first_output_token"
	metricServerITL             = "llmmetrics.inter_token_latency"
	metricClientTPOT            = "llmmetrics.time_per_output_token"
	metricTokens                = "llmmetrics.tokens"
	metricRequests              = "llmmetrics.requests"
	metricActive                = "llmmetrics.requests.active"
	metricCachedInputTokens     = "llmmetrics.tokens.cached_input"
	metricCacheWriteInputTokens = "llmmetrics.tokens.cache_write_input"
)

// ServerMetricNames returns the instrument names of the server role
// (NewHandler, Tracker.Start).
func ServerMetricNames() MetricNames { return sideServer.metricNames() }

// ClientMetricNames returns the instrument names of the client role
// (NewTransport, Middleware, Tracker.StartClient).
func ClientMetricNames() MetricNames { return sideClient.metricNames() }

// metricNames returns the instrument names of the role (see the package
// documentation's metric table).
func (r side) metricNames() MetricNames {
	if r == sideClient {
		return MetricNames{
			TTFT:       genaiconv.ClientOperationTimeToFirstChunk{}.Name(),
			TPOT:       metricClientTPOT,
			ITL:        genaiconv.ClientOperationTimePerOutputChunk{}.Name(),
			E2EL:       genaiconv.ClientOperationDuration{}.Name(),
			TTFO:       metricTTFO,
			TokenUsage: genaiconv.ClientTokenUsage{}.Name(),
			Tokens:     metricTokens, Requests: metricRequests, Active: metricActive,
			CachedInputTokens: metricCachedInputTokens, CacheWriteInputTokens: metricCacheWriteInputTokens,
		}
	}
	return MetricNames{
		TTFT:   genaiconv.ServerTimeToFirstToken{}.Name(),
		TPOT:   genaiconv.ServerTimePerOutputToken{}.Name(),
		ITL:    metricServerITL,
		E2EL:   genaiconv.ServerRequestDuration{}.Name(),
		TTFO:   metricTTFO,
		Tokens: metricTokens, Requests: metricRequests, Active: metricActive,
		CachedInputTokens: metricCachedInputTokens, CacheWriteInputTokens: metricCacheWriteInputTokens,
	}
}

// Explicit bucket boundaries, in seconds (tokens for tokenBuckets): the
// GenAI semantic conventions' recommendations, and a finer set for ITL.
var (
	serverTTFTBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}
	tpotBuckets       = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5}
	itlBuckets        = []float64{0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1, 2.5}
	durationBuckets   = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	tokenBuckets      = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
)

type instruments struct {
	ttft, ttfo, tpot, itl, e2el metric.Float64Histogram
	tokenUsage                  metric.Int64Histogram // client role only
	tokens, requests            metric.Int64Counter
	cachedInput, cacheWrite     metric.Int64Counter
	active                      metric.Int64UpDownCounter
	role                        side // whose names these are (RoleKey on the shared ones)
}

// newInstruments creates the instruments of both roles, indexed by side:
// each role's latency histograms, and once the instruments both roles
// share by name (their measurements carry RoleKey).
func newInstruments(cfg config) ([2]instruments, error) {
	m := cfg.provider.Meter(ScopeName, metric.WithInstrumentationVersion(version), metric.WithSchemaURL(semconv.SchemaURL))
	var (
		in   [2]instruments
		errs []error
	)
	check := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	shared := &in[sideServer]
	names := ServerMetricNames()
	var err error
	shared.ttfo, err = m.Float64Histogram(names.TTFO, metric.WithUnit("s"), bounds(serverTTFTBuckets),
		metric.WithDescription("Time to first output token: from the start of the request to the first chunk that carries answer tokens (content, refusal, tool calls), after any reasoning tokens."))
	check(err)
	shared.tokens, err = m.Int64Counter(names.Tokens, metric.WithUnit("{token}"),
		metric.WithDescription("Input and output tokens of ended requests, by gen_ai.token.type, outcome and SLO result."))
	check(err)
	shared.cachedInput, err = m.Int64Counter(names.CachedInputTokens, metric.WithUnit("{token}"),
		metric.WithDescription("Input tokens of ended requests that the provider read from its prompt cache (part of the input tokens), by outcome and SLO result."))
	check(err)
	shared.cacheWrite, err = m.Int64Counter(names.CacheWriteInputTokens, metric.WithUnit("{token}"),
		metric.WithDescription("Input tokens of ended requests that the provider wrote to its prompt cache (part of the input tokens), by outcome and SLO result."))
	check(err)
	shared.requests, err = m.Int64Counter(names.Requests, metric.WithUnit("{request}"),
		metric.WithDescription("Ended requests, by outcome and SLO result."))
	check(err)
	shared.active, err = m.Int64UpDownCounter(names.Active, metric.WithUnit("{request}"),
		metric.WithDescription("Requests started and not yet ended."))
	check(err)
	in[sideClient] = *shared
	in[sideServer].role, in[sideClient].role = sideServer, sideClient
	check(serverLatencies(m, &in[sideServer]))
	check(clientLatencies(m, &in[sideClient]))
	return in, errors.Join(errs...)
}

func bounds(b []float64) metric.Float64HistogramOption {
	return metric.WithExplicitBucketBoundaries(b...)
}

// serverLatencies creates the server role's latency histograms.
func serverLatencies(m metric.Meter, in *instruments) error {
	ttft, err1 := genaiconv.NewServerTimeToFirstToken(m, bounds(serverTTFTBuckets))
	tpot, err2 := genaiconv.NewServerTimePerOutputToken(m, bounds(tpotBuckets))
	e2el, err3 := genaiconv.NewServerRequestDuration(m, bounds(durationBuckets))
	in.ttft, in.tpot, in.e2el = ttft.Inst(), tpot.Inst(), e2el.Inst()
	var err4 error
	in.itl, err4 = m.Float64Histogram(metricServerITL, metric.WithUnit("s"), bounds(itlBuckets),
		metric.WithDescription("Inter-token latency: each gap between consecutive token-carrying chunks of a response."))
	return errors.Join(err1, err2, err3, err4)
}

// clientLatencies creates the client role's latency and token usage
// histograms.
func clientLatencies(m metric.Meter, in *instruments) error {
	ttft, err1 := genaiconv.NewClientOperationTimeToFirstChunk(m, bounds(durationBuckets))
	itl, err2 := genaiconv.NewClientOperationTimePerOutputChunk(m, bounds(itlBuckets))
	e2el, err3 := genaiconv.NewClientOperationDuration(m, bounds(durationBuckets))
	usage, err4 := genaiconv.NewClientTokenUsage(m, metric.WithExplicitBucketBoundaries(tokenBuckets...))
	in.ttft, in.itl, in.e2el, in.tokenUsage = ttft.Inst(), itl.Inst(), e2el.Inst(), usage.Inst()
	var err5 error
	in.tpot, err5 = m.Float64Histogram(metricClientTPOT, metric.WithUnit("s"), bounds(tpotBuckets),
		metric.WithDescription("Time per output token after the first, (last token − first token) / (output tokens − 1), for each successful response with more than one output token."))
	return errors.Join(err1, err2, err3, err4, err5)
}
