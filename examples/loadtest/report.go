package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/llmmetrics/llmmetrics"
)

// Results is the content of results.json (schema "llmmetrics.loadtest/v1").
//
//	{
//	  "schema": "llmmetrics.loadtest/v1",
//	  "target": "fake server" or the -url,
//	  "model": "...",
//	  "mode": "concurrency" | "rate",   // what each level's load is
//	  "slo": {"ttft_ns": ..., "tpot_ns": ..., "itl_ns": ..., "e2el_ns": ...},
//	  "attainment_target": 0.9,           // share of requests that must meet the SLO
//	  "levels": [{"load": 1, "summary": {...llmmetrics.Summary...}}, ...],
//	  "saturation": {...llmmetrics.Saturation...},
//	  "cost": {"hourly_cost": 3, "per_million_output_tokens": ..., "per_million_good_tokens": ...}  // with -hourly-cost
//	}
//
// Summary, Distribution and Saturation are llmmetrics' own JSON forms:
// durations are integer nanoseconds in fields ending in _ns, throughputs
// are per second.
type Results struct {
	Schema string         `json:"schema"`
	Target string         `json:"target"`
	Model  string         `json:"model"`
	Mode   Mode           `json:"mode"`
	SLO    llmmetrics.SLO `json:"slo"`
	// AttainmentTarget is the share of requests that must meet the SLO for
	// a level to count as meeting it.
	AttainmentTarget float64                `json:"attainment_target"`
	Levels           []llmmetrics.LoadLevel `json:"levels"`
	Saturation       llmmetrics.Saturation  `json:"saturation"`
	Cost             *Cost                  `json:"cost,omitempty"`
}

// Cost is the cost section of results.json, at the best-goodput level.
type Cost struct {
	HourlyCost             float64  `json:"hourly_cost"`
	Load                   float64  `json:"load"`
	PerMillionOutputTokens float64  `json:"per_million_output_tokens"`
	PerMillionGoodTokens   *float64 `json:"per_million_good_tokens,omitempty"`
}

// costAt prices the level with the best goodput (where a service would
// run), or nil without an hourly cost.
func costAt(hourly float64, levels []llmmetrics.LoadLevel, sat llmmetrics.Saturation) *Cost {
	if hourly <= 0 || len(levels) == 0 || sat.BestGoodputLevel < 0 {
		return nil
	}
	l := levels[sat.BestGoodputLevel]
	perM, err := llmmetrics.CostPerMillionTokens(hourly, l.Summary.OutputThroughput)
	if err != nil {
		return nil
	}
	c := &Cost{HourlyCost: hourly, Load: l.Load, PerMillionOutputTokens: perM}
	if good, err := llmmetrics.CostPerMillionTokens(hourly, l.Summary.Goodput.TokensPerSecond); err == nil {
		c.PerMillionGoodTokens = &good
	}
	return c
}

func ms(d time.Duration, ok bool) string {
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond))
}

// writeTable prints one row per level, then the findings.
func writeTable(w io.Writer, r Results) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "load\tRPS\tin tok/s\tout tok/s\tTTFT p50\tTTFT p99\tTPOT p50\tTPOT p99\tITL p99\tE2EL p99\tgood req/s\tgood tok/s\tattain\tfailed\t")
	fmt.Fprintln(tw, "\t\t\t\tms\tms\tms\tms\tms\tms\t\t\t\t\t")
	for _, l := range r.Levels {
		s := l.Summary
		fmt.Fprintf(tw, "%g\t%.2f\t%.0f\t%.0f\t%s\t%s\t%s\t%s\t%s\t%s\t%.2f\t%.0f\t%.0f%%\t%d\t\n",
			l.Load, s.RequestThroughput, float64(s.InputTokens)/s.Duration.Seconds(), s.OutputThroughput,
			ms(s.TTFT.Percentile(50)), ms(s.TTFT.Percentile(99)), ms(s.TPOT.Percentile(50)), ms(s.TPOT.Percentile(99)),
			ms(s.ITL.Percentile(99)), ms(s.E2EL.Percentile(99)),
			s.Goodput.RequestsPerSecond, s.Goodput.TokensPerSecond, 100*s.Goodput.Attainment, s.Failed+s.Canceled)
	}
	tw.Flush()
	fmt.Fprintln(w)
	writeFindings(w, r)
}

func writeFindings(w io.Writer, r Results) {
	sat := r.Saturation
	unit := map[Mode]string{ModeConcurrency: "concurrent requests", ModeRate: "requests/s"}[r.Mode]
	if sat.Found {
		fmt.Fprintf(w, "Saturation point: %g %s (level %d). Why:\n", sat.Load, unit, sat.Level+1)
		for _, reason := range sat.Reasons {
			fmt.Fprintf(w, "  - %s\n", reason.Message)
		}
	} else {
		fmt.Fprintln(w, "No saturation point found in these levels: add higher loads.")
	}
	if sat.BestGoodputLevel >= 0 && sat.BestGoodputLevel < len(r.Levels) {
		best := r.Levels[sat.BestGoodputLevel]
		fmt.Fprintf(w, "Best goodput: %.0f good output tok/s (%.2f good req/s) at %g %s.\n",
			best.Summary.Goodput.TokensPerSecond, best.Summary.Goodput.RequestsPerSecond, best.Load, unit)
	}
	if sat.MaxGoodLevel >= 0 {
		fmt.Fprintf(w, "Highest load meeting the SLO (%v, ≥ %.0f%% of requests): %g %s.\n",
			r.SLO, 100*r.AttainmentTarget, sat.MaxGoodLoad, unit)
	} else {
		fmt.Fprintf(w, "No level meets the SLO (%v).\n", r.SLO)
	}
	if c := r.Cost; c != nil {
		fmt.Fprintf(w, "Cost at %g %s and $%.2f/h: $%.3f per million output tokens", c.Load, unit, c.HourlyCost, c.PerMillionOutputTokens)
		if c.PerMillionGoodTokens != nil {
			fmt.Fprintf(w, ", $%.3f per million good tokens", *c.PerMillionGoodTokens)
		}
		fmt.Fprintln(w, ".")
	}
}

// writeFiles writes results.json and saturation.svg into dir.
func writeFiles(dir string, r Results) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	return writeChart(filepath.Join(dir, "saturation.svg"), r)
}
