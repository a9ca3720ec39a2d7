package report

import (
	"github.com/llmmetrics/llmmetrics/cmd/llmmetrics/internal/present"
)

// writePage writes the run's page to name: per level, its tables and its
// CDFs of TTFT and ITL (every completed request's TTFT and every gap,
// kept as the records were read: 8 bytes each).
func writePage(name string, args []string, r *run, ls []shownLevel) error {
	var notes []string
	for _, f := range r.files {
		notes = append(notes, f.name+": "+f.format.name+", TTFT: "+f.format.ttft)
	}
	notes = append(notes, r.notes...)
	title := "llmmetrics report"
	if len(r.files) > 0 {
		title += ": " + r.files[0].name
	}
	levels := make([]present.RunLevel, len(ls))
	for i, l := range ls {
		u := l.lv.unknown()
		levels[i] = present.RunLevel{
			Label: l.lv.load.String(), Summary: l.sum, TTFT: l.lv.ttft, ITL: l.lv.itl,
			Unknown: present.Unknown{Input: u.input, Cached: u.cached, Concurrency: u.concurrency, Duration: u.duration},
		}
	}
	return present.WriteFile(name, present.RunPage(title, present.CommandLine(append([]string{"llmmetrics", "report"}, args...)), levels, notes))
}
