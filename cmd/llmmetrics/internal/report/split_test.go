package report

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A file read one byte at a time (a pipe that delivers it so) gives the
// same summary as the file: no reader depends on how its input is split.
func TestFixturesReadOneByteAtATime(t *testing.T) {
	for _, name := range []string{
		"guidellm_v01.json", "guidellm_v01.yaml", "guidellm_v02.json", "guidellm_v04.json", "guidellm_v06.yaml",
		"guidellm_v07.json", "guidellm_v07.yaml", "guidellm_v08.json",
		"sglang_bench_serving.jsonl", "sglang_details.jsonl", "sglang_serving_cache.jsonl",
		"inference_perf_v060.json",
	} {
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile("testdata/" + name)
			require.NoError(t, err)
			code, want, _ := runReport(t, "-json", "testdata/"+name)
			require.Equal(t, 0, code)
			var out, errb bytes.Buffer
			code = Main(context.Background(), []string{"-json", "-"}, iotest.OneByteReader(bytes.NewReader(b)), &out, &errb)
			require.Equal(t, 0, code, errb.String())
			assert.Equal(t, want, out.String())
		})
	}
	// LLMPerf from stdin has no summary beside it: as the file alone.
	b, err := os.ReadFile(llmperfFile)
	require.NoError(t, err)
	alone := filepath.Join(t.TempDir(), "x_individual_responses.json")
	require.NoError(t, os.WriteFile(alone, b, 0o600))
	_, want, _ := runReport(t, "-json", alone)
	var out, errb bytes.Buffer
	code := Main(context.Background(), []string{"-json", "-"}, iotest.OneByteReader(bytes.NewReader(b)), &out, &errb)
	require.Equal(t, 0, code, errb.String())
	assert.Equal(t, want, out.String())
	assert.True(t, strings.Contains(errb.String(), "no run duration"))
}
