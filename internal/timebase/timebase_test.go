package timebase

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOffset(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	mono := time.Now()
	tests := []struct {
		name   string
		base   time.Time
		t      time.Time
		want   int64
		wantOK bool
	}{
		{"wall, later", t0, t0.Add(1500 * time.Millisecond), 1.5e9, true},
		{"wall, earlier across a second", t0.Add(200), t0.Add(-300), -500, true},
		{"wall, other zone", t0, t0.In(time.FixedZone("x", 3600)).Add(7), 7, true},
		{"monotonic", mono, mono.Add(-42), -42, true},
		{"monotonic vs wall", mono, t0, 0, false},
		{"wall vs monotonic", t0, mono, 0, false},
		{"zero time from a wall base", t0, time.Time{}, 0, false},
		{"zero base, zero time", time.Time{}, time.Time{}, 0, true},
		{"just inside the wall-clock bound", t0, t0.Add((limitSec - 1) * time.Second), (limitSec - 1) * 1e9, true},
		{"at the wall-clock bound", t0, t0.Add(limitSec * time.Second), 0, false},
		{"far past", t0, time.Unix(math.MinInt64/2, 0), 0, false},
		{"monotonic, beyond Limit", mono, mono.Add(Limit), 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := New(tt.base)
			got, ok := b.Offset(tt.t)
			require.Equal(t, tt.wantOK, ok)
			if ok {
				assert.Equal(t, tt.want, got)
				assert.Equal(t, tt.t.Sub(tt.base), time.Duration(got), "offset = Sub")
			}
		})
	}
}

func TestHasMono(t *testing.T) {
	now := time.Now()
	assert.True(t, HasMono(now))
	assert.True(t, HasMono(now.Add(time.Hour)))
	assert.False(t, HasMono(now.Round(0)))
	assert.False(t, HasMono(time.Time{}))
	assert.False(t, HasMono(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	assert.False(t, HasMono(now.In(time.UTC)), "In strips the monotonic reading")
}
