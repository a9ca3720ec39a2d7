package engine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// binaryEnv names the Ollama binary the tests run (scripts/ollama.sh builds
// it and prints its path; .ci/run sets it).
const binaryEnv = "LLMMETRICS_OLLAMA"

// modelName is what the random model is created as.
const modelName = "llmmetrics-random"

// Bounds of the server's life: it must listen, create the model and load
// it within these, or the test fails with its log.
const (
	startTimeout  = time.Minute
	createTimeout = 2 * time.Minute
)

// ollamaServer is one "ollama serve" process listening on 127.0.0.1 with
// its models and home in a temporary directory.
type ollamaServer struct {
	base string // http://127.0.0.1:PORT
	cmd  *exec.Cmd
	dir  string
	log  *syncBuffer
	done chan struct{} // closed when the process has exited
}

// needOllama returns the binary's path, or skips the test saying why.
func needOllama(t testing.TB) string {
	t.Helper()
	bin := os.Getenv(binaryEnv)
	if bin == "" {
		t.Skipf("%s is not set: these tests run a real Ollama; scripts/ollama.sh builds one and prints its path", binaryEnv)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s=%s: %v", binaryEnv, bin, err)
	}
	return bin
}

// startOllama starts "ollama serve" with env added to a clean environment
// (OLLAMA_HOST=127.0.0.1:0: the kernel picks the port, read from its log),
// creates the random model in it and stops it when the test ends.
func startOllama(t testing.TB, env ...string) *ollamaServer {
	t.Helper()
	bin := needOllama(t)
	dir := t.TempDir()
	s, err := launch(bin, dir, env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.stop()
		if t.Failed() {
			t.Logf("ollama's log:\n%s", s.log.tail(8000))
		}
	})
	if err := s.create(bin); err != nil {
		t.Fatalf("%v\nollama's log:\n%s", err, s.log.tail(8000))
	}
	return s
}

var listening = regexp.MustCompile(`Listening on (127\.0\.0\.1:[0-9]+)`)

func launch(bin, dir string, env []string) (*ollamaServer, error) {
	cmd := exec.Command(bin, "serve")
	cmd.Dir = dir
	cmd.Env = append([]string{
		"HOME=" + dir, // its key pair and settings
		"PATH=" + os.Getenv("PATH"),
		"OLLAMA_HOST=127.0.0.1:0",
		"OLLAMA_MODELS=" + filepath.Join(dir, "models"),
		"OLLAMA_NO_CLOUD=1",
		"OLLAMA_CONTEXT_LENGTH=2048",
		"GIN_MODE=release",
	}, env...)
	ownGroup(cmd) // its runner child goes with it
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s serve: %w", bin, err)
	}
	s := &ollamaServer{cmd: cmd, dir: dir, log: &syncBuffer{}, done: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			s.log.writeLine(line)
			if m := listening.FindStringSubmatch(line); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	go func() { _ = cmd.Wait(); close(s.done) }()
	select {
	case a := <-addr:
		s.base = "http://" + a
		return s, nil
	case <-s.done:
		return nil, fmt.Errorf("ollama serve exited before listening:\n%s", s.log.tail(4000))
	case <-time.After(startTimeout):
		s.stop()
		return nil, fmt.Errorf("ollama serve did not listen within %v:\n%s", startTimeout, s.log.tail(4000))
	}
}

// stop ends the server and its runner (its process group): a request to
// end, then a kill after 10 s.
func (s *ollamaServer) stop() {
	signalGroup(s.cmd, false)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		signalGroup(s.cmd, true)
		<-s.done
	}
	signalGroup(s.cmd, true) // a runner that outlived its server
}

// create writes the random model and its Modelfile and runs "ollama create",
// as a user would.
func (s *ollamaServer) create(bin string) error {
	gguf := filepath.Join(s.dir, "model.gguf")
	if err := WriteLlama(gguf, SmallLlama); err != nil {
		return err
	}
	return s.createFrom(bin, modelName, "FROM ./model.gguf\nPARAMETER num_thread 1\n")
}

// createFrom runs "ollama create name" with the Modelfile modelfile.
func (s *ollamaServer) createFrom(bin, name, modelfile string) error {
	path := filepath.Join(s.dir, "Modelfile."+name)
	if err := os.WriteFile(path, []byte(modelfile), 0o644); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), createTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "create", name, "-f", path)
	cmd.Dir = s.dir
	cmd.Env = []string{"HOME=" + s.dir, "PATH=" + os.Getenv("PATH"), "OLLAMA_HOST=" + strings.TrimPrefix(s.base, "http://")}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("ollama create %s: %w\n%s", name, err, lastLines(out, 20))
	}
	return nil
}

// generate is a native, non-streaming /api/generate answer's figures.
type nativeAnswer struct {
	Response           string `json:"response"`
	Done               bool   `json:"done"`
	DoneReason         string `json:"done_reason"`
	PromptEvalCount    int    `json:"prompt_eval_count"`
	PromptEvalDuration int64  `json:"prompt_eval_duration"` // ns
	EvalCount          int    `json:"eval_count"`
	EvalDuration       int64  `json:"eval_duration"` // ns
	Error              string `json:"error"`
}

// newClient returns an HTTP client of the test's own, its idle connections
// closed when the test ends.
func newClient(t testing.TB) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// post sends a JSON body and decodes the JSON answer; a status other than
// 200 is an error with the body.
func post(ctx context.Context, hc *http.Client, url string, body any, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return &statusError{code: resp.StatusCode, body: string(data)}
	}
	return json.Unmarshal(data, out)
}

type statusError struct {
	code int
	body string
}

func (e *statusError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.code, e.body) }

// syncBuffer keeps a process's log lines for a failure message.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) writeLine(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.b.Len() < 4<<20 {
		b.b.WriteString(s)
		b.b.WriteByte('\n')
	}
}

// tail returns the last n bytes of the log.
func (b *syncBuffer) tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.b.String()
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}

func lastLines(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
