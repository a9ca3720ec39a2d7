//go:build !unix

package main

import "time"

// cpuTime is 0 where getrusage does not exist: the CPU columns read 0.
func cpuTime() time.Duration { return 0 }
