// Command paritydump prints, as JSON, what Summarize and the other float
// functions compute from every dataset of testdata/vllm_parity. CI builds
// it for amd64 and arm64 (run under qemu-user) and requires byte-identical
// output: Go may fuse a*b+c into one FMA instruction on arm64 (not on
// amd64), and every float expression whose rounding matters is written so
// that it cannot (an explicit float64(a*b) conversion).
//
//	go run ./internal/cmd/paritydump [dir]    # dir defaults to testdata/vllm_parity
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/internal/parity"
)

// dump is one dataset's figures. Besides the Summary (whose durations are
// rounded to the nanosecond), it holds unrounded float64 results that an
// FMA would change in the last bits.
type dump struct {
	Name    string             `json:"name"`
	Summary llmmetrics.Summary `json:"summary"`
	// TTFTms are the numpy-linear percentiles of TTFT in milliseconds
	// (fractional values, so the interpolation rounds).
	TTFTms map[string]float64 `json:"ttft_ms_percentiles"`
	// TPOTms is the mean of per-request TPOT in ms, weighted by N − 1.
	TPOTms float64 `json:"tpot_ms_token_weighted"`
	// Cost prices the run at $2.5 in, $1.25 cached (a tenth of the input),
	// $10 out per million.
	Cost float64 `json:"cost"`
}

func main() {
	dir := "testdata/vllm_parity"
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	if err := run(dir); err != nil {
		fmt.Fprintln(os.Stderr, "paritydump:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	paths, err := parity.Inputs(dir)
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		return fmt.Errorf("no *.input.json in %s", dir)
	}
	enc := json.NewEncoder(os.Stdout)
	for _, path := range paths {
		in, err := parity.Load(path)
		if err != nil {
			return err
		}
		recs := in.Records()
		d := dump{
			Name:    strings.TrimSuffix(filepath.Base(path), ".input.json"),
			Summary: llmmetrics.Summarize(recs, in.Options()),
			TTFTms:  map[string]float64{},
		}
		var ttft, tpot, weights []float64
		for _, r := range recs {
			if v, ok := r.TTFT(); ok {
				ttft = append(ttft, float64(v)/float64(time.Millisecond))
			}
			if !r.FirstToken.IsZero() && r.OutputTokens > 1 {
				decode := float64(r.LastToken.Sub(r.FirstToken)) / float64(time.Millisecond)
				tpot = append(tpot, decode/float64(r.OutputTokens-1))
				weights = append(weights, float64(r.OutputTokens-1))
			}
		}
		for _, p := range []float64{1, 33.3, 50, 90, 95, 99, 99.9} {
			if v, err := llmmetrics.Percentile(ttft, p); err == nil { // none without TTFTs
				d.TTFTms[fmt.Sprint(p)] = v
			}
		}
		if v, err := llmmetrics.WeightedMean(tpot, weights); err == nil { // none without TPOTs
			d.TPOTms = v
		}
		price := llmmetrics.Price{Input: 2.5, CachedInput: 1.25, Output: 10}
		if d.Cost, err = price.Cost(llmmetrics.Usage{InputTokens: d.Summary.InputTokens, CachedInputTokens: d.Summary.InputTokens / 10, OutputTokens: d.Summary.OutputTokens}); err != nil {
			return err
		}
		if err := enc.Encode(d); err != nil {
			return err
		}
	}
	return nil
}
