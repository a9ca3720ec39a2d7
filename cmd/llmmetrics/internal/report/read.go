package report

import (
	"context"
	"fmt"

	"github.com/llmmetrics/llmmetrics"
)

// Result is what Read makes of one or more result files: one run.
type Result struct {
	// Summarizer holds every request of every file; for the formats that
	// state their run's duration (vLLM) it is set, else the Summarizer
	// takes the span from the earliest start to the latest end.
	Summarizer *llmmetrics.Summarizer
	// Requests is the number of requests read.
	Requests int
	// Formats is the format of each file, in order.
	Formats []string
	// Notes say what the formats could not provide ("no TTFO: …").
	Notes []string
	// ErrorTypes counts the failed and canceled requests by error_type
	// ("unknown" where the file does not say).
	ErrorTypes map[string]int
}

// Read reads the per-request results in files (format "auto" detects each
// file's format; else one of records, vllm, aiperf, inference-perf,
// genai-perf) as one run summarized with opts, as "llmmetrics report"
// does. The error of a bad file names the file and line (an *inputError
// prints as "file:line: why"). A path of "-" is not special here.
func Read(ctx context.Context, files []string, format string, opts llmmetrics.SummaryOptions) (*Result, error) {
	if format != "auto" && formatByName(format) == nil {
		return nil, fmt.Errorf("unknown format %q (want auto or %s)", format, joinOr(formatNames()))
	}
	r, err := readFiles(ctx, files, format, nil, opts)
	if err != nil {
		return nil, err
	}
	res := &Result{Summarizer: r.sum, Requests: r.n, Notes: r.notes, ErrorTypes: r.errorTypes}
	for _, f := range r.files {
		res.Formats = append(res.Formats, f.format.name)
	}
	return res, nil
}
