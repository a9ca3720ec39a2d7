//go:build !unix

package engine

import "os/exec"

// ownGroup: no process groups here; the server's children are not
// signalled with it.
func ownGroup(*exec.Cmd) {}

// signalGroup kills cmd's process (no gentler request exists here).
func signalGroup(cmd *exec.Cmd, _ bool) { _ = cmd.Process.Kill() }
