// Package llmmetrics measures what the users of an LLM service feel and what
// the service costs — time to first token (TTFT), time per output token
// (TPOT), inter-token latency (ITL), end-to-end latency (E2EL), throughput,
// goodput against SLOs, percentiles and cost — as OpenTelemetry metrics
// named by the GenAI semantic conventions (v1.41.0), and as pure functions
// over plain records for tests, load testers and CI gates.
//
// Five names cover most uses:
//
//   - [NewTracker]: the long-lived Tracker that owns the instruments; one per
//     process (or per upstream), safe for concurrent use.
//   - [NewTransport] and [Middleware]: measure an LLM client, as an
//     http.Client's Transport or as openai-go's / anthropic-sdk-go's
//     middleware.
//   - [NewHandler]: measure a model server or a gateway.
//   - [Record]: one request's timeline, returned by Request.End and read by
//     everything that analyzes.
//   - [Summarize]: Records in, throughput, goodput and exact percentiles out;
//     [Summarizer] gives the same figures for records added one at a time,
//     keeping only the numbers.
//
// # Tutorial
//
// Make one Tracker. It uses the global MeterProvider unless given
// [WithMeterProvider]; an SLO makes it count which requests met it:
//
//	tracker, err := llmmetrics.NewTracker(
//		llmmetrics.WithSLO(llmmetrics.SLO{TTFT: 200 * time.Millisecond, TPOT: 50 * time.Millisecond}),
//	)
//
// Give it to the HTTP client that calls the model, or wrap the handler that
// serves it:
//
//	hc := &http.Client{Transport: llmmetrics.NewTransport(tracker, nil)}               // any client that takes an *http.Client
//	client := openai.NewClient(option.WithMiddleware(llmmetrics.Middleware(tracker))) // openai-go v3, anthropic-sdk-go
//	mux.Handle("/v1/", llmmetrics.NewHandler(tracker, upstream))                       // a model server or a gateway
//
// Each POST is then one request: streamed answers (OpenAI-compatible,
// Anthropic, Gemini, Ollama) are measured token by token, non-streaming ones
// by their usage, a status of 400 or more is an error with the status code
// as error.type. The client wrappers record the gen_ai.client.* instruments
// and NewHandler the gen_ai.server.* ones, whatever the Tracker's [WithRole]
// says, which applies to the requests you start yourself. [WithIncludeUsage]
// asks OpenAI-style servers for the exact token counts (openai-go and
// go-openai do not). docs/http.md in the repository has the details.
//
// For a transport of your own, start one [Request] per call and wrap the
// body with [NewReader] and a decoder:
//
//	req := tracker.Start(ctx)             // before sending: TTFT includes connecting and queueing
//	resp, err := httpClient.Do(httpReq)
//	if err != nil {
//		req.End(err)
//		return err
//	}
//	if resp.StatusCode >= 400 {           // an error body is not a token stream
//		req.End(&llmmetrics.HTTPStatusError{StatusCode: resp.StatusCode})
//		return handleError(resp)
//	}
//	body := llmmetrics.NewReader(req, resp.Body, llmmetrics.NewOpenAIDecoder())
//	defer body.Close()                    // ends the request if the caller stops early
//	// read body exactly as before: the bytes are unchanged
//
// Without a byte stream, call the Request directly: Chunk(tokens) for each
// chunk of answer (ReasoningChunk for reasoning), SetUsage(input, output)
// when the server reports exact counts, End(err) once; [WrapChan] and
// [WrapSeq] do it for a channel or an iterator.
//
// Analyze Records from End, from [Tracker.Snapshot] (a bounded window of
// recent requests) or from anywhere else:
//
//	sum := llmmetrics.Summarize(records, llmmetrics.SummaryOptions{SLO: llmmetrics.SLOChat})
//	p99, ok := sum.TTFT.Percentile(99) // percentiles are in percent, 0–100
//	obj, err := llmmetrics.ParseObjective("p95 ttft<=200ms")
//	res, err := obj.Check(sum)         // pass or fail, the value, the margin
//
// [Summarize] gives the numbers of vllm bench serve (counts, token totals,
// throughputs, request goodput, mean/median/std/percentiles of TTFT, TPOT,
// ITL and E2EL) and more (TTFO, token goodput, attainment per threshold,
// both TPOT means); [CostPerMillionTokens] and [Price] price a run.
//
// # Metrics
//
// A Tracker's role picks the instrument names (buckets in seconds, tokens for
// token usage):
//
//	what         server role                            client role                                     buckets
//	TTFT         gen_ai.server.time_to_first_token      gen_ai.client.operation.time_to_first_chunk     ServerTTFTBuckets / DurationBuckets
//	TTFO         llmmetrics.time_to_first_output_token  the same                                        as TTFT
//	TPOT         gen_ai.server.time_per_output_token    llmmetrics.time_per_output_token                TPOTBuckets
//	ITL (a gap)  llmmetrics.inter_token_latency         gen_ai.client.operation.time_per_output_chunk   ITLBuckets
//	E2EL         gen_ai.server.request.duration         gen_ai.client.operation.duration                DurationBuckets
//	tokens       llmmetrics.tokens (counter)            gen_ai.client.token.usage + llmmetrics.tokens   TokenBuckets
//	requests     llmmetrics.requests (counter)          the same
//	in flight    llmmetrics.requests.active             the same
//
// TTFT is recorded when the first token arrives (reasoning or answer), TTFO
// when the first answer token arrives, each ITL gap when it arrives, and at
// End: E2EL and the requests counter (whatever the outcome,
// error.type set on failures), TPOT (successful requests with N > 1), the
// tokens counter (gen_ai.token.type, llmmetrics.outcome and, with an SLO,
// llmmetrics.slo_met). Goodput is carried by counters, so many replicas
// aggregate correctly: goodput ratio = rate(llmmetrics_requests_total{llmmetrics_slo_met="true"}) /
// rate(llmmetrics_requests_total).
//
// The histograms use the explicit buckets above unless the MeterProvider has
// [github.com/llmmetrics/llmmetrics/otelsdk.ExponentialHistograms]: base-2 exponential histograms (Prometheus native
// histograms), whose fleet-wide percentiles stay within about 1% of exact
// where the explicit buckets can be off by tens of percent.
//
// # Definitions
//
// A chunk carries tokens when it holds at least one output token (content,
// reasoning or a tool-call delta); a role-only delta, a keep-alive, a
// usage-only chunk or [DONE] carries none. Answer tokens are content, refusal
// and tool calls; reasoning ("thinking") tokens are the rest. With N output
// tokens, reasoning included (the server's usage count when known, else the
// sum of the chunk counts; never below the number of token-carrying chunks):
//
//	TTFT  = FirstToken − Start                            (undefined without a token)
//	TTFO  = FirstOutput − Start                           (at the first answer token; undefined without one; = TTFT without reasoning)
//	ITL   = each gap between consecutive token-carrying chunks (chunk gaps, as vllm bench serve)
//	TPOT  = (LastToken − FirstToken) / (N − 1)            (undefined for N ≤ 1; 0 when N tokens came in one chunk)
//	E2EL  = LastToken − Start, or End − Start without a token
//	GEN   = LastToken − FirstToken                        (generation time: E2EL = TTFT + GEN for a request with tokens)
//	prefix cache hit rate = Σ CachedInputTokens / Σ InputTokens over completed requests
//
// # Errors
//
// One convention throughout. A function whose arguments can be invalid (a
// percentile outside [0, 100], a NaN sample, a negative price, an option out
// of range) returns an error that wraps one of the package's Err… sentinels
// (ErrInvalidPercentile, ErrInvalidSample, ErrInvalidCost, ErrInvalidSLO,
// ErrInvalidObjective, ErrInvalidOption,
// ErrInvalidText), so errors.Is tells them apart; when such a function's
// arguments are valid but its result does not exist (the percentile of no
// values, the cost per token at zero throughput), the error wraps
// ErrUndefined. A method whose input cannot be invalid reports a result
// that does not exist as (v, ok) with ok false: Record.TTFT without a
// token, Record.TPOT with N ≤ 1, Distribution.Percentile of a percentile
// that was not requested. No function returns NaN or ±Inf. Recording
// (Start, Chunk, SetUsage, End and the stream adapters) returns no errors
// at all: what goes wrong there is reported through otel.Handle.
//
// # Concurrency
//
// A Tracker and its Requests are safe for concurrent use. Chunk takes the
// Request's own lock only; End may race with Chunk (a cancel watcher), and
// a chunk after End is ignored. End is idempotent.
//
// # Testing
//
// Every time-reading method has an explicit-time twin (StartAt, ChunkAt,
// EndAt), and WithClock injects a clock; inside a testing/synctest bubble
// time.Now is already fake. Package llmmetricstest has a fake clock, a
// collector that turns what a Tracker emitted into plain values, and a fake
// OpenAI-compatible streaming server with realistic batching behaviour.
package llmmetrics

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Outcome says how a request ended.
//
// The zero value is OutcomeOK. Outcomes encode to JSON and text as "ok",
// "error" and "canceled".
type Outcome uint8

const (
	// OutcomeOK: the stream finished normally (EOF, [DONE], End(nil)).
	OutcomeOK Outcome = iota
	// OutcomeError: the stream failed (a transport error, an HTTP error, an
	// error object inside the stream).
	OutcomeError
	// OutcomeCanceled: the caller gave up (context.Canceled,
	// context.DeadlineExceeded, a Close before EOF).
	OutcomeCanceled
)

var outcomeNames = [...]string{OutcomeOK: "ok", OutcomeError: "error", OutcomeCanceled: "canceled"}

// String returns "ok", "error" or "canceled" (or "Outcome(N)" for an invalid value).
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// MarshalText encodes the outcome as "ok", "error" or "canceled".
func (o Outcome) MarshalText() ([]byte, error) {
	if int(o) >= len(outcomeNames) {
		return nil, fmt.Errorf("%w: no name for outcome %d", ErrInvalidText, uint8(o))
	}
	return []byte(outcomeNames[o]), nil
}

// UnmarshalText decodes "ok", "error" or "canceled", in any case.
func (o *Outcome) UnmarshalText(b []byte) error {
	i, ok := parseName(b, outcomeNames[:])
	if !ok {
		return fmt.Errorf("%w: unknown outcome %q (want ok, error or canceled)", ErrInvalidText, b)
	}
	*o = Outcome(i)
	return nil
}

// ErrInvalidText is returned (wrapped) by the MarshalText and UnmarshalText
// methods of this package's enums (Outcome, Latency, Role, Protocol), and of
// package saturation's (Signal, ThroughputMeasure), for a value or a name
// that is not one of theirs.
var ErrInvalidText = errors.New("llmmetrics: invalid text")

// parseName returns the index of b in names, compared case-insensitively:
// the one rule for the text form of every enum of this package (Outcome,
// Latency, Role, Protocol), which encode in lower case.
func parseName(b []byte, names []string) (int, bool) {
	for i, n := range names {
		if strings.EqualFold(string(b), n) {
			return i, true
		}
	}
	return 0, false
}

// Record is the plain-value timeline of one request: what the analysis
// functions (Summarize, SLO.Check, …) consume and what Request.End returns.
//
// A zero FirstToken means "no token arrived"; a LastToken that is zero or
// before FirstToken is taken as FirstToken (a record with one token may set
// FirstToken alone). Times should be in order (Start ≤ FirstToken ≤
// LastToken ≤ End); the methods never report a negative duration: a
// difference that comes out negative (times out of order) is reported as 0.
// A Record built by a Tracker is always in order.
//
// JSON field names are stable, and new ones are only ever added (times are
// RFC 3339 with nanoseconds, durations are integer nanoseconds):
//
//	{"start": "...", "first_token": "...", "first_output": "...",
//	 "last_token": "...", "end": "...",
//	 "input_tokens": 12, "output_tokens": 40, "reasoning_tokens": 24, "chunks": 38,
//	 "itl_ns": [21000000, ...], "max_itl_ns": 48000000, "outcome": "ok"}
//
// first_token, first_output, last_token, reasoning_tokens, itl_ns and
// max_itl_ns are omitted when empty.
type Record struct {
	// Start is when the request was sent (client) or received (server).
	Start time.Time `json:"start"`
	// FirstToken is the arrival of the first chunk that carries tokens,
	// reasoning or answer.
	FirstToken time.Time `json:"first_token,omitzero"`
	// FirstOutput is the arrival of the first chunk that carries answer
	// tokens (content, refusal, tool calls), after any reasoning; zero when
	// none arrived. Without reasoning it equals FirstToken.
	FirstOutput time.Time `json:"first_output,omitzero"`
	// LastToken is the arrival of the last chunk that carries tokens.
	LastToken time.Time `json:"last_token,omitzero"`
	// End is when the stream finished (EOF, error or cancel).
	End time.Time `json:"end"`
	// InputTokens is the prompt length in tokens (0 when unknown): the whole
	// prompt, cached and cache-write tokens included.
	InputTokens int `json:"input_tokens"`
	// CachedInputTokens is how many of the InputTokens the provider read
	// from its prompt (prefix) cache: OpenAI's
	// prompt_tokens_details.cached_tokens, Anthropic's
	// cache_read_input_tokens, Gemini's cachedContentTokenCount; 0 when the
	// provider does not say.
	CachedInputTokens int `json:"cached_input_tokens,omitempty"`
	// CacheWriteInputTokens is how many of the InputTokens the provider
	// wrote to its prompt cache (Anthropic's cache_creation_input_tokens,
	// priced apart); 0 when the provider does not say.
	CacheWriteInputTokens int `json:"cache_write_input_tokens,omitempty"`
	// OutputTokens is N, every output token, reasoning included: the
	// server's exact usage count when known, else the sum of per-chunk token
	// counts (a lower bound when a chunk's count is estimated as 1); never
	// below Chunks (each token-carrying chunk holds at least one token).
	OutputTokens int `json:"output_tokens"`
	// ReasoningTokens is how many of the OutputTokens the server reports as
	// reasoning ("thinking") tokens; 0 when it does not say.
	ReasoningTokens int `json:"reasoning_tokens,omitempty"`
	// Chunks is the number of token-carrying chunks (0 when unknown).
	Chunks int `json:"chunks"`
	// ITL holds the gaps between consecutive token-carrying chunks
	// (len = Chunks − 1), or nil when the Tracker was told not to keep them.
	ITL []time.Duration `json:"itl_ns,omitempty"`
	// MaxITL is the largest gap between consecutive token-carrying chunks.
	// A Tracker sets it even when it keeps no ITL list; MaxITLGap combines
	// it with ITL, so a hand-built Record may set either.
	MaxITL time.Duration `json:"max_itl_ns,omitempty"`
	// Outcome says how the request ended.
	Outcome Outcome `json:"outcome"`
	// ErrorType is why a request that did not end OK ended so: the same
	// low-cardinality value a Tracker puts in the error.type attribute (an
	// HTTP status code such as "429", "timeout", "canceled",
	// "connection_refused", "eof", a provider's error type such as
	// "overloaded_error"); "" for an OK request, and for a failed one whose
	// maker did not say.
	ErrorType string `json:"error_type,omitempty"`
}

// nonNeg returns d, or 0 when d is negative (times out of order).
func nonNeg(d time.Duration) time.Duration { return max(d, 0) }

// HasToken reports whether at least one token-carrying chunk arrived.
func (r Record) HasToken() bool { return !r.FirstToken.IsZero() }

// TTFT returns FirstToken − Start, the time to first token. ok is false when
// no token arrived.
func (r Record) TTFT() (d time.Duration, ok bool) {
	if !r.HasToken() {
		return 0, false
	}
	return nonNeg(r.FirstToken.Sub(r.Start)), true
}

// TTFO returns FirstOutput − Start, the time to first output token (as
// aiperf reports it): the wait for the answer, reasoning included. ok is
// false when no answer token arrived (FirstOutput is zero), for example a
// reasoning model cut before it answered. Without reasoning, TTFO = TTFT.
func (r Record) TTFO() (d time.Duration, ok bool) {
	if r.FirstOutput.IsZero() {
		return 0, false
	}
	return nonNeg(r.FirstOutput.Sub(r.Start)), true
}

// TPOT returns (LastToken − FirstToken) / (N − 1), the time per output token
// after the first, rounded to the nearest nanosecond. N is OutputTokens. ok
// is false when N ≤ 1 or no token arrived. A request whose N tokens came in
// one chunk has TPOT 0.
func (r Record) TPOT() (d time.Duration, ok bool) {
	n := r.OutputTokens
	if n <= 1 || !r.HasToken() {
		return 0, false
	}
	return divRound(r.decode(), n-1), true
}

// decode returns LastToken − FirstToken (0 when no token arrived).
func (r Record) decode() time.Duration {
	if !r.HasToken() {
		return 0
	}
	return r.lastToken().Sub(r.FirstToken)
}

// lastToken returns LastToken, or FirstToken when LastToken is unset or
// before it (a hand-built record may set FirstToken alone): the last token
// is never before the first.
func (r Record) lastToken() time.Time {
	if r.LastToken.Before(r.FirstToken) {
		return r.FirstToken
	}
	return r.LastToken
}

// divRound divides d by n (n > 0) rounding half away from zero; d ≥ 0.
func divRound(d time.Duration, n int) time.Duration {
	return (d + time.Duration(n/2)) / time.Duration(n)
}

// E2EL returns the end-to-end latency: LastToken − Start (time to the final
// token), or End − Start when no token arrived. ok is false only when the
// record has neither a token nor an End.
func (r Record) E2EL() (d time.Duration, ok bool) {
	switch {
	case r.HasToken():
		return nonNeg(r.lastToken().Sub(r.Start)), true
	case !r.End.IsZero():
		return nonNeg(r.End.Sub(r.Start)), true
	}
	return 0, false
}

// GenerationTime returns LastToken − FirstToken, the token generation time
// (E2EL = TTFT + GenerationTime for a request that produced tokens): 0 when
// every token came in one chunk. ok is false when no token arrived.
func (r Record) GenerationTime() (d time.Duration, ok bool) {
	if !r.HasToken() {
		return 0, false
	}
	return nonNeg(r.decode()), true
}

// MaxITLGap returns the largest ITL gap (between consecutive
// token-carrying chunks): the maximum of the MaxITL field and every ITL
// entry, so a hand-built Record may set either. ok is false when the record
// has neither (fewer than two chunks, or gaps not kept).
func (r Record) MaxITLGap() (d time.Duration, ok bool) {
	d, ok = r.MaxITL, r.MaxITL > 0
	for _, g := range r.ITL {
		d, ok = max(d, g), true
	}
	return nonNeg(d), ok
}
