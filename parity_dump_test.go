package llmmetrics_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmmetrics/llmmetrics"
)

var updateParity = flag.Bool("update-parity", false, "rewrite testdata/vllm_parity.dump.jsonl")

// TestParityDumpGolden computes, for every dataset of testdata/vllm_parity,
// Summarize and the other float functions' results, unrounded, and
// requires them byte for byte as testdata/vllm_parity.dump.jsonl holds
// them. The test runs on amd64 and, in CI, on arm64 under qemu-user: Go
// may fuse a*b+c into one FMA instruction on arm64 (not on amd64), and every
// float expression whose rounding matters is written so that it cannot (an
// explicit float64(a*b) conversion), so both architectures must give the
// same bits. After a deliberate change of a figure:
//
//	go test -run TestParityDumpGolden -update-parity .
func TestParityDumpGolden(t *testing.T) {
	got := parityDump(t, "testdata/vllm_parity")
	const golden = "testdata/vllm_parity.dump.jsonl"
	if *updateParity {
		require.NoError(t, os.WriteFile(golden, got, 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	if !bytes.Equal(want, got) {
		wl, gl := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
		for i := range min(len(wl), len(gl)) {
			assert.Equal(t, wl[i], gl[i], "dataset line %d", i+1)
		}
		assert.Equal(t, len(wl), len(gl), "datasets")
	}
}

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

// parityDump returns one JSON line per dataset of dir.
func parityDump(t *testing.T, dir string) []byte {
	t.Helper()
	paths, err := parityInputs(dir)
	require.NoError(t, err)
	require.NotEmpty(t, paths, "no *.input.json in %s", dir)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, path := range paths {
		in, err := loadParity(path)
		require.NoError(t, err)
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
		d.Cost, err = price.Cost(llmmetrics.Usage{InputTokens: d.Summary.InputTokens, CachedInputTokens: d.Summary.InputTokens / 10, OutputTokens: d.Summary.OutputTokens})
		require.NoError(t, err)
		require.NoError(t, enc.Encode(d))
	}
	return buf.Bytes()
}
