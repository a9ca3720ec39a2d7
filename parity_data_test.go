package llmmetrics_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/llmmetrics/llmmetrics"
)

// The vLLM parity datasets of testdata/vllm_parity (written by
// scripts/vllm_reference.py), read into Records for TestSummarizeVLLMParity
// and TestParityDumpGolden.

// parityInput is one dataset of testdata/vllm_parity (see
// scripts/vllm_reference.py for the format).
type parityInput struct {
	Name        string             `json:"name"`
	DurationNS  int64              `json:"duration_ns"`
	Percentiles []float64          `json:"percentiles"`
	SLOms       map[string]float64 `json:"slo_ms"`
	Requests    []struct {
		Success      bool    `json:"success"`
		StartNS      int64   `json:"start_ns"`
		TTFTNS       int64   `json:"ttft_ns"`
		ITLNS        []int64 `json:"itl_ns"`
		PromptLen    int     `json:"prompt_len"`
		OutputTokens int     `json:"output_tokens"`
	} `json:"requests"`
}

// parityInputs returns the paths of the datasets in dir (testdata/vllm_parity),
// sorted by name.
func parityInputs(dir string) ([]string, error) {
	return filepath.Glob(filepath.Join(dir, "*.input.json"))
}

// parityGoldenPath returns the path of the golden file of the dataset at path.
func parityGoldenPath(path string) string {
	return strings.TrimSuffix(path, ".input.json") + ".golden.json"
}

// loadParity reads the dataset at path.
func loadParity(path string) (parityInput, error) {
	var in parityInput
	b, err := os.ReadFile(path)
	if err != nil {
		return in, err
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return in, fmt.Errorf("%s: %w", path, err)
	}
	return in, nil
}

// Records turns the dataset into Records the way a Tracker would have
// recorded the same stream: FirstToken = Start + ttft, one chunk per ITL
// gap, LastToken = FirstToken + Σ gaps. A failed request ends with an error
// after a while and no token.
func (in parityInput) Records() []llmmetrics.Record {
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	out := make([]llmmetrics.Record, len(in.Requests))
	for i, r := range in.Requests {
		start := base.Add(time.Duration(r.StartNS))
		if !r.Success {
			out[i] = llmmetrics.Record{Start: start, End: start.Add(7 * time.Millisecond), InputTokens: r.PromptLen, Outcome: llmmetrics.OutcomeError}
			continue
		}
		first := start.Add(time.Duration(r.TTFTNS))
		last := first
		itl := make([]time.Duration, len(r.ITLNS))
		for j, g := range r.ITLNS {
			itl[j] = time.Duration(g)
			last = last.Add(itl[j])
		}
		out[i] = llmmetrics.Record{
			Start: start, FirstToken: first, LastToken: last, End: last.Add(time.Millisecond),
			InputTokens: r.PromptLen, OutputTokens: r.OutputTokens,
			Chunks: len(itl) + 1, ITL: itl, Outcome: llmmetrics.OutcomeOK,
		}
	}
	return out
}

// SLO returns the dataset's SLO (TTFT, TPOT and E2EL limits in ms, rounded
// to the nanosecond).
func (in parityInput) SLO() llmmetrics.SLO {
	ms := func(k string) time.Duration { return time.Duration(math.Round(in.SLOms[k] * 1e6)) }
	return llmmetrics.SLO{TTFT: ms("ttft"), TPOT: ms("tpot"), E2EL: ms("e2el")}
}

// Options returns the SummaryOptions vLLM's figures were computed with.
func (in parityInput) Options() llmmetrics.SummaryOptions {
	return llmmetrics.SummaryOptions{Duration: time.Duration(in.DurationNS), Percentiles: in.Percentiles, SLO: in.SLO()}
}
