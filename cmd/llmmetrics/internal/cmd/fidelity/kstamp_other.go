//go:build !linux

package main

import (
	"net"
	"time"
)

// stamped returns c: kernel receive times are read on Linux only.
func stamped(c net.Conn) net.Conn { return c }

// kernelArrival is the zero time: not kept on this system.
func kernelArrival(net.Conn) time.Time { return time.Time{} }
