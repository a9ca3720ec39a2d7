package saturation

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/llmmetrics/llmmetrics"
)

// ThroughputMeasure selects the throughput figure Find tracks. The zero
// value is ThroughputOutputTokens. Its text form is "output_tokens",
// "requests" or "total_tokens".
type ThroughputMeasure uint8

const (
	// ThroughputOutputTokens uses Summary.OutputThroughput (tokens/s) and
	// token goodput.
	ThroughputOutputTokens ThroughputMeasure = iota
	// ThroughputRequests uses Summary.RequestThroughput (requests/s) and
	// request goodput.
	ThroughputRequests
	// ThroughputTotalTokens uses Summary.TotalTokenThroughput (tokens/s)
	// and token goodput.
	ThroughputTotalTokens
)

var measureNames = [...]string{ThroughputOutputTokens: "output_tokens", ThroughputRequests: "requests", ThroughputTotalTokens: "total_tokens"}

// String returns the measure's name, e.g. "output_tokens" (or
// "ThroughputMeasure(N)").
func (m ThroughputMeasure) String() string {
	if int(m) < len(measureNames) {
		return measureNames[m]
	}
	return fmt.Sprintf("ThroughputMeasure(%d)", uint8(m))
}

// MarshalText encodes the measure as its name.
func (m ThroughputMeasure) MarshalText() ([]byte, error) {
	if int(m) >= len(measureNames) {
		return nil, fmt.Errorf("%w: no name for throughput measure %d", llmmetrics.ErrInvalid, uint8(m))
	}
	return []byte(measureNames[m]), nil
}

// UnmarshalText decodes a name, in any case.
func (m *ThroughputMeasure) UnmarshalText(b []byte) error {
	for i, n := range measureNames {
		if strings.EqualFold(string(b), n) {
			*m = ThroughputMeasure(i)
			return nil
		}
	}
	return fmt.Errorf("%w: unknown throughput measure %q", llmmetrics.ErrInvalid, b)
}

// Signal is one sign of saturation. Signals are bit flags so Options.Skip
// can hold several. The client-side ones decide the saturation point; the
// others (SignalKVCache, SignalQueue, SignalPreemption, SignalGPU,
// SignalQueueBeforeEngine, SignalComputeBound, SignalPrefillStall) only
// explain it, from Level.Server and Level.PrefillStalls.
type Signal uint16

const (
	// SignalKnee: the throughput gained per added unit of load fell below
	// Options.KneeFraction of linear scaling from the previous level.
	SignalKnee Signal = 1 << iota
	// SignalThroughputDrop: throughput fell below the best lower load by
	// more than Options.DropTolerance.
	SignalThroughputDrop
	// SignalTailGrowth: a tail percentile grew by TailGrowth× or more
	// since the lowest load while the median stayed within MedianFlat×:
	// requests are queueing.
	SignalTailGrowth
	// SignalAttainment: SLO attainment fell below AttainmentTarget.
	SignalAttainment
	// SignalKVCache: the server's KV cache was nearly full
	// (Server.KVCacheUsage ≥ KVCacheFull, or its largest scrape ≥
	// KVCacheFull + half the remaining room).
	SignalKVCache
	// SignalQueue: requests waited in the server's queue, more than at the
	// lower load (Server.RequestsWaiting).
	SignalQueue
	// SignalPreemption: the server preempted requests, more than at the
	// lower load (Server.Preemptions).
	SignalPreemption
	// SignalGPU: the GPUs were busy ≥ GPUBusy of the time
	// (Server.GPUUtilization).
	SignalGPU
	// SignalQueueBeforeEngine: the client had clearly more requests in
	// flight (Level.InFlight) than the server counts running and waiting
	// (at least one more, and at least BeforeEngineFraction of them):
	// the rest wait in front of the engine (HTTP threads, a proxy, a
	// connection limit), where its metrics cannot see them.
	SignalQueueBeforeEngine
	// SignalComputeBound: at a knee (or a drop), the time per token grew
	// by ComputeSlowdown or more since the lowest load as the engine ran
	// more requests at once, while neither the KV cache nor a queue (in
	// the engine or in front of it) explains the knee: the engine is
	// compute-bound at this batch (see compute.go).
	SignalComputeBound
	// SignalPrefillStall: most long gaps between tokens (over
	// Level.PrefillStalls' threshold) ended with another request's first
	// token, or inside its prefill: prompts stall the running decodes
	// (see CountStalls).
	SignalPrefillStall
)

var signalNames = []struct {
	s    Signal
	name string
}{
	{SignalKnee, "knee"}, {SignalThroughputDrop, "throughput_drop"}, {SignalTailGrowth, "tail_growth"},
	{SignalAttainment, "attainment"}, {SignalKVCache, "kv_cache"}, {SignalQueue, "queue"},
	{SignalPreemption, "preemption"}, {SignalGPU, "gpu"}, {SignalQueueBeforeEngine, "queue_before_engine"},
	{SignalComputeBound, "compute_bound"}, {SignalPrefillStall, "prefill_stall"},
}

// clientSignals decide the saturation point; the others explain it.
const clientSignals = SignalKnee | SignalThroughputDrop | SignalTailGrowth | SignalAttainment

// String returns the signal's name, or names joined by "|" for a set.
func (s Signal) String() string {
	var parts []string
	for _, n := range signalNames {
		if s&n.s != 0 {
			parts = append(parts, n.name)
			s &^= n.s
		}
	}
	if s != 0 {
		parts = append(parts, fmt.Sprintf("Signal(%d)", uint16(s)))
	}
	return strings.Join(parts, "|")
}

// MarshalText encodes the signal as String does.
func (s Signal) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText decodes a name or "|"-joined names, in any case.
func (s *Signal) UnmarshalText(b []byte) error {
	var out Signal
	for part := range strings.SplitSeq(string(b), "|") {
		found := false
		for _, n := range signalNames {
			if strings.EqualFold(part, n.name) {
				out |= n.s
				found = true
			}
		}
		if !found && part != "" {
			return fmt.Errorf("%w: unknown signal %q", llmmetrics.ErrInvalid, part)
		}
	}
	*s = out
	return nil
}

// Defaults of Options, used where a field is zero.
const (
	// DefaultKneeFraction: the knee fires when a step gains less than half
	// of what linear scaling from the previous level would have gained.
	DefaultKneeFraction = 0.5
	// DefaultDropTolerance: throughput 5 % below the best lower load
	// counts as a fall (smaller dips are noise).
	DefaultDropTolerance = 0.05
	// DefaultTailGrowth: the tail percentile must have at least tripled.
	DefaultTailGrowth = 3.0
	// DefaultMedianFlat: the median must have grown by less than 50 %.
	DefaultMedianFlat = 1.5
	// DefaultTailPercentile: the tail signal watches p99.
	DefaultTailPercentile = 99.0
	// DefaultAttainmentTarget: 90 % of requests must meet the SLO, the
	// attainment goal the DistServe paper (OSDI 2024) evaluates goodput at.
	DefaultAttainmentTarget = 0.9
	// DefaultKVCacheFull: a KV cache 90 % full on average over a level
	// leaves no room for the next batch's growth.
	DefaultKVCacheFull = 0.9
	// DefaultGPUBusy: GPUs busy 95 % of the time have no idle cycles left.
	DefaultGPUBusy = 0.95
	// DefaultMaxFailureRate: a level where more than 5 % of requests did
	// not complete is untrusted.
	DefaultMaxFailureRate = 0.05
	// BeforeEngineFraction: SignalQueueBeforeEngine fires when the
	// requests the server does not count are at least one and at least
	// this fraction of the client's in flight (smaller gaps are the
	// scrape's timing).
	BeforeEngineFraction = 0.25
	// DefaultComputeSlowdown: SignalComputeBound needs the time per token
	// to have grown by at least 20 % since the lowest load (a llama.cpp
	// server on one CPU thread slowed 27 % as its 4 slots filled; on a GPU
	// a decode step grows a few percent per added request).
	DefaultComputeSlowdown = 0.2
	// DefaultStallFactor: CountStalls counts a gap between tokens as long
	// when it is more than 5 times the level's median gap.
	DefaultStallFactor = 5.0
	// MinStalls: SignalPrefillStall needs at least 3 long gaps that
	// overlapped another request's prefill (one or two are anecdotes).
	MinStalls = 3
)

// Options configures Find. The zero value uses every default (see the
// Default… constants): output-token throughput, all signals, TTFT for the
// tail signal, no percentile objectives.
type Options struct {
	// Throughput selects the throughput figure (default output tokens/s).
	Throughput ThroughputMeasure
	// KneeFraction in (0, 1]: the knee fires when
	// ΔThroughput/ΔLoad < KneeFraction × (throughput/load at the previous
	// level): doubling the load with the default 0.5, throughput grew by
	// less than 50 %. 0 means DefaultKneeFraction.
	KneeFraction float64
	// DropTolerance in (0, 1): throughput counts as falling when below
	// (1 − DropTolerance) × the best lower level. 0 means
	// DefaultDropTolerance.
	DropTolerance float64
	// TailGrowth > 1: how many times the tail percentile must have grown
	// since the lowest level. 0 means DefaultTailGrowth.
	TailGrowth float64
	// MedianFlat ≥ 1: the median may grow at most this many times for the
	// tail signal to fire. 0 means DefaultMedianFlat.
	MedianFlat float64
	// TailPercentile in (50, 100]: the percentile the tail signal watches;
	// it must be among the Summary's percentiles (100 is always there).
	// 0 means DefaultTailPercentile.
	TailPercentile float64
	// TailLatencies lists the distributions the tail signal watches. nil
	// means TTFT only (E2EL is another good choice).
	TailLatencies []llmmetrics.Latency
	// AttainmentTarget in (0, 1]: the SLO attainment a level must reach.
	// 0 means DefaultAttainmentTarget.
	AttainmentTarget float64
	// ByTask judges SLO attainment by tasks (task goodput): at a level
	// with Level.Tasks, the attainment signal and MeetsSLO take the share
	// of good tasks instead of the share of requests that met the SLO. A
	// level without tasks is judged by its requests.
	ByTask bool
	// Objectives are percentile objectives ("p95 ttft<=200ms") a level
	// must pass to count as meeting the SLO (Result.MaxGoodLoad).
	Objectives []llmmetrics.Objective
	// KVCacheFull in (0, 1]: the KV-cache use SignalKVCache reports. 0
	// means DefaultKVCacheFull.
	KVCacheFull float64
	// GPUBusy in (0, 1]: the GPU utilization SignalGPU reports. 0 means
	// DefaultGPUBusy.
	GPUBusy float64
	// ComputeSlowdown > 0: how much the time per token must have grown
	// since the lowest load for SignalComputeBound (0.2: by 20 %). 0
	// means DefaultComputeSlowdown.
	ComputeSlowdown float64
	// MaxFailureRate in (0, 1): a level where a larger share of requests
	// did not complete is untrusted (LevelReport.Untrusted), and so is a
	// verdict drawn from it. 0 means DefaultMaxFailureRate.
	MaxFailureRate float64
	// Skip lists signals not to evaluate (bit flags, e.g.
	// SignalKnee|SignalTailGrowth).
	Skip Signal
}

// ErrInvalidOptions is returned (wrapped) by Options.Validate and Find.
var ErrInvalidOptions = errors.New("llmmetrics: invalid saturation options")

// Validate returns an error wrapping ErrInvalidOptions when a field is
// outside its documented range (NaN included) or an objective is invalid
// (the error then wraps llmmetrics.ErrInvalid as well).
func (o Options) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidOptions}, args...)...)
	}
	frac := func(v float64) bool { return v == 0 || (v > 0 && v <= 1) }
	switch {
	case int(o.Throughput) >= len(measureNames):
		return bad("unknown throughput measure %d", o.Throughput)
	case !frac(o.KneeFraction):
		return bad("knee fraction %v outside (0, 1]", o.KneeFraction)
	case o.DropTolerance != 0 && !(o.DropTolerance > 0 && o.DropTolerance < 1):
		return bad("drop tolerance %v outside (0, 1)", o.DropTolerance)
	case o.TailGrowth != 0 && !(o.TailGrowth > 1 && !math.IsInf(o.TailGrowth, 0)):
		return bad("tail growth %v must be > 1 and finite", o.TailGrowth)
	case o.MedianFlat != 0 && !(o.MedianFlat >= 1 && !math.IsInf(o.MedianFlat, 0)):
		return bad("median flat factor %v must be ≥ 1 and finite", o.MedianFlat)
	case o.TailPercentile != 0 && !(o.TailPercentile > 50 && o.TailPercentile <= 100):
		return bad("tail percentile %v outside (50, 100]", o.TailPercentile)
	case !frac(o.AttainmentTarget):
		return bad("attainment target %v outside (0, 1]", o.AttainmentTarget)
	case !frac(o.KVCacheFull):
		return bad("KV cache threshold %v outside (0, 1]", o.KVCacheFull)
	case !frac(o.GPUBusy):
		return bad("GPU busy threshold %v outside (0, 1]", o.GPUBusy)
	case o.ComputeSlowdown != 0 && !(o.ComputeSlowdown > 0 && !math.IsInf(o.ComputeSlowdown, 0)):
		return bad("compute slowdown %v must be > 0 and finite", o.ComputeSlowdown)
	case o.MaxFailureRate != 0 && !(o.MaxFailureRate > 0 && o.MaxFailureRate < 1):
		return bad("max failure rate %v outside (0, 1)", o.MaxFailureRate)
	}
	for _, l := range o.TailLatencies {
		if _, err := l.MarshalText(); err != nil {
			return bad("unknown tail latency %d", uint8(l))
		}
	}
	for _, obj := range o.Objectives {
		// Check rejects an invalid objective whatever the summary holds.
		if _, err := obj.Check(llmmetrics.Summary{}); err != nil {
			return bad("%w", err) // wraps ErrInvalid too
		}
	}
	return nil
}

func (o Options) withDefaults() Options {
	def := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.KneeFraction, DefaultKneeFraction)
	def(&o.DropTolerance, DefaultDropTolerance)
	def(&o.TailGrowth, DefaultTailGrowth)
	def(&o.MedianFlat, DefaultMedianFlat)
	def(&o.TailPercentile, DefaultTailPercentile)
	def(&o.AttainmentTarget, DefaultAttainmentTarget)
	def(&o.KVCacheFull, DefaultKVCacheFull)
	def(&o.GPUBusy, DefaultGPUBusy)
	def(&o.ComputeSlowdown, DefaultComputeSlowdown)
	def(&o.MaxFailureRate, DefaultMaxFailureRate)
	if o.TailLatencies == nil {
		o.TailLatencies = []llmmetrics.Latency{llmmetrics.LatencyTTFT}
	}
	return o
}

// measure returns the tracked throughput and goodput of s (NaN/Inf as 0).
func (o Options) measure(s llmmetrics.Summary) (throughput, goodput float64) {
	switch o.Throughput {
	case ThroughputRequests:
		throughput, goodput = s.RequestThroughput, s.Goodput.RequestsPerSecond
	case ThroughputTotalTokens:
		throughput, goodput = s.TotalTokenThroughput, s.Goodput.TokensPerSecond
	default:
		throughput, goodput = s.OutputThroughput, s.Goodput.TokensPerSecond
	}
	return finiteOr0(throughput), finiteOr0(goodput)
}

func (o Options) unit() string {
	if o.Throughput == ThroughputRequests {
		return "req/s"
	}
	return "tok/s"
}

func finiteOr0(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return f
}
