// Package present turns measured results into pages people read: the
// self-contained HTML report (report.html) of a run or of a comparison of
// two runs. It formats and draws; it never measures (the numbers come from
// the llmmetrics library, bench, report and compare).
package present

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"os"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/saturation"
)

// Page is what a report page shows. Every part is optional: a page of one
// run has no Verdict; a run read from a file has no Levels.
type Page struct {
	// Title heads the page.
	Title string
	// Command is the command line that produced the page.
	Command string
	// Verdict is the comparison's conclusion (nil for one run).
	Verdict *Verdict
	// Warnings and Notes are shown under the verdict.
	Warnings, Notes []string
	// Tables are the figures: a comparison's per level, or a run's summary.
	Tables []Table
	// Methods say how the intervals of the tables were computed.
	Methods []string
	// Runs are the runs shown in the charts: one, or BASE and NEW.
	Runs []Run
}

// Verdict is a comparison's conclusion: a headline, whether it is bad
// news (a regression), and its reasons.
type Verdict struct {
	Headline string
	Bad      bool
	Reasons  []string
}

// Table is a table of text cells; a row's Class ("regression",
// "improvement") colours it.
type Table struct {
	Caption string
	Header  []string
	Rows    []Row
}

// Row is one table row.
type Row struct {
	Cells []string
	Class string
}

// Run is one run's data for the charts.
type Run struct {
	// Name labels the run in legends ("BASE: out-a").
	Name string
	// TTFT and ITL are the samples of the CDF charts (every completed
	// request's TTFT; every gap).
	TTFT, ITL []time.Duration
	// Levels are the load levels of a bench run, in increasing load.
	Levels []Level
	// LoadUnit names the load ("concurrent requests", "requests/s").
	LoadUnit string
	// Workload describes what was sent, as name–value pairs.
	Workload [][2]string
}

// Level is one load level of a bench run.
type Level struct {
	Load float64
	// Summary is the level's Summary (its TTFT with percentile 99, for the
	// p99 chart).
	Summary llmmetrics.Summary
	// Server is what the model server reported (nil: nothing).
	Server *saturation.Server
	// TTFTByInput is TTFT by the input (context) a request carried (nil:
	// not known); Tasks what agents' tasks measured (nil: none).
	TTFTByInput []InputBucket
	Tasks       *Tasks
}

//go:embed page.tmpl
var pageTmpl string

var tmpl = template.Must(template.New("page").Parse(pageTmpl))

// Write writes p as one self-contained HTML page: inline CSS and SVG, no
// script, nothing loaded from the network.
func Write(w io.Writer, p Page) error {
	charts, err := drawCharts(p.Runs)
	if err != nil {
		return err
	}
	data := struct {
		Page
		Charts    []Chart
		Generated string
		Workloads []Run
	}{Page: p, Charts: charts}
	for _, r := range p.Runs {
		if len(r.Workload) > 0 {
			data.Workloads = append(data.Workloads, r)
		}
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, data); err != nil {
		return fmt.Errorf("report page: %w", err)
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// WriteFile writes p to the file name (see Write).
func WriteFile(name string, p Page) error {
	var buf bytes.Buffer
	if err := Write(&buf, p); err != nil {
		return err
	}
	return os.WriteFile(name, buf.Bytes(), 0o644)
}
