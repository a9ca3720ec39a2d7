// Package saturation finds where adding load to an LLM server stops paying
// off, and says why: from each load level's client-side Summary (throughput,
// tail latency, SLO attainment) and, when the server's own metrics were read
// (Server), from its queue, KV cache, preemptions and GPUs, and from what
// the engine ran out of: compute (tokens slower as the batch grows, with
// no queue or full KV cache to explain it) or prefill capacity (long gaps
// between tokens that end with another request's first token, counted by
// CountStalls).
package saturation
