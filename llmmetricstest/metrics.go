package llmmetricstest

import (
	"fmt"
	"net/http"
)

// metrics serves GET /metrics: the scheduler's state in vLLM v1's names
// (vllm/v1/metrics/loggers.py), in the Prometheus text format 0.0.4 that
// prometheus_client writes, with vLLM's labels model_name and engine:
//
//   - vllm:num_requests_running, vllm:num_requests_waiting: the batch and
//     the queue, as of the last scheduler step;
//   - vllm:kv_cache_usage_perc: the batch's KV tokens (prompt + generated)
//     over KVBudget, 0–1 (0 with an unlimited budget);
//   - vllm:num_preemptions_total: Stats.Preemptions;
//   - vllm:prefix_cache_queries_total and vllm:prefix_cache_hits_total: the
//     prompt tokens of the scheduled requests and those served from the
//     prefix cache (Stats.PromptTokens and Stats.CachedPromptTokens);
//   - vllm:prompt_tokens_total and vllm:generation_tokens_total;
//   - the histograms of the finished requests' phases,
//     vllm:request_queue_time_seconds, vllm:request_prefill_time_seconds
//     and vllm:request_decode_time_seconds (prefill.go).
func (s *Server) metrics(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	g, st := s.gauges, s.stats
	s.mu.Unlock()
	kv := 0.0
	if s.cfg.KVBudget > 0 {
		kv = min(float64(g.kvUsed)/float64(s.cfg.KVBudget), 1)
	}
	labels := fmt.Sprintf(`engine="0",model_name=%q`, s.cfg.Model)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	for _, m := range []struct {
		name, typ, help string
		v               float64
	}{
		{"vllm:num_requests_running", "gauge", "Number of requests in model execution batches.", float64(g.running)},
		{"vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.", float64(g.waiting)},
		{"vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.", kv},
		{"vllm:prefix_cache_queries_total", "counter", "Prefix cache queries, in terms of number of queried tokens.", float64(g.queries)},
		{"vllm:prefix_cache_hits_total", "counter", "Prefix cache hits, in terms of number of cached tokens.", float64(g.hits)},
		{"vllm:num_preemptions_total", "counter", "Cumulative number of preemption from the engine.", float64(st.Preemptions)},
		{"vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.", float64(st.PromptTokens)},
		{"vllm:generation_tokens_total", "counter", "Number of generation tokens processed.", float64(st.CompletionTokens)},
	} {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n%s{%s} %g\n", m.name, m.help, m.name, m.typ, m.name, labels, m.v)
	}
	s.writePhases(w, labels)
}
