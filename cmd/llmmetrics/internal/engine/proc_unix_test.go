//go:build unix

package engine

import (
	"os/exec"
	"syscall"
)

// ownGroup starts cmd in a process group of its own, so its children can
// be signalled with it.
func ownGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// signalGroup sends cmd's process group SIGTERM, or SIGKILL when kill.
func signalGroup(cmd *exec.Cmd, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-cmd.Process.Pid, sig)
}
