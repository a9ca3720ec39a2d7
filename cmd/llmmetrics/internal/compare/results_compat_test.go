package compare

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadResultsOlderSummary reads a results.json written by an earlier
// version, whose Summary also held tpot_request_weighted_ns (the same
// figure as tpot.mean_ns): the file is read and the key ignored.
func TestReadResultsOlderSummary(t *testing.T) {
	name := filepath.Join(t.TempDir(), "results.json")
	const old = `{"schema": "llmmetrics.bench/v1", "mode": "concurrency",
		"levels": [{"load": 4, "summary": {"requests": 3, "completed": 3,
			"tpot": {"count": 3, "mean_ns": 20000000},
			"tpot_request_weighted_ns": 20000000, "tpot_token_weighted_ns": 19000000}}]}`
	require.NoError(t, os.WriteFile(name, []byte(old), 0o644))
	r, err := readResults(name)
	require.NoError(t, err)
	require.Len(t, r.Levels, 1)
	s := r.Levels[0].Summary
	assert.Equal(t, 3, s.Completed)
	assert.Equal(t, 20*time.Millisecond, s.TPOT.Mean)
	assert.Equal(t, 19*time.Millisecond, s.TokenWeightedTPOT)
}
