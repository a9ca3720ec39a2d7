package compare

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/cmd/llmmetrics/internal/report"
	"github.com/llmmetrics/llmmetrics/saturation"
)

// Input is one side of a comparison as read: a file any "llmmetrics
// report" format, or a bench output directory.
type Input struct {
	// Name is the path given.
	Name string
	// Formats names the format of each file read; Notes say what they
	// cannot provide.
	Formats []string
	Notes   []string
	// Cannot names the latencies the formats cannot give at all ("itl":
	// why); Defs how each tool defines its own figures (report.Records).
	Cannot map[string]string
	Defs   []string
	// Levels holds the runs: one, or a bench run's load levels in file
	// order.
	Levels []Level
	// Results is the bench directory's results.json (nil for a file).
	Results *BenchResults
}

// Level is one run: a bench load level, a benchmark of a sweep file
// (GuideLLM, SGLang), or a whole file (Mode "", Load 0).
type Level struct {
	Mode string
	Load float64
	// Detail says how the tool ran the level ("constant arrivals"), as
	// report.Load does; levels are matched by Mode and Load alone.
	Detail string
	// noDuration: the file states no duration and has no start times, so
	// no rate is known; noStarts: its requests have no start times.
	noDuration, noStarts bool
	sample
}

// Records returns the level's records.
func (l Level) Records() []llmmetrics.Record { return l.recs }

// Label names the level for the output ("concurrency 4", "rate 2
// (constant arrivals)", "throughput", or "" for a file).
func (l Level) Label() string {
	return report.Load{Mode: l.Mode, Value: l.Load, Detail: l.Detail}.String()
}

// BenchResults is the part of a bench directory's results.json compare
// uses (docs/command.md).
type BenchResults struct {
	Schema   string          `json:"schema"`
	Target   string          `json:"target"`
	Model    string          `json:"model"`
	Mode     string          `json:"mode"`
	SLO      llmmetrics.SLO  `json:"slo"`
	Workload json.RawMessage `json:"workload,omitempty"`
	// Saturation is the run's saturation verdict (absent in a run cut
	// short).
	Saturation *struct {
		Found bool    `json:"found"`
		Load  float64 `json:"load"`
	} `json:"saturation,omitempty"`
	Levels []struct {
		Load    float64            `json:"load"`
		Summary llmmetrics.Summary `json:"summary"`
		Server  *saturation.Server `json:"server,omitempty"`
	} `json:"levels"`
}

// ReadInput reads path: a bench output directory (its records.jsonl, and
// results.json when present) or a file of any format "llmmetrics report"
// reads. A records.jsonl is split into its load levels and repeats.
func ReadInput(ctx context.Context, path string, stdin io.Reader) (*Input, error) {
	in := &Input{Name: path}
	file := path
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		file = filepath.Join(path, "records.jsonl")
		if _, err := os.Stat(file); err != nil {
			return nil, fmt.Errorf("%s: not a bench output directory: %w", path, err)
		}
		res, err := readResults(filepath.Join(path, "results.json"))
		if err != nil {
			return nil, err
		}
		in.Results = res
	}
	rs, err := report.ReadRecords(ctx, []string{file}, "auto", stdin)
	if err != nil {
		return nil, err
	}
	in.Formats, in.Notes, in.Cannot, in.Defs = rs.Formats, rs.Notes, rs.Cannot, rs.Defs
	if len(rs.Records) == 0 {
		return nil, fmt.Errorf("%s: no requests", file)
	}
	if rs.Formats[0] != "records" || file == "-" {
		for _, l := range rs.Levels {
			in.Levels = append(in.Levels, Level{Mode: l.Load.Mode, Load: l.Load.Value, Detail: l.Load.Detail,
				noDuration: l.NoDuration, noStarts: l.NoStarts, sample: sample{recs: l.Records, duration: l.Duration}})
		}
		return in, nil
	}
	tags, err := readTags(file)
	if err != nil {
		return nil, err
	}
	if len(tags) != len(rs.Records) {
		return nil, fmt.Errorf("%s: %d level tags for %d records", file, len(tags), len(rs.Records))
	}
	in.Levels = splitLevels(rs.Records, tags)
	if err := readTasks(file, in); err != nil { // agents' tasks (tasks.go)
		return nil, err
	}
	return in, nil
}

func readResults(name string) (*BenchResults, error) {
	b, err := os.ReadFile(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil // records.jsonl alone: a run cut short
	}
	if err != nil {
		return nil, err
	}
	var r BenchResults
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if r.Schema != "llmmetrics.bench/v1" {
		return nil, fmt.Errorf("%s: schema %q, want llmmetrics.bench/v1", name, r.Schema)
	}
	return &r, nil
}

// tag is the level of one records.jsonl line.
type tag struct {
	Mode   string  `json:"mode"`
	Load   float64 `json:"load"`
	Repeat int     `json:"repeat"`
}

// readTags returns the level of every non-blank line of a records.jsonl
// (whose records report.ReadRecords has already read and checked).
func readTags(name string) ([]tag, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var tags []tag
	br := bufio.NewReaderSize(f, 256<<10)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if t := bytes.TrimSpace(line); len(t) > 0 {
			var tg tag
			if err := json.Unmarshal(t, &tg); err != nil {
				return nil, fmt.Errorf("%s:%d: %v", name, n, err)
			}
			tags = append(tags, tg)
		}
		if errors.Is(err, io.EOF) {
			return tags, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// splitLevels groups records by level (in order of first appearance) and,
// within a level, by repeat.
func splitLevels(recs []llmmetrics.Record, tags []tag) []Level {
	var ls []Level
	var reps []map[int][]llmmetrics.Record
	for i, r := range recs {
		t := tags[i]
		k := slices.IndexFunc(ls, func(l Level) bool { return l.Mode == t.Mode && l.Load == t.Load })
		if k < 0 {
			ls = append(ls, Level{Mode: t.Mode, Load: t.Load})
			reps = append(reps, map[int][]llmmetrics.Record{})
			k = len(ls) - 1
		}
		ls[k].recs = append(ls[k].recs, r)
		reps[k][t.Repeat] = append(reps[k][t.Repeat], r)
	}
	for k := range ls {
		if len(reps[k]) < 2 {
			continue
		}
		for _, rep := range slices.Sorted(maps.Keys(reps[k])) {
			ls[k].repeats = append(ls[k].repeats, reps[k][rep])
		}
	}
	return ls
}
