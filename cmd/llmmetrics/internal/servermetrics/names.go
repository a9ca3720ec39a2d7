// Package servermetrics reads what a model server says about itself on its
// Prometheus endpoints while llmmetrics bench runs a load level, and sums it
// up as a saturation.Server.
//
// # Names
//
// The names recognised, per engine, are in the tables of names.go, each with
// the source it was read from: vLLM (v1 and the older names), SGLang, TGI,
// llama.cpp's server and NVIDIA's DCGM exporter. When a scrape carries
// several names for one figure (vLLM 0.9–0.10 export kv_cache_usage_perc and
// the deprecated gpu_cache_usage_perc side by side), the first name of the
// table present in that scrape is used, so nothing is counted twice.
// Payloads are parsed with prometheus/common/expfmt. Numbers that stand for
// "no value" are skipped: NaN, negative values (vLLM v0's
// gpu_prefix_cache_hit_rate is -1 with prefix caching off) and, for the
// DCGM figures, DCGM's blank sentinels (0x7ffffff0 and up), which old DCGM
// exporters wrote out as values.
//
// The tests read each engine's payload from testdata/, every file naming
// its source in its first lines: real captures where one is published
// (SGLang's documentation, vLLM's design document, a vLLM v0 scrape in
// AIBrix's documentation, a DCGM exporter scrape in NVIDIA's aicr
// conformance evidence) or was taken from a running server (llama.cpp's,
// release b4747), and payloads assembled from the names' sources, marked
// so, where none is (TGI, llama.cpp's later layout, vLLM's engine label
// and deprecated names).
//
// # Aggregation
//
// Every series (one label set of one endpoint) is an engine, or a GPU for the
// DCGM figures. Over one level's scrapes:
//
//   - requests running and waiting: each engine's mean over the scrapes,
//     summed over engines; the waiting maximum is the largest sum seen in one
//     scrape;
//   - KV-cache usage: the largest engine's mean (the first to run out
//     decides), and the largest value seen;
//   - preemptions, prefix-cache queries and hits (counters): each series'
//     increase between the level's first and last scrape, summed over
//     engines; when a counter goes down (the server restarted) the value
//     after the reset counts as the increase since;
//   - prefix-cache hit rate: Σ hits increase / Σ queries increase; for an
//     engine that exports only a hit-rate gauge (SGLang's cache_hit_rate,
//     vLLM v0's gpu_prefix_cache_hit_rate), the engines' mean of that gauge;
//   - GPU utilization: each GPU's mean, averaged over GPUs (DCGM's percent
//     divided by 100);
//   - power: each GPU's mean, summed over GPUs;
//   - output tokens per joule: the level's output tokens/s over that power
//     (SetOutputRate);
//   - the request-phase histograms (vLLM's queue, prefill and decode
//     times, SGLang's queue time): every bucket, count and sum read as a
//     counter's increase, summed over engines, and a phase's mean and
//     estimated p99 made of them (Phases; the rule is in phases.go).
//
// A figure no endpoint reported stays nil.
package servermetrics

// figure is one quantity of saturation.Server.
type figure int

const (
	figRunning figure = iota
	figWaiting
	figKV
	figPreemptions
	figPrefixQueries
	figPrefixHits
	figPrefixRate // a hit-rate gauge, when no counters are exported
	figGPUUtil
	figPower
	// The request-phase histograms (phases.go): each bucket, the count and
	// the sum are read as counters.
	figQueueTime
	figPrefillTime
	figDecodeTime
	numFigures
)

// figureNames are the figures' names in warnings (results.json's keys).
var figureNames = [numFigures]string{
	"requests_running", "requests_waiting", "kv_cache_usage", "preemptions",
	"prefix_cache_queries", "prefix_cache_hits", "prefix_cache_hit_rate",
	"gpu_utilization", "power_watts", "queue_time", "prefill_time", "decode_time",
}

// metricName is one exported name of a figure and the factor that turns its
// value into the figure's unit.
type metricName struct {
	name  string
	scale float64
}

// Sources of the names:
//
//   - vLLM v1: vllm/v1/metrics/loggers.py (vllm-project/vllm,
//     PrometheusStatLogger): vllm:num_requests_running,
//     vllm:num_requests_waiting, vllm:kv_cache_usage_perc ("1 means 100
//     percent usage") and its deprecated name vllm:gpu_cache_usage_perc,
//     the counters vllm:num_preemptions, vllm:prefix_cache_queries and
//     vllm:prefix_cache_hits (deprecated: vllm:gpu_prefix_cache_queries,
//     vllm:gpu_prefix_cache_hits), exposed by prometheus_client with the
//     _total suffix; labels model_name and engine.
//   - vLLM v0 (vllm/engine/metrics.py): the same gauges under
//     vllm:gpu_cache_usage_perc, vllm:num_preemptions_total, and the gauge
//     vllm:gpu_prefix_cache_hit_rate.
//   - SGLang: docs/references/production_metrics.md (sgl-project/sglang):
//     sglang:num_running_reqs, sglang:num_queue_reqs, sglang:token_usage
//     (fraction of KV tokens in use), sglang:cache_hit_rate.
//   - TGI: docs/source/reference/metrics.md
//     (huggingface/text-generation-inference): tgi_batch_current_size
//     ("Current batch size"), tgi_queue_size ("Current queue size"); TGI
//     exports no KV-cache or preemption figure.
//   - llama.cpp: the server's metrics handler (ggml-org/llama.cpp,
//     examples/server/server.cpp, later tools/server/server-context.cpp)
//     and tools/server/README.md, "GET /metrics": llamacpp:requests_processing
//     (slots busy), llamacpp:requests_deferred (tasks waiting for a slot),
//     llamacpp:kv_cache_usage_ratio ("1 means 100 percent usage"; removed
//     in May 2025, pull request 13660). Every metric is unlabelled;
//     llamacpp:n_busy_slots_per_decode, an average, is declared a counter
//     and is not read. Requests waiting for one of the HTTP server's
//     threads are in neither gauge.
//   - DCGM exporter: etc/default-counters.csv (NVIDIA/dcgm-exporter):
//     DCGM_FI_DEV_GPU_UTIL ("GPU utilization (in %)"), DCGM_FI_DEV_POWER_USAGE
//     ("Power draw (in W)"), DCGM_FI_PROF_GR_ENGINE_ACTIVE ("Ratio of time the
//     graphics engine is active", a 0–1 ratio, used when GPU_UTIL is absent).
var names = [numFigures][]metricName{
	figRunning: {
		{"vllm:num_requests_running", 1}, {"sglang:num_running_reqs", 1},
		{"tgi_batch_current_size", 1}, {"llamacpp:requests_processing", 1},
	},
	figWaiting: {
		{"vllm:num_requests_waiting", 1}, {"sglang:num_queue_reqs", 1},
		{"tgi_queue_size", 1}, {"llamacpp:requests_deferred", 1},
	},
	figKV: {
		{"vllm:kv_cache_usage_perc", 1}, {"vllm:gpu_cache_usage_perc", 1},
		{"sglang:token_usage", 1}, {"llamacpp:kv_cache_usage_ratio", 1},
	},
	figPreemptions: {
		{"vllm:num_preemptions_total", 1}, {"vllm:num_preemptions", 1},
	},
	figPrefixQueries: {
		{"vllm:prefix_cache_queries_total", 1}, {"vllm:prefix_cache_queries", 1},
		{"vllm:gpu_prefix_cache_queries_total", 1}, {"vllm:gpu_prefix_cache_queries", 1},
	},
	figPrefixHits: {
		{"vllm:prefix_cache_hits_total", 1}, {"vllm:prefix_cache_hits", 1},
		{"vllm:gpu_prefix_cache_hits_total", 1}, {"vllm:gpu_prefix_cache_hits", 1},
	},
	figPrefixRate: {
		{"sglang:cache_hit_rate", 1}, {"vllm:gpu_prefix_cache_hit_rate", 1},
	},
	figGPUUtil: {
		{"DCGM_FI_DEV_GPU_UTIL", 0.01}, {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", 1},
	},
	figPower: {
		{"DCGM_FI_DEV_POWER_USAGE", 1},
	},
	// vLLM v1 (vllm/v1/metrics/loggers.py; vLLM v0 exported the same
	// names, vllm/engine/metrics.py), observed when a request finishes:
	// queue = scheduled − queued, prefill = first token − scheduled,
	// decode = last token − first token (vllm/v1/metrics/stats.py). SGLang
	// (python/sglang/srt/metrics/collector.py): sglang:queue_time_seconds,
	// the time from entering the waiting queue to the first forward pass;
	// it exports no per-request prefill or decode histogram.
	figQueueTime: {
		{"vllm:request_queue_time_seconds", 1}, {"sglang:queue_time_seconds", 1},
	},
	figPrefillTime: {
		{"vllm:request_prefill_time_seconds", 1},
	},
	figDecodeTime: {
		{"vllm:request_decode_time_seconds", 1},
	},
}

// isCounter reports whether a figure is read as a counter's increase.
func (f figure) isCounter() bool {
	return f == figPreemptions || f == figPrefixQueries || f == figPrefixHits || f.isHistogram()
}

// isHistogram reports whether a figure is a request-phase histogram.
func (f figure) isHistogram() bool {
	return f == figQueueTime || f == figPrefillTime || f == figDecodeTime
}
