// Package timebase turns time.Time values into int64 nanoseconds since a
// base instant when that reproduces time.Time's own arithmetic exactly, so
// that Summarize's per-record arithmetic is integer arithmetic instead of
// repeated time.Time.Sub/Before calls (each of which re-decodes the wall
// and monotonic fields and, without a monotonic reading, checks for
// overflow with an Add and an Equal).
package timebase

import "time"

// Limit bounds the offsets of a Base: every offset is in (−Limit, Limit),
// so the difference of two offsets never overflows an int64 and equals
// what time.Time.Sub returns (Sub saturates only beyond ±(2^63 − 1) ns).
const Limit = 1 << 61

// limitSec bounds the whole-second part of a wall-clock offset:
// 2^31 s × 1e9 + 1e9 ns < 2^61 ns.
const limitSec = 1 << 31

// Base converts instants to offsets from a base instant.
//
// time.Time compares and subtracts two instants by their monotonic clock
// readings when both have one, and by their wall clocks otherwise. An
// offset therefore stands in for an instant only when the instant has a
// monotonic reading exactly when the base does: then for any two such
// instants t and u, t.Sub(u) = off(t) − off(u) and t.Before(u) ⇔ off(t) <
// off(u), in the same clock the time package would use. Instants of the
// other kind, or too far from the base (see Limit), are refused.
type Base struct {
	t    time.Time
	mono bool
	sec  int64 // t.Unix()
	nsec int   // t.Nanosecond()
}

// New returns the Base of instant t.
func New(t time.Time) Base {
	return Base{t: t, mono: HasMono(t), sec: t.Unix(), nsec: t.Nanosecond()}
}

// HasMono reports whether t carries a monotonic clock reading: Round(0)
// strips it and changes nothing else, so t differs from t.Round(0)
// (compared field by field, not as instants) exactly when it has one.
func HasMono(t time.Time) bool { return t != t.Round(0) }

// Offset returns t − b's instant in nanoseconds, with ok false when t
// cannot stand in as an offset (see Base).
func (b *Base) Offset(t time.Time) (off int64, ok bool) {
	if HasMono(t) != b.mono {
		return 0, false
	}
	if b.mono {
		// Both readings are monotonic: Sub is a plain subtraction of
		// them (saturating, which the bound excludes).
		d := t.Sub(b.t)
		return int64(d), d > -Limit && d < Limit
	}
	// Wall clocks: Sub returns the exact difference (sec and nsec
	// parts) when it does not saturate; compute it directly, without
	// Sub's overflow check, once the seconds are known to be in range.
	ds := t.Unix() - b.sec
	if ds <= -limitSec || ds >= limitSec {
		return 0, false
	}
	return ds*1e9 + int64(t.Nanosecond()-b.nsec), true
}
