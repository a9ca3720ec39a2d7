//go:build !unix

package bench

// openFileLimit: no limit known on this system.
func openFileLimit() (uint64, bool) { return 0, false }
