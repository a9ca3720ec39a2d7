package llmmetrics_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmmetrics/llmmetrics"
)

// parityGolden is what scripts/vllm_reference.py computed with numpy,
// following vLLM's calculate_metrics.
type parityGolden struct {
	Metrics map[string]json.RawMessage `json:"metrics"`
}

func (g parityGolden) num(t *testing.T, key string) float64 {
	t.Helper()
	raw, ok := g.Metrics[key]
	require.True(t, ok, "golden has no %s", key)
	var v float64
	require.NoError(t, json.Unmarshal(raw, &v))
	return v
}

func (g parityGolden) pcts(t *testing.T, key string) [][2]float64 {
	t.Helper()
	var v [][2]float64
	require.NoError(t, json.Unmarshal(g.Metrics[key], &v))
	return v
}

// assertNS checks that got is vLLM's value (in ms) to the nanosecond: got
// is the nearest nanosecond of the reference, allowing for the float noise
// of numpy working in seconds.
func assertNS(t *testing.T, wantMS float64, got time.Duration, what string) {
	t.Helper()
	want := wantMS * 1e6
	assert.InDelta(t, want, float64(got), 0.5+1e-6, "%s: want %.4f ns, got %d ns", what, want, got)
}

// TestSummarizeVLLMParity checks Summarize against the committed goldens
// that scripts/vllm_reference.py computed with numpy using vLLM's rules.
func TestSummarizeVLLMParity(t *testing.T) {
	inputs, err := parityInputs("testdata/vllm_parity")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(inputs), 9)
	for _, path := range inputs {
		name := strings.TrimSuffix(filepath.Base(path), ".input.json")
		t.Run(name, func(t *testing.T) {
			in, err := loadParity(path)
			require.NoError(t, err)
			var g parityGolden
			b, err := os.ReadFile(parityGoldenPath(path))
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(b, &g))

			s := llmmetrics.Summarize(in.Records(), in.Options())

			assert.Equal(t, int(g.num(t, "completed")), s.Completed, "completed")
			assert.Equal(t, int(g.num(t, "failed")), s.Failed, "failed")
			assert.Equal(t, int(g.num(t, "total_input_tokens")), s.InputTokens, "input tokens")
			assert.Equal(t, int(g.num(t, "total_output_tokens")), s.OutputTokens, "output tokens")
			assert.InEpsilon(t, g.num(t, "request_throughput")+1e-300, s.RequestThroughput+1e-300, 1e-12, "request throughput")
			assert.InEpsilon(t, g.num(t, "output_throughput")+1e-300, s.OutputThroughput+1e-300, 1e-12, "output throughput")
			assert.InEpsilon(t, g.num(t, "total_token_throughput")+1e-300, s.TotalTokenThroughput+1e-300, 1e-12, "total throughput")
			if len(in.SLOms) > 0 { // vLLM reports goodput only with an SLO
				assert.InEpsilon(t, g.num(t, "request_goodput")+1e-300, s.Goodput.RequestsPerSecond+1e-300, 1e-12, "request goodput")
			}

			for _, m := range []llmmetrics.Latency{llmmetrics.LatencyTTFT, llmmetrics.LatencyTPOT, llmmetrics.LatencyITL, llmmetrics.LatencyE2EL} {
				d := s.Distribution(m)
				n := int(g.num(t, "n_"+m.String()))
				require.Equal(t, n, d.Count, "%s count", m)
				if n == 0 {
					// Deliberate difference: vLLM reports zeros, we report empty.
					assert.Empty(t, d.Percentiles, "%s percentiles", m)
					continue
				}
				assertNS(t, g.num(t, "mean_"+m.String()+"_ms"), d.Mean, m.String()+" mean")
				assertNS(t, g.num(t, "median_"+m.String()+"_ms"), d.Median, m.String()+" median")
				assertNS(t, g.num(t, "std_"+m.String()+"_ms"), d.Std, m.String()+" std")
				for _, pv := range g.pcts(t, "percentiles_"+m.String()+"_ms") {
					got, ok := d.Percentile(pv[0])
					require.True(t, ok, "%s p%v missing", m, pv[0])
					b, _ := json.Marshal(pv[0])
					assertNS(t, pv[1], got, m.String()+" p"+string(b))
				}
			}
		})
	}
}
