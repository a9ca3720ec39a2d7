package llmmetrics

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/llmmetrics/llmmetrics/internal/stats"
	"github.com/llmmetrics/llmmetrics/internal/timebase"
)

// A Summarizer computes the Summary of records added one at a time, for
// runs too large to hold as Records: it keeps only the numbers exact
// percentiles need (about 8 bytes per latency value and ITL gap). Its
// Summary is exactly Summarize's over the records added so far, in order
// (docs/definitions.md states one exception for mixed clocks). It is safe
// for concurrent use.
type Summarizer struct {
	mu   sync.Mutex
	opts SummaryOptions // Percentiles cleaned and owned
	t    tally
	sets [numSampleSets]column[uint64]
	gaps column[time.Duration]
	// events are the concurrency events, keyed by offsets from base (see
	// eventKey), or from base's wall clock for records whose times base
	// cannot express (see offset).
	events             column[uint64]
	base               timebase.Base
	baseWall           time.Time
	minStart, maxEnd   time.Time
	haveStart, haveEnd bool
}

// NewSummarizer returns a Summarizer that summarizes with opts. Unlike
// Summarize it rejects invalid options: a negative SLO limit or Duration or
// a percentile outside [0, 100] (an error wrapping ErrInvalid).
func NewSummarizer(opts SummaryOptions) (*Summarizer, error) {
	if err := opts.SLO.Validate(); err != nil {
		return nil, err
	}
	for _, p := range opts.Percentiles {
		if !stats.ValidPercent(p) {
			return nil, fmt.Errorf("%w: percentile %v is outside [0, 100]", ErrInvalid, p)
		}
	}
	if opts.Duration < 0 {
		return nil, fmt.Errorf("%w: negative summary duration %v", ErrInvalid, opts.Duration)
	}
	if opts.Percentiles != nil {
		opts.Percentiles = slices.Clone(opts.Percentiles) // the caller may reuse theirs
		if opts.Percentiles == nil {
			opts.Percentiles = []float64{} // an empty non-nil slice means none
		}
	}
	return &Summarizer{opts: opts}, nil
}

// SetDuration sets SummaryOptions.Duration, for a run whose duration is
// known only when it ends.
func (z *Summarizer) SetDuration(d time.Duration) {
	z.mu.Lock()
	z.opts.Duration = d
	z.mu.Unlock()
}

// Add adds r to the run, copying what it keeps (r.ITL included).
func (z *Summarizer) Add(r Record) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if !z.haveStart {
		z.base, z.baseWall = timebase.New(r.Start), r.Start.Round(0)
	}
	var m recMetrics
	if !m.fast(&r, &z.base) {
		m.slow(&r)
		m.start, m.end = z.offset(r.Start), z.offset(r.End)
	}
	if !z.haveStart || r.Start.Before(z.minStart) {
		z.minStart, z.haveStart = r.Start, true
	}
	if !r.End.IsZero() && (!z.haveEnd || r.End.After(z.maxEnd)) {
		z.maxEnd, z.haveEnd = r.End, true
	}
	if m.hasBusy {
		z.events.push(eventKey(m.start, 1))
		z.events.push(eventKey(m.end, 0))
	}
	rs := z.t.add(&r, &m, &z.opts.SLO)
	for j := range rs.n {
		z.sets[rs.set[j]].push(rs.key[j])
	}
	if r.Outcome == OutcomeOK {
		z.gaps.pushAll(r.ITL)
	}
}

// offset returns t as an offset from the time base, or, when the base
// cannot express it, t's wall clock less the base's, held within
// (−timebase.Limit, timebase.Limit) as eventKey requires.
func (z *Summarizer) offset(t time.Time) int64 {
	if off, ok := z.base.Offset(t); ok {
		return off
	}
	d := t.Round(0).Sub(z.baseWall) // saturates at ±292 years
	return int64(min(max(d, -timebase.Limit+1), timebase.Limit-1))
}

// Summary returns the Summary of the records added so far; more can be
// added after.
func (z *Summarizer) Summary() Summary {
	z.mu.Lock()
	defer z.mu.Unlock()
	var duration time.Duration
	if z.haveStart && z.haveEnd && z.maxEnd.After(z.minStart) {
		duration = z.maxEnd.Sub(z.minStart)
	}
	s := z.t.summary(z.opts, duration)
	if z.t.requests == 0 {
		return s
	}
	ps := cleanPercentiles(z.opts.Percentiles)
	// Of and RadixSort reorder their keys: each set is copied first (the
	// columns keep the order the float sums depend on), into a buffer as
	// large as the largest set.
	n := z.events.n
	for i := range z.sets {
		n = max(n, z.sets[i].n)
	}
	buf := stats.Buffer(2 * n)
	defer stats.Release(buf)
	keys, scratch := (*buf)[:n], (*buf)[n:]
	for set := range z.sets {
		c := &z.sets[set]
		k := keys[:c.n]
		c.copyTo(k)
		smp := stats.Of(k, scratch, ps, sampleKinds[set])
		s.setDistribution(sampleSet(set), distribution(&smp, ps))
	}
	if z.gaps.n > 0 {
		itl := stats.Gaps(len(z.gaps.blocks), func(i int) []time.Duration { return z.gaps.blocks[i] }, ps)
		s.ITL = distribution(&itl, ps)
	}
	z.events.copyTo(keys)
	s.PeakConcurrency = peakConcurrency(keys[:z.events.n], scratch)
	return s
}

// column is an append-only list of values kept in blocks that are never
// copied or moved: growing it allocates only the new block, so its memory
// is the values plus the last block's spare room, without the transient
// second copy of a slice grown by append.
type column[T any] struct {
	blocks [][]T
	n      int // values in all blocks
}

// Block sizes: the first block is small (a Summarizer of a few records
// stays small), each next one twice the last, up to maxBlock values
// (256 KiB of 8-byte values).
const (
	firstBlock = 64
	maxBlock   = 1 << 15
)

// room returns the last block, a new one when it is full.
func (c *column[T]) room() *[]T {
	size := firstBlock
	if k := len(c.blocks); k > 0 {
		last := &c.blocks[k-1]
		if len(*last) < cap(*last) {
			return last
		}
		size = min(2*cap(*last), maxBlock)
	}
	c.blocks = append(c.blocks, make([]T, 0, size))
	return &c.blocks[len(c.blocks)-1]
}

func (c *column[T]) push(v T) {
	b := c.room()
	*b = append(*b, v)
	c.n++
}

func (c *column[T]) pushAll(vs []T) {
	for len(vs) > 0 {
		b := c.room()
		k := min(cap(*b)-len(*b), len(vs))
		*b = append(*b, vs[:k]...)
		c.n += k
		vs = vs[k:]
	}
}

// copyTo copies the values, in order, to dst (len ≥ c.n).
func (c *column[T]) copyTo(dst []T) {
	i := 0
	for _, b := range c.blocks {
		i += copy(dst[i:], b)
	}
}
