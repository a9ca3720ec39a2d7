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

// MetricNames are the instrument names a Tracker of one role emits.
type MetricNames struct {
	TTFT, TPOT, ITL, E2EL string
	// TTFO is the time to first output (answer) token histogram,
	// MetricTTFO for both roles: the GenAI conventions have none.
	TTFO string
	// TokenUsage is the gen_ai.client.token.usage histogram; empty for the
	// server role.
	TokenUsage               string
	Tokens, Requests, Active string
	// CachedInputTokens and CacheWriteInputTokens are the counters of
	// prompt-cache reads and writes (MetricCachedInputTokens,
	// MetricCacheWriteInputTokens), both roles.
	CachedInputTokens, CacheWriteInputTokens string
}

// Names of the instruments that are not (yet) in the GenAI conventions.
const (
	MetricTTFO       = "llmmetrics.time_to_first_output_token"
	MetricServerITL  = "llmmetrics.inter_token_latency"
	MetricClientTPOT = "llmmetrics.time_per_output_token"
	MetricTokens     = "llmmetrics.tokens"
	MetricRequests   = "llmmetrics.requests"
	MetricActive     = "llmmetrics.requests.active"
	// MetricCachedInputTokens counts the input tokens that ended requests
	// read from the provider's prompt cache (Record.CachedInputTokens),
	// with the attributes of the llmmetrics.tokens input series, so that
	// rate(cached) / rate(tokens{gen_ai.token.type="input"}) is the fleet's
	// prefix cache hit rate. semconv v1.41.0 has no such instrument and its
	// gen_ai.token.type has no cached value, hence a counter of its own.
	MetricCachedInputTokens = "llmmetrics.tokens.cached_input"
	// MetricCacheWriteInputTokens counts the input tokens that ended
	// requests wrote to the prompt cache (Record.CacheWriteInputTokens).
	MetricCacheWriteInputTokens = "llmmetrics.tokens.cache_write_input"
)

// MetricNames returns the instrument names of the role (see the package
// documentation's metric table).
func (r Role) MetricNames() MetricNames {
	if r == RoleClient {
		return MetricNames{
			TTFT:       genaiconv.ClientOperationTimeToFirstChunk{}.Name(),
			TPOT:       MetricClientTPOT,
			ITL:        genaiconv.ClientOperationTimePerOutputChunk{}.Name(),
			E2EL:       genaiconv.ClientOperationDuration{}.Name(),
			TTFO:       MetricTTFO,
			TokenUsage: genaiconv.ClientTokenUsage{}.Name(),
			Tokens:     MetricTokens, Requests: MetricRequests, Active: MetricActive,
			CachedInputTokens: MetricCachedInputTokens, CacheWriteInputTokens: MetricCacheWriteInputTokens,
		}
	}
	return MetricNames{
		TTFT:   genaiconv.ServerTimeToFirstToken{}.Name(),
		TPOT:   genaiconv.ServerTimePerOutputToken{}.Name(),
		ITL:    MetricServerITL,
		E2EL:   genaiconv.ServerRequestDuration{}.Name(),
		TTFO:   MetricTTFO,
		Tokens: MetricTokens, Requests: MetricRequests, Active: MetricActive,
		CachedInputTokens: MetricCachedInputTokens, CacheWriteInputTokens: MetricCacheWriteInputTokens,
	}
}

// Explicit bucket boundaries, in seconds (tokens for TokenBuckets): the
// GenAI semantic conventions' recommendations, and a finer set for ITL.
var (
	ServerTTFTBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}
	TPOTBuckets       = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5}
	ITLBuckets        = []float64{0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1, 2.5}
	DurationBuckets   = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	TokenBuckets      = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
)

type instruments struct {
	ttft, ttfo, tpot, itl, e2el metric.Float64Histogram
	tokenUsage                  metric.Int64Histogram // client role only
	tokens, requests            metric.Int64Counter
	cachedInput, cacheWrite     metric.Int64Counter
	active                      metric.Int64UpDownCounter
	role                        Role // whose names these are (RoleKey on the shared ones)
}

func newInstruments(cfg config) (instruments, error) {
	m := cfg.provider.Meter(ScopeName, metric.WithInstrumentationVersion(Version), metric.WithSchemaURL(semconv.SchemaURL))
	var (
		in   = instruments{role: cfg.role}
		errs []error
	)
	bounds := func(b []float64) metric.Float64HistogramOption { return metric.WithExplicitBucketBoundaries(b...) }
	check := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	names := cfg.role.MetricNames()
	ttfoBuckets := ServerTTFTBuckets
	if cfg.role == RoleClient {
		ttfoBuckets = DurationBuckets
	}
	var err error
	in.ttfo, err = m.Float64Histogram(names.TTFO, metric.WithUnit("s"), bounds(ttfoBuckets),
		metric.WithDescription("Time to first output token: from the start of the request to the first chunk that carries answer tokens (content, refusal, tool calls), after any reasoning tokens."))
	check(err)
	if cfg.role == RoleClient {
		ttft, err := genaiconv.NewClientOperationTimeToFirstChunk(m, bounds(DurationBuckets))
		check(err)
		itl, err := genaiconv.NewClientOperationTimePerOutputChunk(m, bounds(ITLBuckets))
		check(err)
		e2el, err := genaiconv.NewClientOperationDuration(m, bounds(DurationBuckets))
		check(err)
		usage, err := genaiconv.NewClientTokenUsage(m, metric.WithExplicitBucketBoundaries(TokenBuckets...))
		check(err)
		in.ttft, in.itl, in.e2el, in.tokenUsage = ttft.Inst(), itl.Inst(), e2el.Inst(), usage.Inst()
		in.tpot, err = m.Float64Histogram(names.TPOT, metric.WithUnit("s"), bounds(TPOTBuckets),
			metric.WithDescription("Time per output token after the first, (last token − first token) / (output tokens − 1), for each successful response with more than one output token."))
		check(err)
	} else {
		ttft, err := genaiconv.NewServerTimeToFirstToken(m, bounds(ServerTTFTBuckets))
		check(err)
		tpot, err := genaiconv.NewServerTimePerOutputToken(m, bounds(TPOTBuckets))
		check(err)
		e2el, err := genaiconv.NewServerRequestDuration(m, bounds(DurationBuckets))
		check(err)
		in.ttft, in.tpot, in.e2el = ttft.Inst(), tpot.Inst(), e2el.Inst()
		in.itl, err = m.Float64Histogram(names.ITL, metric.WithUnit("s"), bounds(ITLBuckets),
			metric.WithDescription("Inter-token latency: each gap between consecutive token-carrying chunks of a response."))
		check(err)
	}
	in.tokens, err = m.Int64Counter(names.Tokens, metric.WithUnit("{token}"),
		metric.WithDescription("Input and output tokens of ended requests, by gen_ai.token.type, outcome and SLO result."))
	check(err)
	in.cachedInput, err = m.Int64Counter(names.CachedInputTokens, metric.WithUnit("{token}"),
		metric.WithDescription("Input tokens of ended requests that the provider read from its prompt cache (part of the input tokens), by outcome and SLO result."))
	check(err)
	in.cacheWrite, err = m.Int64Counter(names.CacheWriteInputTokens, metric.WithUnit("{token}"),
		metric.WithDescription("Input tokens of ended requests that the provider wrote to its prompt cache (part of the input tokens), by outcome and SLO result."))
	check(err)
	in.requests, err = m.Int64Counter(names.Requests, metric.WithUnit("{request}"),
		metric.WithDescription("Ended requests, by outcome and SLO result."))
	check(err)
	in.active, err = m.Int64UpDownCounter(names.Active, metric.WithUnit("{request}"),
		metric.WithDescription("Requests started and not yet ended."))
	check(err)
	return in, errors.Join(errs...)
}
