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
	r := &run{keep: func(rec llmmetrics.Record) {
		rec.ITL = slices.Clone(rec.ITL) // a decoder may reuse its ITL scratch
		out.Records = append(out.Records, rec)
	}}
	var err error
	if r.sum, err = llmmetrics.NewSummarizer(llmmetrics.SummaryOptions{}); err != nil {
		return nil, err
	}
	for _, name := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := r.readFile(name, format, stdin); err != nil {
			return nil, err
		}
	}
	if r.clock == clockRelative {
		out.Duration = r.relDuration
	}
	for _, f := range r.files {
		out.Formats = append(out.Formats, f.format.name)
	}
	out.Notes = r.notes
	return out, nil
}
