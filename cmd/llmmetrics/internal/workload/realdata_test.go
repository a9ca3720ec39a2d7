package workload

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRealFiles reads third-party workload files from the directory named
// by LLMMETRICS_REALDATA (run by hand; the files are not in the repository):
// ShareGPT samples, AIPerf custom datasets and a Mooncake trace.
func TestRealFiles(t *testing.T) {
	dir := os.Getenv("LLMMETRICS_REALDATA")
	if dir == "" {
		t.Skip("LLMMETRICS_REALDATA not set")
	}
	for _, tc := range []struct{ file, format string }{
		{"sharegpt_sample.json", FormatShareGPT},
		{"sharegpt_human_only_500.json", FormatShareGPT},
		{"aiperf_single_turn.jsonl", FormatAIPerfSingle},
		{"aiperf_multi_turn.jsonl", FormatAIPerfMulti},
		{"mooncake_synthetic_300.jsonl", FormatMooncake},
	} {
		t.Run(tc.file, func(t *testing.T) {
			c := Config{Dataset: filepath.Join(dir, tc.file), Turns: 4}
			if tc.format == FormatMooncake {
				c = Config{Trace: c.Dataset}
			}
			w, err := Open(c)
			require.NoError(t, err)
			defer w.Close()
			info := w.Info()
			assert.Equal(t, tc.format, info.Format)
			t.Logf("%s: %d entries, %d skipped %v, span %v", tc.file, info.Entries, info.SkippedCount, info.Skipped, info.Span)
			reqs := drain(t, w, 50, fixedAnswer)
			assert.NotEmpty(t, reqs)
			for _, r := range reqs {
				assert.NotEmpty(t, r.Messages[len(r.Messages)-1].Content, r.Origin)
			}
		})
	}
}
