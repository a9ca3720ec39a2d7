package saturation

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// withFailures sets a level's request counts: requests, of which failed
// did not complete.
func withFailures(l Level, requests, failed int, attainment float64) Level {
	l.Summary.Requests = requests
	l.Summary.Completed = requests - failed
	l.Summary.Failed = failed
	l.Summary.Goodput.Attainment = attainment
	return l
}

// TestFindSLOUnmetAtLowestLoad: attainment below target from the lowest
// load on is a finding about the SLO, never the saturation point; the
// knee still decides it where throughput stops growing.
func TestFindSLOUnmetAtLowestLoad(t *testing.T) {
	tests := []struct {
		name      string
		levels    []Level
		wantFound bool
		wantLoad  float64
	}{
		{
			name: "linear scaling: no saturation point at all",
			levels: []Level{
				withAttainmentLevel(tputLevel(1, 100), 0.775, 50),
				withAttainmentLevel(tputLevel(2, 200), 0.62, 90),
				withAttainmentLevel(tputLevel(4, 400), 0.57, 150),
			},
		},
		{
			name: "the knee decides, at 8 (4 → 8 gains 10 % of linear scaling)",
			levels: []Level{
				withAttainmentLevel(tputLevel(1, 100), 0.5, 50),
				withAttainmentLevel(tputLevel(2, 200), 0.5, 90),
				withAttainmentLevel(tputLevel(4, 400), 0.5, 150),
				withAttainmentLevel(tputLevel(8, 440), 0.5, 150),
			},
			wantFound: true, wantLoad: 8,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Find(tt.levels, Options{})
			require.NoError(t, err)
			assert.True(t, res.SLOUnmetAtLowestLoad)
			assert.Equal(t, tt.wantFound, res.Found)
			assert.Equal(t, tt.wantLoad, res.Load)
			for _, r := range res.Reasons {
				assert.NotEqual(t, SignalAttainment, r.Signal, "attainment explains, never decides: %s", r.Message)
			}
			require.Len(t, res.Notes, 1)
			assert.Contains(t, res.Notes[0], "the SLO is not met even at the lowest load (1): ")
			assert.Equal(t, SignalAttainment, firedSignals(res.Levels[0].Reasons)&SignalAttainment, "the level still reports its attainment")
			assert.False(t, res.Levels[0].MeetsSLO)
		})
	}
}

// TestFindAttainmentStillDecidesWhenLowestMeets: the SLO met at the lowest
// load and missed higher up is a saturation point.
func TestFindAttainmentStillDecidesWhenLowestMeets(t *testing.T) {
	res, err := Find([]Level{
		withAttainmentLevel(tputLevel(1, 100), 0.99, 100),
		withAttainmentLevel(tputLevel(2, 200), 0.95, 190),
		withAttainmentLevel(tputLevel(4, 400), 0.6, 240),
	}, Options{})
	require.NoError(t, err)
	assert.False(t, res.SLOUnmetAtLowestLoad)
	assert.Empty(t, res.Notes)
	require.True(t, res.Found)
	assert.Equal(t, 4.0, res.Load)
	assert.Equal(t, SignalAttainment, res.Reasons[0].Signal)
}

// TestFindTrust: a level where more than 5 % of requests failed is
// untrusted, and a verdict drawn from it says so.
func TestFindTrust(t *testing.T) {
	tests := []struct {
		name          string
		failedAt4     int // of 100 requests at load 4 (the knee)
		opts          Options
		wantUntrusted bool
		wantRate      float64
	}{
		{"10 % transport failures", 10, Options{}, true, 0.10},
		{"5 % is the limit, not past it", 5, Options{}, false, 0.05},
		{"none", 0, Options{}, false, 0},
		{"a stricter limit", 3, Options{MaxFailureRate: 0.02}, true, 0.03},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			levels := []Level{
				withFailures(tputLevel(1, 100), 100, 0, 1),
				withFailures(tputLevel(2, 200), 100, 0, 1),
				withFailures(tputLevel(4, 210), 100, tt.failedAt4, 1), // 2 → 4 gains 5 % of linear: the knee
			}
			res, err := Find(levels, tt.opts)
			require.NoError(t, err)
			require.True(t, res.Found)
			assert.Equal(t, 4.0, res.Load)
			assert.InDelta(t, tt.wantRate, res.Levels[2].FailureRate, 1e-12)
			assert.Equal(t, tt.wantUntrusted, res.Levels[2].Untrusted)
			assert.False(t, res.Levels[1].Untrusted)
			assert.Equal(t, tt.wantUntrusted, res.Untrusted)
			if tt.wantUntrusted {
				require.Len(t, res.Notes, 1)
				assert.Contains(t, res.Notes[0], "drawn from load 4, where")
			} else {
				assert.Empty(t, res.Notes)
			}
		})
	}
}

// TestFindTrustOfTheComparedLevel: a knee at a trusted load compared with an
// untrusted lower one is untrusted too.
func TestFindTrustOfTheComparedLevel(t *testing.T) {
	res, err := Find([]Level{
		withFailures(tputLevel(1, 100), 100, 0, 1),
		withFailures(tputLevel(2, 300), 100, 20, 1),
		withFailures(tputLevel(4, 310), 100, 0, 1),
	}, Options{})
	require.NoError(t, err)
	require.True(t, res.Found)
	assert.Equal(t, 4.0, res.Load)
	assert.True(t, res.Untrusted)
	require.Len(t, res.Notes, 1)
	assert.Contains(t, res.Notes[0], "load 2, where 20.0% of requests failed")
}

// TestFindQueueBeforeEngine reproduces llama.cpp's HTTP-thread queue: 16
// requests in flight, the engine runs 3 and queues 0.5.
func TestFindQueueBeforeEngine(t *testing.T) {
	tests := []struct {
		name             string
		inFlight         float64
		running, waiting *float64
		wantFired        bool
		wantMsg          string
		wantValue        float64
	}{
		{"16 in flight, 3 running", 16, f64(3), f64(0.5), true,
			"16 in flight, the engine runs 3 and queues 0.5: about 12 wait in front of it — HTTP threads, a proxy or a connection limit", 12.5},
		{"waiting not reported", 8, f64(4), nil, true,
			"8 in flight, the engine runs 4 and queues 0: about 4 wait in front of it — HTTP threads, a proxy or a connection limit", 4},
		{"the engine sees them all", 16, f64(4), f64(12), false, "", 0},
		{"a gap under a quarter of in flight is the scrape's timing", 16, f64(10), f64(3), false, "", 0},
		{"a gap under one request", 2, f64(1.2), f64(0), false, "", 0},
		{"running not reported", 16, nil, f64(1), false, "", 0},
		{"in flight unknown", 0, f64(3), f64(0), false, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := tputLevel(16, 100)
			l.InFlight = tt.inFlight
			l.Server = &Server{RequestsRunning: tt.running, RequestsWaiting: tt.waiting}
			res, err := Find([]Level{l}, Options{})
			require.NoError(t, err)
			var got *Reason
			for _, r := range res.Levels[0].Reasons {
				if r.Signal == SignalQueueBeforeEngine {
					got = &r
				}
			}
			if !tt.wantFired {
				assert.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			assert.Equal(t, tt.wantMsg, got.Message)
			assert.InDelta(t, tt.wantValue, got.Value, 1e-12)
		})
	}
	t.Run("explains the saturation point, never decides it", func(t *testing.T) {
		low, high := tputLevel(4, 400), tputLevel(16, 480)
		low.InFlight, high.InFlight = 4, 16
		low.Server = &Server{RequestsRunning: f64(3.9), RequestsWaiting: f64(0)}
		high.Server = &Server{RequestsRunning: f64(3), RequestsWaiting: f64(0.5)}
		res, err := Find([]Level{low, high}, Options{})
		require.NoError(t, err)
		require.True(t, res.Found)
		assert.Equal(t, 16.0, res.Load)
		assert.Equal(t, SignalKnee, res.Reasons[0].Signal)
		assert.Equal(t, SignalQueueBeforeEngine, firedSignals(res.Reasons)&SignalQueueBeforeEngine)
		assert.Zero(t, firedSignals(res.Levels[0].Reasons)&SignalQueueBeforeEngine, "3.9 of 4 are seen by the engine")

		only, err := Find([]Level{high}, Options{})
		require.NoError(t, err)
		assert.False(t, only.Found, "a server-side signal alone decides nothing")
	})
}
