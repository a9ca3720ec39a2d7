package report

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

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
	r, err := readFiles(ctx, files, format, nil, opts, nil)
	if err != nil {
		return nil, err
	}
	res := &Result{Summarizer: r.sum, Requests: r.n, Notes: r.notes, ErrorTypes: r.errorTypes}
	for _, f := range r.files {
		res.Formats = append(res.Formats, f.format.name)
	}
	return res, nil
}

// Records is what ReadRecords returns: the requests of a set of files as
// one run.
type Records struct {
	// Records holds every request, in file order.
	Records []llmmetrics.Record
	// Duration is the run duration that per-file-relative formats (vLLM)
	// state, summed over the files; 0 means the run spans the records,
	// max(End) − min(Start).
	Duration time.Duration
	// Formats names each file's format, in file order.
	Formats []string
	// Notes say what the formats cannot provide (e.g. no ITL).
	Notes []string
}

// ReadRecords reads files as "llmmetrics report" does: format "auto"
// detects each file's format from its content, "-" is stdin, and bad input
// is an error naming the file and line.
func ReadRecords(ctx context.Context, files []string, format string, stdin io.Reader) (*Records, error) {
	if format != "auto" && formatByName(format) == nil {
		return nil, fmt.Errorf("-format %q: unknown format (want auto, %s)", format, strings.Join(formatNames(), ", "))
	}
	out := &Records{}
	r, err := readFiles(ctx, files, format, stdin, llmmetrics.SummaryOptions{}, func(rec llmmetrics.Record) {
		rec.ITL = slices.Clone(rec.ITL) // a decoder may reuse its ITL scratch
		out.Records = append(out.Records, rec)
	})
	if err != nil {
		return nil, err
	}
	out.Duration = r.duration
	for _, f := range r.files {
		out.Formats = append(out.Formats, f.format.name)
	}
	out.Notes = r.notes
	return out, nil
}
