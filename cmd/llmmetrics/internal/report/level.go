package report

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmmetrics/llmmetrics"
)

// Load is what one level of a run was measured at, as its file says: a
// GuideLLM benchmark's strategy, an SGLang run's request rate and
// concurrency cap, a bench level.
type Load struct {
	// Mode is "concurrency" (that many requests in flight, a closed loop),
	// "rate" (requests per second, an open loop), "throughput" (as many as
	// the tool could send), "burst" (every request at once), "replay" or
	// "trace" (requests at recorded times), or "" for a file that names no
	// load (one run).
	Mode string
	// Value is the concurrency or the rate; 0 for the modes without one.
	Value float64
	// Detail says how the tool ran the level where a comparison must know
	// it ("Poisson arrivals", "constant arrivals", "max concurrency 8",
	// "synchronous"); "" when there is nothing to say.
	Detail string
}

// String names the load as the output does: "rate 2 (constant arrivals)",
// "concurrency 8", "throughput"; "" for a file that names no load.
func (l Load) String() string {
	s := l.Mode
	if l.Value != 0 {
		s += " " + strconv.FormatFloat(l.Value, 'g', -1, 64)
	}
	if l.Detail != "" {
		s += " (" + l.Detail + ")"
	}
	return s
}

// Base names the load without its detail ("rate 2"): what levels are
// matched by across tools.
func (l Load) Base() string { return Load{Mode: l.Mode, Value: l.Value}.String() }

// says is what a format saves beside times and output counts, where a 0
// would otherwise stand for "not said".
type says uint8

const (
	saysCached     says = 1 << iota // cached input tokens
	saysReasoning                   // reasoning tokens
	saysCacheWrite                  // cache-write input tokens
)

// level is one load level of the run: the records of every file at that
// load, summarized together.
type level struct {
	load Load
	sum  *llmmetrics.Summarizer
	n    int // records added
	// completed and noInput count the completed requests, and those of
	// them without an input count (Record.InputTokens 0: unknown).
	completed, noInput int
	// relDuration is Σ durations of the clockRelative documents of the
	// level (laid end to end); duration the level's duration once read
	// (0: the Summarizer's span).
	relDuration time.Duration
	// noDuration: a document of the level states no duration and has no
	// start times (LLMPerf without its summary), so no rate is known.
	noDuration bool
	// noStarts: some requests were placed without a start time (SGLang,
	// vLLM before start_times, LLMPerf): concurrency is not known.
	noStarts bool
	says     says
	// errorTypes counts the failed and canceled requests by error_type
	// ("unknown" where the file does not say).
	errorTypes map[string]int
	formats    []string // the formats its records came from, in order
	// ttft and itl keep what the -html page draws (nil when no page).
	ttft, itl []time.Duration
	keep      bool
	// recs holds the records when ReadRecords asks for them.
	recs []llmmetrics.Record
	// phases holds the transport phases a format keeps beside the Record
	// (aiperf's http_req_*), per completed request, in httpPhases order.
	phases [len(httpPhases)][]time.Duration
}

// httpPhases are the transport timings of aiperf's later exports kept
// beside the Records (aiperf docs/tutorials/http-trace-metrics.md): each
// with its aiperf tag and the name the output gives it.
var httpPhases = [...]struct{ tag, name, json string }{
	{"http_req_waiting", "TTFB", "time_to_first_byte"},
	{"http_req_connecting", "connect", "connecting"},
}

// addPhase keeps a completed request's transport phase k.
func (lv *level) addPhase(k int, d time.Duration) { lv.phases[k] = append(lv.phases[k], d) }

// phaseDistribution returns the Distribution of phase k (Count 0: none),
// computed as the library computes every latency.
func (lv *level) phaseDistribution(k int, percentiles []float64) llmmetrics.Distribution {
	if len(lv.phases[k]) == 0 {
		return llmmetrics.Distribution{}
	}
	// Each value is a TTFT of a record of its own: Summarize's statistics.
	recs := make([]llmmetrics.Record, len(lv.phases[k]))
	at := time.Unix(0, 0).UTC()
	for i, d := range lv.phases[k] {
		recs[i] = llmmetrics.Record{Start: at, FirstToken: at.Add(d), End: at.Add(d), Outcome: llmmetrics.OutcomeOK}
	}
	return llmmetrics.Summarize(recs, llmmetrics.SummaryOptions{Percentiles: percentiles}).TTFT
}

// relativeBase is where the next clockRelative document of the level
// starts: after the level's previous documents (laid end to end).
func (lv *level) relativeBase() time.Time {
	return time.Unix(0, 0).UTC().Add(lv.relDuration)
}

func (lv *level) countErrorType(et string) {
	if lv.errorTypes == nil {
		lv.errorTypes = map[string]int{}
	}
	switch _, seen := lv.errorTypes[et]; {
	case et == "":
		et = "unknown"
	case len(et) > 64, !seen && len(lv.errorTypes) >= maxErrorTypes:
		et = "_OTHER"
	}
	lv.errorTypes[et]++
}

// levelOf returns the level of load, made on first use.
func (r *run) levelOf(load Load) (*level, error) {
	for _, lv := range r.levels {
		if lv.load == load {
			return lv, nil
		}
	}
	if len(r.levels) >= maxLevels {
		return nil, fmt.Errorf("more than %d load levels: not a benchmark's sweep", maxLevels)
	}
	sum, err := llmmetrics.NewSummarizer(r.opts)
	if err != nil {
		return nil, err
	}
	lv := &level{load: load, sum: sum, keep: r.keepSamples}
	r.levels = append(r.levels, lv)
	return lv, nil
}

// maxLevels bounds the levels of a run, so that a file cannot grow them
// (each holds a Summarizer) without bound.
const maxLevels = 4096

// selectLevel returns the level spec names (see SelectLoad).
func selectLevel(levels []*level, spec string) (*level, error) {
	loads := make([]Load, len(levels))
	for i, lv := range levels {
		loads[i] = lv.load
	}
	i, err := SelectLoad(loads, spec)
	if err != nil {
		return nil, err
	}
	return levels[i], nil
}

// SelectLoad returns the index of the load spec names: its name as printed
// ("rate 2 (constant arrivals)", "concurrency 8", "throughput"), the name
// without its detail ("rate 2"), its mode alone when one load has it, or a
// number that one load's value is. Case, "=", ":" and "@" are forgiven
// ("Concurrency=8", "rate@2").
func SelectLoad(loads []Load, spec string) (int, error) {
	norm := func(s string) string {
		s = strings.NewReplacer("=", " ", ":", " ", "@", " ").Replace(strings.ToLower(s))
		return strings.Join(strings.Fields(s), " ")
	}
	want := norm(spec)
	var hits []int
	if v, err := strconv.ParseFloat(want, 64); err == nil {
		for i, l := range loads {
			if l.Value == v {
				hits = append(hits, i)
			}
		}
	} else {
		for i, l := range loads {
			if norm(l.String()) == want {
				return i, nil
			}
			if norm(l.Base()) == want || norm(l.Mode) == want {
				hits = append(hits, i)
			}
		}
	}
	if len(hits) == 1 {
		return hits[0], nil
	}
	names := make([]string, len(loads))
	for i, l := range loads {
		names[i] = strconv.Quote(l.String())
	}
	if len(hits) > 1 {
		return 0, fmt.Errorf("-level %q: names %d levels; name one of %s", spec, len(hits), strings.Join(names, ", "))
	}
	return 0, fmt.Errorf("-level %q: no such level; the input has %s", spec, strings.Join(names, ", "))
}

// addFormat notes that the level holds records of format name.
func (lv *level) addFormat(name string) {
	if !slices.Contains(lv.formats, name) {
		lv.formats = append(lv.formats, name)
	}
}

// noTTFO is why a format has no TTFO.
const noTTFO = "the format does not tell reasoning from answer tokens"
