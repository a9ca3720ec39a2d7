package saturation

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/llmmetrics/llmmetrics"
)

// Stalls counts the long gaps between tokens of a load level's requests,
// and those that overlapped another request's prefill: what
// SignalPrefillStall reads (Level.PrefillStalls). CountStalls makes it
// from the level's Records.
//
// A prompt stalls decoding on an engine that runs a new request's prefill
// in the same step as the running requests' next tokens (no chunked
// prefill, no prefill token budget): every running request then waits for
// the whole prompt, and its next token comes out of the same step as the
// new request's first token. So a long gap caused by a prefill ends when
// another request's first token arrives; a long gap with another cause (a
// pause of the network, of the client, of one stream) ends at a moment
// unrelated to first tokens. AtRandom is the control: the same test at
// the middle of each long gap, where a prefill's first token does not
// land, counts how often first tokens fall in such a window by chance.
type Stalls struct {
	// MedianITL is the median gap between consecutive token-carrying
	// chunks of the level's completed requests (numpy's linear median).
	MedianITL time.Duration `json:"median_itl_ns"`
	// Factor is how many times MedianITL a gap must exceed to be long;
	// Threshold is Factor × MedianITL.
	Factor    float64       `json:"factor"`
	Threshold time.Duration `json:"threshold_ns"`
	// Gaps counts the gaps examined (those of completed requests whose
	// gaps were kept, Record.ITL); LongGaps those over Threshold.
	Gaps     int `json:"gaps"`
	LongGaps int `json:"long_gaps"`
	// Overlapping counts the long gaps that overlapped another request's
	// prefill: that request's first token arrived within MedianITL of the
	// gap's end (the two tokens leave the engine in one step and reach
	// the client in either order) and, where the server reports that
	// request's prefill time (Record.ServerPrefill), its prefill lasted at
	// least half the gap's excess over MedianITL; or its prefill, counted
	// back from its first token, covers the whole gap (a prefill in
	// chunks whose first token came later).
	Overlapping int `json:"overlapping"`
	// AtRandom counts the long gaps with another request's first token
	// within MedianITL of the gap's middle: the chance rate of the test
	// above.
	AtRandom int `json:"at_random"`
}

// minStallMedian is the smallest median gap CountStalls reads: below it,
// the gaps are the client's reading, not the engine's steps.
const minStallMedian = time.Millisecond

// CountStalls counts the long gaps of records, the requests of one load
// level (see Stalls), a gap being long when it exceeds factor × the
// median gap (factor ≤ 1, NaN or infinite: DefaultStallFactor). Every
// record with a first token counts as another request's prefill; the gaps
// are those of completed records, placed on the client's clock from
// FirstToken and ITL (records without ITL have none). Repeats of a level
// may be passed together: their timelines do not overlap. ok is false
// when no gap was kept, or when the median gap is below a millisecond:
// the chunks then reached the client in bursts (several in one read, as
// from a proxy that buffers, or a client that reads late), and gaps so
// short are the network's and the reader's, not the engine's steps.
func CountStalls(records []llmmetrics.Record, factor float64) (s Stalls, ok bool) {
	if !(factor > 1) || math.IsInf(factor, 0) {
		factor = DefaultStallFactor
	}
	var all []time.Duration
	for _, r := range records {
		if r.Outcome == llmmetrics.OutcomeOK && !r.FirstToken.IsZero() {
			all = append(all, r.ITL...)
		}
	}
	if len(all) == 0 {
		return Stalls{}, false
	}
	slices.Sort(all)
	n := len(all)
	med := all[n/2]
	if n%2 == 0 {
		med = all[n/2-1] + (all[n/2]-all[n/2-1])/2
	}
	if med < minStallMedian {
		return Stalls{}, false
	}
	s = Stalls{MedianITL: med, Factor: factor, Threshold: time.Duration(math.Round(float64(float64(med) * factor)))}

	type first struct {
		at      time.Time
		prefill time.Duration
		req     int
	}
	var firsts []first
	var longest time.Duration // the longest server prefill
	for i, r := range records {
		if !r.FirstToken.IsZero() {
			firsts = append(firsts, first{r.FirstToken, max(r.ServerPrefill, 0), i})
			longest = max(longest, r.ServerPrefill)
		}
	}
	slices.SortFunc(firsts, func(x, y first) int { return x.at.Compare(y.at) })
	from := func(t time.Time) int {
		k, _ := slices.BinarySearchFunc(firsts, t, func(f first, t time.Time) int { return f.at.Compare(t) })
		return k
	}
	tol := med
	for i, r := range records {
		if r.Outcome != llmmetrics.OutcomeOK || r.FirstToken.IsZero() {
			continue
		}
		t := r.FirstToken
		for _, g := range r.ITL {
			a, b := t, t.Add(g)
			t = b
			s.Gaps++
			if g <= s.Threshold {
				continue
			}
			s.LongGaps++
			end := b.Add(tol)
			if cover := a.Add(tol + longest); cover.After(end) {
				end = cover
			}
			for k := from(b.Add(-tol)); k < len(firsts) && !firsts[k].at.After(end); k++ {
				f := firsts[k]
				if f.req == i {
					continue
				}
				atEnd := !f.at.After(b.Add(tol)) && (f.prefill == 0 || 2*f.prefill >= g-tol)
				covers := f.prefill > 0 && !f.at.Add(-f.prefill).After(a.Add(tol))
				if atEnd || covers {
					s.Overlapping++
					break
				}
			}
			mid := a.Add(g / 2)
			for k := from(mid.Add(-tol)); k < len(firsts) && !firsts[k].at.After(mid.Add(tol)); k++ {
				if firsts[k].req != i {
					s.AtRandom++
					break
				}
			}
		}
	}
	return s, true
}

// add sums the counts of o into s (repeats of one load); s keeps its
// median and threshold.
func (s *Stalls) add(o Stalls) {
	s.Gaps += o.Gaps
	s.LongGaps += o.LongGaps
	s.Overlapping += o.Overlapping
	s.AtRandom += o.AtRandom
}

// stallReason is SignalPrefillStall at a load: at least MinStalls long
// gaps overlapped another request's prefill, and their share is at least
// halfway from the chance rate (AtRandom's share) to all of them.
func stallReason(o Options, st *Stalls) (Reason, bool) {
	if o.Skip&SignalPrefillStall != 0 || st == nil || st.LongGaps == 0 {
		return Reason{}, false
	}
	long := float64(st.LongGaps)
	share, chance := float64(st.Overlapping)/long, float64(st.AtRandom)/long
	need := chance + (1-chance)/2
	if st.Overlapping < MinStalls || share < need {
		return Reason{}, false
	}
	return Reason{Signal: SignalPrefillStall, Value: share, Threshold: need, Message: fmt.Sprintf(
		"%d of %d gaps over %g× the median ITL (%s) ended with another request's first token or inside its prefill (%d had one at their middle, by chance): prompts stall decoding — chunked prefill or a prefill token budget",
		st.Overlapping, st.LongGaps, st.Factor, fmtDur(st.MedianITL), st.AtRandom)}, true
}

// fmtDur formats a duration to 3 significant digits in ms or s.
func fmtDur(d time.Duration) string {
	if d >= time.Second {
		return fmt.Sprintf("%.3g s", d.Seconds())
	}
	return fmt.Sprintf("%.3g ms", float64(d)/float64(time.Millisecond))
}
