package saturation

// Server is what the model server reported about itself during one load
// level, read from its Prometheus endpoints (llmmetrics bench's
// -server-metrics). A nil field was not reported: the server does not export
// it, or no scrape succeeded. Ratios are 0–1, not percent.
//
// The JSON keys are those of results.json's levels[].server.
type Server struct {
	// RequestsRunning is the mean number of requests being generated
	// (decode and prefill) over the level's scrapes, summed over engines.
	RequestsRunning *float64 `json:"requests_running,omitempty"`
	// RequestsWaiting is the mean queue depth (requests admitted but not
	// scheduled) over the level's scrapes, summed over engines.
	RequestsWaiting *float64 `json:"requests_waiting,omitempty"`
	// RequestsWaitingMax is the largest queue depth seen in one scrape.
	RequestsWaitingMax *float64 `json:"requests_waiting_max,omitempty"`
	// KVCacheUsage is the mean fraction of KV-cache blocks in use (0–1)
	// over the level's scrapes; with several engines, the largest engine's
	// mean (the first to run out decides).
	KVCacheUsage *float64 `json:"kv_cache_usage,omitempty"`
	// KVCacheUsageMax is the largest fraction seen in one scrape.
	KVCacheUsageMax *float64 `json:"kv_cache_usage_max,omitempty"`
	// Preemptions is how many requests the server preempted (evicted from
	// the KV cache to be recomputed or swapped) during the level: the
	// increase of the counter, summed over engines.
	Preemptions *float64 `json:"preemptions,omitempty"`
	// PrefixCacheHitRate is the fraction of prompt tokens (or blocks, as the
	// engine counts them) served from the prefix cache during the level:
	// the increase of hits over the increase of queries, summed over engines.
	PrefixCacheHitRate *float64 `json:"prefix_cache_hit_rate,omitempty"`
	// GPUUtilization is the mean fraction of time the GPUs were busy (0–1)
	// during the level, averaged over GPUs.
	GPUUtilization *float64 `json:"gpu_utilization,omitempty"`
	// PowerWatts is the mean power draw during the level, summed over GPUs.
	PowerWatts *float64 `json:"power_watts,omitempty"`
	// OutputTokensPerJoule is the level's output tokens per second over
	// PowerWatts: output tokens per joule of GPU energy.
	OutputTokensPerJoule *float64 `json:"output_tokens_per_joule,omitempty"`
}
