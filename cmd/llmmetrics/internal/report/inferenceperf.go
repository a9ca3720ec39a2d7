package report

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"time"

	"github.com/llmmetrics/llmmetrics"
)

// inference-perf's per_request_lifecycle_metrics.json
// (kubernetes-sigs/inference-perf: inference_perf/reportgen/base.py writes
// the list, inference_perf/client/filestorage/local.py json.dumps it with
// indent=2; the models are in inference_perf/apis/base.py). Times are
// floats in seconds of Python's time.perf_counter (start_time before the
// request is sent, end_time after the response is processed or the error
// caught; chunk times when each content-bearing SSE event was split off
// the stream).
func init() {
	formats = append(formats, &format{
		name: "inference-perf",
		detect: func(h []byte) bool {
			return h[0] == '[' && bytes.Contains(h, []byte(`"start_time"`)) && bytes.Contains(h, []byte(`"end_time"`))
		},
		decode: decodeInferencePerf,
		notes:  []string{"no TTFO: the format does not tell reasoning from answer tokens"},
		cannot: map[string]string{"ttfo": noTTFO},
		clock:  clockMonotonic,
		ttft:   "inference-perf's: the first SSE event with content (role-only, usage-only and empty events excluded), from the request's start",
	})
}

type ipRequest struct {
	StartTime *float64 `json:"start_time"`
	EndTime   *float64 `json:"end_time"`
	Info      *struct {
		InputTokens    *float64 `json:"input_tokens"`
		RequestMetrics *struct {
			Text *struct {
				InputTokens float64 `json:"input_tokens"`
			} `json:"text"`
		} `json:"request_metrics"`
		ResponseMetrics *ipResponse `json:"response_metrics"` // v0.6 and later
		ResponseInfo    *ipResponse `json:"response_info"`    // v0.5
		// v0.1.1 to v0.4: the response's figures in info itself.
		OutputTokens     *float64  `json:"output_tokens"`
		OutputTokenTimes []float64 `json:"output_token_times"`
	} `json:"info"`
	Error *struct {
		ErrorType string `json:"error_type"`
		ErrorMsg  string `json:"error_msg"`
	} `json:"error"`
}

// ipResponse is inference-perf's ResponseMetrics (v0.5: response_info).
type ipResponse struct {
	OutputTokens float64 `json:"output_tokens"`
	ServerUsage  *struct {
		PromptTokens        *float64 `json:"prompt_tokens"`
		CompletionTokens    *float64 `json:"completion_tokens"`
		PromptTokensDetails *struct {
			CachedTokens float64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"server_usage"`
	ChunkTimes       []float64 `json:"chunk_times"`
	OutputTokenTimes []float64 `json:"output_token_times"`
}

// response returns the response's figures wherever the version put them.
func (q *ipRequest) response() *ipResponse {
	in := q.Info
	switch {
	case in == nil:
		return nil
	case in.ResponseMetrics != nil:
		return in.ResponseMetrics
	case in.ResponseInfo != nil:
		return in.ResponseInfo
	case in.OutputTokens != nil || in.OutputTokenTimes != nil:
		return &ipResponse{OutputTokens: *cmp.Or(in.OutputTokens, new(float64)), OutputTokenTimes: in.OutputTokenTimes}
	}
	return nil
}

func decodeInferencePerf(fr *fileRun) error {
	d := newJdec(fr.src)
	serverTokens := false
	err := d.array("per-request list", func(i int) error {
		where := func(format string, args ...any) error {
			return d.errorf("request %d: "+format, append([]any{i}, args...)...)
		}
		var q ipRequest
		if err := d.value("request", &q); err != nil {
			return err
		}
		rec, server, err := ipRecord(&q)
		if err != nil {
			return where("%v", err)
		}
		serverTokens = serverTokens || server
		if rm := q.response(); rm != nil && rm.ServerUsage != nil && rm.ServerUsage.PromptTokensDetails != nil {
			fr.says |= saysCached
		}
		if rec.Outcome == llmmetrics.OutcomeOK && rec.Chunks == 1 && rec.FirstToken.Equal(rec.End) {
			fr.note(fr.src.name + ": requests without chunk times (non-streaming): the first token is taken at end_time, TTFT = E2EL, no ITL")
		}
		return fr.emit(where, rec)
	})
	if err != nil {
		return err
	}
	if serverTokens {
		fr.note(fr.src.name + ": output tokens are the server's usage.completion_tokens where it reported them, else inference-perf's client-side count")
	}
	return nil
}

// ipRecord builds the Record of one request; server says whether its
// output tokens are the server's usage.
func ipRecord(q *ipRequest) (rec llmmetrics.Record, server bool, err error) {
	base := time.Unix(0, 0).UTC()
	if q.StartTime == nil || q.EndTime == nil {
		return rec, false, errors.New("no start_time or end_time")
	}
	start, ok1 := seconds(*q.StartTime)
	end, ok2 := seconds(*q.EndTime)
	if !ok1 || !ok2 {
		return rec, false, errors.New("start_time or end_time out of range")
	}
	rec = llmmetrics.Record{Start: base.Add(start), End: base.Add(end), Outcome: llmmetrics.OutcomeOK}
	if q.Error != nil {
		rec.Outcome, rec.ErrorType = llmmetrics.OutcomeError, q.Error.ErrorType
		if rec.ErrorType == "" {
			rec.ErrorType = "_OTHER"
		}
	}
	in, rm := q.Info, q.response()
	if rm == nil {
		if rec.Outcome == llmmetrics.OutcomeOK {
			return rec, false, errors.New(`a successful request without its response's figures (info.response_metrics, info.response_info or info.output_tokens); inference-perf v0.1.0 saves none: its per-request file cannot be reported`)
		}
		return rec, false, nil
	}
	var c ipCounts
	switch {
	case in.RequestMetrics != nil && in.RequestMetrics.Text != nil:
		c.set(&rec.InputTokens, in.RequestMetrics.Text.InputTokens, "input_tokens")
	case in.InputTokens != nil:
		c.set(&rec.InputTokens, *in.InputTokens, "input_tokens")
	}
	c.set(&rec.OutputTokens, rm.OutputTokens, "output_tokens")
	if u := rm.ServerUsage; u != nil {
		if u.CompletionTokens != nil {
			c.set(&rec.OutputTokens, *u.CompletionTokens, "completion_tokens")
			server = true
		}
		if u.PromptTokens != nil {
			c.set(&rec.InputTokens, *u.PromptTokens, "prompt_tokens")
		}
		if u.PromptTokensDetails != nil {
			c.set(&rec.CachedInputTokens, u.PromptTokensDetails.CachedTokens, "cached_tokens")
		}
	}
	if c.err != nil || rec.Outcome != llmmetrics.OutcomeOK {
		return rec, server, c.err
	}
	return rec, server, ipTimes(&rec, rm.OutputTokenTimes, rm.ChunkTimes)
}

// ipCounts checks counts, keeping the first error.
type ipCounts struct{ err error }

func (c *ipCounts) set(dst *int, x float64, name string) {
	n, err := countOf(x)
	if err != nil && c.err == nil {
		c.err = fmt.Errorf("%s: %v", name, err)
	}
	*dst = n
}

// ipTimes sets the token times of a successful request from its
// output_token_times (else chunk_times); without any (non-streaming), its
// response is its one chunk, at end_time.
func ipTimes(rec *llmmetrics.Record, times, chunkTimes []float64) error {
	if len(times) == 0 {
		times = chunkTimes
	}
	if len(times) == 0 {
		rec.FirstToken, rec.Chunks = rec.End, 1
		return nil
	}
	base := time.Unix(0, 0).UTC()
	prev, ok := seconds(times[0])
	if !ok {
		return fmt.Errorf("chunk time %v out of range", times[0])
	}
	rec.FirstToken = base.Add(prev)
	rec.ITL = make([]time.Duration, 0, len(times)-1)
	for _, t := range times[1:] {
		cur, ok := seconds(t)
		if !ok {
			return fmt.Errorf("chunk time %v out of range", t)
		}
		rec.ITL = append(rec.ITL, cur-prev)
		prev = cur
	}
	rec.LastToken = base.Add(prev)
	rec.Chunks = len(times)
	return nil
}
