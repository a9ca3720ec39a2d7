package llmmetrics

import (
	"math"
	"time"

	"github.com/llmmetrics/llmmetrics/internal/stats"
	"github.com/llmmetrics/llmmetrics/internal/timebase"
)

// SummaryOptions configures Summarize. The zero value is ready to use.
type SummaryOptions struct {
	// Duration is the run duration rates are divided by; zero or negative
	// means max(End) − min(Start) over the records. Pass the benchmark's
	// wall-clock duration to match `vllm bench serve` exactly.
	Duration time.Duration
	// Percentiles lists the percentiles (in percent, 0–100) each
	// Distribution reports, in order. nil means 50, 90, 95, 99; an empty
	// non-nil slice means none; NaN and out-of-range values are ignored.
	Percentiles []float64
	// SLO decides which requests are good. Negative limits count as unset
	// (SLO.Validate rejects them).
	SLO SLO
}

// defaultPercentiles is what SummaryOptions.Percentiles = nil reports.
var defaultPercentiles = []float64{50, 90, 95, 99}

// Summary is the aggregate of a set of Records over a run, as Summarize
// computes it. Token totals and latency distributions count completed (OK)
// requests only. Rates are per second; durations are rounded to the
// nanosecond. JSON names are stable snake_case, durations integer
// nanoseconds in fields ending in _ns.
type Summary struct {
	// Requests counts every record; Completed those with OutcomeOK, Failed
	// those with OutcomeError (or an invalid Outcome) and Canceled those with
	// OutcomeCanceled (which vLLM would count as failed).
	Requests  int `json:"requests"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	Canceled  int `json:"canceled"`
	// Duration is the run duration rates were computed over.
	Duration time.Duration `json:"duration_ns"`
	// Token totals over completed requests (the Record fields of the same
	// names); OutputTokens includes the reasoning tokens.
	InputTokens           int `json:"input_tokens"`
	OutputTokens          int `json:"output_tokens"`
	ReasoningTokens       int `json:"reasoning_tokens"`
	CachedInputTokens     int `json:"cached_input_tokens"`
	CacheWriteInputTokens int `json:"cache_write_input_tokens"`
	// PrefixCacheHitRate is CachedInputTokens / InputTokens, in [0, 1] (0
	// when no input was reported).
	PrefixCacheHitRate float64 `json:"prefix_cache_hit_rate"`
	// TokensSaturated reports that a token total (or Goodput.GoodTokens)
	// would have exceeded math.MaxInt and was held there: absurd usage
	// counts from a server, never a real run.
	TokensSaturated bool `json:"tokens_saturated,omitempty"`
	// RequestThroughput is Completed / Duration; OutputThroughput is
	// OutputTokens / Duration; TotalTokenThroughput is (InputTokens +
	// OutputTokens) / Duration. All are 0 when Duration is 0.
	RequestThroughput    float64 `json:"request_throughput"`
	OutputThroughput     float64 `json:"output_throughput"`
	TotalTokenThroughput float64 `json:"total_token_throughput"`
	// The latency distributions over completed requests: TTFT and
	// GenerationTime of those with a token, TTFO of those with an answer
	// token, TPOT of those with N > 1 (one value per request, so TPOT.Mean is
	// the request-weighted mean), every ITL gap kept, and E2EL.
	TTFT           Distribution `json:"ttft"`
	TTFO           Distribution `json:"ttfo"`
	TPOT           Distribution `json:"tpot"`
	ITL            Distribution `json:"itl"`
	E2EL           Distribution `json:"e2el"`
	GenerationTime Distribution `json:"generation_time"`
	// The server's own account, over completed requests that carry it
	// (omitted from JSON when none does): its prefill and decode times
	// (Record.ServerPrefill, ServerDecode), and Wait, TTFT − ServerPrefill
	// (Record.Wait): the time before the engine began the prompt.
	ServerPrefill Distribution `json:"server_prefill,omitzero"`
	ServerDecode  Distribution `json:"server_decode,omitzero"`
	Wait          Distribution `json:"wait,omitzero"`
	// TokenWeightedTPOT is Σ(LastToken − FirstToken) / Σ(N − 1) over the
	// requests of TPOT (0 when there are none): each token counts once.
	TokenWeightedTPOT time.Duration `json:"tpot_token_weighted_ns"`
	// PeakConcurrency is the most requests in flight at once, over the
	// intervals [Start, End) of every record, whatever its outcome;
	// MeanConcurrency is Σ(End − Start) / Duration (Little's law).
	PeakConcurrency int     `json:"peak_concurrency"`
	MeanConcurrency float64 `json:"mean_concurrency"`
	// SLO is the SLO goodput was computed against.
	SLO     SLO     `json:"slo"`
	Goodput Goodput `json:"goodput"`
}

// Distribution returns the distribution of s that l names: like a map
// lookup, an empty Distribution (Count 0) for an unknown l.
func (s Summary) Distribution(l Latency) Distribution {
	switch l {
	case LatencyTTFT:
		return s.TTFT
	case LatencyTPOT:
		return s.TPOT
	case LatencyITL:
		return s.ITL
	case LatencyE2EL:
		return s.E2EL
	case LatencyTTFO:
		return s.TTFO
	case LatencyGeneration:
		return s.GenerationTime
	}
	return Distribution{}
}

// Summarize aggregates records over a run with the formulas of `vllm bench
// serve` (docs/definitions.md): only OK requests enter the token totals and
// the latency distributions; the statistics are the mean, median,
// population std, min, max and numpy-linear percentiles. Malformed input
// never panics and gives no NaN. It takes O(n + g) time for n requests and
// g ITL gaps, with O(1) allocations. It is safe for concurrent use and does
// not modify records.
func Summarize(records []Record, opts SummaryOptions) Summary {
	ps := cleanPercentiles(opts.Percentiles)
	n := len(records)
	if n == 0 {
		return (&tally{}).summary(opts, 0)
	}

	// One pass over the records computes every per-record figure once and
	// writes the per-record sample sets into one pooled buffer, record
	// order kept (the float sums below depend on it):
	// [TTFT | TTFO | TPOT | E2EL | GenerationTime | ServerPrefill |
	// ServerDecode | Wait | concurrency events (2 per record)].
	buf := stats.Buffer((int(numSampleSets) + 2) * n)
	defer stats.Release(buf)
	all := *buf
	var k [numSampleSets][]uint64
	for i := range k {
		k[i] = all[i*n : i*n : (i+1)*n]
	}
	kEvents := all[int(numSampleSets)*n : int(numSampleSets)*n]

	var (
		t tally
		// Run bounds as offsets from tb (meaningful when allFast).
		minStart, maxEnd int64
		haveEnd          bool
	)
	tb := timebase.New(records[0].Start)
	allFast := true
	for i := range records {
		r := &records[i]
		var m recMetrics
		if !m.fast(r, &tb) {
			m.slow(r)
			allFast = false
		}
		if allFast {
			if i == 0 || m.start < minStart {
				minStart = m.start
			}
			if m.hasEnd && (!haveEnd || m.end > maxEnd) {
				maxEnd, haveEnd = m.end, true
			}
			if m.hasBusy {
				kEvents = append(kEvents, eventKey(m.start, 1), eventKey(m.end, 0))
			}
		}
		rs := t.add(r, &m, &opts.SLO)
		for j := range rs.n {
			k[rs.set[j]] = append(k[rs.set[j]], rs.key[j])
		}
	}

	// Run duration and the concurrency events. When some record's times
	// could not be expressed as offsets (see recMetrics.fast), both are
	// computed from the time.Time values, as the Record methods do.
	var duration time.Duration
	if allFast {
		if haveEnd && maxEnd > minStart {
			duration = time.Duration(maxEnd - minStart)
		}
	} else {
		duration, kEvents = slowRunBounds(records, kEvents[:0])
	}
	s := t.summary(opts, duration)
	s.distributions(records, &k, kEvents, ps, t.nITL > 0)
	return s
}

// distributions fills the latency distributions of s from the per-record
// sample sets k, the ITL gaps of records (when hasITL) and the concurrency
// events, through one shared scratch buffer.
func (s *Summary) distributions(records []Record, k *[numSampleSets][]uint64, events []uint64, ps []float64, hasITL bool) {
	scratch := stats.Buffer(2 * len(records)) // ≥ every per-record sample set
	defer stats.Release(scratch)
	for set := range k {
		smp := stats.Of(k[set], *scratch, ps, sampleKinds[set])
		s.setDistribution(sampleSet(set), distribution(&smp, ps))
	}
	if hasITL {
		itl := stats.Gaps(len(records), func(i int) []time.Duration {
			if records[i].Outcome != OutcomeOK {
				return nil
			}
			return records[i].ITL
		}, ps)
		s.ITL = distribution(&itl, ps)
	}
	s.PeakConcurrency = peakConcurrency(events, *scratch)
}

// The per-record sample sets, in the order Summarize keeps them.
type sampleSet uint8

const (
	setTTFT sampleSet = iota
	setTTFO
	setTPOT
	setE2EL
	setGen
	setPrefill
	setDecode
	setWait
	numSampleSets
)

// sampleKinds says what each set's keys stand for: integer nanoseconds,
// or (TPOT, unrounded) the bits of a float64.
var sampleKinds = [numSampleSets]stats.Kind{stats.Int, stats.Int, stats.Float, stats.Int, stats.Int, stats.Int, stats.Int, stats.Int}

// setDistribution stores the distribution of set in s.
func (s *Summary) setDistribution(set sampleSet, d Distribution) {
	switch set {
	case setTTFT:
		s.TTFT = d
	case setTTFO:
		s.TTFO = d
	case setTPOT:
		s.TPOT = d
	case setE2EL:
		s.E2EL = d
	case setGen:
		s.GenerationTime = d
	case setPrefill:
		s.ServerPrefill = d
	case setDecode:
		s.ServerDecode = d
	case setWait:
		s.Wait = d
	}
}

// peakConcurrency sweeps the concurrency events (sorting them with
// scratch, len ≥ len(events)): a departure sorts before an arrival at the
// same instant (see eventKey), so intervals are half-open [Start, End).
func peakConcurrency(events, scratch []uint64) int {
	stats.RadixSort(events, scratch)
	cur, peak := 0, 0
	for _, e := range events {
		if e&1 == 1 {
			cur++
			peak = max(peak, cur)
		} else {
			cur--
		}
	}
	return peak
}

// tally is what Summarize and a Summarizer add up over the records,
// besides the sample sets.
type tally struct {
	requests, completed, failed, canceled        int
	input, output, reasoning, cached, cacheWrite int
	nITL                                         int
	allOut, goodTokens                           int
	good                                         int
	busy                                         float64 // Σ(End − Start) in ns
	decodeSum                                    float64 // Σ(LastToken − FirstToken) in ns
	decodeTokens                                 int     // Σ(N − 1)
	mTTFT, mTPOT, mITL                           int     // per-threshold counts
	mE2EL, mTTFO                                 int
	sat                                          bool // a token sum saturated (addSat)
}

// recSamples is what one record adds to the per-record sample sets: n
// keys, key[j] to set[j].
type recSamples struct {
	n   int
	set [numSampleSets]sampleSet
	key [numSampleSets]uint64
}

func (rs *recSamples) add(set sampleSet, key uint64) {
	rs.set[rs.n], rs.key[rs.n] = set, key
	rs.n++
}

// add counts record r, whose figures are m, checked against slo, and
// returns the keys it adds to the sample sets (in set order).
func (t *tally) add(r *Record, m *recMetrics, slo *SLO) (rs recSamples) {
	t.requests++
	if m.hasBusy {
		t.busy += float64(m.busy)
	}
	out := max(r.OutputTokens, 0)
	t.allOut = addSat(t.allOut, out, &t.sat)

	c := slo.check(r, &m.figures)
	if c.Completed {
		t.mTTFT += countIf(c.TTFT)
		t.mTTFO += countIf(c.TTFO)
		t.mTPOT += countIf(c.TPOT)
		t.mITL += countIf(c.ITL)
		t.mE2EL += countIf(c.E2EL)
	}
	if c.met() {
		t.good++
		t.goodTokens = addSat(t.goodTokens, out, &t.sat)
	}

	switch r.Outcome {
	case OutcomeOK:
	case OutcomeCanceled:
		t.canceled++
		return rs
	default:
		t.failed++
		return rs
	}
	t.completed++
	t.input = addSat(t.input, r.InputTokens, &t.sat)
	t.output = addSat(t.output, out, &t.sat)
	t.reasoning = addSat(t.reasoning, r.ReasoningTokens, &t.sat)
	t.cached = addSat(t.cached, r.CachedInputTokens, &t.sat)
	t.cacheWrite = addSat(t.cacheWrite, r.CacheWriteInputTokens, &t.sat)
	if m.tok {
		rs.add(setTTFT, uint64(m.ttft))
	}
	if m.hasTTFO {
		rs.add(setTTFO, uint64(m.ttfo))
	}
	if m.tok && out > 1 {
		d := float64(m.decode)
		t.decodeSum += d
		t.decodeTokens = addSat(t.decodeTokens, out-1, &t.sat)
		// Non-negative float64 bits order like the values.
		rs.add(setTPOT, math.Float64bits(d/float64(out-1)))
	}
	if m.hasE2EL {
		rs.add(setE2EL, uint64(m.e2el))
	}
	if m.tok {
		rs.add(setGen, uint64(m.decode))
	}
	if r.ServerPrefill > 0 {
		rs.add(setPrefill, uint64(r.ServerPrefill))
	}
	if r.ServerDecode > 0 {
		rs.add(setDecode, uint64(r.ServerDecode))
	}
	if r.ServerPrefill > 0 && m.tok {
		rs.add(setWait, uint64(max(m.ttft-r.ServerPrefill, 0))) // Record.Wait
	}
	t.nITL += len(r.ITL)
	return rs
}

// summary returns the Summary of what t counted over a run whose records
// span duration (max(End) − min(Start), used when opts.Duration is not
// positive): everything but the distributions and the peak concurrency.
func (t *tally) summary(opts SummaryOptions, duration time.Duration) Summary {
	s := Summary{
		Requests: t.requests, Completed: t.completed, Failed: t.failed, Canceled: t.canceled,
		InputTokens: t.input, OutputTokens: t.output, ReasoningTokens: t.reasoning,
		CachedInputTokens: t.cached, CacheWriteInputTokens: t.cacheWrite,
		TokensSaturated: t.sat, SLO: opts.SLO,
	}
	s.Duration = opts.Duration
	if s.Duration <= 0 {
		s.Duration = max(duration, 0)
	}
	s.Goodput.Good = t.good
	s.Goodput.GoodTokens = t.goodTokens
	if t.requests == 0 {
		return s // every rate is 0
	}
	if s.Duration > 0 {
		secs := s.Duration.Seconds()
		s.RequestThroughput = float64(s.Completed) / secs
		s.OutputThroughput = float64(s.OutputTokens) / secs
		s.TotalTokenThroughput = (float64(s.InputTokens) + float64(s.OutputTokens)) / secs
		s.Goodput.RequestsPerSecond = float64(s.Goodput.Good) / secs
		s.Goodput.TokensPerSecond = float64(t.goodTokens) / secs
		s.MeanConcurrency = t.busy / float64(s.Duration)
	}
	if s.InputTokens > 0 {
		s.PrefixCacheHitRate = min(float64(s.CachedInputTokens)/float64(s.InputTokens), 1)
	}
	n := float64(s.Requests)
	s.Goodput.Attainment = float64(s.Goodput.Good) / n
	s.Goodput.ByThreshold = ThresholdAttainment{
		TTFT: float64(t.mTTFT) / n, TTFO: float64(t.mTTFO) / n, TPOT: float64(t.mTPOT) / n,
		ITL: float64(t.mITL) / n, E2EL: float64(t.mE2EL) / n,
	}
	if t.allOut > 0 {
		s.Goodput.UsefulWorkRatio = float64(t.goodTokens) / float64(t.allOut)
	}
	if t.decodeTokens > 0 {
		s.TokenWeightedTPOT = roundDur(t.decodeSum / float64(t.decodeTokens))
	}
	return s
}

// eventKey encodes a concurrency event at offset t (in (−2^61, 2^61), see
// timebase.Limit) as (t + 2^61) << 1 | arrival. The original encoding is
// (t − minStart) << 1 | arrival; both differ from it by the same constant,
// so they sort alike, and the sweep only depends on the order.
func eventKey(t int64, arrival uint64) uint64 {
	return uint64(t+timebase.Limit)<<1 | arrival
}

// slowRunBounds returns max(End) − min(Start) (0 when not positive) and
// appends the concurrency events of records to events, comparing and
// subtracting time.Time values: the exact rules when some record's times
// cannot be taken as offsets from a common base.
func slowRunBounds(records []Record, events []uint64) (time.Duration, []uint64) {
	var (
		minStart, maxEnd   time.Time
		haveStart, haveEnd bool
	)
	for i := range records {
		r := &records[i]
		if !haveStart || r.Start.Before(minStart) {
			minStart, haveStart = r.Start, true
		}
		if !r.End.IsZero() && (!haveEnd || r.End.After(maxEnd)) {
			maxEnd, haveEnd = r.End, true
		}
	}
	var d time.Duration
	if haveStart && haveEnd && maxEnd.After(minStart) {
		d = maxEnd.Sub(minStart)
	}
	// Events are (time since minStart) << 1 | 1 for an arrival, | 0 for
	// a departure, so a departure sorts before an arrival at the same
	// instant.
	for i := range records {
		r := &records[i]
		if r.End.After(r.Start) {
			events = append(events, uint64(r.Start.Sub(minStart))<<1|1, uint64(r.End.Sub(minStart))<<1)
		}
	}
	return d, events
}

// recMetrics is what Summarize needs from one record, computed once: the
// figures an SLO bounds and the run-level times.
type recMetrics struct {
	figures
	hasBusy bool          // End.After(Start)
	busy    time.Duration // End − Start (when hasBusy)
	hasEnd  bool          // !End.IsZero()
	// start and end are Start and End as offsets from the timebase;
	// set only by fast.
	start, end int64
}

// slow fills m from the Record methods themselves.
func (m *recMetrics) slow(r *Record) {
	m.figures = r.figures()
	if r.End.After(r.Start) {
		m.hasBusy, m.busy = true, r.End.Sub(r.Start)
	}
	m.hasEnd = !r.End.IsZero()
}

// fast fills m from r's times as offsets from b, with the exact results
// of the Record methods, and reports false (m is then partial and must be
// refilled by slow) when some time r uses cannot be taken as an offset. A
// zero FirstToken, FirstOutput, LastToken or End is the "unset" sentinel
// and is never converted: each place the methods compare it with another
// time is handled below.
func (m *recMetrics) fast(r *Record, b *timebase.Base) bool {
	start, ok := b.Offset(r.Start)
	if !ok {
		return false
	}
	m.start = start
	m.tok = !r.FirstToken.IsZero()
	var first, last int64
	if m.tok {
		if first, ok = b.Offset(r.FirstToken); !ok {
			return false
		}
		// lastToken(): LastToken, or FirstToken when LastToken is
		// before it.
		if r.LastToken.IsZero() {
			// The zero time is before any FirstToken after
			// 0001-01-01 UTC; for one that is not, lastToken()
			// would return the zero time itself.
			if !r.LastToken.Before(r.FirstToken) {
				return false
			}
			last = first
		} else {
			if last, ok = b.Offset(r.LastToken); !ok {
				return false
			}
			last = max(last, first)
		}
		m.ttft = time.Duration(max(first-start, 0)) // nonNeg(FirstToken − Start)
		m.decode = time.Duration(last - first)
		m.e2el, m.hasE2EL = time.Duration(max(last-start, 0)), true
	}
	m.hasTTFO = !r.FirstOutput.IsZero()
	if m.hasTTFO {
		out, ok := b.Offset(r.FirstOutput)
		if !ok {
			return false
		}
		m.ttfo = time.Duration(max(out-start, 0)) // nonNeg(FirstOutput − Start)
	}
	m.hasEnd = !r.End.IsZero()
	if m.hasEnd {
		if m.end, ok = b.Offset(r.End); !ok {
			return false
		}
		if m.end > start {
			m.hasBusy, m.busy = true, time.Duration(m.end-start)
		}
		if !m.tok {
			m.e2el, m.hasE2EL = time.Duration(max(m.end-start, 0)), true
		}
	} else if r.End.After(r.Start) {
		// A zero End after Start (a Start before 0001-01-01 UTC):
		// End − Start is beyond any offset.
		return false
	}
	return true
}

// addSat returns sum + max(v, 0), held at math.MaxInt (and *sat set)
// instead of wrapping around: an absurd usage count never turns a total
// negative.
func addSat(sum, v int, sat *bool) int {
	if v <= 0 {
		return sum
	}
	if sum > math.MaxInt-v {
		*sat = true
		return math.MaxInt
	}
	return sum + v
}

func countIf(b bool) int {
	if b {
		return 1
	}
	return 0
}

// cleanPercentiles applies the SummaryOptions.Percentiles rules, allocating
// only when an invalid value must be dropped.
func cleanPercentiles(ps []float64) []float64 {
	if ps == nil {
		return defaultPercentiles
	}
	for i, p := range ps {
		if !stats.ValidPercent(p) {
			out := append([]float64(nil), ps[:i]...)
			for _, p := range ps[i+1:] {
				if stats.ValidPercent(p) {
					out = append(out, p)
				}
			}
			return out
		}
	}
	return ps
}
