package report

import (
	"bytes"
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
		clock:  clockMonotonic,
		ttft:   "inference-perf's: the first SSE event with content (role-only, usage-only and empty events excluded), from the request's start",
	})
}

type ipRequest struct {
	StartTime *float64 `json:"start_time"`
	EndTime   *float64 `json:"end_time"`
	Info      *struct {
		InputTokens    *int `json:"input_tokens"`
		RequestMetrics *struct {
			Text *struct {
				InputTokens int `json:"input_tokens"`
			} `json:"text"`
		} `json:"request_metrics"`
		ResponseMetrics *struct {
			OutputTokens int `json:"output_tokens"`
			ServerUsage  *struct {
				PromptTokens        *int `json:"prompt_tokens"`
				CompletionTokens    *int `json:"completion_tokens"`
				PromptTokensDetails *struct {
					CachedTokens int `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
			} `json:"server_usage"`
			ChunkTimes       []float64 `json:"chunk_times"`
			OutputTokenTimes []float64 `json:"output_token_times"`
		} `json:"response_metrics"`
	} `json:"info"`
	Error *struct {
		ErrorType string `json:"error_type"`
		ErrorMsg  string `json:"error_msg"`
	} `json:"error"`
}

func decodeInferencePerf(fr *fileRun) error {
	d := newJdec(fr.src)
	base := time.Unix(0, 0).UTC()
	at := func(off int64, i int) func(string, ...any) error {
		return func(format string, args ...any) error {
			return fr.src.errorAt(off, "request %d: "+format, append([]any{i}, args...)...)
		}
	}
	serverTokens := false
	err := d.array("per-request list", func(i int) error {
		off := d.InputOffset()
		var q ipRequest
		if err := d.value("request", &q); err != nil {
			return err
		}
		where := at(off, i)
		if q.StartTime == nil || q.EndTime == nil {
			return where("no start_time or end_time")
		}
		start, ok1 := seconds(*q.StartTime)
		end, ok2 := seconds(*q.EndTime)
		if !ok1 || !ok2 {
			return where("bad start_time or end_time")
		}
		rec := llmmetrics.Record{Start: base.Add(start), End: base.Add(end), Outcome: llmmetrics.OutcomeOK}
		if q.Error != nil {
			rec.Outcome = llmmetrics.OutcomeError
		}
		if in := q.Info; in != nil {
			switch {
			case in.RequestMetrics != nil && in.RequestMetrics.Text != nil:
				rec.InputTokens = in.RequestMetrics.Text.InputTokens
			case in.InputTokens != nil:
				rec.InputTokens = *in.InputTokens
			}
			if rm := in.ResponseMetrics; rm != nil {
				rec.OutputTokens = rm.OutputTokens
				if u := rm.ServerUsage; u != nil {
					if u.CompletionTokens != nil {
						rec.OutputTokens, serverTokens = *u.CompletionTokens, true
					}
					if u.PromptTokens != nil {
						rec.InputTokens = *u.PromptTokens
					}
					if u.PromptTokensDetails != nil {
						rec.CachedInputTokens = u.PromptTokensDetails.CachedTokens
					}
				}
				times := rm.OutputTokenTimes
				if len(times) == 0 {
					times = rm.ChunkTimes
				}
				if len(times) > 0 && rec.Outcome == llmmetrics.OutcomeOK {
					first, ok := seconds(times[0])
					if !ok {
						return where("bad chunk time %v", times[0])
					}
					rec.FirstToken = base.Add(first)
					prev := first
					rec.ITL = make([]time.Duration, 0, len(times)-1)
					for _, t := range times[1:] {
						cur, ok := seconds(t)
						if !ok {
							return where("bad chunk time %v", t)
						}
						rec.ITL = append(rec.ITL, cur-prev)
						prev = cur
					}
					rec.LastToken = base.Add(prev)
					rec.Chunks = len(times)
				} else if rec.Outcome == llmmetrics.OutcomeOK {
					// A non-streaming request: no chunk times. Its response
					// is its one chunk, at end_time.
					rec.FirstToken, rec.Chunks = rec.End, 1
					fr.note(fr.src.name + ": requests without chunk times (non-streaming): the first token is taken at end_time, TTFT = E2EL, no ITL")
				}
			}
		}
		if rec.Outcome == llmmetrics.OutcomeOK && rec.FirstToken.IsZero() {
			return where("a successful request without info.response_metrics")
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
