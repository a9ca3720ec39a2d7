// Package saturation finds where adding load to an LLM server stops paying
// off, and says why: from each load level's client-side Summary (throughput,
// tail latency, SLO attainment) and, when the server's own metrics were read
// (Server), from its queue, KV cache, preemptions and GPUs.
package saturation
