// Package llmmetricstest helps test code that measures LLM serving: a manual
// clock, a collector that turns what a Tracker emitted into plain values,
// and a fake LLM server speaking the OpenAI, Anthropic, Gemini and Ollama
// APIs, whose timing behaves like a real continuously batching model
// server (so a load test sees a real saturation knee). It does not depend
// on package llmmetrics; it works with any code that takes a
// func() time.Time clock, an OpenTelemetry MeterProvider or an API base
// URL and an *http.Client.
//
// # Clock
//
// A Clock moves only when told to. Pass its Now method wherever a clock
// function is taken:
//
//	clock := llmmetricstest.NewClock(time.Time{}) // 2025-01-01T00:00:00Z
//	tr, _ := llmmetrics.NewTracker(llmmetrics.WithClock(clock.Now), …)
//	req := tr.Start(ctx)
//	clock.Advance(120 * time.Millisecond)
//	req.Chunk(1) // TTFT is exactly 120ms
//
// # Collecting metrics
//
// NewMeterProvider returns an SDK MeterProvider and a Collector reading it.
// Collect returns Metrics, a map from metric name to plain values, with
// readers that add up the points whose attributes include the given ones:
//
//	mp, col := llmmetricstest.NewMeterProvider()
//	tr, _ := llmmetrics.NewTracker(llmmetrics.WithMeterProvider(mp), …)
//	… run the code under test …
//	m := col.Collect(t)
//	assert.Equal(t, uint64(3), m.Count("gen_ai.server.time_to_first_token"))
//	assert.Equal(t, 2.0, m.Value("llmmetrics.requests", llmmetrics.OutcomeKey.String("ok")))
//	assert.Equal(t, []uint64{0, 2, 1, 0}, m.Buckets("my.histogram"))
//
// Count reads histogram sample counts, Sum histogram sums or counter
// totals, Value counters, up-down counters and gauges, Bounds and Buckets
// explicit histogram buckets, SumBy and CountBy split a metric by one
// attribute's values, Has tells a missing metric from a zero one, and
// Metrics.String lists everything for a failure message. Exponential
// histograms read like explicit ones through Count and Sum; each point's
// Exponential field holds its scale and bucket counts.
//
// # The fake server
//
// NewServer starts a server on a loopback port speaking five APIs, each
// streaming and not:
//
//   - OpenAI POST /v1/chat/completions and /v1/completions (SSE,
//     stream_options.include_usage, vLLM's continuous_usage_stats,
//     max_tokens / max_completion_tokens, vLLM's ignore_eos) and /v1/responses (the
//     Responses API's events, max_output_tokens); GET /v1/models; GET /metrics (the
//     scheduler's state in vLLM's Prometheus names: running, waiting,
//     KV-cache usage, preemptions, prefix-cache queries and hits, and the
//     histograms of the requests' queue, prefill and decode times);
//   - Anthropic POST /v1/messages (message_start with the input tokens,
//     message_delta with the cumulative output tokens, max_tokens);
//   - Gemini POST /v1beta/models/{model}:streamGenerateContent (SSE with
//     ?alt=sse, else a streamed JSON array) and :generateContent
//     (generationConfig.maxOutputTokens);
//   - Ollama POST /api/chat and /api/generate (NDJSON, streaming unless
//     "stream": false; options.num_predict).
//
// Point an SDK at it with its base URL and HTTP client:
//
//	s := llmmetricstest.NewServer(llmmetricstest.ServerConfig{})
//	defer s.Close()
//	// openai-go, go-openai: base URL s.URL + "/v1"; anthropic-sdk-go: s.URL;
//	// google.golang.org/genai: HTTPOptions.BaseURL s.URL;
//	// ollama's api.NewClient: s.URL; each with s.Client() (or any client)
//
// A request that offers tools (OpenAI chat and Responses, Anthropic,
// Gemini, Ollama) is answered with a call of one of them in its API's own
// shape, streamed as that API streams a call (OpenAI's delta.tool_calls
// and function_call_arguments events, Anthropic's input_json_delta;
// Gemini's and Ollama's calls whole), unless its tool choice asks for none
// or SkipToolCallRate draws text; tool definitions, calls and results
// count in its prompt like text. Stats counts the calls (ToolCalls).
//
// Whatever their protocol, requests are sequences of the same batch, so
// every SDK sees the same batching and saturation, and Stats counts
// their tokens alike (streamed or not). Their timing is simulated by one
// scheduler goroutine (see ServerConfig):
// a FIFO queue, a batch of at most MaxBatch requests, a prefill step whose
// length grows with the prompt, decode steps that lengthen as the batch
// grows, and a KV-cache budget beyond which the newest requests are
// preempted and later recomputed. A prefix cache (SharedPrefixTokens by
// group, or PrefixCacheBlocks following the prompts' content byte for
// byte, as vLLM's automatic prefix caching) spares the prefill of the
// cached tokens and reports them in each API's usage. With the defaults, a closed-loop sweep
// of 1…128 concurrent streams shows output throughput rising to about
// 1,000 tokens/s near 32 streams and falling beyond, while p99 TTFT
// explodes long before the median moves. ServerConfig also injects faults,
// each in the protocol's own error shape: HTTP 500s (FailureRate), 429s
// (RateLimitRate), streams cut without their end marker (CutRate), error
// events inside a stream (ErrorEventRate) and stalls (PauseRate,
// PauseDuration). Stats returns what the server served (results, prompt
// and completion tokens, preemptions), to compare with what the client
// measured.
//
// # Fake time with testing/synctest
//
// The server sleeps on real timers, so inside a testing/synctest bubble it
// runs on fake time: a test of minutes of load finishes in milliseconds and
// every duration is exact. Loopback sockets stall a bubble's fake time, so
// there use NewInMemoryServer, whose Client speaks real HTTP over in-memory
// pipes:
//
//	synctest.Test(t, func(t *testing.T) {
//		s := llmmetricstest.NewInMemoryServer(llmmetricstest.ServerConfig{Jitter: -1})
//		defer s.Close()
//		resp, err := s.Client().Post(s.URL+"/v1/chat/completions", "application/json", body)
//		… read the stream; time.Now() is the bubble's fake time …
//	})
//
// Close aborts in-flight requests (their clients see a broken stream) and
// waits for every goroutine the server started, so synctest.Test's check
// that no goroutine outlives the bubble holds.
//
// docs/testing.md in the repository tabulates the wire format of each API
// the server speaks and the saturation knee a concurrency sweep shows; the
// defaults are ServerConfig's field docs.
package llmmetricstest
