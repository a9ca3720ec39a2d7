package saturation

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestByTask checks that task goodput, not request attainment, decides
// MeetsSLO and the attainment signal with Options.ByTask: at load 2, 95 %
// of requests met the SLO but only 12 of 20 tasks (60 %) had every step
// meet it.
func TestByTask(t *testing.T) {
	levels := []Level{
		withAttainmentLevel(tputLevel(1, 1000), 1, 1000),
		withAttainmentLevel(tputLevel(2, 1900), 0.95, 1800),
	}
	levels[0].Tasks = &Tasks{Total: 10, Good: 10}
	levels[1].Tasks = &Tasks{Total: 20, Good: 12}
	for _, tc := range []struct {
		name      string
		byTask    bool
		meets     bool
		attainMsg string
	}{
		{"by request", false, true, ""},
		{"by task", true, false, "task SLO attainment 60.0% is below the 90.0% target"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Find(levels, Options{ByTask: tc.byTask, Skip: SignalKnee})
			require.NoError(t, err)
			require.Len(t, res.Levels, 2)
			assert.True(t, res.Levels[0].MeetsSLO)
			assert.Equal(t, tc.meets, res.Levels[1].MeetsSLO)
			var msg string
			for _, r := range res.Levels[1].Reasons {
				if r.Signal == SignalAttainment {
					msg = r.Message
					assert.InDelta(t, 0.6, r.Value, 1e-12)
				}
			}
			assert.Equal(t, tc.attainMsg, msg)
		})
	}
}

// TestByTaskPoolsEntries checks that entries of one load pool their task
// counts ((9 + 3) / (10 + 10) = 60 %), and that a level without tasks is
// judged by its requests.
func TestByTaskPoolsEntries(t *testing.T) {
	a := withAttainmentLevel(tputLevel(1, 1000), 1, 1000)
	b := a
	a.Tasks, b.Tasks = &Tasks{Total: 10, Good: 9}, &Tasks{Total: 10, Good: 3}
	noTasks := withAttainmentLevel(tputLevel(2, 1900), 0.5, 900)
	res, err := Find([]Level{a, b, noTasks}, Options{ByTask: true, Skip: SignalKnee})
	require.NoError(t, err)
	require.Len(t, res.Levels, 2)
	assert.False(t, res.Levels[0].MeetsSLO, "12 good of 20 tasks")
	require.NotEmpty(t, res.Notes)
	assert.Contains(t, res.Notes[0], "60.0% of tasks met it")
	assert.False(t, res.Levels[1].MeetsSLO, "no tasks: its requests' 50 % decides")
}
