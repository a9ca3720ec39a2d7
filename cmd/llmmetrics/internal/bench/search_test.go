package bench

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSearch drives the search with a fake measure: loads up to limit pass,
// loads from pastAt on are past saturation.
func TestSearch(t *testing.T) {
	tests := []struct {
		name      string
		cfg       searchConfig
		limit     float64 // highest passing load
		pastAt    float64 // 0: never past saturation
		want      float64
		wantFound bool
		wantTried []float64
	}{
		{
			name: "doubling then integer bisection", cfg: searchConfig{Start: 1, Integer: true, Precision: 0.01, Max: 256},
			limit: 23, want: 23, wantFound: true,
			wantTried: []float64{1, 2, 4, 8, 16, 32, 24, 20, 22, 23},
		},
		{
			name: "bisection stops at the stated precision", cfg: searchConfig{Start: 1, Integer: true, Precision: 0.1, Max: 256},
			limit: 23, want: 22, wantFound: true, // 22..24 is within 10 % of 22
			wantTried: []float64{1, 2, 4, 8, 16, 32, 24, 20, 22},
		},
		{
			name: "rates bisect on reals", cfg: searchConfig{Start: 1, Precision: 0.05, Max: 1000},
			limit: 5, want: 5, wantFound: true, // 5..5.25 is within 5 % of 5
			wantTried: []float64{1, 2, 4, 8, 6, 5, 5.5, 5.25},
		},
		{
			name: "a passing level past saturation stops the doubling", cfg: searchConfig{Start: 1, Integer: true, Precision: 0.1, Max: 256},
			limit: 1000, pastAt: 16, want: 16, wantFound: true,
			wantTried: []float64{1, 2, 4, 8, 16},
		},
		{
			name: "the cap stops the doubling", cfg: searchConfig{Start: 1, Integer: true, Precision: 0.1, Max: 8},
			limit: 1000, want: 8, wantFound: true,
			wantTried: []float64{1, 2, 4, 8},
		},
		{
			name: "start fails: halve until one passes", cfg: searchConfig{Start: 16, Integer: true, Precision: 0.1, Max: 256},
			limit: 5, want: 5, wantFound: true,
			wantTried: []float64{16, 8, 4, 6, 5},
		},
		{
			name: "nothing passes", cfg: searchConfig{Start: 4, Integer: true, Precision: 0.1, Max: 256},
			limit: 0, want: 0, wantFound: false,
			wantTried: []float64{4, 2, 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tried []float64
			got, found, err := search(context.Background(), tt.cfg, func(_ context.Context, load float64) (bool, bool, error) {
				tried = append(tried, load)
				return load <= tt.limit, tt.pastAt > 0 && load >= tt.pastAt, nil
			})
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.wantFound, found)
			assert.Equal(t, tt.wantTried, tried)
			seen := map[float64]bool{}
			for _, l := range tried {
				assert.False(t, seen[l], "load %g measured twice", l)
				seen[l] = true
			}
		})
	}
}

func TestSearchErrorKeepsBest(t *testing.T) {
	stop := errors.New("stop")
	got, found, err := search(context.Background(), searchConfig{Start: 1, Integer: true, Precision: 0.1, Max: 256},
		func(_ context.Context, load float64) (bool, bool, error) {
			if load == 8 {
				return false, false, stop
			}
			return true, false, nil
		})
	assert.ErrorIs(t, err, stop)
	assert.True(t, found)
	assert.Equal(t, 4.0, got)
}

// TestSearchEndToEnd runs -search against the fake server: the result is
// a measured level that meets the SLO, the next tried load above it fails,
// and results.json has max_load_under_slo.
func TestSearchEndToEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{
			"-search", "-slo", "ttft=100ms", "-objective", "p99 ttft<=150ms", "-repeats", "1",
			"-speedup", "1", "-max-tokens", "32", "-prompt-words", "20", "-out", dir,
		}, testEnv(&stdout, &stderr, nil))
		require.Equal(t, 0, code, "stderr: %s", stderr.String())
		res := readResults(t, dir)
		require.NotNil(t, res.MaxLoadUnderSLO)
		best := *res.MaxLoadUnderSLO
		t.Logf("max load under SLO: %g\n%s", best, stdout.String())
		assert.Greater(t, best, 1.0)
		var bestLevel *Level
		lowestFail := 0.0
		for _, l := range res.Levels {
			if l.Load == best {
				bestLevel = l
			}
			if !l.MeetsSLO && l.Load > best && (lowestFail == 0 || l.Load < lowestFail) {
				lowestFail = l.Load
			}
			if l.Load < best {
				assert.True(t, l.MeetsSLO, "load %g below the answer passes", l.Load)
			}
		}
		require.NotNil(t, bestLevel, "the answer is a measured level")
		assert.True(t, bestLevel.MeetsSLO)
		require.NotZero(t, lowestFail, "a failing level bounds the answer")
		assert.LessOrEqual(t, lowestFail-best, max(1, 0.1*best), "bisected to the stated precision")
		assert.Contains(t, stdout.String(), "(search):")
	})
}
