// Package llmmetrics measures what the users of an LLM service feel and what
// the service costs — time to first token (TTFT), time per output token
// (TPOT), inter-token latency (ITL), end-to-end latency (E2EL), throughput,
// goodput against SLOs, percentiles and cost — as OpenTelemetry metrics
// named by the GenAI semantic conventions (v1.41.0), and as pure functions
// over plain records for tests, load testers and CI gates.
//
// # Tutorial
//
// Make one [Tracker] per process, safe for concurrent use. It uses the global
// MeterProvider unless given [WithMeterProvider]; an SLO makes it count which
// requests met it:
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
// as error.type. docs/http.md in the repository has the details.
//
// For a stream of your own, start a [Request] with [Tracker.StartClient] (or
// [Tracker.Start] on a server) and wrap the body with [NewReader] and a
// [Decoder], or call Chunk(tokens), SetUsage(input, output) and End(err)
// yourself; [WrapChan] and [WrapSeq] do it for a channel or an iterator.
//
// Analyze the [Record] that End returns, or those of [Tracker.Snapshot] (a
// bounded window of recent requests):
//
//	sum := llmmetrics.Summarize(records, llmmetrics.SummaryOptions{SLO: llmmetrics.SLO{TTFT: 200 * time.Millisecond}})
//	p99, ok := sum.TTFT.Percentile(99) // percentiles are in percent, 0–100
//	obj, err := llmmetrics.ParseObjective("p95 ttft<=200ms")
//	res, err := obj.Check(sum)         // pass or fail, the value, the margin
//
// [Summarize] gives the numbers of vllm bench serve and more (TTFO, token
// goodput, attainment per threshold, both TPOT means); [Summarizer] gives
// them for records added one at a time; [CostPerMillionTokens] and [Price]
// price a run.
//
// # Metrics
//
// The server role is recorded by NewHandler and [Tracker.Start], the client
// role by NewTransport, Middleware and [Tracker.StartClient]
// ([ServerMetricNames], [ClientMetricNames]); instruments both roles share
// carry [RoleKey]. Buckets in seconds (S: 0.001 … 10, the GenAI conventions'
// server TTFT advice; D: 0.01 … 81.92, doubling; tokens ×4 from 1):
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
// Goodput is carried by counters, so replicas aggregate:
// rate(llmmetrics_requests_total{llmmetrics_slo_met="true"}) /
// rate(llmmetrics_requests_total). Package otelsdk switches the histograms
// to base-2 exponential ones (Prometheus native histograms).
//
// # Definitions
//
// A chunk carries tokens when it holds at least one output token (content,
// reasoning or a tool-call delta). Answer tokens are content, refusal and
// tool calls. N is the output token count, reasoning included (the
// server's usage count when known, else the sum of the chunk counts):
//
//	TTFT  = FirstToken − Start                            (undefined without a token)
//	TTFO  = FirstOutput − Start                           (at the first answer token)
//	ITL   = each gap between consecutive token-carrying chunks (as vllm bench serve)
//	TPOT  = (LastToken − FirstToken) / (N − 1)            (undefined for N ≤ 1)
//	E2EL  = LastToken − Start, or End − Start without a token
//	GEN   = LastToken − FirstToken                        (generation time)
//
// docs/definitions.md has every figure and where it differs from other tools.
//
// # Errors
//
// A function whose arguments can be invalid returns an error wrapping
// [ErrInvalid]; one whose result does not exist for valid arguments (the
// percentile of no values) wraps [ErrUndefined]. A method whose input
// cannot be invalid reports a missing result as (v, ok) with ok false. No
// function returns NaN or ±Inf. Recording (Start, Chunk, SetUsage, End and
// the stream adapters) returns no errors: what goes wrong there is reported
// through otel.Handle.
//
// # Testing
//
// Every time-reading method has an explicit-time twin (StartAt, ChunkAt,
// EndAt, …), and [WithClock] injects a clock; inside a testing/synctest
// bubble time.Now is already fake. Package llmmetricstest has a fake clock,
// a collector of what a Tracker emitted, and a fake OpenAI-compatible
// streaming server.
package llmmetrics
