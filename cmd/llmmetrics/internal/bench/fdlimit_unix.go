//go:build unix

package bench

import (
	"math"
	"syscall"
)

// openFileLimit returns the process's limit on open files (the soft
// RLIMIT_NOFILE; Go raises it to the hard limit at start-up), ok false
// when unknown or unlimited.
func openFileLimit() (uint64, bool) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, false
	}
	// Cur is a uint64 on Linux and an int64 on the BSDs; either way,
	// above math.MaxInt64 (RLIM_INFINITY on Linux) or below 0 is no limit.
	if c := int64(rl.Cur); c >= 0 && c != math.MaxInt64 {
		return uint64(c), true
	}
	return 0, false
}
