// Package report is the "llmmetrics report" subcommand: the summary of any
// benchmark tool's per-request results, and a CI gate.
//
// Each input format has a decoder (records.go, vllm.go, aiperf.go,
// inferenceperf.go, genaiperf.go) that streams its file and hands every
// request to an emit function as an llmmetrics.Record; the records of all
// files are summarized as one run by an llmmetrics.Summarizer, which keeps
// only the numbers (the Records are not held).
package report

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/saturation"
)

// Exit statuses of Main.
const (
	exitOK   = 0 // every objective passed (or none was given)
	exitFail = 1 // an objective or the SLO failed
	exitBad  = 2 // bad flags or bad input
)

type options struct {
	format     string
	slo        llmmetrics.SLO
	objectives []llmmetrics.Objective
	attainment float64
	json       bool
	html       string // -html FILE
}

// Main runs "llmmetrics report" with args (the flags and files after the
// subcommand) and returns the exit status: 0 when every objective passes,
// 1 when one fails, 2 on bad input. A FILE of "-" is stdin.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o, files, code := parseArgs(args, stderr)
	if files == nil {
		return code
	}
	var pg pageSamples
	run, err := readFiles(ctx, files, o.format, stdin, llmmetrics.SummaryOptions{
		Percentiles: percentiles(o.objectives),
		SLO:         o.slo,
	}, pg.keep(o.html != ""))
	if err != nil {
		fmt.Fprintf(stderr, "llmmetrics report: %v\n", err)
		return exitBad
	}
	sum := run.sum.Summary()
	checks := gate(sum, o)
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(sum); err != nil {
			fmt.Fprintf(stderr, "llmmetrics report: %v\n", err)
			return exitBad
		}
		writeNotes(stderr, run)
		writeChecks(stderr, checks)
	} else {
		writeSummary(stdout, run, sum)
		writeChecks(stdout, checks)
	}
	if o.html != "" {
		if err := pg.write(o.html, args, run, sum); err != nil {
			fmt.Fprintf(stderr, "llmmetrics report: %v\n", err)
			return exitBad
		}
	}
	for _, c := range checks {
		if !c.pass {
			return exitFail
		}
	}
	return exitOK
}

// parseArgs parses the flags and files. files is nil when Main must stop
// with code (help asked, or bad flags).
func parseArgs(args []string, stderr io.Writer) (o options, files []string, code int) {
	fs := newFlagSet(&o, stderr)
	// Flags may come after the files too ("report out.json -slo …"): parse,
	// take the next file, parse the rest. "--" ends the flags.
	for rest := args; ; {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return o, nil, exitOK
			}
			return o, nil, exitBad
		}
		rest = fs.Args()
		if len(rest) == 0 {
			break
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			files = append(files, rest...)
			break
		}
		files, rest = append(files, rest[0]), rest[1:]
	}
	switch {
	case len(files) == 0:
		fmt.Fprintln(stderr, "llmmetrics report: no FILE given")
		fs.Usage()
		return o, nil, exitBad
	case o.format != "auto" && formatByName(o.format) == nil:
		fmt.Fprintf(stderr, "llmmetrics report: -format %q: unknown format (want auto, %s)\n", o.format, strings.Join(formatNames(), ", "))
		return o, nil, exitBad
	case !(o.attainment > 0 && o.attainment <= 1):
		fmt.Fprintf(stderr, "llmmetrics report: -attainment %v: want a share in (0, 1]\n", o.attainment)
		return o, nil, exitBad
	}
	return o, files, exitOK
}

func newFlagSet(o *options, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("llmmetrics report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: llmmetrics report [-format auto|records|vllm|aiperf|inference-perf|genai-perf] [-slo S] [-objective O]... [-json] [-html FILE] FILE...")
		fs.PrintDefaults()
	}
	fs.StringVar(&o.format, "format", "auto", "input format: auto (detected from the content), "+strings.Join(formatNames(), ", "))
	fs.Var(&o.slo, "slo", "SLO each request is checked against, e.g. ttft=200ms,tpot=50ms; the gate fails when fewer than -attainment of the requests meet it")
	fs.Float64Var(&o.attainment, "attainment", saturation.DefaultAttainmentTarget, "share of requests (0–1] that must meet -slo")
	fs.Func("objective", "percentile objective the run must pass, e.g. 'p95 ttft<=200ms' (repeatable)", func(s string) error {
		obj, err := llmmetrics.ParseObjective(s)
		if err != nil {
			return err
		}
		o.objectives = append(o.objectives, obj)
		return nil
	})
	fs.BoolVar(&o.json, "json", false, "print the Summary as JSON (gate lines then go to stderr)")
	fs.StringVar(&o.html, "html", "", "also write the run as a self-contained HTML page (table, CDFs of TTFT and ITL) to this file")
	return fs
}

// percentiles returns the default percentiles plus those the objectives
// ask for, so that every objective finds its value.
func percentiles(objs []llmmetrics.Objective) []float64 {
	ps := []float64{50, 90, 95, 99}
	for _, o := range objs {
		if !slices.Contains(ps, o.Percentile) {
			ps = append(ps, o.Percentile)
		}
	}
	return ps
}

// run is what the input files hold, as one run.
type run struct {
	files []fileInfo
	sum   *llmmetrics.Summarizer // every record of every file
	n     int                    // records added to sum
	// duration is the run duration to divide by; 0 lets the Summarizer
	// take max(End) − min(Start) over the records.
	duration time.Duration
	notes    []string // what the formats could not provide, said once each
	// errorTypes counts the failed and canceled requests by error_type
	// ("unknown" where the file does not say).
	errorTypes map[string]int
	// keep, when set, receives every record as it is added (ReadRecords).
	keep func(llmmetrics.Record)

	clock       string        // the clock of the files read so far
	clockFile   string        // the first file, named when another's clock differs
	relDuration time.Duration // Σ durations of clockRelative files
}

// relativeBase is where the next clockRelative document's requests start:
// after the previous documents' durations (documents are laid end to end).
func (r *run) relativeBase() time.Time {
	return time.Unix(0, 0).UTC().Add(r.relDuration)
}

// addRelative adds a clockRelative document's own duration to the run.
func (r *run) addRelative(d time.Duration) { r.relDuration += d }

// fileInfo is one input file as read.
type fileInfo struct {
	name    string
	format  *format
	records int
}

// readFiles decodes every file, in order, into one run summarized with
// opts (its Duration is set here).
func readFiles(ctx context.Context, names []string, formatName string, stdin io.Reader, opts llmmetrics.SummaryOptions, keep func(llmmetrics.Record)) (*run, error) {
	sum, err := llmmetrics.NewSummarizer(opts)
	if err != nil {
		return nil, err
	}
	r := &run{sum: sum, keep: keep}
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := r.readFile(name, formatName, stdin); err != nil {
			return nil, err
		}
	}
	if r.clock == clockRelative {
		r.duration = r.relDuration
		r.sum.SetDuration(r.duration)
	}
	return r, nil
}

func (r *run) readFile(name, formatName string, stdin io.Reader) error {
	var in io.Reader
	if name == "-" && stdin != nil {
		in, name = stdin, "<stdin>"
	} else {
		f, err := os.Open(name)
		if err != nil {
			return err // *PathError names the file
		}
		defer f.Close()
		in = f
	}
	src := newSource(name, in)
	var fm *format
	if formatName == "auto" {
		var err error
		if fm, err = detect(src); err != nil {
			return err
		}
	} else {
		fm = formatByName(formatName)
	}
	if r.clock != "" && r.clock != fm.clock {
		return fmt.Errorf("%s: its times (%s, %s) cannot be put on one timeline with %s's (%s): report them apart",
			name, fm.name, fm.clock, r.clockFile, r.clock)
	}
	if r.clock == "" {
		r.clock, r.clockFile = fm.clock, name
	}
	before := r.n
	fr := &fileRun{run: r, src: src}
	if err := fm.decode(fr); err != nil {
		return err
	}
	if r.n == before {
		return fmt.Errorf("%s: no request read as %s: is it a %s file? (name the format with -format)", name, fm.name, fm.name)
	}
	r.files = append(r.files, fileInfo{name: name, format: fm, records: r.n - before})
	for _, n := range fm.notes {
		n = fm.name + ": " + n
		if !slices.Contains(r.notes, n) {
			r.notes = append(r.notes, n)
		}
	}
	return nil
}
