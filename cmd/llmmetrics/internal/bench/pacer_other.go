//go:build !linux

package bench

// newPacer returns the runtime's timers: other systems have no timerfd.
func newPacer() pacer { return timerPacer{} }
