package llmmetrics

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmmetrics/llmmetrics/internal/stats"
	"github.com/llmmetrics/llmmetrics/internal/timebase"
)

// The tests in this file check Summarize's integer fast path (timeBase,
// recMetrics.fast, eventKey) against the Record methods and SLO.Met it
// replaces, on ordinary and adversarial records.

// summarizeRef is Summarize as it was before the fast path: every figure
// comes from the Record methods, SLO.Met and time.Time arithmetic. It is
// the reference the fast path must match exactly.
func summarizeRef(records []Record, opts SummaryOptions) Summary {
	ps := cleanPercentiles(opts.Percentiles)
	s := Summary{Requests: len(records), SLO: opts.SLO}

	var (
		minStart, maxEnd   time.Time
		haveStart, haveEnd bool
		nTTFT, nTPOT, nITL int
		nTTFO              int
		nE2EL, nBusy       int
		allOut, goodTokens int
		busy               float64 // Σ(End − Start) in ns
		decodeSum          float64 // Σ(LastToken − FirstToken) in ns
		decodeTokens       int     // Σ(N − 1)
		mTTFT, mTPOT, mITL int     // per-threshold counts
		mE2EL, mTTFO       int
		sat                bool
	)
	for i := range records {
		r := &records[i]
		if !haveStart || r.Start.Before(minStart) {
			minStart, haveStart = r.Start, true
		}
		if !r.End.IsZero() && (!haveEnd || r.End.After(maxEnd)) {
			maxEnd, haveEnd = r.End, true
		}
		if r.End.After(r.Start) {
			busy += float64(r.End.Sub(r.Start))
			nBusy++
		}
		out := max(r.OutputTokens, 0)
		allOut = addSat(allOut, out, &sat)

		c := opts.SLO.checkRecord(*r)
		if c.Completed {
			mTTFT += countIf(c.TTFT)
			mTTFO += countIf(c.TTFO)
			mTPOT += countIf(c.TPOT)
			mITL += countIf(c.ITL)
			mE2EL += countIf(c.E2EL)
		}
		if c.met() {
			s.Goodput.Good++
			goodTokens = addSat(goodTokens, out, &sat)
		}

		switch r.Outcome {
		case OutcomeOK:
		case OutcomeCanceled:
			s.Canceled++
			continue
		default:
			s.Failed++
			continue
		}
		s.Completed++
		s.InputTokens = addSat(s.InputTokens, r.InputTokens, &sat)
		s.OutputTokens = addSat(s.OutputTokens, out, &sat)
		s.ReasoningTokens = addSat(s.ReasoningTokens, r.ReasoningTokens, &sat)
		s.CachedInputTokens = addSat(s.CachedInputTokens, r.CachedInputTokens, &sat)
		s.CacheWriteInputTokens = addSat(s.CacheWriteInputTokens, r.CacheWriteInputTokens, &sat)
		if _, ok := r.TTFO(); ok {
			nTTFO++
		}
		if r.hasToken() {
			nTTFT++
			if out > 1 {
				nTPOT++
				d := float64(r.decode())
				decodeSum += d
				decodeTokens = addSat(decodeTokens, out-1, &sat)
			}
		}
		nITL += len(r.ITL)
		if _, ok := r.E2EL(); ok {
			nE2EL++
		}
	}

	// Run duration and rates.
	s.Duration = opts.Duration
	if s.Duration <= 0 {
		s.Duration = 0
		if haveStart && haveEnd && maxEnd.After(minStart) {
			s.Duration = maxEnd.Sub(minStart)
		}
	}
	if s.Duration > 0 {
		secs := s.Duration.Seconds()
		s.RequestThroughput = float64(s.Completed) / secs
		s.OutputThroughput = float64(s.OutputTokens) / secs
		s.TotalTokenThroughput = (float64(s.InputTokens) + float64(s.OutputTokens)) / secs
		s.Goodput.RequestsPerSecond = float64(s.Goodput.Good) / secs
		s.Goodput.TokensPerSecond = float64(goodTokens) / secs
		s.MeanConcurrency = busy / float64(s.Duration)
	}
	s.Goodput.GoodTokens = goodTokens
	s.TokensSaturated = sat
	if s.InputTokens > 0 {
		s.PrefixCacheHitRate = min(float64(s.CachedInputTokens)/float64(s.InputTokens), 1)
	}
	if s.Requests > 0 {
		n := float64(s.Requests)
		s.Goodput.Attainment = float64(s.Goodput.Good) / n
		s.Goodput.ByThreshold = ThresholdAttainment{
			TTFT: float64(mTTFT) / n, TTFO: float64(mTTFO) / n, TPOT: float64(mTPOT) / n,
			ITL: float64(mITL) / n, E2EL: float64(mE2EL) / n,
		}
	}
	if allOut > 0 {
		s.Goodput.UsefulWorkRatio = float64(goodTokens) / float64(allOut)
	}
	if decodeTokens > 0 {
		s.TokenWeightedTPOT = roundDur(decodeSum / float64(decodeTokens))
	}

	// Sample sets, one at a time through two pooled buffers.
	size := max(nTTFT, nTTFO, nTPOT, nITL, nE2EL, 2*nBusy)
	if size == 0 {
		return s
	}
	keys, scratch := stats.Buffer(size), stats.Buffer(size)
	defer stats.Release(keys)
	defer stats.Release(scratch)
	dist := func(k []uint64, kind stats.Kind) Distribution {
		st := stats.Of(k, *scratch, ps, kind)
		return distribution(&st, ps)
	}

	k := (*keys)[:0]
	for i := range records {
		if d, ok := records[i].TTFT(); ok && records[i].Outcome == OutcomeOK {
			k = append(k, uint64(d))
		}
	}
	s.TTFT = dist(k, stats.Int)

	k = (*keys)[:0]
	for i := range records {
		if d, ok := records[i].TTFO(); ok && records[i].Outcome == OutcomeOK {
			k = append(k, uint64(d))
		}
	}
	s.TTFO = dist(k, stats.Int)

	k = (*keys)[:0]
	for i := range records {
		r := &records[i]
		if r.Outcome == OutcomeOK && r.hasToken() && r.OutputTokens > 1 {
			k = append(k, math.Float64bits(float64(r.decode())/float64(r.OutputTokens-1)))
		}
	}
	s.TPOT = dist(k, stats.Float) // non-negative float64 bits order like the values

	k = (*keys)[:0]
	for i := range records {
		if records[i].Outcome == OutcomeOK {
			for _, g := range records[i].ITL {
				k = append(k, uint64(max(g, 0)))
			}
		}
	}
	s.ITL = dist(k, stats.Int)

	k = (*keys)[:0]
	for i := range records {
		if d, ok := records[i].E2EL(); ok && records[i].Outcome == OutcomeOK {
			k = append(k, uint64(d))
		}
	}
	s.E2EL = dist(k, stats.Int)

	k = (*keys)[:0]
	for i := range records {
		if d, ok := records[i].GenerationTime(); ok && records[i].Outcome == OutcomeOK {
			k = append(k, uint64(d))
		}
	}
	s.GenerationTime = dist(k, stats.Int)

	// Peak concurrency: a sweep over [Start, End). Events are encoded as
	// (time since minStart) << 1 | 1 for an arrival, | 0 for a departure,
	// so a departure sorts before an arrival at the same instant.
	k = (*keys)[:0]
	for i := range records {
		r := &records[i]
		if r.End.After(r.Start) {
			k = append(k, uint64(r.Start.Sub(minStart))<<1|1, uint64(r.End.Sub(minStart))<<1)
		}
	}
	stats.RadixSort(k, *scratch)
	cur := 0
	for _, e := range k {
		if e&1 == 1 {
			cur++
			s.PeakConcurrency = max(s.PeakConcurrency, cur)
		} else {
			cur--
		}
	}
	return s
}

// adversarialTime returns one of the instants that stress the fast path:
// the zero time, instants with and without a monotonic reading, instants
// far from the others (beyond any offset), before 0001-01-01 UTC, or near
// the ends of time.Time's range.
func adversarialTime(rng *rand.Rand, t0, mono time.Time) time.Time {
	small := time.Duration(rng.Int64N(int64(10 * time.Second)))
	switch rng.IntN(14) {
	case 0:
		return time.Time{}
	case 1:
		return mono.Add(small) // monotonic reading
	case 2:
		return time.Time{}.Add(small) // just after the zero time
	case 3:
		return time.Date(-3, 1, 1, 0, 0, 0, 0, time.UTC).Add(small) // before year 1
	case 4:
		return time.Unix(1<<62, 0) // far future
	case 5:
		return time.Unix(-1<<62, 0) // far past
	case 6:
		return t0.Add(time.Duration(rng.Int64N(1<<62) - 1<<61)) // around timebase.Limit
	case 7:
		return t0.Add(time.Duration(int64(1<<31) * 1e9)) // just past timebase's wall-clock bound, 2^31 s
	case 8:
		return time.Unix(0, rng.Int64()) // anywhere in int64 ns
	default:
		return t0.Add(small)
	}
}

// adversarialRecord returns a record with independent adversarial times,
// LastToken possibly before FirstToken or zero, N ≤ 1, and ITL lists.
func adversarialRecord(rng *rand.Rand, t0, mono time.Time) Record {
	r := Record{
		Start:           adversarialTime(rng, t0, mono),
		FirstToken:      adversarialTime(rng, t0, mono),
		LastToken:       adversarialTime(rng, t0, mono),
		End:             adversarialTime(rng, t0, mono),
		InputTokens:     rng.IntN(2000) - 10,
		OutputTokens:    []int{-1, 0, 1, 2, 3, 7, 1000}[rng.IntN(7)],
		ReasoningTokens: rng.IntN(100) - 10,
		Outcome:         Outcome(rng.IntN(4)),
		MaxITL:          time.Duration(rng.Int64N(int64(time.Second))),
	}
	for range rng.IntN(4) {
		r.ITL = append(r.ITL, time.Duration(rng.Int64N(int64(time.Second))-1000))
	}
	switch rng.IntN(3) { // no answer, an answer without reasoning, or any time
	case 1:
		r.FirstOutput = r.FirstToken
	case 2:
		r.FirstOutput = adversarialTime(rng, t0, mono)
	}
	return r
}

// orderedRecord returns an ordinary record around base (which may carry a
// monotonic reading), with exact ties and TPOT values on the SLO limit.
func orderedRecord(rng *rand.Rand, base time.Time) Record {
	start := base.Add(time.Duration(rng.Int64N(int64(time.Minute))))
	n := rng.IntN(6)
	r := Record{Start: start, End: start.Add(time.Duration(rng.Int64N(3)) * time.Second),
		OutputTokens: n, InputTokens: 100, Outcome: Outcome(rng.IntN(3))}
	if rng.IntN(4) != 0 {
		r.FirstToken = start.Add(time.Duration(rng.IntN(3)) * 100 * time.Millisecond)
		// TPOT of exactly 100 ms, 100 ms + 1 ns or less.
		r.LastToken = r.FirstToken.Add(time.Duration(max(n-1, 0))*100*time.Millisecond + time.Duration(rng.IntN(3)-1))
		if rng.IntN(5) == 0 {
			r.LastToken = time.Time{}
		}
		r.ITL = []time.Duration{time.Duration(rng.IntN(3)) * 50 * time.Millisecond}
		// Reasoning first half the time: the answer starts later.
		if rng.IntN(3) != 0 {
			r.FirstOutput = r.FirstToken.Add(time.Duration(rng.IntN(2)) * 300 * time.Millisecond)
			r.ReasoningTokens = rng.IntN(3) * max(n-1, 0)
		}
	}
	if rng.IntN(5) == 0 {
		r.End = time.Time{}
	}
	return r
}

// realClockRecord returns a record whose Start is a fresh time.Now(), so its
// wall clock and monotonic reading advance independently of other
// records', and whose times half the time lack the monotonic reading:
// pairs of records are then compared by their monotonic readings or by
// their wall clocks, which disagree by a few nanoseconds.
func realClockRecord(rng *rand.Rand) Record {
	r := orderedRecord(rng, time.Now())
	if rng.IntN(2) == 0 {
		r.Start, r.FirstToken, r.LastToken, r.End = r.Start.Round(0), r.FirstToken.Round(0), r.LastToken.Round(0), r.End.Round(0)
		r.FirstOutput = r.FirstOutput.Round(0)
	}
	return r
}

func TestSummarizeMatchesRecordMethods(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	mono := time.Now() // carries a monotonic reading
	ancient := time.Date(-3, 1, 1, 0, 0, 0, 0, time.UTC)
	slos := []SLO{{}, sloChat, {TTFT: 100 * time.Millisecond, TPOT: 100 * time.Millisecond, ITL: 50 * time.Millisecond, E2EL: time.Second}}
	tests := []struct {
		name string
		gen  func(rng *rand.Rand) Record
	}{
		{"wall clock", func(rng *rand.Rand) Record { return orderedRecord(rng, t0) }},
		{"monotonic", func(rng *rand.Rand) Record { return orderedRecord(rng, mono) }},
		{"zero base", func(rng *rand.Rand) Record { return orderedRecord(rng, time.Time{}) }},
		{"mixed clocks", func(rng *rand.Rand) Record {
			return orderedRecord(rng, []time.Time{t0, mono}[rng.IntN(2)])
		}},
		{"before year 1", func(rng *rand.Rand) Record { return orderedRecord(rng, ancient) }},
		{"real clocks", realClockRecord},
		{"adversarial", func(rng *rand.Rand) Record { return adversarialRecord(rng, t0, mono) }},
		{"mostly ordinary", func(rng *rand.Rand) Record {
			if rng.IntN(50) == 0 {
				return adversarialRecord(rng, t0, mono)
			}
			return orderedRecord(rng, t0)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(21, 22))
			for trial := range 300 {
				rs := make([]Record, 1+rng.IntN(40))
				for i := range rs {
					rs[i] = tt.gen(rng)
				}
				slo := slos[trial%len(slos)]
				opts := SummaryOptions{SLO: slo, Percentiles: []float64{0, 10, 50, 99.9, 100}}
				want := summarizeRef(rs, opts)
				got := Summarize(rs, opts)
				require.Equal(t, want, got, "trial %d: %+v", trial, rs)
			}
		})
	}
}

// TestRecMetricsFast checks each per-record figure of the fast path against
// the Record methods (and so the SLO check on them against SLO.Met), and
// that the fast path is taken for ordinary records (so the comparison above
// is not vacuous).
func TestRecMetricsFast(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	mono := time.Now()
	ancient := time.Date(-3, 1, 1, 0, 0, 0, 0, time.UTC)
	slo := SLO{TTFT: 100 * time.Millisecond, TPOT: 100 * time.Millisecond, ITL: 50 * time.Millisecond, E2EL: time.Second}
	tests := []struct {
		name     string
		base     time.Time
		gen      func(rng *rand.Rand) Record
		wantFast bool // every record takes the fast path
	}{
		{"wall clock", t0, func(rng *rand.Rand) Record { return orderedRecord(rng, t0) }, true},
		{"monotonic", mono, func(rng *rand.Rand) Record { return orderedRecord(rng, mono) }, true},
		{"before year 1", ancient, func(rng *rand.Rand) Record { return orderedRecord(rng, ancient) }, false},
		{"adversarial", t0, func(rng *rand.Rand) Record { return adversarialRecord(rng, t0, mono) }, false},
		{"adversarial, monotonic base", mono, func(rng *rand.Rand) Record { return adversarialRecord(rng, t0, mono) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(31, 32))
			tb := timebase.New(tt.base)
			fast := 0
			for range 5000 {
				r := tt.gen(rng)
				var got, want recMetrics
				want.slow(&r)
				if !got.fast(&r, &tb) {
					require.False(t, tt.wantFast, "ordinary record refused: %+v", r)
					continue
				}
				fast++
				got.start, got.end = 0, 0 // offsets: slow does not set them
				require.Equal(t, want, got, "%+v", r)
				require.Equal(t, slo.checkRecord(r), slo.check(&r, &got.figures), "%+v", r)
			}
			assert.Positive(t, fast, "some records take the fast path")
		})
	}
}

// FuzzSummarizeMatchesRecordMethods checks the fast path against
// summarizeRef on arbitrary records (times relative to a wall or a
// monotonic base, or absolute).
func FuzzSummarizeMatchesRecordMethods(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, uint8(3))
	f.Add(make([]byte, 64), uint8(0xff))
	mono := time.Now()
	f.Fuzz(func(t *testing.T, data []byte, mode uint8) {
		rs, opts := fuzzRecords(data, mode, mono)
		require.Equal(t, summarizeRef(rs, opts), Summarize(rs, opts))
	})
}

// fuzzRecords builds up to 32 records from data (times relative to a wall
// or to mono's monotonic base, absolute, or zero) and, from mode, the
// options to summarize them with.
func fuzzRecords(data []byte, mode uint8, mono time.Time) ([]Record, SummaryOptions) {
	next := fuzzInt64s(&data)
	at := func(v int64) time.Time {
		switch (uint64(v) >> 60) % 4 {
		case 0:
			return time.Time{}
		case 1:
			return mono.Add(time.Duration(v % (1 << 40)))
		case 2:
			return time.Unix(0, v)
		}
		return time.Unix(v>>20, v%1e9)
	}
	var rs []Record
	for len(data) > 0 && len(rs) < 32 {
		r := Record{Start: at(next()), FirstToken: at(next()), LastToken: at(next()), End: at(next()),
			OutputTokens: int(next() % 8), Outcome: Outcome(next() % 4)}
		for g := next() % 3; g > 0; g-- {
			r.ITL = append(r.ITL, time.Duration(next()))
		}
		r.FirstOutput, r.ReasoningTokens = at(next()), int(next()%8)
		rs = append(rs, r)
	}
	var slo SLO
	if mode&1 != 0 {
		slo = SLO{TTFT: time.Duration(mode) * 1e6, TPOT: time.Duration(mode), ITL: 1e6, E2EL: 1e9}
	}
	return rs, SummaryOptions{SLO: slo, Duration: time.Duration(mode>>4) * time.Second}
}
