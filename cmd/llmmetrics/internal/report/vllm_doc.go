package report

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmmetrics/llmmetrics"
)

// check validates the columns of a document (every array as long as
// "ttfts", a duration in range) and returns the run's duration.
func (v *vllmDoc) check(fr *fileRun, kind string, at func(string, ...any) error, missing func(key string) error) (time.Duration, error) {
	for _, k := range []string{"ttfts", "itls", "input_lens", "output_lens", "errors"} {
		if !v.has[k] {
			return 0, missing(k)
		}
	}
	dur, ok := seconds(v.duration)
	if !v.has["duration"] || !ok || dur <= 0 {
		return 0, at(`%s without a positive "duration" (or one out of range: %v s)`, kind, v.duration)
	}
	n := len(v.ttft)
	lens := []struct {
		key string
		n   int
	}{{"itls", len(v.gapEnd)}, {"input_lens", len(v.in)}, {"output_lens", len(v.out)}, {"errors", v.nErrs}, {"latencies", len(v.lat)}, {"start_times", len(v.starts)}, {"cached_tokens", len(v.cached)}}
	for _, l := range lens {
		if v.has[l.key] && l.n != n {
			return 0, at("%s: %q has %d entries, \"ttfts\" %d", kind, l.key, l.n, n)
		}
	}
	vllm := kind == "vLLM result"
	if !v.has["start_times"] {
		fr.lv.noStarts = true
	}
	if !v.has["start_times"] && vllm {
		fr.note(fr.src.name + `: no "start_times" (vLLM before they were saved): every request is placed at the run's start, so the peak concurrency is not known`)
	}
	if !v.has["latencies"] && vllm {
		fr.note(fr.src.name + `: no "latencies" (vLLM saves none): E2EL is ttft + the sum of itls, the time of the last token event, as vLLM computes its latency`)
	}
	if len(v.starts) > 0 {
		first := slices.Min(v.starts)
		for i := range v.starts {
			v.starts[i] -= first
		}
	}
	return dur, nil
}

// record builds request i, placed from base.
func (v *vllmDoc) record(i int, base time.Time, scratch *[]time.Duration) (llmmetrics.Record, error) {
	var off time.Duration
	if v.starts != nil {
		var ok bool
		if off, ok = seconds(v.starts[i]); !ok {
			return llmmetrics.Record{}, fmt.Errorf("start time %v s out of range", v.starts[i])
		}
	}
	rec := llmmetrics.Record{Start: base.Add(off), InputTokens: int(v.in[i]), Outcome: llmmetrics.OutcomeOK}
	rec.End = rec.Start
	lo := 0
	if i > 0 {
		lo = v.gapEnd[i-1]
	}
	gaps := v.gaps.slice(lo, v.gapEnd[i], scratch)
	v.gaps.release(lo)
	ttft, ok := seconds(v.ttft[i])
	if !ok {
		return rec, fmt.Errorf("ttft %v s out of range", v.ttft[i])
	}
	lat := ttft
	for _, g := range gaps {
		lat += g
	}
	if v.lat != nil {
		if lat, ok = seconds(v.lat[i]); !ok {
			return rec, fmt.Errorf("latency %v s out of range", v.lat[i])
		}
	}
	// RequestFuncOutput.success is not saved: a request failed when it has
	// an error text, or no first token (a success always has one, so
	// ttft > 0 and latency ≥ ttft).
	if et, failed := v.errTypes[i]; failed || ttft <= 0 || lat <= 0 {
		rec.Outcome, rec.ErrorType = llmmetrics.OutcomeError, et
		return rec, nil
	}
	rec.FirstToken, rec.LastToken = rec.Start.Add(ttft), rec.Start.Add(lat)
	rec.End = rec.LastToken
	rec.OutputTokens = int(v.out[i])
	if v.cached != nil {
		rec.CachedInputTokens = int(v.cached[i])
	}
	rec.Chunks = len(gaps) + 1
	rec.ITL = gaps // the Summarizer copies what it keeps
	return rec, nil
}

// statusCodes maps an HTTP reason phrase to its status code: vLLM saves
// the response's reason ("Internal Server Error") as a failed request's
// error when the server answers with an error status.
var statusCodes = func() map[string]string {
	m := map[string]string{}
	for c := 100; c < 600; c++ {
		if t := http.StatusText(c); t != "" {
			m[t] = strconv.Itoa(c)
		}
	}
	return m
}()

// vllmErrorType returns the error_type of a vLLM or SGLang error text: the
// status code of an HTTP reason phrase (alone, or followed by ": " and the
// answer's body, as SGLang saves it); for a Python traceback (what both
// save when the request raised), the exception's class name
// ("ClientConnectorError", "TimeoutError"); else "_OTHER".
func vllmErrorType(s string) string {
	s = strings.TrimSpace(s)
	if c, ok := statusCodes[s]; ok {
		return c
	}
	if reason, _, ok := strings.Cut(s, ": "); ok {
		if c, ok := statusCodes[reason]; ok {
			return c
		}
	}
	last := s[strings.LastIndexByte(s, '\n')+1:]
	name, _, _ := strings.Cut(last, ":")
	name = name[strings.LastIndexByte(name, '.')+1:]
	if name == "" || len(name) > 64 || strings.ContainsAny(name, " \t\"'()[]{}<>") {
		return "_OTHER"
	}
	return name
}
