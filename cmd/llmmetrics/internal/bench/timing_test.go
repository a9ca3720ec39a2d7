package bench

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTimingSummary(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var s timingSamples
	// Send lags 0, 10, 20, 30 µs; arrival lags 1…4 ms and 100 ms.
	for i, lags := range [][]time.Duration{
		{time.Millisecond, 2 * time.Millisecond},
		{3 * time.Millisecond},
		{4 * time.Millisecond, 100 * time.Millisecond},
		nil,
	} {
		sched := t0.Add(time.Duration(i) * time.Second)
		rec := llmmetrics.Record{Start: sched.Add(time.Duration(i) * 10 * time.Microsecond)}
		s.add(rec, &reqTiming{scheduled: sched, lags: lags, reads: len(lags), multi: i % 2})
	}
	ct := s.summary()
	require.NotNil(t, ct)
	assert.Equal(t, "kernel", ct.Method)
	// numpy linear: p50 of {0,10,20,30} = 15; p99 = 20 + 0.97·10 = 29.7.
	assert.Equal(t, 15*time.Microsecond, ct.SendLagP50)
	assert.Equal(t, 29700*time.Nanosecond, ct.SendLagP99)
	// {1,2,3,4,100} ms: p50 = 3 ms; p99 = 4 + 0.96·96 = 96.16 ms.
	require.NotNil(t, ct.ArrivalLagP50)
	assert.Equal(t, 3*time.Millisecond, *ct.ArrivalLagP50)
	assert.Equal(t, 96160*time.Microsecond, *ct.ArrivalLagP99)
	assert.Equal(t, 5, ct.Reads)
	assert.Equal(t, 2, ct.MultiFrameReads)

	t.Run("a few reads timed by the clock are counted", func(t *testing.T) {
		s := s
		s.add(llmmetrics.Record{Start: t0}, &reqTiming{scheduled: t0, userReads: 1})
		ct := s.summary()
		assert.Equal(t, "kernel", ct.Method)
		assert.Equal(t, 1, ct.UserReads)
	})
	t.Run("more reads timed by the clock than by the kernel: user", func(t *testing.T) {
		s := s
		s.add(llmmetrics.Record{Start: t0}, &reqTiming{scheduled: t0, userReads: 6, note: "why"})
		ct := s.summary()
		assert.Equal(t, "user", ct.Method)
		assert.Equal(t, "why", ct.Note)
	})
	t.Run("no requests: none", func(t *testing.T) {
		var empty timingSamples
		assert.Nil(t, empty.summary())
	})
	t.Run("a request sent before its schedule counts 0", func(t *testing.T) {
		var s timingSamples
		s.add(llmmetrics.Record{Start: t0}, &reqTiming{scheduled: t0.Add(time.Millisecond)})
		assert.Equal(t, time.Duration(0), s.summary().SendLagP99)
	})
}

func TestTimingWarning(t *testing.T) {
	itl := func(p50 time.Duration) llmmetrics.Summary {
		return llmmetrics.Summary{ITL: llmmetrics.Distribution{Count: 1, Median: p50}, E2EL: llmmetrics.Distribution{Count: 1, Mean: time.Second}}
	}
	d := func(v time.Duration) *time.Duration { return &v }
	for _, tc := range []struct {
		name string
		ct   ClientTiming
		mode Mode
		load float64
		want []string // substrings; none: no warning
	}{
		// 100 requests/s: 10 ms between arrivals.
		{"send lag within the gap", ClientTiming{SendLagP99: 10 * time.Millisecond}, ModeRate, 100, nil},
		{"send lag over the gap", ClientTiming{SendLagP99: 10*time.Millisecond + 100*time.Microsecond}, ModeRate, 100,
			[]string{"send lag p99 10.1 ms", "mean inter-arrival time (10.0 ms): requests left after the next one was due"}},
		// 5,000 requests/s: 200 µs between arrivals; a p99 of 100 µs moves
		// no request past the next one's time.
		{"5,000/s within 100 µs", ClientTiming{SendLagP99: 100 * time.Microsecond}, ModeRate, 5000, nil},
		{"5,000/s, late by a gap", ClientTiming{SendLagP99: 201 * time.Microsecond}, ModeRate, 5000, []string{"send lag p99 201 µs"}},
		// Closed loop: against the mean E2EL, 1 s: 5 % = 50 ms.
		{"closed loop under", ClientTiming{SendLagP99: 50 * time.Millisecond}, ModeConcurrency, 8, nil},
		{"closed loop over", ClientTiming{SendLagP99: 51 * time.Millisecond}, ModeConcurrency, 8, []string{"mean E2EL (1000.0 ms)"}},
		// A chunk timed by the kernel carries no lag shorter than the gap
		// to the next: a lag is in no figure, and warns only that the
		// client is near its limit, above a quarter of ITL p50 (5 ms).
		{"arrival lag under a quarter", ClientTiming{ArrivalLagP99: d(5 * time.Millisecond), Reads: 100}, ModeRate, 1, nil},
		{"arrival lag over a quarter", ClientTiming{ArrivalLagP99: d(5100 * time.Microsecond), Reads: 100}, ModeRate, 1,
			[]string{"the client is near its limit (chunks waited in the socket up to 5.1 ms (arrival lag p99), above a quarter of ITL p50 (20.0 ms)"}},
		{"near its limit and limited", ClientTiming{ArrivalLagP99: d(15 * time.Millisecond), Reads: 100, MultiFrameReads: 6}, ModeRate, 1,
			[]string{"the client limited the figures (6 of 100 reads carried several chunks", "; chunks waited in the socket up to 15.0 ms"}},
		// 5 % of 100 reads = 5.
		{"few multi-frame reads", ClientTiming{Reads: 100, MultiFrameReads: 5}, ModeRate, 1, nil},
		{"a backlog", ClientTiming{Reads: 100, MultiFrameReads: 6}, ModeRate, 1, []string{"6 of 100 reads carried several chunks", "the client limited the figures"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := timingWarning(&tc.ct, tc.mode, tc.load, itl(20*time.Millisecond))
			if tc.want == nil {
				assert.Empty(t, got)
			}
			for _, w := range tc.want {
				assert.Contains(t, got, w)
			}
		})
	}
}

// fakeStamped is a connection whose latest read arrived at last, its
// reads counted by seq.
type fakeStamped struct {
	last int64
	seq  uint64
}

func (c *fakeStamped) lastArrival() (int64, uint64) { return c.last, c.seq }

// TestArrivalBodyCountsChunksPerRead: the library asks ArrivalTime once per
// chunk; the body counts the socket reads that carried chunks and those
// that carried several.
func TestArrivalBodyCountsChunksPerRead(t *testing.T) {
	conn := &fakeStamped{last: time.Now().UnixNano()}
	var rt reqTiming
	b := &arrivalBody{conn: conn, rt: &rt}
	for _, chunks := range []int{1, 2, 1, 3, 1} { // chunks per socket read
		conn.seq++
		for range chunks {
			require.False(t, b.ArrivalTime().IsZero())
		}
	}
	assert.Equal(t, 5, rt.reads)
	assert.Equal(t, 2, rt.multi, "the reads of 2 and of 3 chunks")
	assert.Len(t, rt.lags, 8, "one lag per chunk")
	assert.Zero(t, rt.userReads)

	conn.last = 0 // a read without a timestamp: the clock
	conn.seq++
	assert.True(t, b.ArrivalTime().IsZero())
	assert.Equal(t, 1, rt.userReads)
	assert.NotEmpty(t, rt.note)
}

func TestSleepUntil(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		at := time.Now().Add(3 * time.Millisecond)
		require.NoError(t, sleepUntil(context.Background(), timerPacer{}, at))
		assert.Equal(t, at, time.Now(), "wakes at its time in a bubble")
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		assert.ErrorIs(t, sleepUntil(ctx, timerPacer{}, time.Now().Add(time.Second)), context.Canceled)
	})
}

// TestRecordsKeepScheduled: in a bubble, open-loop requests leave exactly
// on schedule; records.jsonl and results.json keep it.
func TestRecordsKeepScheduled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{
			"-rates", "20", "-requests", "8", "-repeats", "1", "-warmup", "0", "-speedup", "20", "-max-tokens", "8", "-out", dir,
		}, testEnv(&stdout, &stderr, nil))
		require.Equal(t, 0, code, "stderr: %s", stderr.String())
		lines := readRecords(t, dir)
		require.Len(t, lines, 8)
		for i, l := range lines {
			require.False(t, l.Scheduled.IsZero(), "line %d", i+1)
			assert.Equal(t, time.Duration(0), l.Record.Start.Sub(l.Scheduled), "line %d", i+1)
			if i > 0 {
				assert.True(t, l.Scheduled.After(lines[i-1].Scheduled), "arrivals in order")
			}
		}
		res := readResults(t, dir)
		require.NotNil(t, res.ClientTiming)
		assert.Equal(t, "user", res.ClientTiming.Method, "the in-memory server has no socket")
		assert.NotEmpty(t, res.ClientTiming.Note)
		assert.Nil(t, res.ClientTiming.ArrivalLagP99)
		require.NotNil(t, res.Levels[0].ClientTiming)
		assert.Contains(t, stdout.String(), "Client timing error: not measured")
	})
}

// TestScheduledReplayAndSessions: in a bubble, a replayed request is due at
// the run's start plus its arrival at the time scale; a session's next turn
// at its previous turn's end plus the think time; a closed-loop client's
// next session at the end of its previous request. Each leaves on time.
func TestScheduledReplayAndSessions(t *testing.T) {
	t.Run("replay", func(t *testing.T) {
		trace := filepath.Join(t.TempDir(), "trace.jsonl")
		require.NoError(t, os.WriteFile(trace, []byte(`{"timestamp": 0, "input_length": 20, "output_length": 2, "hash_ids": [1]}
{"timestamp": 30, "input_length": 20, "output_length": 2, "hash_ids": [2]}
{"timestamp": 30, "input_length": 20, "output_length": 2, "hash_ids": [3]}
{"timestamp": 400, "input_length": 20, "output_length": 2, "hash_ids": [4]}
`), 0o644))
		synctest.Test(t, func(t *testing.T) {
			dir := t.TempDir()
			_, code, stderr, _ := runWorkload(t, dir, "-trace", trace, "-time-scale", "0.5")
			require.Equal(t, exitOK, code, stderr)
			lines := readRecords(t, dir)
			require.Len(t, lines, 4)
			want := []time.Duration{0, 15 * time.Millisecond, 15 * time.Millisecond, 200 * time.Millisecond} // arrivals × 0.5
			first := lines[0].Scheduled
			require.False(t, first.IsZero())
			for i, l := range lines {
				assert.Equal(t, want[i], l.Scheduled.Sub(first), "line %d", i+1)
				assert.Equal(t, l.Scheduled, l.Record.Start, "line %d leaves on time", i+1)
			}
		})
	})
	t.Run("closed loop with sessions", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			dir := t.TempDir()
			const think = 70 * time.Millisecond
			_, code, stderr, _ := runWorkload(t, dir, "-concurrency", "1", "-requests", "6", "-turns", "3",
				"-think-time", think.String(), "-input-tokens", "10", "-output-tokens", "3")
			require.Equal(t, exitOK, code, stderr)
			lines := readRecords(t, dir)
			require.Len(t, lines, 6)
			for i, l := range lines {
				require.False(t, l.Scheduled.IsZero(), "line %d", i+1)
				assert.Equal(t, l.Scheduled, l.Record.Start, "line %d leaves on time", i+1)
				if i == 0 {
					continue
				}
				prev := lines[i-1]
				want := prev.Record.End // a new session: at once
				if l.Session == prev.Session {
					want = want.Add(think)
				}
				assert.Equal(t, want, l.Scheduled, "line %d (session %d turn %d)", i+1, l.Session, l.Turn)
			}
		})
	})
}

// TestWorkers: each job runs once; a job given while a worker is idle runs
// on that worker (no new goroutine); jobs given while all are busy get new
// ones; close ends the idle workers, and the busy ones after their job (the
// bubble fails the test if a goroutine outlives it).
func TestWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var wg sync.WaitGroup
		w := newWorkers(&wg)
		var ran atomic.Int64
		job := func(d time.Duration) func() {
			return func() { time.Sleep(d); ran.Add(1) }
		}
		w.run(job(time.Second))
		w.run(job(time.Second)) // the first is busy: a second worker
		synctest.Wait()
		assert.Equal(t, 2, w.n)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		for range 5 { // both idle: no new worker
			w.run(job(time.Millisecond))
			time.Sleep(time.Second)
			synctest.Wait()
		}
		assert.Equal(t, 2, w.n)
		w.run(job(time.Hour)) // busy at close: ends after its job
		w.close()
		wg.Wait()
		assert.Equal(t, int64(8), ran.Load())
		assert.Equal(t, 2, w.n)
	})
}

// TestOverallTiming: the run's warning names the levels whose own check
// warned, apart by what they said.
func TestOverallTiming(t *testing.T) {
	t0 := time.Unix(1000, 0)
	level := func(load float64, warning string) *Level {
		l := &Level{Load: load, ClientTiming: &ClientTiming{Warning: warning}}
		l.timing.add(llmmetrics.Record{Start: t0}, &reqTiming{scheduled: t0})
		return l
	}
	ct := overallTiming([]*Level{
		level(8, ""),
		level(16, "the client is near its limit (…)"),
		level(32, "the client limited the figures (…)"),
		level(64, "the client limited the figures (…)"),
	}, ModeConcurrency)
	require.NotNil(t, ct)
	assert.Equal(t, "the client limited the figures at concurrency 32, concurrency 64; the client is near its limit at concurrency 16 (see each level's client_timing)", ct.Warning)
	assert.Empty(t, overallTiming([]*Level{level(8, "")}, ModeConcurrency).Warning)
}
