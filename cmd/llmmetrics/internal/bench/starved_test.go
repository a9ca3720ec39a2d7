package bench

import (
	"bytes"
	"context"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmmetrics/llmmetrics/llmmetricstest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// latePacer wakes lag after each arrival's time: a client that its core
// serves late, by exactly lag.
type latePacer struct{ lag time.Duration }

func (p latePacer) waitUntil(at time.Time) { time.Sleep(time.Until(at.Add(p.lag))) }
func (latePacer) close()                   {}

// TestStarvedClientWarnsExactly: in a bubble, open-loop arrivals that
// leave a fixed lag after their time are reported with exactly that send
// lag, and the run warns once the lag is above the mean gap between
// arrivals (100 requests/s: 10 ms), in results.json (the level and the run)
// and under the table.
func TestStarvedClientWarnsExactly(t *testing.T) {
	for _, tc := range []struct {
		name string
		lag  time.Duration
		warn bool
	}{
		{"on time", 0, false},
		{"late, within the gap", 10 * time.Millisecond, false},
		{"late, over the gap", 10*time.Millisecond + time.Microsecond, true},
		{"starved", 20 * time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				dir := t.TempDir()
				var stdout, stderr bytes.Buffer
				e := testEnv(&stdout, &stderr, nil)
				e.newPacer = func() pacer { return latePacer{tc.lag} }
				code := run(context.Background(), []string{
					"-rates", "100", "-requests", "20", "-repeats", "1", "-warmup", "0", "-speedup", "20", "-max-tokens", "8", "-out", dir,
				}, e)
				require.Equal(t, 0, code, "stderr: %s", stderr.String())
				for i, l := range readRecords(t, dir) {
					assert.Equal(t, tc.lag, l.Record.Start.Sub(l.Scheduled), "line %d", i+1)
				}
				res := readResults(t, dir)
				require.NotNil(t, res.ClientTiming)
				require.Len(t, res.Levels, 1)
				require.NotNil(t, res.Levels[0].ClientTiming)
				lvl := res.Levels[0].ClientTiming
				assert.Equal(t, tc.lag, lvl.SendLagP50)
				assert.Equal(t, tc.lag, lvl.SendLagP99)
				if !tc.warn {
					assert.Empty(t, lvl.Warning)
					assert.Empty(t, res.ClientTiming.Warning)
					assert.NotContains(t, stdout.String(), "Warning: the client limited")
					return
				}
				assert.Contains(t, lvl.Warning, "send lag p99 "+dur(tc.lag)+" is above the mean inter-arrival time (10.0 ms)")
				assert.Contains(t, res.ClientTiming.Warning, "the client limited the figures at rate 100")
				assert.Contains(t, stdout.String(), "Warning: the client limited the figures")
			})
		})
	}
}

// TestStarvedClientWarns: a real run, on one processor shared with a
// goroutine that never yields (the runtime preempts it every ~10 ms), at
// 200 requests/s against the fake server on loopback. An arrival due
// while the spinner holds the processor leaves when it is preempted, on
// average ~5 ms late (the send lag p50 comes out at 10–20 ms, as the
// fake server's goroutines wait for the processor too); the warning needs
// p99 above 250 µs (5 % of the 5 ms mean gap), a margin of twenty or more.
// A busier machine only makes the client later.
func TestStarvedClientWarns(t *testing.T) {
	if testing.Short() {
		t.Skip("a real run of about a second")
	}
	prev := runtime.GOMAXPROCS(1)
	t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
	done := make(chan struct{})
	spun := make(chan struct{})
	go func() {
		defer close(spun)
		for x := 0; ; x++ {
			select {
			case <-done:
				return
			default:
			}
			for range 1 << 20 { // spin without a call the scheduler could stop at
				x ^= x << 1
			}
		}
	}()
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{
		"-rates", "200", "-requests", "40", "-repeats", "1", "-warmup", "0", "-speedup", "50", "-max-tokens", "8", "-out", dir,
	}, env{stdout: &stdout, stderr: &stderr, newFake: llmmetricstest.NewServer, newPacer: newPacer})
	close(done)
	<-spun
	require.Equal(t, 0, code, "stderr: %s", stderr.String())
	res := readResults(t, dir)
	require.NotNil(t, res.ClientTiming)
	assert.Contains(t, res.ClientTiming.Warning, "the client limited the figures at rate 200")
	require.Len(t, res.Levels, 1)
	require.NotNil(t, res.Levels[0].ClientTiming)
	ct := res.Levels[0].ClientTiming
	t.Logf("send lag p50 %v p99 %v; %s", ct.SendLagP50, ct.SendLagP99, ct.Warning)
	assert.Contains(t, ct.Warning, "send lag p99")
	assert.Contains(t, stdout.String(), "Warning: the client limited the figures")
}
