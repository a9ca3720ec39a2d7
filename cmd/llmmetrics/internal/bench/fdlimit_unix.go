//go:build unix

package bench

import "syscall"

// openFileLimit returns the process's limit on open files (the soft
// RLIMIT_NOFILE; Go raises it to the hard limit at start-up), ok false
// when unknown.
func openFileLimit() (uint64, bool) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, false
	}
	return rl.Cur, true
}
