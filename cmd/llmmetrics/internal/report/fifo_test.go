//go:build unix

package report

import (
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Errors name their line without reading the input again: a named pipe
// with a bad request exits 2 (opening the pipe again would block).
func TestFIFOWithBadInput(t *testing.T) {
	for _, tt := range []struct{ name, content, want string }{
		{"vllm", "{\"duration\": 1.0, \"ttfts\": [0.1],\n\"itls\": [[0.1]], \"input_lens\": [1], \"output_lens\": [-1000], \"errors\": [\"\"]}", "fifo:2: output_lens[0]: -1000 is not a count"},
		{"inference-perf", "[\n{\"start_time\": 2.0, \"end_time\": 1.0, \"info\": {\"response_metrics\": {\"output_token_times\": [1.5]}}}\n]", "fifo:2: request 0: record times out of order"},
		{"genai-perf", "{\"experiments\": [{\"requests\": [\n{\"timestamp\": 1, \"response_timestamps\": [2], \"response_outputs\": []}]}]}", "fifo:2: request 0: 1 response_timestamps but 0 response_outputs"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "fifo")
			require.NoError(t, syscall.Mkfifo(path, 0o600))
			go func() {
				f, err := os.OpenFile(path, os.O_WRONLY, 0)
				if err != nil {
					return
				}
				io.WriteString(f, tt.content)
				f.Close()
			}()
			done := make(chan struct{})
			var code int
			var errOut string
			go func() {
				defer close(done)
				code, _, errOut = runReport(t, path)
			}()
			select {
			case <-done:
			case <-time.After(time.Minute): // a watchdog, not a synchronisation
				t.Fatal("report hangs on a named pipe")
			}
			assert.Equal(t, 2, code)
			assert.Contains(t, errOut, tt.want)
		})
	}
}
