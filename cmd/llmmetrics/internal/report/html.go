package report

import (
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/cmd/llmmetrics/internal/present"
)

// pageSamples collects what the -html page draws beyond the Summary: every
// completed request's TTFT and every ITL gap (8 bytes each).
type pageSamples struct {
	ttft, itl []time.Duration
}

// keep returns the function that collects them as records are read (nil
// when no page is asked for).
func (p *pageSamples) keep(on bool) func(llmmetrics.Record) {
	if !on {
		return nil
	}
	return func(r llmmetrics.Record) {
		if r.Outcome != llmmetrics.OutcomeOK {
			return
		}
		if d, ok := r.TTFT(); ok {
			p.ttft = append(p.ttft, d)
		}
		p.itl = append(p.itl, r.ITL...)
	}
}

// write writes the run's page to name.
func (p *pageSamples) write(name string, args []string, r *run, s llmmetrics.Summary) error {
	var notes []string
	for _, f := range r.files {
		notes = append(notes, f.name+": "+f.format.name+", TTFT: "+f.format.ttft)
	}
	notes = append(notes, r.notes...)
	title := "llmmetrics report"
	if len(r.files) > 0 {
		title += ": " + r.files[0].name
	}
	return present.WriteFile(name, present.RunPage(title, present.CommandLine(append([]string{"llmmetrics", "report"}, args...)), s, p.ttft, p.itl, notes))
}
