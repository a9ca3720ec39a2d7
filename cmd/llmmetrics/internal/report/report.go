// Package report is the "llmmetrics report" subcommand: the summary of any
// benchmark tool's per-request results, and a CI gate.
//
// Each input format has a decoder (records.go, vllm.go, sglang.go,
// guidellm.go, llmperf.go, aiperf.go, inferenceperf.go, genaiperf.go) that
// streams its file and hands every request to an emit function as an
// llmmetrics.Record, in the load level its file names (a GuideLLM
// benchmark's strategy, an SGLang run's rate); the records of each level,
// from every file, are summarized by one llmmetrics.Summarizer, which keeps
// only the numbers (the Records are not held).
package report

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

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
	level      string // -level: the one level to summarize and gate
}

// Main runs "llmmetrics report" with args (the flags and files after the
// subcommand) and returns the exit status: 0 when every objective passes,
// 1 when one fails, 2 on bad input. A FILE of "-" is stdin.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o, files, code := parseArgs(args, stderr)
	if files == nil {
		return code
	}
	r, err := readFiles(ctx, files, o.format, stdin, llmmetrics.SummaryOptions{
		Percentiles: percentiles(o.objectives),
		SLO:         o.slo,
	}, o.html != "", false)
	if err != nil {
		fmt.Fprintf(stderr, "llmmetrics report: %v\n", err)
		return exitBad
	}
	levels := r.levels
	if o.level != "" {
		lv, err := selectLevel(r.levels, o.level)
		if err != nil {
			fmt.Fprintf(stderr, "llmmetrics report: %v\n", err)
			return exitBad
		}
		levels = []*level{lv}
	}
	shown := make([]shownLevel, len(levels))
	for i, lv := range levels {
		s := lv.sum.Summary()
		shown[i] = shownLevel{lv: lv, sum: s, checks: gate(s, o)}
		for k := range httpPhases {
			shown[i].phases[k] = lv.phaseDistribution(k, r.opts.Percentiles)
		}
	}
	if o.json {
		if err := writeJSON(stdout, shown); err != nil {
			fmt.Fprintf(stderr, "llmmetrics report: %v\n", err)
			return exitBad
		}
		writeNotes(stderr, r)
		writeChecks(stderr, shown)
	} else {
		writeRun(stdout, r, shown)
	}
	if o.html != "" {
		if err := writePage(o.html, args, r, shown); err != nil {
			fmt.Fprintf(stderr, "llmmetrics report: %v\n", err)
			return exitBad
		}
	}
	for _, l := range shown {
		for _, c := range l.checks {
			if !c.pass {
				return exitFail
			}
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
		fmt.Fprintf(stderr, "usage: llmmetrics report [-format auto|%s] [-level L] [-slo S] [-objective O]... [-json] [-html FILE] FILE...\n", strings.Join(formatNames(), "|"))
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
	fs.StringVar(&o.level, "level", "", "summarize and gate only this load level of a file of several (a sweep): its load as printed, e.g. 'rate 2' or 'concurrency 8', or the number alone")
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

// run is what the input files hold: one run, in one or more load levels.
type run struct {
	files []fileInfo
	opts  llmmetrics.SummaryOptions
	// levels are the run's load levels, in order of first appearance: one
	// for files that name no load, one per benchmark of a sweep file.
	levels []*level
	n      int      // records read
	notes  []string // what the formats could not provide, said once each
	// cannot names the latencies the formats read cannot give at all
	// ("itl": why), for a comparison.
	cannot map[string]string
	// keepSamples makes each level keep what the -html page draws;
	// keepRecords makes it keep its records (ReadRecords).
	keepSamples, keepRecords bool
	recs                     []llmmetrics.Record // every record in file order (keepRecords)

	clock     string // the clock of the files read so far
	clockFile string // the first file, named when another's clock differs
}

// fileInfo is one input file as read.
type fileInfo struct {
	name    string
	format  *format
	records int
}

// readFiles decodes every file, in order, into one run summarized with
// opts (each level's Duration is set here).
func readFiles(ctx context.Context, names []string, formatName string, stdin io.Reader, opts llmmetrics.SummaryOptions, keepSamples, keepRecords bool) (*run, error) {
	if _, err := llmmetrics.NewSummarizer(opts); err != nil {
		return nil, err
	}
	r := &run{opts: opts, keepSamples: keepSamples, keepRecords: keepRecords}
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := r.readFile(name, formatName, stdin); err != nil {
			return nil, err
		}
	}
	for _, lv := range r.levels {
		if lv.relDuration > 0 {
			lv.sum.SetDuration(lv.relDuration)
		}
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
	fr := &fileRun{run: r, src: src, fm: fm}
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
	for k, why := range fm.cannot {
		fr.cannot(k, why)
	}
	return nil
}
