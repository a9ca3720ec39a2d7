package report

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
)

// FuzzReport feeds any bytes to every format: report never panics, and it
// either reads the input (exit 0) or says why not (exit 2, with a
// message naming the input). The limit on a line or value is lowered so
// that memory and time stay small whatever the fuzzer tries.
//
//	go test -run '^$' -fuzz FuzzReport -fuzztime 60s ./cmd/llmmetrics/internal/report
func FuzzReport(f *testing.F) {
	files, err := filepath.Glob("testdata/*.json*")
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"duration": NaN, "ttfts": [-Infinity], "itls": [[1e300]], "input_lens": [-1], "output_lens": [3e9], "errors": [null]}`))
	f.Add([]byte("[{\"start_time\": 1, \"end_time\": 2, \"info\": {\"response_metrics\": {\"output_token_times\": [\"NaN\"]}}}]"))
	defer func(old int) { maxValueBytes = old }(maxValueBytes)
	maxValueBytes = 64 << 10
	names := append([]string{"auto"}, formatNames()...)
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, format := range names {
			var out, errb bytes.Buffer
			code := Main(context.Background(), []string{"-format", format, "-"}, bytes.NewReader(in), &out, &errb)
			switch code {
			case 0:
			case 2:
				if !bytes.Contains(errb.Bytes(), []byte("<stdin>")) {
					t.Errorf("-format %s: exit 2 without naming the input: %s", format, errb.String())
				}
			default:
				t.Errorf("-format %s: exit %d: %s", format, code, errb.String())
			}
		}
	})
}
