package saturation

import (
	"fmt"
	"math"
)

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
	// Slots is the most requests the engine runs at once, as the server
	// says it (llama.cpp's /props total_slots), or as it is configured;
	// nil when unknown. SignalComputeBound compares RequestsRunning with
	// it.
	Slots *int `json:"slots,omitempty"`
}

// serverReasons returns the server-side signals at load i, compared with
// the previous load that has the same figure.
func serverReasons(o Options, ms []merged, i int) []Reason {
	s := ms[i].server
	if s == nil {
		return nil
	}
	var out []Reason
	if r, ok := beforeEngine(o, ms[i].inFlight, s); ok {
		out = append(out, r)
	}
	prev := func(get func(*Server) *float64) (v float64, load float64, ok bool) {
		for k := i - 1; k >= 0; k-- {
			if ps := ms[k].server; ps != nil && get(ps) != nil {
				return *get(ps), ms[k].load, true
			}
		}
		return 0, 0, false
	}
	if o.Skip&SignalKVCache == 0 && kvFull(o, s) {
		use, peak := *s.KVCacheUsage, *s.KVCacheUsage
		if s.KVCacheUsageMax != nil {
			peak = max(peak, *s.KVCacheUsageMax)
		}
		msg := fmt.Sprintf("KV cache at %.0f%% on average", 100*use)
		if peak > use {
			msg += fmt.Sprintf(", %.0f%% at its fullest", 100*peak)
		}
		out = append(out, Reason{Signal: SignalKVCache, Value: use, Threshold: o.KVCacheFull, Message: msg})
	}
	// rising reports a figure that is there and above the lower load's.
	rising := func(sig Signal, get func(*Server) *float64, least float64, format string) {
		if o.Skip&sig != 0 || get(s) == nil || *get(s) < least {
			return
		}
		v := *get(s)
		pv, pl, ok := prev(get)
		if ok && v <= pv {
			return
		}
		msg := fmt.Sprintf(format, v)
		if ok {
			msg += fmt.Sprintf(" (%.0f at load %g)", pv, pl)
		}
		out = append(out, Reason{Signal: sig, Value: v, Threshold: pv, Message: msg})
	}
	rising(SignalQueue, func(s *Server) *float64 { return s.RequestsWaiting }, 1, "%.0f requests waiting in the server's queue on average")
	rising(SignalPreemption, func(s *Server) *float64 { return s.Preemptions }, 1, "preemptions rising: %.0f during the level")
	if o.Skip&SignalGPU == 0 && s.GPUUtilization != nil && *s.GPUUtilization >= o.GPUBusy {
		out = append(out, Reason{Signal: SignalGPU, Value: *s.GPUUtilization, Threshold: o.GPUBusy,
			Message: fmt.Sprintf("GPUs busy %.0f%% of the time", 100**s.GPUUtilization)})
	}
	return out
}

// beforeEngine compares the client's mean in-flight requests with the
// server's running and waiting ones (SignalQueueBeforeEngine).
func beforeEngine(o Options, inFlight float64, s *Server) (Reason, bool) {
	if o.Skip&SignalQueueBeforeEngine != 0 || inFlight <= 0 || s.RequestsRunning == nil {
		return Reason{}, false
	}
	running, waiting := *s.RequestsRunning, 0.0
	if s.RequestsWaiting != nil {
		waiting = *s.RequestsWaiting
	}
	hidden := inFlight - running - waiting
	if hidden < 1 || hidden < BeforeEngineFraction*inFlight {
		return Reason{}, false
	}
	return Reason{Signal: SignalQueueBeforeEngine, Value: hidden, Threshold: max(1, BeforeEngineFraction*inFlight), Message: fmt.Sprintf(
		"%.3g in flight, the engine runs %.3g and queues %.3g: about %.0f wait in front of it — HTTP threads, a proxy or a connection limit",
		inFlight, running, waiting, math.Floor(hidden))}, true
}
