package fleet_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Bounds of every wait on another process. They are far above what the
// processes need on a loaded 2-core machine (a second or two to start, a
// few seconds to stop), and only reached when something is broken.
const (
	startTimeout = 60 * time.Second
	stopTimeout  = 60 * time.Second
	sendTimeout  = 5 * time.Minute
)

// proc is a process the test started, its output going to a log file in
// the test's temporary directory. It is stopped (SIGTERM, then SIGKILL
// after stopTimeout) when the test ends, and its log printed if the test
// failed.
type proc struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed when the process has exited
	err     error         // its exit error, once done is closed
}

// start runs bin with args and env (added to the test's environment).
// stdin, when not nil, is the process's standard input; stdout, when not
// nil, its standard output (its standard error still goes to the log).
// Both are the child's ends of pipes, which start closes in this process
// once the child has them, so that the other ends see the child's exit.
func start(t *testing.T, name, bin string, args, env []string, stdin, stdout *os.File) *proc {
	t.Helper()
	p := &proc{name: name, logPath: filepath.Join(t.TempDir(), name+".log"), done: make(chan struct{})}
	logFile, err := os.Create(p.logPath)
	require.NoError(t, err)
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if stdin != nil {
		p.cmd.Stdin = stdin
	}
	if stdout != nil {
		p.cmd.Stdout = stdout
	}
	err = p.cmd.Start()
	for _, f := range []*os.File{stdin, stdout} {
		if f != nil {
			_ = f.Close()
		}
	}
	require.NoError(t, err, "start %s", name)
	go func() {
		p.err = p.cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop(t)
		if t.Failed() {
			b, _ := os.ReadFile(p.logPath)
			t.Logf("%s log (%s):\n%s", name, p.logPath, tail(string(b), 200))
		}
	})
	return p
}

// stop sends SIGTERM and waits for the process to exit, killing it after
// stopTimeout. It returns the exit error (nil: exit status 0). Stopping a
// stopped process returns its exit error again.
func (p *proc) stop(t *testing.T) error {
	t.Helper()
	select {
	case <-p.done:
		return p.err
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stopTimeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Errorf("%s did not stop within %v of SIGTERM: killed", p.name, stopTimeout)
	}
	return p.err
}

// wait waits at most timeout for the process to exit by itself.
func (p *proc) wait(t *testing.T, timeout time.Duration) error {
	t.Helper()
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		t.Fatalf("%s did not exit within %v", p.name, timeout)
		return nil
	}
}

// awaitLog waits until the process's log matches each pattern and returns
// each pattern's first submatch. It fails the test when the process exits
// first or startTimeout passes.
func (p *proc) awaitLog(t *testing.T, patterns ...*regexp.Regexp) []string {
	t.Helper()
	deadline := time.Now().Add(startTimeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		b, _ := os.ReadFile(p.logPath)
		found := make([]string, 0, len(patterns))
		for _, re := range patterns {
			m := re.FindSubmatch(b)
			if m == nil {
				break
			}
			found = append(found, string(m[len(m)-1]))
		}
		if len(found) == len(patterns) {
			return found
		}
		select {
		case <-p.done:
			t.Fatalf("%s exited (%v) before logging %v", p.name, p.err, patterns[len(found)])
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not log %v within %v", p.name, patterns[len(found)], startTimeout)
		}
	}
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("… (%d lines before)", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// replica is a running replica process (package replica), driven through
// its standard input and output.
type replica struct {
	*proc
	in      *os.File
	out     *bufio.Scanner
	records string // its -records file, written when it stops
}

// startReplica starts the replica program bin with the flags and the
// OpenTelemetry environment env.
func startReplica(t *testing.T, name, bin, records string, flags, env []string) *replica {
	t.Helper()
	inR, inW, err := os.Pipe()
	require.NoError(t, err)
	outR, outW, err := os.Pipe()
	require.NoError(t, err)
	// Registered before start's cleanup, so it runs after it: the pipes
	// stay open until the replica has been stopped.
	t.Cleanup(func() { _ = inW.Close(); _ = outR.Close() })
	p := start(t, name, bin, append([]string{"-records", records}, flags...), env, inR, outW)
	return &replica{proc: p, in: inW, out: bufio.NewScanner(outR), records: records}
}

// command asks the replica for ok successful and failed refused requests.
func (r *replica) command(t *testing.T, ok, failed int) {
	t.Helper()
	_, err := fmt.Fprintf(r.in, "send %d %d\n", ok, failed)
	require.NoError(t, err, "%s: write command", r.name)
}

// expectSent waits at most sendTimeout for the replica's answer to
// command(ok, failed).
func (r *replica) expectSent(t *testing.T, ok, failed int) {
	t.Helper()
	want := fmt.Sprintf("sent %d %d", ok, failed)
	got := make(chan string, 1)
	go func() {
		if r.out.Scan() {
			got <- r.out.Text()
		}
		close(got)
	}()
	select {
	case line, ok := <-got:
		if !ok {
			// The output ends when the replica exits; err is set once
			// done is closed.
			select {
			case <-r.done:
				t.Fatalf("%s exited (%v) before answering %q", r.name, r.err, want)
			case <-time.After(stopTimeout):
				t.Fatalf("%s closed its output before answering %q", r.name, want)
			}
		}
		require.Equal(t, want, line, "%s", r.name)
	case <-time.After(sendTimeout):
		// The goroutine ends when the replica is stopped (its output
		// ends) or the test's cleanup closes the pipe.
		t.Fatalf("%s did not answer %q within %v", r.name, want, sendTimeout)
	}
}

// finish closes the replica's input, which makes it flush its telemetry,
// write its Records and exit, and requires a clean exit.
func (r *replica) finish(t *testing.T) {
	t.Helper()
	require.NoError(t, r.in.Close())
	require.NoError(t, r.wait(t, stopTimeout), "%s exit", r.name)
}

// build compiles the package pkg (an import path) into dir and returns the
// binary's path.
func build(t *testing.T, pkg, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, filepath.Base(pkg))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, pkg).CombinedOutput()
	require.NoError(t, err, "go build %s:\n%s", pkg, out)
	return bin
}
