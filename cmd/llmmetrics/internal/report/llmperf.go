package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	"github.com/llmmetrics/llmmetrics"
)

// LLMPerf's *_individual_responses.json (ray-project/llmperf,
// token_benchmark_ray.py: json.dump(individual_responses, indent=4), the
// request_metrics dicts of src/llmperf/ray_clients/*.py with the keys of
// src/llmperf/common_metrics.py). Times are seconds of time.monotonic()
// relative to each request's own start; no start time and no run duration
// are saved, so the duration and the level (num_concurrent_requests) come
// from the *_summary.json beside the file when it is there.
//
// number_output_tokens is len(tokenizer.encode(generated_text)) with a
// Llama tokenizer, whose encode adds the beginning-of-sequence token: one
// more than the text's tokens (an empty answer counts 1). report takes N as
// that count less one.
func init() {
	formats = append(formats, &format{
		name: "llmperf",
		detect: func(h []byte) bool {
			return h[0] == '[' && bytes.Contains(h, []byte(`"ttft_s"`)) && bytes.Contains(h, []byte(`"end_to_end_latency_s"`))
		},
		decode: decodeLLMPerf,
		notes: []string{
			"no TTFO: the format does not tell reasoning from answer tokens",
			"no ITL: LLMPerf saves no gaps, only a per-request mean; TPOT is (stream end − first token)/(N − 1), the stream's end standing for the last token (not saved)",
			"N is number_output_tokens less one: LLMPerf counts the answer with a Llama tokenizer whose encode adds a beginning-of-sequence token; number_input_tokens is the prompt length LLMPerf aimed at, by the same tokenizer",
		},
		cannot: map[string]string{"ttfo": noTTFO, "itl": "LLMPerf saves no per-gap times"},
		clock:  clockRelative,
		ttft:   "LLMPerf's: the first SSE event whose delta.content is not empty, from the request's send",
		defs: []string{
			"LLMPerf's own inter_token_latency_s is the time to the last content event over every SSE event of the stream (role and finish events included), one mean per request with the TTFT inside, and its token counts come from a Llama tokenizer with a beginning-of-sequence token; here TPOT is (end − first token)/(N − 1), N the count less that token",
		},
	})
}

type llmperfRequest struct {
	ErrorCode *float64 `json:"error_code"`
	ErrorMsg  string   `json:"error_msg"`
	TTFT      *float64 `json:"ttft_s"`
	E2E       *float64 `json:"end_to_end_latency_s"`
	Output    *float64 `json:"number_output_tokens"`
	Input     *float64 `json:"number_input_tokens"`
}

// llmperfSummary is what the summary beside the file tells.
type llmperfSummary struct {
	Concurrency *float64 `json:"num_concurrent_requests"`
	Completed   *float64 `json:"results_num_completed_requests"`
	PerMinute   *float64 `json:"results_num_completed_requests_per_min"`
	name        string
	duration    time.Duration
	hasDuration bool
	hasLevel    bool
	concurrency float64
}

// readLLMPerfSummary reads NAME_summary.json beside NAME_individual_responses.json
// (nil when there is none).
func readLLMPerfSummary(path string) (*llmperfSummary, error) {
	prefix, ok := strings.CutSuffix(path, "_individual_responses.json")
	if !ok {
		return nil, nil
	}
	name := prefix + "_summary.json"
	b, err := os.ReadFile(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s llmperfSummary
	if err := json.Unmarshal(quoteLine(nil, b), &s); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	s.name = name
	if c := s.Concurrency; c != nil && *c >= 1 && *c <= maxCount && *c == math.Trunc(*c) {
		s.hasLevel, s.concurrency = true, *c
	}
	// num_completed_requests_per_min = completed / (end − start) · 60.
	if s.Completed != nil && s.PerMinute != nil && *s.Completed > 0 && *s.PerMinute > 0 {
		s.duration, s.hasDuration = seconds(*s.Completed * 60 / *s.PerMinute)
		s.hasDuration = s.hasDuration && s.duration > 0
	}
	return &s, nil
}

func decodeLLMPerf(fr *fileRun) error {
	sum, err := readLLMPerfSummary(fr.src.name)
	if err != nil {
		return err
	}
	load := Load{}
	if sum != nil && sum.hasLevel {
		load = Load{Mode: "concurrency", Value: sum.concurrency}
	}
	if err := fr.setLevel(load); err != nil {
		return fr.src.errorf(0, "%v", err)
	}
	lv := fr.lv
	lv.noStarts = true
	base := lv.relativeBase()
	d := newJdec(fr.src)
	keys := 0
	err = d.array("individual responses", func(i int) error {
		where := func(format string, args ...any) error {
			return d.errorf("request %d: "+format, append([]any{i}, args...)...)
		}
		var raw json.RawMessage
		if err := d.value("request", &raw); err != nil {
			return err
		}
		if len(raw) > 0 && raw[0] == '"' {
			keys++ // a key name (see the note below)
			return nil
		}
		var q llmperfRequest
		if err := json.Unmarshal(raw, &q); err != nil {
			return where("%v", err)
		}
		rec, err := llmperfRecord(&q, base)
		if err != nil {
			return where("%v", err)
		}
		return fr.emit(where, rec)
	})
	if err != nil {
		return err
	}
	if d.More() {
		return d.errorf("more than one JSON document: not an LLMPerf file")
	}
	if keys > 0 {
		fr.note(fmt.Sprintf("%s: %d strings where requests are: LLMPerf's last collection adds a request's key names instead of the request (completed_requests.extend(request_metrics)); they are left out, and those requests are not in the file", fr.src.name, keys))
	}
	switch {
	case sum != nil && sum.hasDuration:
		lv.relDuration += sum.duration
		fr.note(fmt.Sprintf("%s: run duration %v and concurrency from %s (results_num_completed_requests · 60 / results_num_completed_requests_per_min)", fr.src.name, sum.duration, sum.name))
	default:
		lv.noDuration = true
		fr.note(fr.src.name + ": no run duration: LLMPerf saves none per request, and no NAME_summary.json beside the file says it; no rate is known")
	}
	return nil
}

// llmperfRecord builds a request's Record, placed at base.
func llmperfRecord(q *llmperfRequest, base time.Time) (llmmetrics.Record, error) {
	rec := llmmetrics.Record{Start: base, End: base, Outcome: llmmetrics.OutcomeOK}
	var err error
	if q.Input != nil {
		if rec.InputTokens, err = countOf(*q.Input); err != nil {
			return rec, fmt.Errorf("number_input_tokens: %v", err)
		}
	}
	if q.ErrorCode != nil {
		rec.Outcome, rec.ErrorType = llmmetrics.OutcomeError, aiperfErrorType(q.ErrorCode, "")
		return rec, nil
	}
	if q.E2E == nil || q.TTFT == nil || q.Output == nil {
		return rec, errors.New("a successful request without ttft_s, end_to_end_latency_s or number_output_tokens")
	}
	e2e, ok := seconds(*q.E2E)
	if !ok || e2e < 0 {
		return rec, fmt.Errorf("end_to_end_latency_s %v out of range", *q.E2E)
	}
	ttft, ok := seconds(*q.TTFT)
	if !ok || ttft < 0 {
		return rec, fmt.Errorf("ttft_s %v out of range", *q.TTFT)
	}
	n, err := countOf(*q.Output)
	if err != nil {
		return rec, fmt.Errorf("number_output_tokens: %v", err)
	}
	rec.End = base.Add(e2e)
	rec.OutputTokens = max(n-1, 0) // less the beginning-of-sequence token
	if ttft > 0 {
		rec.FirstToken, rec.LastToken = base.Add(ttft), rec.End
		rec.OutputTokens = max(rec.OutputTokens, 1)
	}
	return rec, nil
}
