package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/cmd/llmmetrics/internal/servermetrics"
	"github.com/llmmetrics/llmmetrics/saturation"
)

// The server's own account of a level (docs/command.md, "Where TTFT
// goes"): where the client's TTFT goes, from the server's times in its
// answers or, for vLLM and SGLang, from their request-phase histograms;
// why the answers ended; and the long gaps that overlapped another
// request's prefill.

// ServerTime is where a level's TTFT goes, in the server's words
// (results.json levels[].server_time). Client and server clocks never mix:
// each figure is a duration the server measured, set against the client's
// own TTFT.
type ServerTime struct {
	// Source says where the figures come from: "answers" (the server's
	// times in each answer: llama.cpp's timings, Ollama's durations,
	// Groq's), or "vLLM histograms" / "SGLang histograms" (the increase of
	// the request-phase histograms over the level, servermetrics.Phases).
	Source string `json:"source"`
	// Requests is how many requests the figures are over: answers with
	// both a TTFT and a server prefill time, or the requests the
	// histograms saw finish during the level (warm-up included).
	Requests int `json:"requests"`
	// TTFTMean is the client's mean TTFT over those answers, or over the
	// level's completed requests (histograms).
	TTFTMean time.Duration `json:"ttft_mean_ns"`
	// Wait is TTFT − server prefill: the time before the engine began the
	// prompt (the network, the server's HTTP layer, its queue). From
	// answers, per request (mean and p99); from histograms, the means'
	// difference (mean only; absent when negative).
	Wait *TimeStat `json:"wait,omitempty"`
	// Queue is the engine's own queue time (histograms only), a part of
	// Wait.
	Queue *TimeStat `json:"queue,omitempty"`
	// Prefill and Decode are the server's prefill and decode times.
	Prefill *TimeStat `json:"prefill,omitempty"`
	Decode  *TimeStat `json:"decode,omitempty"`
}

// TimeStat is a mean and a 99th percentile.
type TimeStat struct {
	Count int           `json:"count"`
	Mean  time.Duration `json:"mean_ns"`
	// P99 is exact from answers (numpy's linear interpolation) and
	// estimated from histograms (servermetrics: linear inside the bucket
	// that holds it); absent where unknown.
	P99 *time.Duration `json:"p99_ns,omitempty"`
	// P99Bucket is, from histograms, the bucket the estimate lies in:
	// [lower, upper], or [lower] for the open +Inf bucket (P99 is then
	// that lower bound, the p99 at least it).
	P99Bucket []time.Duration `json:"p99_bucket_ns,omitempty"`
}

// serverTimeOfAnswers sums up the server's times in a level's completed
// answers; nil when none has a prefill time with a TTFT.
func serverTimeOfAnswers(all []llmmetrics.Record, pooled llmmetrics.Summary) *ServerTime {
	var both []llmmetrics.Record
	for _, r := range all {
		if _, ok := r.Wait(); ok && r.Outcome == llmmetrics.OutcomeOK {
			both = append(both, r)
		}
	}
	if len(both) == 0 {
		return nil
	}
	s := llmmetrics.Summarize(both, llmmetrics.SummaryOptions{Percentiles: []float64{99}})
	st := &ServerTime{Source: "answers", Requests: len(both), TTFTMean: s.TTFT.Mean,
		Wait: statOf(s.Wait), Prefill: statOf(s.ServerPrefill), Decode: statOf(pooled.ServerDecode)}
	return st
}

// statOf is a Distribution's count, mean and p99 (nil when empty).
func statOf(d llmmetrics.Distribution) *TimeStat {
	if d.Count == 0 {
		return nil
	}
	st := &TimeStat{Count: d.Count, Mean: d.Mean}
	if p, ok := d.Percentile(99); ok {
		st.P99 = &p
	}
	return st
}

// serverTimeOfPhases is ServerTime from the request-phase histograms of a
// level whose client-side TTFT mean is ttft (Count: completed requests
// with a TTFT); nil when no phase was read.
func serverTimeOfPhases(p servermetrics.Phases, ttft llmmetrics.Distribution) *ServerTime {
	if p.Queue == nil && p.Prefill == nil {
		return nil
	}
	st := &ServerTime{Source: p.Engine + " histograms", TTFTMean: ttft.Mean,
		Queue: phaseStat(p.Queue), Prefill: phaseStat(p.Prefill), Decode: phaseStat(p.Decode)}
	for _, ph := range []*servermetrics.Phase{p.Prefill, p.Queue} {
		if ph != nil {
			st.Requests = ph.Count
		}
	}
	if p.Prefill != nil && ttft.Count > 0 && ttft.Mean >= p.Prefill.Mean {
		st.Wait = &TimeStat{Count: ttft.Count, Mean: ttft.Mean - p.Prefill.Mean}
	}
	return st
}

func phaseStat(p *servermetrics.Phase) *TimeStat {
	if p == nil {
		return nil
	}
	p99 := p.P99
	st := &TimeStat{Count: p.Count, Mean: p.Mean, P99: &p99, P99Bucket: []time.Duration{p.P99Low}}
	if !p.Open {
		st.P99Bucket = append(st.P99Bucket, p.P99High)
	}
	return st
}

// Answers counts why a level's answers ended (results.json
// levels[].answers).
type Answers struct {
	// FinishReasons counts the answers by finish reason, in the provider's
	// words (Record.FinishReasons; an answer with several choices counts
	// once per reason).
	FinishReasons map[string]int `json:"finish_reasons"`
	// Said counts the answers that gave a reason.
	Said int `json:"said"`
	// CutByLength counts the answers that ended at their output limit: a
	// reason "length" (OpenAI, vLLM, llama.cpp, Ollama), "max_tokens"
	// (Anthropic), "MAX_TOKENS" (Gemini) or "max_output_tokens" (the
	// Responses API's incomplete reason).
	CutByLength int `json:"cut_by_length"`
	// StoppedEarly counts, with -ignore-eos, the answers that ended for
	// another reason only: before the length they asked for. Absent
	// without -ignore-eos.
	StoppedEarly *int `json:"stopped_early,omitempty"`
}

// lengthReasons are the finish reasons of an answer cut at its limit.
var lengthReasons = []string{"length", "max_tokens", "MAX_TOKENS", "max_output_tokens"}

// answersOf counts the finish reasons of a level's requests (nil when no
// answer gave one).
func answersOf(all []llmmetrics.Record, ignoreEOS bool) *Answers {
	a := &Answers{FinishReasons: map[string]int{}}
	early := 0
	for _, r := range all {
		if len(r.FinishReasons) == 0 {
			continue
		}
		a.Said++
		cut := false
		for _, f := range r.FinishReasons {
			a.FinishReasons[f]++
			cut = cut || slices.Contains(lengthReasons, f)
		}
		if cut {
			a.CutByLength++
		} else {
			early++
		}
	}
	if a.Said == 0 {
		return nil
	}
	if ignoreEOS {
		a.StoppedEarly = &early
	}
	return a
}

// noteServer adds to a finished level the server's times in its answers,
// why they ended and its prefill stalls.
func (b *bench) noteServer(l *Level, all []llmmetrics.Record) {
	l.ServerTime = serverTimeOfAnswers(all, l.Summary)
	l.Answers = answersOf(all, b.o.wl.ignoreEOS)
	if st, ok := saturation.CountStalls(all, 0); ok {
		l.PrefillStalls = &st
	}
}

// notePhases adds, when the answers had no times of their own, the
// request phases of the server's histograms over the level, and the
// engine's slots to its figures.
func (b *bench) notePhases(l *Level) {
	if l.ServerTime == nil && b.watcher != nil {
		l.ServerTime = serverTimeOfPhases(b.watcher.Phases(), l.Summary.TTFT)
	}
	if l.Server != nil && b.slots > 0 {
		n := b.slots
		l.Server.Slots = &n
	}
}

// readSlots asks a llama.cpp server how many requests it runs at once
// (GET /props, total_slots; tools/server/README.md); the fake server's is
// its batch. Other servers do not say, and b.slots stays 0.
func (b *bench) readSlots(ctx context.Context) {
	if b.fake != nil {
		b.slots = b.fake.Config().MaxBatch
		return
	}
	var props struct {
		TotalSlots int `json:"total_slots"`
	}
	if b.getJSON(ctx, http.MethodGet, b.rootURL()+"/props", nil, &props) && props.TotalSlots > 0 {
		b.slots = props.TotalSlots
	}
}

// human formats a duration for the findings: ms below a second, s above.
func human(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	switch {
	case d == 0:
		return "0 ms"
	case d < time.Millisecond:
		return fmt.Sprintf("%d µs", d.Round(time.Microsecond)/time.Microsecond)
	case d >= 10*time.Second:
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case d >= 10*time.Millisecond:
		return fmt.Sprintf("%.0f ms", ms)
	}
	return fmt.Sprintf("%.1f ms", ms)
}

// writeServerTime prints, per level, where TTFT goes.
func writeServerTime(w io.Writer, r Results) {
	head := false
	for _, l := range r.Levels {
		st := l.ServerTime
		if st == nil {
			continue
		}
		if !head {
			fmt.Fprintln(w, "Where TTFT goes, in the server's own words:")
			head = true
		}
		fmt.Fprintf(w, "  at %g: %s\n", l.Load, serverTimeLine(st, l.Summary.Completed))
	}
	if head {
		fmt.Fprintln(w)
	}
}

// serverTimeLine says where one level's TTFT goes: "TTFT mean 4.30 s =
// 3.90 s waiting before the engine + 400 ms prefill; …".
func serverTimeLine(st *ServerTime, completed int) string {
	if st.Source == "answers" {
		if st.Prefill.Mean > st.TTFTMean {
			return fmt.Sprintf("TTFT mean %s, shorter than the server's own prefill mean %s: its times do not fit the client's (clocks that disagree, or a prefill counted from an earlier event), so the wait is not known (%d of %d answers)",
				human(st.TTFTMean), human(st.Prefill.Mean), st.Requests, completed)
		}
		line := fmt.Sprintf("TTFT mean %s = %s waiting before the engine + %s prefill", human(st.TTFTMean), human(st.Wait.Mean), human(st.Prefill.Mean))
		if st.Wait.P99 != nil && st.Prefill.P99 != nil {
			line += fmt.Sprintf("; p99 %s waiting, %s prefill", human(*st.Wait.P99), human(*st.Prefill.P99))
		}
		return line + fmt.Sprintf(" (the server's times in %d of %d answers)", st.Requests, completed)
	}
	var line string
	switch {
	case st.Wait != nil:
		line = fmt.Sprintf("TTFT mean %s = %s waiting before the engine + %s prefill", human(st.TTFTMean), human(st.Wait.Mean), human(st.Prefill.Mean))
	case st.Prefill != nil:
		line = fmt.Sprintf("TTFT mean %s, while the engine's prefill alone averages %s", human(st.TTFTMean), human(st.Prefill.Mean))
	default:
		line = fmt.Sprintf("TTFT mean %s", human(st.TTFTMean))
	}
	if q := st.Queue; q != nil {
		line += fmt.Sprintf("; the engine's own queue %s on average, p99 %s", human(q.Mean), bucketText(q))
	}
	if p := st.Prefill; p != nil {
		line += "; prefill p99 " + bucketText(p)
	}
	return line + fmt.Sprintf(" (%s, %d requests finished in the level; p99 from the buckets)", st.Source, st.Requests)
}

// bucketText is a histogram's p99 estimate with its bucket: "under
// 300 ms" in the first bucket (the estimate says nothing more), "≈ 968 ms
// (800 ms–1.00 s)" in another, "over 7680 s" in the open one.
func bucketText(s *TimeStat) string {
	switch {
	case s.P99 == nil || len(s.P99Bucket) == 0:
		return "unknown"
	case len(s.P99Bucket) == 1:
		return "over " + human(s.P99Bucket[0])
	case s.P99Bucket[0] == 0:
		return "under " + human(s.P99Bucket[1])
	}
	return fmt.Sprintf("≈ %s (%s–%s)", human(*s.P99), human(s.P99Bucket[0]), human(s.P99Bucket[1]))
}

// writeAnswers says, in one line over the levels, where answers were cut
// at their output limit or, with -ignore-eos, ended before it.
func writeAnswers(w io.Writer, r Results) {
	var cut, early []string
	totals := map[string]int{}
	for _, l := range r.Levels {
		a := l.Answers
		if a == nil {
			continue
		}
		for f, n := range a.FinishReasons {
			totals[f] += n
		}
		switch {
		case a.StoppedEarly != nil && *a.StoppedEarly > 0:
			early = append(early, fmt.Sprintf("%d of %d at %g", *a.StoppedEarly, a.Said, l.Load))
		case a.StoppedEarly == nil && a.CutByLength > 0:
			cut = append(cut, fmt.Sprintf("%d of %d at %g", a.CutByLength, a.Said, l.Load))
		}
	}
	u := unit(r.Mode)
	if len(cut) > 0 {
		fmt.Fprintf(w, "Answers cut at their output limit: %s %s (finish reasons %s): those lengths are the limit's, not the model's.\n",
			strings.Join(cut, ", "), u, reasonList(totals))
	}
	if len(early) > 0 {
		fmt.Fprintf(w, "Answers that ended before their output limit although -ignore-eos asked for exactly it: %s %s (finish reasons %s): the server does not honour ignore_eos.\n",
			strings.Join(early, ", "), u, reasonList(totals))
	}
}

// reasonList formats finish reasons with their counts, the most frequent
// first: "length 150, stop 10".
func reasonList(counts map[string]int) string {
	reasons := slices.Collect(maps.Keys(counts))
	slices.SortFunc(reasons, func(x, y string) int {
		return cmp.Or(cmp.Compare(counts[y], counts[x]), cmp.Compare(x, y))
	})
	list := make([]string, len(reasons))
	for i, f := range reasons {
		list[i] = fmt.Sprintf("%s %d", f, counts[f])
	}
	return strings.Join(list, ", ")
}
