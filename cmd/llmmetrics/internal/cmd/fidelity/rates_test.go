package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOpenTruth(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(us int64) time.Time { return t0.Add(time.Duration(us) * time.Microsecond) }
	// Scheduled at 0, 200, 300 µs (in the order of their Starts); the
	// server received them at 50, 240, 390 µs, listed out of order.
	sched := []time.Time{at(0), at(200), at(300)}
	arr := []arrival{{Arrived: at(240).UnixNano()}, {Arrived: at(50).UnixNano()}, {Arrived: at(390).UnixNano()}}
	lag, jitter := openTruth(arr, sched)
	assert.Equal(t, []time.Duration{50 * time.Microsecond, 40 * time.Microsecond, 90 * time.Microsecond}, lag)
	// Arrival gaps 190, 150 against scheduled gaps 200, 100: |−10|, |+50|.
	assert.Equal(t, []time.Duration{10 * time.Microsecond, 50 * time.Microsecond}, jitter)
}

func TestClosedTruth(t *testing.T) {
	// Connection a: answers flushed at 100 and 400, requests at 0, 130,
	// 450; connection b: flushed at 200, requests at 10, 260. The last
	// three arrivals are measured: 260 (b, 60 after 200), 130 (a, 30 after
	// 100) and 450 (a, 50 after 400), in arrival order.
	arr := []arrival{
		{Arrived: 0, End: 100, Conn: "a"},
		{Arrived: 10, End: 200, Conn: "b"},
		{Arrived: 130, End: 400, Conn: "a"},
		{Arrived: 260, End: 300, Conn: "b"},
		{Arrived: 450, End: 500, Conn: "a"},
	}
	assert.Equal(t, []time.Duration{30, 60, 50}, closedTruth(arr, 3))
	t.Run("a request whose connection carried no answer before is left out", func(t *testing.T) {
		assert.Empty(t, closedTruth(arr[:2], 2))
	})
}

func TestUseKernel(t *testing.T) {
	arr := []arrival{{Arrived: 1000, Kernel: 900}, {Arrived: 2000, Kernel: 1700}, {Arrived: 3000}}
	got := useKernel(arr)
	// Handler after socket: 100 and 300 ns; p50 = 200 ns = 0 µs.
	assert.Equal(t, "0 µs (2 of 3 stamped)", got)
	require.Len(t, arr, 3)
	assert.Equal(t, []int64{900, 1700, 3000}, []int64{arr[0].Arrived, arr[1].Arrived, arr[2].Arrived})
	assert.Equal(t, "no stamps", useKernel([]arrival{{Arrived: 5}}))
}
