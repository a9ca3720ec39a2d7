//go:build linux

package bench

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTimerfdPacer: the timerfd pacer never returns before its time, over
// waits of several lengths on one descriptor (an expiry left unread by an
// earlier wait must not end a later one early), and returns at once for a
// time already past. How soon after its time it returns is measured by
// the fidelity tool's -rates mode, not here.
func TestTimerfdPacer(t *testing.T) {
	p := newPacer()
	defer p.close()
	_, ok := p.(*timerfdPacer)
	require.True(t, ok, "Linux has timerfd")
	for _, d := range []time.Duration{0, -time.Millisecond, 50 * time.Microsecond, 300 * time.Microsecond, time.Microsecond, 2 * time.Millisecond, 10 * time.Microsecond} {
		at := time.Now().Add(d)
		p.waitUntil(at)
		assert.False(t, time.Now().Before(at), "a wait of %v returned early", d)
	}
	t.Run("sleepUntil: a timer first, the pacer for the last stretch", func(t *testing.T) {
		at := time.Now().Add(3 * preciseWindow / 2)
		require.NoError(t, sleepUntil(context.Background(), p, at))
		assert.False(t, time.Now().Before(at))
	})
	t.Run("sleepUntil: a canceled context ends the wait", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		assert.ErrorIs(t, sleepUntil(ctx, p, time.Now().Add(time.Hour)), context.Canceled)
	})
}
