package report

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/llmmetrics/llmmetrics"
)

// Records is what ReadRecords returns: the requests of a set of files as
// one run, in its load levels.
type Records struct {
	// Records holds every request, in file order.
	Records []llmmetrics.Record
	// Duration is the run duration that per-file-relative formats (vLLM,
	// SGLang, LLMPerf) state, summed over the levels; 0 means the run
	// spans the records, max(End) − min(Start).
	Duration time.Duration
	// Levels are the run's load levels, in order of first appearance (one,
	// of Load{}, for files that name no load).
	Levels []Level
	// Formats names each file's format, in file order.
	Formats []string
	// Notes say what the formats cannot provide (e.g. no ITL).
	Notes []string
	// Cannot names the latencies ("itl", "ttfo") the formats read cannot
	// give at all, each with why: a comparison leaves them out rather
	// than call their absence a regression.
	Cannot map[string]string
	// Defs say which TTFT each format's file holds, and how its tool
	// defines its own figures where they differ from these ("GuideLLM's
	// own TPOT includes the first token"), each prefixed with the format's
	// name.
	Defs []string
}

// Level is one load level of a Records.
type Level struct {
	Load    Load
	Records []llmmetrics.Record
	// Duration is the level's stated duration (0: its records' span).
	Duration time.Duration
	// NoDuration: no duration is known (no rate can be computed);
	// NoStarts: the requests have no start times (no peak concurrency).
	NoDuration, NoStarts bool
	// Formats names the formats its records came from.
	Formats []string
}

// ReadRecords reads files as "llmmetrics report" does: format "auto"
// detects each file's format from its content, "-" is stdin, and bad input
// is an error naming the file and line.
func ReadRecords(ctx context.Context, files []string, format string, stdin io.Reader) (*Records, error) {
	if format != "auto" && formatByName(format) == nil {
		return nil, fmt.Errorf("-format %q: unknown format (want auto, %s)", format, strings.Join(formatNames(), ", "))
	}
	r, err := readFiles(ctx, files, format, stdin, llmmetrics.SummaryOptions{}, false, true)
	if err != nil {
		return nil, err
	}
	out := &Records{Records: r.recs, Notes: r.notes, Cannot: r.cannot}
	for _, lv := range r.levels {
		out.Duration += lv.relDuration
		out.Levels = append(out.Levels, Level{Load: lv.load, Records: lv.recs, Duration: lv.relDuration,
			NoDuration: lv.noDuration, NoStarts: lv.noStarts, Formats: lv.formats})
	}
	seen := map[string]bool{}
	for _, f := range r.files {
		out.Formats = append(out.Formats, f.format.name)
		if !seen[f.format.name] {
			seen[f.format.name] = true
			out.Defs = append(out.Defs, f.format.name+": TTFT is "+f.format.ttft)
			for _, d := range f.format.defs {
				out.Defs = append(out.Defs, f.format.name+": "+d)
			}
		}
	}
	return out, nil
}
