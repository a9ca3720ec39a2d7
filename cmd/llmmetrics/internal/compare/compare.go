// Package compare is the "llmmetrics compare" subcommand: did a change make
// a run slower, beyond noise? It compares two runs metric by metric, each
// change with a 95 % confidence interval and a verdict, and gates CI on the
// metrics named.
package compare

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/llmmetrics/llmmetrics"
)

// Exit statuses of Main, as "llmmetrics report".
const (
	exitOK   = 0 // no -fail-on metric regressed
	exitFail = 1 // a -fail-on metric regressed
	exitBad  = 2 // bad flags or bad input
)

// Defaults of the flags.
const (
	DefaultMinChange = 0.05
	DefaultResamples = 2000
)

// Options are the settings of a comparison.
type Options struct {
	// MinChange is the smallest relative change (a fraction; for SLO
	// attainment, in points/100) that counts as a regression or an
	// improvement when it is beyond noise.
	MinChange float64
	// Resamples is the bootstrap's resample count; Seed its seed.
	Resamples int
	Seed      uint64
	// SLO, when set, replaces the runs' own SLOs.
	SLO llmmetrics.SLO
	// Load picks a load level of bench runs (nil: the levels both have).
	Load *float64
	// Level picks one level of each side by name, as report -level does
	// ("rate 2", "concurrency 8", "throughput"); "" for none.
	Level string
	// Strict makes incomparable runs an error.
	Strict bool
}

// Comparison is the whole outcome: the runs, what makes them hard to
// compare, and per level every metric.
type Comparison struct {
	Base     string   `json:"base"`
	New      string   `json:"new"`
	Warnings []string `json:"warnings,omitempty"`
	Notes    []string `json:"notes,omitempty"`
	// MinChange is -min-change as a fraction.
	MinChange float64      `json:"min_change"`
	Levels    []LevelTable `json:"levels"`
	// Sweep sums up, with several levels, each metric that regressed or
	// improved at some level: at how many of the levels compared.
	Sweep []SweepVerdict `json:"sweep,omitempty"`
	// Regressed names the -fail-on metrics that regressed (with their
	// level); the gate fails when it is not empty.
	Regressed []string `json:"regressed,omitempty"`
	// FailOn is the -fail-on list.
	FailOn []string `json:"fail_on,omitempty"`
}

// LevelTable is the comparison of one pair of runs.
type LevelTable struct {
	// Level names the load level ("concurrency 4"); empty for files.
	Level   string   `json:"level,omitempty"`
	Results []Result `json:"results"`

	base, new Level
}

// Compare compares every level pair of base and new.
func Compare(base, nw *Input, o Options) (*Comparison, error) {
	pairs, notes, err := pairLevels(base, nw, o.Load)
	if o.Level != "" {
		pairs, notes, err = levelNamed(base, nw, o.Level)
	}
	if err != nil {
		return nil, err
	}
	c := &Comparison{Base: base.Name, New: nw.Name, MinChange: o.MinChange, Notes: notes}
	c.Warnings = comparability(base, nw, o.SLO)
	if n := saturationNote(base, nw); n != "" {
		c.Notes = append(c.Notes, n)
	}
	c.Notes = append(c.Notes, definitionNotes(base, nw)...)
	s := settings{minChange: o.MinChange, resamples: o.Resamples, seed: o.Seed}
	var single []string // levels not repeated on both sides
	for _, p := range pairs {
		b, n := p[0], p[1]
		b.slo, n.slo = sloOf(base, o.SLO), sloOf(nw, o.SLO)
		t := LevelTable{Level: b.Label(), base: b, new: n}
		if b.Label() != n.Label() {
			t.Level = "BASE " + runLabel(b) + " vs NEW " + runLabel(n)
		}
		t.Results = append(compareLatencies(b.sample, n.sample, s), compareRates(b.sample, n.sample, s)...)
		t.Results = append(t.Results, compareTasks(b, n, s)...)
		cannotSay(t.Results, base, nw, b, n)
		c.Levels = append(c.Levels, t)
		if len(b.repeats) < 2 || len(n.repeats) < 2 {
			single = append(single, t.Level)
		}
	}
	if len(single) > 0 {
		c.Notes = append(c.Notes, singleRunNote(single))
	}
	if len(c.Levels) > 1 {
		commons := moderate(c.Levels)
		holm(c.Levels, o.MinChange, commons...)
		c.Notes = append(c.Notes, holmNote(c.Levels))
		c.Sweep = sweepVerdicts(c.Levels, commons)
	}
	return c, nil
}

// sloOf returns the SLO a side is judged by: -slo, else its results.json's.
func sloOf(in *Input, flagSLO llmmetrics.SLO) llmmetrics.SLO {
	if !flagSLO.IsZero() || in.Results == nil {
		return flagSLO
	}
	return in.Results.SLO
}

// pairLevels returns the runs to compare: the level of -load in each, the
// one run of each, or the levels both have.
func pairLevels(b, n *Input, load *float64) ([][2]Level, []string, error) {
	if load != nil {
		lb, err := levelAt(b, *load)
		if err != nil {
			return nil, nil, err
		}
		ln, err := levelAt(n, *load)
		if err != nil {
			return nil, nil, err
		}
		return [][2]Level{{lb, ln}}, nil, nil
	}
	if len(b.Levels) == 1 && len(n.Levels) == 1 {
		return [][2]Level{{b.Levels[0], n.Levels[0]}}, nil, nil
	}
	var pairs [][2]Level
	var notes []string
	for _, lb := range b.Levels {
		k := slices.IndexFunc(n.Levels, func(l Level) bool { return l.Mode == lb.Mode && l.Load == lb.Load })
		if k < 0 {
			notes = append(notes, fmt.Sprintf("%s: only in BASE", lb.Label()))
			continue
		}
		pairs = append(pairs, [2]Level{lb, n.Levels[k]})
	}
	for _, ln := range n.Levels {
		if !slices.ContainsFunc(b.Levels, func(l Level) bool { return l.Mode == ln.Mode && l.Load == ln.Load }) {
			notes = append(notes, fmt.Sprintf("%s: only in NEW", ln.Label()))
		}
	}
	if len(pairs) == 0 {
		return nil, nil, fmt.Errorf("BASE (%s) and NEW (%s) have no load level in common: pick one of each with -load, or compare files of one run", levelList(b), levelList(n))
	}
	return pairs, notes, nil
}

// singleRunNote says what the intervals of levels measured once (on
// either side) cover: the requests' sampling noise, not the spread between
// runs.
func singleRunNote(levels []string) string {
	where := ""
	if levels[0] != "" {
		where = " (" + strings.Join(levels, ", ") + ")"
	}
	return "one run a side" + where + ": the intervals hold the noise of sampling requests within each run, not the spread between runs; repeat both (bench -repeats 3) for intervals that hold it"
}

// saturationNote names the saturation points of two bench runs when they
// differ: a note, not a verdict, since the levels are compared at matched
// load whatever each run concluded, and a knee found one level apart by
// two runs of one server is within the sweep's resolution.
func saturationNote(b, n *Input) string {
	if b.Results == nil || n.Results == nil || b.Results.Saturation == nil || n.Results.Saturation == nil {
		return ""
	}
	sb, sn := *b.Results.Saturation, *n.Results.Saturation
	if sb == sn || (!sb.Found && !sn.Found) {
		return ""
	}
	name := func(r *BenchResults) string {
		if !r.Saturation.Found {
			return "none found"
		}
		return fmt.Sprintf("%s %g", r.Mode, r.Saturation.Load)
	}
	return fmt.Sprintf("saturation point: BASE %s, NEW %s (each run's own verdict; the levels below are compared at the loads both ran)", name(b.Results), name(n.Results))
}

// runLabel names a level, or "one run" for a file.
func runLabel(l Level) string {
	if l.Mode == "" {
		return "one run"
	}
	return l.Label()
}

func levelAt(in *Input, load float64) (Level, error) {
	for _, l := range in.Levels {
		if l.Mode != "" && l.Load == load {
			return l, nil
		}
	}
	return Level{}, fmt.Errorf("%s: no load level %g (it has %s)", in.Name, load, levelList(in))
}

func levelList(in *Input) string {
	var ls []string
	for _, l := range in.Levels {
		ls = append(ls, runLabel(l))
	}
	return strings.Join(ls, ", ")
}

// comparability names what makes the two runs hard to compare: different
// models, workloads, SLOs, load modes or input formats (whose TTFT
// definitions differ).
func comparability(b, n *Input, flagSLO llmmetrics.SLO) []string {
	var w []string
	if !slices.Equal(uniq(b.Formats), uniq(n.Formats)) {
		w = append(w, fmt.Sprintf("different input formats (BASE %s, NEW %s): their TTFT definitions may differ", strings.Join(uniq(b.Formats), "+"), strings.Join(uniq(n.Formats), "+")))
	}
	rb, rn := b.Results, n.Results
	if rb == nil || rn == nil {
		return w
	}
	if rb.Model != rn.Model {
		w = append(w, fmt.Sprintf("different models (BASE %q, NEW %q)", rb.Model, rn.Model))
	}
	if rb.Mode != rn.Mode {
		w = append(w, fmt.Sprintf("different load modes (BASE %s, NEW %s)", rb.Mode, rn.Mode))
	}
	if !jsonEqual(rb.Workload, rn.Workload) {
		w = append(w, fmt.Sprintf("different workloads (BASE %s, NEW %s)", compact(rb.Workload), compact(rn.Workload)))
	}
	if flagSLO.IsZero() && rb.SLO != rn.SLO {
		w = append(w, fmt.Sprintf("different SLOs (BASE %v, NEW %v): goodput and attainment are judged by each run's own; give -slo to judge both by one", rb.SLO, rn.SLO))
	}
	return w
}

func uniq(ss []string) []string {
	out := slices.Clone(ss)
	slices.Sort(out)
	return slices.Compact(out)
}

// jsonEqual reports whether two JSON values are equal (key order aside).
func jsonEqual(a, b json.RawMessage) bool {
	var va, vb any
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return string(a) == string(b)
	}
	ja, _ := json.Marshal(va)
	jb, _ := json.Marshal(vb)
	return string(ja) == string(jb)
}

func compact(m json.RawMessage) string {
	if len(m) == 0 {
		return "none"
	}
	var v any
	if json.Unmarshal(m, &v) != nil {
		return string(m)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// Gate fills c.Regressed with the metrics of failOn that regressed.
func (c *Comparison) Gate(failOn []string) {
	c.FailOn = failOn
	for _, t := range c.Levels {
		for _, r := range t.Results {
			if r.Verdict == Regression && slices.Contains(failOn, r.Metric) {
				name := r.Metric
				if t.Level != "" {
					name += " at " + t.Level
				}
				c.Regressed = append(c.Regressed, name)
			}
		}
	}
	for _, v := range c.Sweep {
		if v.Common != nil && v.Common.Verdict == Regression && slices.Contains(failOn, v.Metric) {
			c.Regressed = append(c.Regressed, v.Metric+" over the levels")
		}
	}
}

// minChangeFlag is -min-change: "5%" or "0.05".
type minChangeFlag float64

func (m *minChangeFlag) String() string { return fmt.Sprintf("%g%%", 100*float64(*m)) }

func (m *minChangeFlag) Set(s string) error {
	s = strings.TrimSpace(s)
	scale := 1.0
	if t, ok := strings.CutSuffix(s, "%"); ok {
		s, scale = t, 0.01
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v*scale >= 0 && v*scale < 10) {
		return fmt.Errorf("want a share like 5%% or 0.05, got %q", s)
	}
	*m = minChangeFlag(v * scale)
	return nil
}

// Main runs "llmmetrics compare" with args (the flags and the two inputs
// after the subcommand) and returns the exit status: 0 when no -fail-on
// metric regressed, 1 when one did, 2 on bad input.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o := Options{MinChange: DefaultMinChange, Resamples: DefaultResamples, Seed: 1}
	fs := flag.NewFlagSet("llmmetrics compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: llmmetrics compare [-min-change 5%] [-fail-on METRICS|all] [-slo S] [-load X | -level L] [-json] [-html FILE] [-strict] BASE NEW")
		fs.PrintDefaults()
	}
	mc := minChangeFlag(o.MinChange)
	fs.Var(&mc, "min-change", "smallest change that counts as a regression or improvement when it is beyond noise (relative; for slo_attainment, in points)")
	failOn := fs.String("fail-on", "", "exit 1 when one of these metrics regressed: comma-separated (e.g. 'p99 ttft,output_throughput'), or all")
	fs.Var(&o.SLO, "slo", "SLO both runs are judged by for goodput and slo_attainment (default: each bench run's own)")
	load := fs.String("load", "", "compare this load level of bench runs (default: the levels both have)")
	fs.StringVar(&o.Level, "level", "", "compare this level of each side, named as report prints it ('rate 2', 'concurrency 8', 'throughput') or by its number")
	asJSON := fs.Bool("json", false, "print the comparison as JSON")
	htmlFile := fs.String("html", "", "also write the comparison as a self-contained HTML page to this file")
	fs.BoolVar(&o.Strict, "strict", false, "runs that differ in model, workload, SLO, load mode or input format are an error (default: a warning)")
	fs.IntVar(&o.Resamples, "resamples", DefaultResamples, "bootstrap resamples")
	fs.Uint64Var(&o.Seed, "seed", 1, "seed of the bootstrap")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitBad
	}
	o.MinChange = float64(mc)
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "llmmetrics compare: "+format+"\n", a...)
		return exitBad
	}
	if fs.NArg() != 2 {
		fs.Usage()
		return bad("want two inputs, BASE and NEW; got %d", fs.NArg())
	}
	if o.Resamples < 100 {
		return bad("-resamples %d: want at least 100", o.Resamples)
	}
	fo, err := ParseFailOn(*failOn)
	if err != nil {
		return bad("%v", err)
	}
	if *load != "" {
		v, err := strconv.ParseFloat(*load, 64)
		if err != nil {
			return bad("-load %q: want a number", *load)
		}
		o.Load = &v
	}
	var ins [2]*Input
	for i, name := range fs.Args() {
		if ins[i], err = ReadInput(ctx, name, stdin); err != nil {
			return bad("%v", err)
		}
	}
	c, err := Compare(ins[0], ins[1], o)
	if err != nil {
		return bad("%v", err)
	}
	if o.Strict && len(c.Warnings) > 0 {
		return bad("-strict: the runs are not comparable: %s", strings.Join(c.Warnings, "; "))
	}
	c.Gate(fo)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(c); err != nil {
			return bad("%v", err)
		}
	} else {
		WriteText(stdout, c)
	}
	if *htmlFile != "" {
		if err := writeHTML(*htmlFile, c, ins, args); err != nil {
			return bad("%v", err)
		}
	}
	if len(c.Regressed) > 0 {
		return exitFail
	}
	return exitOK
}
