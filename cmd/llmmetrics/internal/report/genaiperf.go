package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/llmmetrics/llmmetrics"
)

// genai-perf's profile_export.json, written by perf_analyzer
// (triton-inference-server/perf_analyzer: src/profile_data_exporter.cc):
// {"experiments": [{"experiment", "requests": [{"timestamp",
// "request_inputs", "response_timestamps", "response_outputs"}],
// "window_boundaries"}], "version", "service_kind", "endpoint"}. Times are
// integer nanoseconds of the system clock. The file holds no token counts
// and no error field: genai-perf re-tokenizes the text with the model's
// tokenizer, which this report does not have.
func init() {
	formats = append(formats, &format{
		name: "genai-perf",
		detect: func(h []byte) bool {
			return h[0] == '{' && bytes.Contains(h, []byte(`"experiments"`))
		},
		decode: decodeGenAIPerf,
		notes:  []string{"no TTFO: the format does not tell reasoning from answer tokens"},
		cannot: map[string]string{"ttfo": noTTFO},
		clock:  clockWall,
		ttft:   "genai-perf's: the first response with content (empty responses and [DONE] excluded, as its parser drops them), from the request's timestamp",
	})
}

type gpRequest struct {
	Timestamp          *int64                       `json:"timestamp"`
	ResponseTimestamps []int64                      `json:"response_timestamps"`
	ResponseOutputs    []map[string]json.RawMessage `json:"response_outputs"`
}

// gpChunk is what one response output says.
type gpChunk struct {
	content          bool   // carries tokens
	err              string // an error event
	prompt, complete int    // usage, when reported (-1 when not)
}

// openAIEvent is the part of an OpenAI-compatible response genai-perf reads.
type openAIEvent struct {
	Choices []struct {
		Text  *string `json:"text"`
		Delta *struct {
			Content          *string `json:"content"`
			ReasoningContent *string `json:"reasoning_content"`
			Reasoning        *string `json:"reasoning"`
		} `json:"delta"`
		Message *struct {
			Content *string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     *float64 `json:"prompt_tokens"`
		CompletionTokens *float64 `json:"completion_tokens"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

func nonEmpty(ps ...*string) bool {
	for _, p := range ps {
		if p != nil && *p != "" {
			return true
		}
	}
	return false
}

// parseOutput reads one response output: an OpenAI-compatible "response"
// (SSE events or a JSON body), or the output tensors of another service
// kind (e.g. Triton's text_output), which carry tokens when not empty.
func parseOutput(out map[string]json.RawMessage) (gpChunk, error) {
	c := gpChunk{prompt: -1, complete: -1}
	raw, ok := out["response"]
	if !ok {
		for _, v := range out {
			var s string
			if json.Unmarshal(v, &s) == nil {
				c.content = c.content || s != ""
			} else {
				c.content = c.content || len(v) > 0 && string(v) != "null"
			}
		}
		return c, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return c, fmt.Errorf(`"response" is not a string`)
	}
	for part := range strings.SplitSeq(s, "\n\n") {
		part = strings.TrimSpace(part)
		if strings.HasPrefix(part, ":") || strings.HasPrefix(part, "event:") {
			continue
		}
		part = strings.TrimSpace(strings.TrimPrefix(part, "data:"))
		if part == "" || part == "[DONE]" {
			continue
		}
		var ev openAIEvent
		if err := json.Unmarshal([]byte(part), &ev); err != nil {
			return c, fmt.Errorf("response %.40q is not JSON: %v", part, err)
		}
		if len(ev.Error) > 0 && string(ev.Error) != "null" {
			c.err = openAIErrorType(ev.Error)
		}
		for _, ch := range ev.Choices {
			c.content = c.content || nonEmpty(ch.Text)
			if ch.Delta != nil {
				c.content = c.content || nonEmpty(ch.Delta.Content, ch.Delta.ReasoningContent, ch.Delta.Reasoning)
			}
			if ch.Message != nil {
				c.content = c.content || nonEmpty(ch.Message.Content)
			}
		}
		if u := ev.Usage; u != nil {
			if err := usageCounts(&c, u.PromptTokens, u.CompletionTokens); err != nil {
				return c, err
			}
		}
	}
	return c, nil
}

// usageCounts sets c's token counts from a usage object's.
func usageCounts(c *gpChunk, prompt, completion *float64) error {
	for _, u := range []struct {
		dst  *int
		x    *float64
		name string
	}{{&c.prompt, prompt, "prompt_tokens"}, {&c.complete, completion, "completion_tokens"}} {
		if u.x == nil {
			continue
		}
		n, err := countOf(*u.x)
		if err != nil {
			return fmt.Errorf("usage.%s: %v", u.name, err)
		}
		*u.dst = n
	}
	return nil
}

// openAIErrorType returns the error_type of an OpenAI-compatible error
// event: its "type" (e.g. "overloaded_error"), else its "code", else
// "_OTHER".
func openAIErrorType(raw json.RawMessage) string {
	var e struct {
		Type string          `json:"type"`
		Code json.RawMessage `json:"code"`
	}
	if json.Unmarshal(raw, &e) == nil {
		if e.Type != "" && len(e.Type) <= 64 {
			return e.Type
		}
		if c := strings.Trim(string(e.Code), `"`); c != "" && c != "null" && len(c) <= 64 {
			return c
		}
	}
	return "_OTHER"
}

func decodeGenAIPerf(fr *fileRun) error {
	d := newJdec(fr.src)
	experiments, noContent, counted, noInput := 0, 0, 0, 0
	found := false
	err := d.object("genai-perf profile export", func(key string) error {
		if key != "experiments" {
			return d.skip()
		}
		found = true
		return d.array(key, func(int) error {
			experiments++
			return d.object("experiment", func(key string) error {
				if key != "requests" {
					return d.skip()
				}
				return d.array(key, func(i int) error {
					where := func(format string, args ...any) error {
						return d.errorf("request %d: "+format, append([]any{i}, args...)...)
					}
					var q gpRequest
					if err := d.value("request", &q); err != nil {
						return err
					}
					rec, usage, err := genaiRecord(&q)
					if err != nil {
						return where("%v", err)
					}
					switch {
					case rec.Outcome == llmmetrics.OutcomeError && rec.Chunks == 0:
						noContent++
					case !usage.output:
						counted++
					}
					if !usage.input {
						noInput++
					}
					return fr.emit(where, rec)
				})
			})
		})
	})
	if err != nil {
		return err
	}
	if !found {
		return d.errorf(`no "experiments": not a genai-perf profile_export.json`)
	}
	name := fr.src.name
	if experiments > 1 {
		fr.note(fmt.Sprintf("%s: holds %d experiments (load levels), summarized here as one run", name, experiments))
	}
	if counted > 0 {
		fr.note(fmt.Sprintf("%s: %d requests report no usage: their output tokens are counted one per content-bearing response (a lower bound; genai-perf re-tokenizes the text)", name, counted))
	}
	if noInput > 0 {
		fr.note(fmt.Sprintf("%s: %d requests report no prompt_tokens: their input tokens are 0 (genai-perf tokenizes the prompt)", name, noInput))
	}
	if noContent > 0 {
		fr.note(fmt.Sprintf("%s: %d requests without a content-bearing response are counted as failed (genai-perf leaves them out)", name, noContent))
	}
	return nil
}

type gpUsage struct{ input, output bool }

func genaiRecord(q *gpRequest) (llmmetrics.Record, gpUsage, error) {
	var u gpUsage
	if q.Timestamp == nil {
		return llmmetrics.Record{}, u, fmt.Errorf("no timestamp")
	}
	if len(q.ResponseTimestamps) != len(q.ResponseOutputs) {
		return llmmetrics.Record{}, u, fmt.Errorf("%d response_timestamps but %d response_outputs", len(q.ResponseTimestamps), len(q.ResponseOutputs))
	}
	rec := llmmetrics.Record{Start: time.Unix(0, *q.Timestamp).UTC(), Outcome: llmmetrics.OutcomeOK}
	rec.End = rec.Start
	var last time.Time
	for j, out := range q.ResponseOutputs {
		c, err := parseOutput(out)
		if err != nil {
			return rec, u, fmt.Errorf("response %d: %v", j, err)
		}
		ts := time.Unix(0, q.ResponseTimestamps[j]).UTC()
		if ts.After(rec.End) {
			rec.End = ts
		}
		if c.err != "" {
			rec.Outcome, rec.ErrorType = llmmetrics.OutcomeError, c.err
		}
		if c.prompt >= 0 {
			rec.InputTokens, u.input = c.prompt, true
		}
		if c.complete >= 0 {
			rec.OutputTokens, u.output = c.complete, true
		}
		if !c.content {
			continue
		}
		if rec.Chunks == 0 {
			rec.FirstToken = ts
		} else {
			rec.ITL = append(rec.ITL, ts.Sub(last))
		}
		last = ts
		rec.Chunks++
	}
	if rec.Chunks == 0 {
		rec.Outcome = llmmetrics.OutcomeError
		return rec, u, nil
	}
	rec.LastToken = last
	if !u.output {
		rec.OutputTokens = rec.Chunks
	}
	return rec, u, nil
}
