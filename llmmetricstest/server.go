package llmmetricstest

import (
	"context"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"
)

// Defaults of ServerConfig, applied to zero fields. Together they make a
// server whose output throughput rises up to about 32 concurrent streams
// (~1,000 tokens/s), flattens, then falls (KV-cache preemption and queue
// overhead; ~770 tokens/s at 128), for ~100-token prompts and ~128-token
// answers. A level of such a sweep with n requests at concurrency c lasts
// roughly n/c × 1.3 s at low c (one request: 20ms to the first token,
// then 10ms per token), a few seconds at the knee; under testing/synctest
// it takes milliseconds, and Speedup divides it on real time.
const (
	// DefaultModel is the default ServerConfig.Model.
	DefaultModel = "llmmetricstest-model"
	// DefaultPrefillBase is the default ServerConfig.PrefillBase.
	DefaultPrefillBase = 15 * time.Millisecond
	// DefaultPrefillPerToken is the default ServerConfig.PrefillPerToken
	// (20,000 prompt tokens/s).
	DefaultPrefillPerToken = 50 * time.Microsecond
	// DefaultBaseTPOT is the default ServerConfig.BaseTPOT (100 tokens/s
	// for a lone request).
	DefaultBaseTPOT = 10 * time.Millisecond
	// DefaultBatchSlowdown is the default ServerConfig.BatchSlowdown.
	DefaultBatchSlowdown = 0.04
	// DefaultMaxBatch is the default ServerConfig.MaxBatch.
	DefaultMaxBatch = 32
	// DefaultKVBudget is the default ServerConfig.KVBudget, in tokens.
	DefaultKVBudget = 4096
	// DefaultQueueOverhead is the default ServerConfig.QueueOverhead.
	DefaultQueueOverhead = 100 * time.Microsecond
	// DefaultOutputMin is the default ServerConfig.OutputMin, in tokens.
	DefaultOutputMin = 96
	// DefaultOutputMax is the default ServerConfig.OutputMax, in tokens.
	DefaultOutputMax = 160
	// DefaultJitter is the default ServerConfig.Jitter (±5%).
	DefaultJitter = 0.05
)

// ServerConfig configures a fake LLM server (every protocol it speaks
// shares one scheduler, see Server). The zero value is
// a realistic small model server (see the Default… constants); a zero field
// takes its default, and the fields where zero is a meaningful setting take
// a negative value to mean "none".
//
// Timing model (one scheduler goroutine, continuous batching): requests
// wait in a FIFO queue; at the start of each step the scheduler admits the
// queue's head while the batch has fewer than MaxBatch requests and the
// KV cache has room for the request's tokens. A step lasts
//
//	(PrefillBase + PrefillPerToken × tokens to prefill, if any request is new)
//	+ BaseTPOT × (1 + BatchSlowdown × (decoding requests − 1))   (if any)
//	+ QueueOverhead × waiting requests
//
// times a random factor in [1−Jitter, 1+Jitter], and ends with one new
// token for every request in the batch (a new request's prefill step
// yields its first token). The requests decoding in a step that prefills
// wait for the prefill: a long prompt stalls them (a prefill stall), unless
// PrefillChunk spreads prompts over steps (chunked prefill). BatchSlowdown
// makes each token slower as the batch grows (a compute-bound engine). When the batch's KV cache (Σ prompt + generated
// tokens) exceeds KVBudget, the newest requests are preempted: they go back
// to the head of the queue and, when admitted again, recompute (prefill
// prompt + generated tokens) before producing their next token; tokens
// already streamed are not sent again.
type ServerConfig struct {
	// Model is the model name the server reports and accepts (a request
	// naming another model gets 404; an empty model is accepted).
	// Default DefaultModel.
	Model string

	// PrefillBase is the fixed cost of a step that prefills at least one
	// request (default 15ms; negative: none).
	PrefillBase time.Duration
	// PrefillPerToken is the prefill cost per prompt token (default 50µs,
	// i.e. 20,000 prompt tokens/s; negative: none).
	PrefillPerToken time.Duration
	// BaseTPOT is the duration of a decode step with one request in the
	// batch (default 10ms).
	BaseTPOT time.Duration
	// BatchSlowdown is how much each extra request in the batch lengthens
	// a decode step, as a fraction of BaseTPOT (default 0.04: a batch of 32
	// steps in 2.24 × BaseTPOT; negative: none). Aggregate decode
	// throughput b / (1 + BatchSlowdown·(b−1)) still rises with the batch
	// size b and flattens towards 1 / (BaseTPOT·BatchSlowdown).
	BatchSlowdown float64
	// MaxBatch is the largest number of requests decoded together (default 32).
	MaxBatch int
	// PrefillChunk, when positive, is the most prompt tokens one step
	// prefills, shared by the new requests in arrival order (chunked
	// prefill, as vLLM's token budget per step): a long prompt is
	// prefilled over several steps, each of which also decodes the running
	// requests, and its first token comes with its last chunk. Default 0:
	// a step prefills every new request's prompt whole (see prefill.go).
	PrefillChunk int
	// KVBudget is the KV-cache capacity in tokens: the sum over running
	// requests of prompt + generated tokens (default 4096; with ~100-token
	// prompts and ~128-token answers, preemption starts around 24–32
	// concurrent requests; negative: unlimited).
	KVBudget int
	// QueueOverhead is the scheduling cost added to every step per request
	// waiting in the queue (default 100µs; negative: none). It and
	// preemption make throughput fall when far more requests are offered
	// than the batch holds.
	QueueOverhead time.Duration

	// OutputMin and OutputMax bound the output length in tokens, drawn
	// uniformly in [OutputMin, OutputMax] (defaults 96 and 160, mean 128;
	// OutputMin = OutputMax gives a fixed length). Ignored when
	// OutputTokens is set. A request's max_tokens or max_completion_tokens
	// caps the length (finish_reason "length").
	OutputMin, OutputMax int
	// OutputTokens, when set, draws each request's output length (values
	// below 1 count as 1). It is called on the scheduler goroutine only.
	OutputTokens func(rng *rand.Rand) int
	// PromptTokens, when positive, is the prompt length of every request.
	// Otherwise a request's prompt length is ⌈characters / 4⌉ of its
	// message texts or prompt (the number of token IDs for a token prompt),
	// at least 1.
	PromptTokens int

	// Seed seeds the random source of jitter, output lengths and injected
	// failures. Runs with the same Seed, configuration and request arrival
	// order behave the same.
	Seed uint64
	// Jitter is the relative random spread of step durations (default 0.05,
	// i.e. ±5%; negative: none).
	Jitter float64

	// FailureRate is the probability that a request is answered with HTTP
	// 500 and an error body in its protocol's shape, before any work
	// (default 0).
	FailureRate float64
	// RateLimitRate is the probability that a request is answered with
	// HTTP 429 and an error body in its protocol's shape, before any work
	// (default 0). Drawn after FailureRate, for requests that did not fail.
	RateLimitRate float64
	// CutRate is the probability that a request's connection is closed
	// mid-way: a stream stops after a random number of tokens without a
	// finish chunk or [DONE]; a non-streaming request gets no response
	// (default 0).
	CutRate float64
	// ErrorEventRate is the probability that a stream sends its protocol's
	// error event after a random number of tokens (OpenAI chat and
	// completions: data: {"error": …}, then [DONE]; see Server for the
	// others); a non-streaming request gets HTTP 500 instead (default 0).
	ErrorEventRate float64
	// PauseRate is the probability that a stream stalls for PauseDuration
	// before one of its tokens (chosen at random); the tokens generated
	// meanwhile arrive in a burst afterwards (default 0).
	PauseRate float64
	// PauseDuration is the length of a stall (default 1s when PauseRate > 0).
	PauseDuration time.Duration
	// SkipToolCallRate is the probability that a request offering tools
	// (its tool choice not "none") is answered with text instead of a tool
	// call, as a model that ignores a tool choice would (default 0: every
	// such request gets a call; see tools.go).
	SkipToolCallRate float64

	// SharedPrefixTokens, when positive, turns on the prefix cache: the
	// first SharedPrefixTokens tokens of every prompt (at most its length
	// − 1, as vLLM always computes the last prompt token) are a prefix
	// shared with other requests, e.g. a system prompt. Request n (its id,
	// from 1 in the order requests reach the server) uses prefix
	// n mod PrefixGroups; prefixes are looked up in the order the
	// scheduler receives requests. A request
	// whose prefix is in the cache has those tokens cached: they are not
	// prefilled, and its usage reports them (OpenAI
	// prompt_tokens_details.cached_tokens and the Responses API's
	// input_tokens_details.cached_tokens, Anthropic cache_read_input_tokens
	// with input_tokens the rest, Gemini cachedContentTokenCount; Ollama
	// has no such field). Default 0: no prefix cache, no cached tokens.
	SharedPrefixTokens int
	// PrefixGroups is the number of distinct shared prefixes (default 1).
	PrefixGroups int
	// PrefixCacheEntries bounds the prefix cache, in prefixes, evicting the
	// least recently used (default: PrefixGroups, all fit).
	PrefixCacheEntries int
	// PrefixCacheBlocks, when positive, turns on a prefix cache that
	// follows the requests' content, as vLLM's automatic prefix caching
	// does: a prompt's texts, concatenated, are cut into blocks of
	// PrefixBlockTokens tokens (4 characters a token); a request's leading
	// blocks that an earlier request's prompt began with, byte for byte,
	// are cached (at most its length − 1 tokens) and not prefilled. The
	// cache holds this many blocks, evicting the least recently used.
	// It takes precedence over SharedPrefixTokens. Default 0: off.
	PrefixCacheBlocks int

	// Speedup divides every simulated duration (steps and pauses), to run
	// a demo on real time faster without retuning the other fields
	// (default 1; Speedup 10 makes BaseTPOT 1ms). Values below 0 count as 1.
	Speedup float64
}

// withDefaults returns cfg with defaults applied and negatives cleared.
func (cfg ServerConfig) withDefaults() ServerConfig {
	def := func(d *time.Duration, v time.Duration) {
		switch {
		case *d == 0:
			*d = v
		case *d < 0:
			*d = 0
		}
	}
	if cfg.Model == "" {
		cfg.Model = DefaultModel
	}
	def(&cfg.PrefillBase, DefaultPrefillBase)
	def(&cfg.PrefillPerToken, DefaultPrefillPerToken)
	def(&cfg.BaseTPOT, DefaultBaseTPOT)
	def(&cfg.QueueOverhead, DefaultQueueOverhead)
	def(&cfg.PauseDuration, time.Second)
	switch {
	case cfg.BatchSlowdown == 0:
		cfg.BatchSlowdown = DefaultBatchSlowdown
	case cfg.BatchSlowdown < 0:
		cfg.BatchSlowdown = 0
	}
	switch {
	case cfg.Jitter == 0:
		cfg.Jitter = DefaultJitter
	case cfg.Jitter < 0:
		cfg.Jitter = 0
	}
	if cfg.Speedup <= 0 {
		cfg.Speedup = 1
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = DefaultMaxBatch
	}
	if cfg.KVBudget == 0 {
		cfg.KVBudget = DefaultKVBudget
	}
	if cfg.SharedPrefixTokens < 0 {
		cfg.SharedPrefixTokens = 0
	}
	if cfg.OutputMin <= 0 && cfg.OutputMax <= 0 {
		cfg.OutputMin, cfg.OutputMax = DefaultOutputMin, DefaultOutputMax
	}
	cfg.OutputMin = max(cfg.OutputMin, 1)
	cfg.OutputMax = max(cfg.OutputMax, cfg.OutputMin)
	return cfg
}

// Stats is what a Server has served so far: the server-side truth to
// compare client-side metrics with. Each count is updated before the bytes
// it counts are written, so a client that has read a response finds it
// counted; Canceled is counted when the server notices the client left.
type Stats struct {
	// Requests counts every request received on the API endpoints.
	Requests int
	// OK counts requests answered in full (finish chunk and [DONE], or a
	// complete JSON response).
	OK int
	// Failed counts injected HTTP 500 answers (FailureRate).
	Failed int
	// RateLimited counts injected HTTP 429 answers (RateLimitRate).
	RateLimited int
	// Cut counts connections closed mid-way (CutRate).
	Cut int
	// ErrorEvents counts streams ended by an error object (ErrorEventRate)
	// and non-streaming requests answered 500 for the same reason.
	ErrorEvents int
	// Canceled counts requests whose client went away before the end.
	Canceled int
	// BadRequests counts requests rejected as malformed (400), for an
	// unknown model (404) or after Close (503).
	BadRequests int
	// PromptTokens is the sum of prompt tokens of the requests that were
	// scheduled (not Failed, RateLimited or BadRequests).
	PromptTokens int
	// CompletionTokens is the number of completion tokens sent to clients
	// (content chunks written, or the completion tokens of JSON answers).
	CompletionTokens int
	// CachedPromptTokens is the sum of the prompt tokens served from the
	// prefix cache (ServerConfig.SharedPrefixTokens), over the requests
	// counted in PromptTokens: the truth behind the usage's cached counts
	// and /metrics' vllm:prefix_cache_hits_total.
	CachedPromptTokens int
	// Preemptions counts KV-cache preemptions (a request may be preempted
	// more than once).
	Preemptions int
	// Steps counts scheduler steps; MaxRunning is the largest batch seen.
	Steps, MaxRunning int
	// ToolCalls counts answers that were tool calls (requests offering
	// tools, see ServerConfig.SkipToolCallRate).
	ToolCalls int
}

// Server is a fake LLM HTTP server with the timing of a continuously
// batching model server (see ServerConfig). It speaks five APIs, each
// streaming and not, all on one scheduler: every request, whatever its
// protocol, is one sequence in the same batch, so any client sees the same
// batching and saturation. The endpoints (POST):
//
//   - OpenAI /v1/chat/completions and /v1/completions (SSE ending with
//     data: [DONE]; the usage chunk only with stream_options.include_usage)
//     and /v1/responses (Responses API events ending with
//     response.completed, or response.incomplete at max_output_tokens);
//   - Anthropic /v1/messages (message_start with usage.input_tokens, one
//     text content block, message_delta with the cumulative
//     usage.output_tokens, message_stop);
//   - Gemini /v1beta/models/{model}:streamGenerateContent (SSE with
//     ?alt=sse, else a streamed JSON array) and :generateContent, also
//     under /v1/models/;
//   - Ollama /api/chat and /api/generate (NDJSON; streaming unless
//     "stream" is false).
//
// Each reads its own prompt fields (messages, prompt, input, system,
// contents, …) and output cap (max_tokens, max_completion_tokens,
// max_output_tokens, generationConfig.maxOutputTokens,
// options.num_predict), and answers errors, injected faults included, in
// its own error shape: OpenAI {"error": {…}}, Anthropic {"type": "error",
// "error": {…}} (in a stream: event: error), Gemini {"error": {"code",
// "message", "status"}} (in a stream: that object on its own, without
// "data:", as Google's SDKs expect), Ollama {"error": "…"}. GET /v1/models
// lists the model.
//
// It uses real time (time.Sleep, timers), so inside a testing/synctest
// bubble it runs on the bubble's fake time; create it with
// NewInMemoryServer there. A Server is safe for concurrent use; Close
// stops every goroutine it started.
type Server struct {
	// URL is the base URL, e.g. "http://127.0.0.1:41234"; requests go to
	// URL + "/v1/chat/completions".
	URL string

	cfg     ServerConfig
	handler http.Handler
	client  *http.Client

	ts        *httptest.Server // real listener (NewServer)
	hs        *http.Server     // in-memory listener (NewInMemoryServer)
	pipes     *pipeListener
	transport *http.Transport

	arrive   chan *job
	quit     chan struct{}
	sched    sync.WaitGroup // scheduler and in-memory Serve goroutines
	handlers sync.WaitGroup // running handlers
	conns    sync.WaitGroup // open in-memory server connections

	mu        sync.Mutex // guards closed, stats, nextID
	closed    bool
	stats     Stats
	nextID    int
	closeOnce sync.Once

	// gauges is what /metrics serves, published by the scheduler under mu.
	gauges gauges
	// phases are the finished requests' phase histograms, under mu
	// (prefill.go).
	phases [numPhases]histogram

	// Scheduler state, touched only by the scheduler goroutine.
	rng      *rand.Rand
	waiting  []*job
	running  []*job
	prefixes []int      // the prefix cache: group numbers, least recently used first
	blockLRU blockCache // the content prefix cache (PrefixCacheBlocks)
}

// NewServer starts a fake server on a loopback port (an httptest.Server).
// Use it in real-time tests and demos; inside a testing/synctest bubble use
// NewInMemoryServer. Call Close when done.
func NewServer(cfg ServerConfig) *Server {
	s := newServer(cfg)
	s.ts = httptest.NewServer(s.handler)
	s.URL = s.ts.URL
	s.client = s.ts.Client()
	return s
}

// NewInMemoryServer starts a fake server reachable only through Client
// (whose Transport any HTTP client may reuse): connections are in-memory
// pipes (net.Pipe) carrying real HTTP/1.1, so the server and its clients work inside a testing/synctest
// bubble, where loopback sockets would stall fake time. URL is
// "http://llmmetricstest.invalid". Call Close when done.
func NewInMemoryServer(cfg ServerConfig) *Server {
	s := newServer(cfg)
	s.pipes = newPipeListener()
	s.hs = &http.Server{Handler: s.handler, ConnState: func(_ net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			s.conns.Add(1)
		case http.StateClosed, http.StateHijacked:
			s.conns.Done()
		}
	}}
	s.sched.Go(func() { _ = s.hs.Serve(s.pipes) })
	s.transport = &http.Transport{
		DialContext:         func(ctx context.Context, _, _ string) (net.Conn, error) { return s.pipes.dial(ctx) },
		MaxIdleConnsPerHost: 1024,
		DisableCompression:  true,
	}
	s.client = &http.Client{Transport: s.transport}
	s.URL = "http://llmmetricstest.invalid"
	return s
}

func newServer(cfg ServerConfig) *Server {
	cfg = cfg.withDefaults()
	s := &Server{
		cfg:    cfg,
		arrive: make(chan *job),
		quit:   make(chan struct{}),
		rng:    rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
	}
	s.handler = s.routes() // api.go
	s.sched.Go(s.run)
	return s
}

// Config returns the configuration in use, with defaults applied.
func (s *Server) Config() ServerConfig { return s.cfg }

// Handler returns the server's HTTP handler, to mount elsewhere. It shares
// the server's scheduler and stops serving at Close. A cut stream aborts
// its handler with panic(http.ErrAbortHandler), which net/http handles.
func (s *Server) Handler() http.Handler { return s.handler }

// Client returns an HTTP client that reaches the server (for an in-memory
// server, the only way to reach it). Its connections are closed by Close.
func (s *Server) Client() *http.Client { return s.client }

// Stats returns what the server has served so far.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Close stops the server: in-flight and queued requests are aborted at once
// (their connections are dropped, so a client sees a broken stream, never a
// clean end), and every goroutine the server started has exited when Close
// returns. Close is idempotent.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		close(s.quit)
		if s.ts != nil {
			s.ts.Close()
		}
		if s.hs != nil {
			_ = s.hs.Close()
			s.transport.CloseIdleConnections()
		}
		s.handlers.Wait()
		s.sched.Wait()
		s.conns.Wait()
	})
}
