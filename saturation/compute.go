package saturation

import (
	"fmt"
	"time"

	"github.com/llmmetrics/llmmetrics"
)

// causes returns the signals at load i that name what the engine ran out
// of, beside the server's figures: a compute-bound engine
// (SignalComputeBound) and prompts that stall decoding
// (SignalPrefillStall). rep holds the signals that already fired at i.
func (f *finder) causes(i int, rep *LevelReport) []Reason {
	var out []Reason
	if r, ok := computeReason(f.o, f.ms, i, rep.Reasons); ok {
		out = append(out, r)
	}
	if r, ok := stallReason(f.o, f.ms[i].stalls); ok {
		out = append(out, r)
	}
	return out
}

// perToken returns the time per output token of one load's Summaries:
// the median ITL divided by the mean output tokens per chunk (the median,
// so that the few long gaps of prefill stalls do not move it), or the
// median TPOT when no gap was kept; the mean over the entries that have
// either. ok is false when none has.
func perToken(ss []llmmetrics.Summary) (d time.Duration, ok bool) {
	var sum float64
	n := 0
	for _, s := range ss {
		switch {
		case s.ITL.Count > 0 && s.ITL.Median > 0:
			perChunk := 1.0
			if chunks := s.ITL.Count + s.TTFT.Count; chunks > 0 && s.OutputTokens > chunks {
				perChunk = float64(s.OutputTokens) / float64(chunks)
			}
			sum += float64(s.ITL.Median) / perChunk
		case s.TPOT.Count > 0 && s.TPOT.Median > 0:
			sum += float64(s.TPOT.Median)
		default:
			continue
		}
		n++
	}
	if n == 0 {
		return 0, false
	}
	return time.Duration(sum / float64(n)), true
}

// computeReason is SignalComputeBound at load i. It fires at a knee (or a
// throughput drop), decided or not, when, against the lowest load that
// has a time per token and the engine's running requests:
//
//   - the time per token (perToken) grew by Options.ComputeSlowdown or
//     more,
//   - the engine ran at least one more request at once on average
//     (Server.RequestsRunning),
//
// while nothing else explains the knee: the server reports its queue and
// fewer than one request waited in it on average, no queue in front of the
// engine (SignalQueueBeforeEngine's rule), the KV cache not full
// (SignalKVCache's rule; unknown counts as not full, and the message says
// it is not reported) and no preemption.
func computeReason(o Options, ms []merged, i int, fired []Reason) (Reason, bool) {
	if o.Skip&SignalComputeBound != 0 || !atKnee(fired) {
		return Reason{}, false
	}
	s := ms[i].server
	if s == nil || s.RequestsRunning == nil || s.RequestsWaiting == nil || *s.RequestsWaiting >= 1 {
		return Reason{}, false
	}
	front := o
	front.Skip &^= SignalQueueBeforeEngine
	if _, hidden := beforeEngine(front, ms[i].inFlight, s); hidden {
		return Reason{}, false
	}
	if kvFull(o, s) || (s.Preemptions != nil && *s.Preemptions >= 1) {
		return Reason{}, false
	}
	tok, ok := perToken(ms[i].summaries)
	if !ok {
		return Reason{}, false
	}
	for k := range i {
		b := ms[k].server
		if b == nil || b.RequestsRunning == nil {
			continue
		}
		baseTok, ok := perToken(ms[k].summaries)
		if !ok || baseTok <= 0 {
			continue
		}
		slow := float64(tok)/float64(baseTok) - 1
		running, baseRunning := *s.RequestsRunning, *b.RequestsRunning
		if slow < o.ComputeSlowdown || running-baseRunning < 1 {
			return Reason{}, false
		}
		batch := fmt.Sprintf("%.3g requests at once", running)
		if s.Slots != nil && *s.Slots > 0 {
			batch = fmt.Sprintf("%.3g of its %d slots at once", running, *s.Slots)
		}
		kv := "KV cache not reported"
		if s.KVCacheUsage != nil {
			kv = fmt.Sprintf("KV cache %.0f%%", 100**s.KVCacheUsage)
		}
		queue := "no queue"
		if *s.RequestsWaiting >= 0.05 {
			queue = fmt.Sprintf("%.1f waiting on average", *s.RequestsWaiting)
		}
		return Reason{Signal: SignalComputeBound, Value: slow, Threshold: o.ComputeSlowdown, Message: fmt.Sprintf(
			"decode slowed %.0f%% (%s a token at load %g, %s here) as the engine ran %s (%.3g at load %g); %s, %s: the engine is compute-bound at this batch — more replicas or a faster engine, not more KV cache",
			100*slow, fmtDur(baseTok), ms[k].load, fmtDur(tok), batch, baseRunning, ms[k].load, kv, queue)}, true
	}
	return Reason{}, false
}

// atKnee reports whether a knee or a throughput drop fired (decided or
// not): what SignalComputeBound explains.
func atKnee(rs []Reason) bool {
	for _, r := range rs {
		if r.Signal == SignalKnee || r.Signal == SignalThroughputDrop {
			return true
		}
	}
	return false
}

// kvFull is SignalKVCache's rule: the mean use at KVCacheFull or more, or
// the fullest scrape at KVCacheFull plus half the remaining room.
func kvFull(o Options, s *Server) bool {
	if s.KVCacheUsage == nil {
		return false
	}
	use, peak := *s.KVCacheUsage, *s.KVCacheUsage
	if s.KVCacheUsageMax != nil {
		peak = max(peak, *s.KVCacheUsageMax)
	}
	return use >= o.KVCacheFull || peak >= o.KVCacheFull+(1-o.KVCacheFull)/2
}
