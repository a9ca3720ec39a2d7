package report

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/llmmetrics/llmmetrics"
)

// GuideLLM's benchmarks.json and benchmarks.yaml (vllm-project/guidellm),
// every schema that saved per-request data:
//
//   - v0.1: GuidanceReport (src/guidellm/core/report.py, result.py):
//     {"benchmarks": [{"benchmarks": [{"mode", "rate", "results",
//     "errors", "concurrencies"}], "args"}]}; a result has start_time,
//     end_time and last_time (Unix seconds), first_token_time (a duration,
//     seconds) and decode_times.data (the gaps); an error only its message.
//   - v0.2 and v0.3: GenerativeBenchmarksReport (benchmark/output.py,
//     benchmark.py): {"benchmarks": [{"args": {"strategy"},
//     "request_totals", "requests": {"successful", "incomplete",
//     "errored"}}]}; a request has start_time, end_time, first_token_time,
//     last_token_time (Unix seconds), prompt_tokens, output_tokens, and an
//     error its error text.
//   - v0.4 and later: GenerativeBenchmarksReport (benchmark/schemas/…):
//     {"metadata"?, "args" | "config", "benchmarks": [{"config":
//     {"strategy"}, "metrics": {"request_totals"}, "requests": {…}}]}; a
//     request is a GenerativeRequestStats (schemas/request_stats.py):
//     info.timings (schemas/info.py: request_start, first_token_iteration,
//     first_output_token_iteration from v0.7, last_token_iteration,
//     token_iterations, request_end, resolve_start, resolve_end),
//     info.error, input_metrics and output_metrics (schemas/request.py
//     UsageMetrics), response_id from v0.5.
//
// JSON is written by json.dumps (one line), YAML by yaml.dump (keys
// sorted). Each benchmark is a level of the run, its load from its
// strategy.
func init() {
	formats = append(formats, &format{
		name:   "guidellm",
		detect: detectGuideLLM,
		decode: decodeGuideLLM,
		clock:  clockWall,
		ttft:   "GuideLLM's: the first SSE event with content (v0.1: the first event of any kind), from the request's start",
		defs: []string{
			"GuideLLM's own time_per_output_token_ms divides by N, not N − 1 ((last token − first)/N in v0.2–v0.3, (last token − request start)/N from v0.4, the first token's wait included), and its inter_token_latency_ms is (last − first)/(N − 1), one mean per request: here TPOT is (last − first)/(N − 1) for every tool, and ITL is per gap where the file keeps gaps",
		},
	})
}

// detectGuideLLM recognises a GuideLLM report: JSON with a benchmark of
// type "generative_benchmark" (v0.2 and later) or a v0.1 result
// ("first_token_set", "decode_times"), or YAML with a top-level
// "benchmarks:" (no other format report reads is YAML).
func detectGuideLLM(h []byte) bool {
	if h[0] == '{' {
		return bytes.Contains(h, []byte(`"benchmarks"`)) && (bytes.Contains(h, []byte(`"generative_benchmark"`)) ||
			bytes.Contains(h, []byte(`"first_token_set"`)) || bytes.Contains(h, []byte(`"decode_times"`)))
	}
	return isYAMLReport(h)
}

func isYAMLReport(h []byte) bool {
	if !(h[0] >= 'a' && h[0] <= 'z') {
		return false
	}
	return bytes.HasPrefix(h, []byte("benchmarks:")) || bytes.Contains(h, []byte("\nbenchmarks:"))
}

// glStrategy is a benchmark's scheduling strategy (v0.2 and later).
type glStrategy struct {
	Type           string   `json:"type_" yaml:"type_"`
	Rate           *float64 `json:"rate" yaml:"rate"`
	Streams        *float64 `json:"streams" yaml:"streams"`
	MaxConcurrency *float64 `json:"max_concurrency" yaml:"max_concurrency"`
	TimeScale      *float64 `json:"time_scale" yaml:"time_scale"`
}

// load names the level a strategy ran.
func (s *glStrategy) load() (Load, error) {
	capped := func(l Load) Load {
		if s.MaxConcurrency != nil && *s.MaxConcurrency > 0 {
			cap := fmt.Sprintf("max concurrency %g", *s.MaxConcurrency)
			if l.Detail == "" {
				l.Detail = cap
			} else {
				l.Detail += ", " + cap
			}
		}
		return l
	}
	num := func(p *float64, what string) (float64, error) {
		if p == nil || !(*p > 0) || math.IsInf(*p, 0) {
			return 0, fmt.Errorf("strategy %q without a positive %s", s.Type, what)
		}
		return *p, nil
	}
	switch s.Type {
	case "synchronous":
		return Load{Mode: "concurrency", Value: 1, Detail: "synchronous"}, nil
	case "concurrent":
		n, err := num(s.Streams, "streams")
		return Load{Mode: "concurrency", Value: n}, err
	case "throughput":
		return capped(Load{Mode: "throughput"}), nil
	case "constant", "poisson":
		r, err := num(s.Rate, "rate")
		detail := "constant arrivals"
		if s.Type == "poisson" {
			detail = "Poisson arrivals"
		}
		return capped(Load{Mode: "rate", Value: r, Detail: detail}), err
	case "trace":
		l := Load{Mode: "trace"}
		if s.TimeScale != nil {
			l.Detail = fmt.Sprintf("time scale %g", *s.TimeScale)
		}
		return l, nil
	}
	return Load{}, fmt.Errorf("unknown strategy %q (want synchronous, concurrent, throughput, constant, poisson or trace)", s.Type)
}

// glV01Load names the level of a v0.1 benchmark: its mode and rate.
func glV01Load(mode string, rate *float64) (Load, error) {
	switch mode {
	case "synchronous":
		return Load{Mode: "concurrency", Value: 1, Detail: "synchronous"}, nil
	case "throughput":
		return Load{Mode: "throughput"}, nil
	case "asynchronous":
		if rate == nil || !(*rate > 0) || math.IsInf(*rate, 0) {
			return Load{}, fmt.Errorf("mode asynchronous without a positive rate")
		}
		return Load{Mode: "rate", Value: *rate, Detail: "asynchronous"}, nil
	}
	return Load{}, fmt.Errorf("unknown mode %q (want synchronous, asynchronous or throughput)", mode)
}

// glUsage is a UsageMetrics (v0.4 and later).
type glUsage struct {
	Text   *float64 `json:"text_tokens" yaml:"text_tokens"`
	Image  *float64 `json:"image_tokens" yaml:"image_tokens"`
	Video  *float64 `json:"video_tokens" yaml:"video_tokens"`
	Audio  *float64 `json:"audio_tokens" yaml:"audio_tokens"`
	Cached *float64 `json:"cached_tokens" yaml:"cached_tokens"`
}

// total is the tokens of every modality (GuideLLM's total_tokens); ok is
// false when none is said.
func (u *glUsage) total() (float64, bool) {
	if u == nil {
		return 0, false
	}
	sum, ok := 0.0, false
	for _, p := range []*float64{u.Text, u.Image, u.Video, u.Audio} {
		if p != nil {
			sum, ok = sum+*p, true
		}
	}
	return sum, ok
}

// glTimings is RequestTimings (v0.4 and later).
type glTimings struct {
	RequestStart    *float64 `json:"request_start" yaml:"request_start"`
	ResolveStart    *float64 `json:"resolve_start" yaml:"resolve_start"`
	FirstToken      *float64 `json:"first_token_iteration" yaml:"first_token_iteration"`
	FirstOutput     *float64 `json:"first_output_token_iteration" yaml:"first_output_token_iteration"`
	LastToken       *float64 `json:"last_token_iteration" yaml:"last_token_iteration"`
	TokenIterations *float64 `json:"token_iterations" yaml:"token_iterations"`
	RequestEnd      *float64 `json:"request_end" yaml:"request_end"`
	ResolveEnd      *float64 `json:"resolve_end" yaml:"resolve_end"`
}

// glRequest is one saved request of any version; which members it has
// says which.
type glRequest struct {
	// v0.4 and later
	Info *struct {
		Error     *string   `json:"error" yaml:"error"`
		Traceback *string   `json:"traceback" yaml:"traceback"`
		Timings   glTimings `json:"timings" yaml:"timings"`
	} `json:"info" yaml:"info"`
	InputMetrics  *glUsage `json:"input_metrics" yaml:"input_metrics"`
	OutputMetrics *glUsage `json:"output_metrics" yaml:"output_metrics"`
	ResponseID    *string  `json:"response_id" yaml:"response_id"`
	// v0.2 and v0.3
	StartTime    *float64 `json:"start_time" yaml:"start_time"`
	EndTime      *float64 `json:"end_time" yaml:"end_time"`
	FirstTokenAt *float64 `json:"first_token_time" yaml:"first_token_time"`
	LastTokenAt  *float64 `json:"last_token_time" yaml:"last_token_time"`
	PromptTokens *float64 `json:"prompt_tokens" yaml:"prompt_tokens"`
	OutputTokens *float64 `json:"output_tokens" yaml:"output_tokens"`
	Error        *string  `json:"error" yaml:"error"`
	// v0.1 (a result; first_token_time is then a duration)
	LastTime    *float64 `json:"last_time" yaml:"last_time"`
	DecodeTimes *struct {
		Data []float64 `json:"data" yaml:"data"`
	} `json:"decode_times" yaml:"decode_times"`
	PromptTokenCount *float64 `json:"prompt_token_count" yaml:"prompt_token_count"`
	OutputTokenCount *float64 `json:"output_token_count" yaml:"output_token_count"`
	Message          *string  `json:"message" yaml:"message"`
}

// glList names a list of saved requests: its status in the file.
type glList string

const (
	glSuccessful glList = "successful"
	glIncomplete glList = "incomplete"
	glErrored    glList = "errored"
	glResults    glList = "results" // v0.1 successes
	glErrors     glList = "errors"  // v0.1 failures (no times)
)

// glFacts are what a file's requests said, for the notes.
type glFacts struct {
	noITL, lowerBound, noTTFO, v01Errors bool
}

// glRecord builds the Record of a saved request of list l.
func glRecord(q *glRequest, l glList, f *glFacts) (llmmetrics.Record, bool, error) {
	switch {
	case l == glResults:
		return glV01Record(q)
	case q.Info != nil:
		return glV04Record(q, l, f)
	}
	return glV02Record(q, l)
}

// unixSeconds converts a float Unix time in seconds to the nearest
// nanosecond of its exact value (ok false: out of range). The whole
// seconds and the fraction are converted apart: x·1e9 in one product
// would round to 256 ns at today's times. A float Unix time itself holds
// about 0.24 µs (its last bit at 2^30 s).
func unixSeconds(x float64) (time.Time, bool) {
	if !(math.Abs(x) <= maxNanos/1e9) {
		return time.Time{}, false
	}
	sec := math.Floor(x)
	frac := x - sec // exact
	return time.Unix(int64(sec), int64(math.Round(frac*1e9))).UTC(), true
}

// glTime converts an optional Unix time; zero when absent.
func glTime(p *float64, what string) (time.Time, error) {
	if p == nil {
		return time.Time{}, nil
	}
	t, ok := unixSeconds(*p)
	if !ok {
		return t, fmt.Errorf("%s %v out of range", what, *p)
	}
	return t, nil
}

func glCount(p *float64, what string) (int, bool, error) {
	if p == nil {
		return 0, false, nil
	}
	n, err := countOf(*p)
	if err != nil {
		return 0, false, fmt.Errorf("%s: %v", what, err)
	}
	return n, true, nil
}

// glV04Record reads a GenerativeRequestStats.
func glV04Record(q *glRequest, l glList, f *glFacts) (rec llmmetrics.Record, cached bool, err error) {
	t := &q.Info.Timings
	var times [7]time.Time
	for i, x := range []struct {
		p    *float64
		name string
	}{{t.RequestStart, "request_start"}, {t.ResolveStart, "resolve_start"}, {t.FirstToken, "first_token_iteration"},
		{t.FirstOutput, "first_output_token_iteration"}, {t.LastToken, "last_token_iteration"}, {t.RequestEnd, "request_end"}, {t.ResolveEnd, "resolve_end"}} {
		if times[i], err = glTime(x.p, "info.timings."+x.name); err != nil {
			return rec, false, err
		}
	}
	start, end := firstSet(times[0], times[1]), firstSet(times[5], times[6])
	switch {
	case start.IsZero() && end.IsZero():
		return rec, false, fmt.Errorf("info.timings has no start (request_start, resolve_start) and no end (request_end, resolve_end)")
	case start.IsZero(): // never sent: canceled in the queue
		start = end
	case end.IsZero():
		end = start
	}
	rec = llmmetrics.Record{Start: start, End: end, Outcome: llmmetrics.OutcomeOK}
	if q.ResponseID != nil {
		rec.ResponseID = *q.ResponseID
	}
	if n, ok := q.InputMetrics.total(); ok {
		if rec.InputTokens, err = countOf(n); err != nil {
			return rec, false, fmt.Errorf("input_metrics: %v", err)
		}
	}
	if q.InputMetrics != nil && q.InputMetrics.Cached != nil {
		if rec.CachedInputTokens, err = countOf(*q.InputMetrics.Cached); err != nil {
			return rec, false, fmt.Errorf("input_metrics.cached_tokens: %v", err)
		}
		cached = true
	}
	switch l {
	case glErrored:
		rec.Outcome, rec.ErrorType = llmmetrics.OutcomeError, glErrorType(q.Info.Error, q.Info.Traceback)
		return rec, cached, nil
	case glIncomplete:
		rec.Outcome, rec.ErrorType = llmmetrics.OutcomeCanceled, "canceled"
		return rec, cached, nil
	}
	iters, hasIters, err := glCount(t.TokenIterations, "info.timings.token_iterations")
	if err != nil {
		return rec, cached, err
	}
	if n, ok := q.OutputMetrics.total(); ok {
		if rec.OutputTokens, err = countOf(n); err != nil {
			return rec, cached, fmt.Errorf("output_metrics: %v", err)
		}
	} else {
		rec.OutputTokens, f.lowerBound = iters, true
	}
	f.noITL = true
	if times[2].IsZero() { // no token: a non-streaming answer, or an empty one
		return rec, cached, nil
	}
	rec.FirstToken, rec.FirstOutput, rec.LastToken = times[2], times[3], times[4]
	if rec.LastToken.IsZero() {
		rec.LastToken = rec.FirstToken
	}
	if t.FirstOutput == nil {
		f.noTTFO = true
	}
	rec.Chunks = iters
	if hasIters && iters == 0 || !hasIters {
		rec.Chunks = 1
	}
	rec.OutputTokens = max(rec.OutputTokens, rec.Chunks)
	return rec, cached, nil
}

func firstSet(ts ...time.Time) time.Time {
	for _, t := range ts {
		if !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}

// glV02Record reads a GenerativeTextResponseStats or
// GenerativeTextErrorStats.
func glV02Record(q *glRequest, l glList) (rec llmmetrics.Record, cached bool, err error) {
	if rec, err = glStartEnd(q, "a request without start_time and end_time (v0.2, v0.3) or info.timings (v0.4 and later): not a GuideLLM version report reads"); err != nil {
		return rec, false, err
	}
	if rec.InputTokens, _, err = glCount(q.PromptTokens, "prompt_tokens"); err != nil {
		return rec, false, err
	}
	switch l {
	case glErrored:
		rec.Outcome, rec.ErrorType = llmmetrics.OutcomeError, glErrorType(q.Error, nil)
		return rec, false, nil
	case glIncomplete:
		rec.Outcome, rec.ErrorType = llmmetrics.OutcomeCanceled, "canceled"
		return rec, false, nil
	}
	if rec.OutputTokens, _, err = glCount(q.OutputTokens, "output_tokens"); err != nil {
		return rec, false, err
	}
	// A successful request without an iteration has first_token_time -1.
	if q.FirstTokenAt == nil || *q.FirstTokenAt <= 0 {
		return rec, false, nil
	}
	if rec.FirstToken, err = glTime(q.FirstTokenAt, "first_token_time"); err != nil {
		return rec, false, err
	}
	rec.LastToken = rec.FirstToken
	if q.LastTokenAt != nil && *q.LastTokenAt > 0 {
		if rec.LastToken, err = glTime(q.LastTokenAt, "last_token_time"); err != nil {
			return rec, false, err
		}
	}
	return rec, false, nil
}

// glStartEnd returns an OK Record of q's start_time and end_time (Unix
// seconds), or the error missing when q lacks either.
func glStartEnd(q *glRequest, missing string) (llmmetrics.Record, error) {
	if q.StartTime == nil || q.EndTime == nil {
		return llmmetrics.Record{}, errors.New(missing)
	}
	start, err := glTime(q.StartTime, "start_time")
	if err != nil {
		return llmmetrics.Record{}, err
	}
	end, err := glTime(q.EndTime, "end_time")
	if err != nil {
		return llmmetrics.Record{}, err
	}
	return llmmetrics.Record{Start: start, End: end, Outcome: llmmetrics.OutcomeOK}, nil
}

// glV01Record reads a v0.1 TextGenerationResult: times in Unix seconds but
// first_token_time, the wait for the first token.
func glV01Record(q *glRequest) (rec llmmetrics.Record, cached bool, err error) {
	if rec, err = glStartEnd(q, "a result without start_time and end_time"); err != nil {
		return rec, false, err
	}
	if rec.InputTokens, _, err = glCount(q.PromptTokenCount, "prompt_token_count"); err != nil {
		return rec, false, err
	}
	if rec.OutputTokens, _, err = glCount(q.OutputTokenCount, "output_token_count"); err != nil {
		return rec, false, err
	}
	if q.FirstTokenAt == nil {
		return rec, false, nil
	}
	ttft, ok := seconds(*q.FirstTokenAt)
	if !ok || ttft < 0 {
		return rec, false, fmt.Errorf("first_token_time %v s out of range", *q.FirstTokenAt)
	}
	rec.FirstToken = rec.Start.Add(ttft)
	if q.DecodeTimes != nil {
		rec.ITL = make([]time.Duration, len(q.DecodeTimes.Data))
		for i, g := range q.DecodeTimes.Data {
			if rec.ITL[i], ok = seconds(g); !ok {
				return rec, false, fmt.Errorf("decode_times.data[%d] %v s out of range", i, g)
			}
		}
	}
	rec.Chunks = len(rec.ITL) + 1
	rec.LastToken = rec.FirstToken
	if q.LastTime != nil {
		if rec.LastToken, err = glTime(q.LastTime, "last_time"); err != nil {
			return rec, false, err
		}
	}
	rec.OutputTokens = max(rec.OutputTokens, rec.Chunks)
	return rec, false, nil
}

// httpStatus finds the status code in an httpx error text ("Client error
// '429 Too Many Requests' for url …").
var httpStatus = regexp.MustCompile(`(?:Client|Server|Informational|Redirect) error '([1-5][0-9][0-9]) `)

// glErrorType is the error_type of a GuideLLM error: the HTTP status of an
// httpx status error; else the exception's class from the traceback
// (v0.6 and later save it); else "_OTHER" ("unknown" when empty).
func glErrorType(msg, traceback *string) string {
	if msg != nil {
		if m := httpStatus.FindStringSubmatch(*msg); m != nil {
			return m[1]
		}
	}
	if traceback != nil && strings.TrimSpace(*traceback) != "" {
		return vllmErrorType(*traceback)
	}
	if msg == nil || strings.TrimSpace(*msg) == "" {
		return ""
	}
	return "_OTHER"
}
