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
// and NewHandler the gen_ai.server.* ones. [WithIncludeUsage]
// asks OpenAI-style servers for the exact token counts (openai-go and
// go-openai do not). docs/http.md in the repository has the details.
//
// For a transport of your own, start one [Request] per call and wrap the
// body with [NewReader] and a decoder:
//
//	req := tracker.StartClient(ctx)       // before sending: TTFT includes connecting and queueing
//	resp, err := httpClient.Do(httpReq)
//	if err != nil {
//		req.End(err)
//		return err
//	}
//	if resp.StatusCode >= 400 {           // an error body is not a token stream
//		req.End(&llmmetrics.HTTPStatusError{StatusCode: resp.StatusCode})
//		return handleError(resp)
//	}
//	body := llmmetrics.NewReader(req, resp.Body, llmmetrics.ProtocolOpenAI.NewDecoder())
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
// The side of the request picks the instrument names: the server role for
// NewHandler and [Tracker.Start], the client role for NewTransport,
// Middleware and [Tracker.StartClient] ([ServerMetricNames] and [ClientMetricNames] list them). A
// Tracker creates both roles' instruments; the ones both share by name carry
// llmmetrics.role. Buckets in seconds (S: the GenAI conventions' server TTFT
// advice, 0.001 … 10; D: 0.01 … 81.92, doubling; tokens ×4 from 1):
//
//	what         server role                            client role                                     buckets
//	TTFT         gen_ai.server.time_to_first_token      gen_ai.client.operation.time_to_first_chunk     S / D
//	TTFO         llmmetrics.time_to_first_output_token  the same                                        S
//	TPOT         gen_ai.server.time_per_output_token    llmmetrics.time_per_output_token                0.01 … 2.5
//	ITL (a gap)  llmmetrics.inter_token_latency         gen_ai.client.operation.time_per_output_chunk   0.001 … 2.5
//	E2EL         gen_ai.server.request.duration         gen_ai.client.operation.duration                D
//	tokens       llmmetrics.tokens (counter)            gen_ai.client.token.usage + llmmetrics.tokens   tokens
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
// of range) returns an error that wraps ErrInvalid, with the details; when
// its arguments are valid but its result does not exist (the percentile of
// no values, the cost per token at zero throughput), the error wraps
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
// Every time-reading method has an explicit-time twin (StartAt,
// StartClientAt, ChunkAt, EndAt), and WithClock injects a clock; inside a testing/synctest bubble
// time.Now is already fake. Package llmmetricstest has a fake clock, a
// collector that turns what a Tracker emitted into plain values, and a fake
// OpenAI-compatible streaming server with realistic batching behaviour.
package llmmetrics
