// Package promtest starts a real Prometheus server for the examples' tests:
// on a loopback port the kernel picks, with its data in the test's
// temporary directory, stopped when the test ends.
package promtest

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// listeningOn finds the address Prometheus logs once it listens
// ("Listening on" address=127.0.0.1:41234), both in go-kit's logfmt (2.x)
// and slog's (3.x).
var listeningOn = regexp.MustCompile(`msg="Listening on" address=(\S+)`)

// Start runs the Prometheus binary bin with the configuration config (YAML)
// and the extra flags, waits until it is ready, and returns its base URL
// and an HTTP client for its API. Prometheus listens on 127.0.0.1:0 and
// logs the port it got, so no other process can take the port between a
// probe and its listen. Its log is printed when the test fails.
func Start(t *testing.T, bin, config string, flags ...string) (string, *http.Client) {
	t.Helper()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(config), 0o644))
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, append([]string{
		"--config.file=" + cfgPath,
		"--storage.tsdb.path=" + filepath.Join(dir, "data"),
		"--web.listen-address=127.0.0.1:0",
		"--log.level=info"}, flags...)...)
	logPath := filepath.Join(dir, "prometheus.log")
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	require.NoError(t, cmd.Start())
	tr := &http.Transport{}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		cancel()
		_ = cmd.Wait()
		_ = logFile.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("prometheus log:\n%s", b)
		}
	})
	var addr string
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(logPath)
		if m := listeningOn.FindSubmatch(b); m != nil {
			addr = string(m[1])
			return true
		}
		return false
	}, 30*time.Second, 50*time.Millisecond, "Prometheus did not log its address")
	url, hc := "http://"+addr, &http.Client{Transport: tr, Timeout: 10 * time.Second}
	require.Eventually(t, func() bool {
		resp, err := hc.Get(url + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 100*time.Millisecond, "Prometheus did not become ready")
	return url, hc
}

// Serve serves h on a loopback port the kernel picks until the test ends,
// and returns its address (host:port). The server's goroutine ends before
// the test does.
func Serve(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: h}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		<-served
	})
	return ln.Addr().String()
}
