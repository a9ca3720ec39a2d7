package report

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzReport feeds any bytes to a format (the first byte chooses it: auto
// or one of the formats; one format per input keeps each execution, and
// the fuzzer's minimizing, short): report never panics or hangs, and it
// either reads the input (exit 0) or says why not (exit 2, with a message
// naming the input). The limit on a line or value is lowered so that
// memory and time stay small whatever the fuzzer tries.
//
//	go test -run '^$' -fuzz FuzzReport -fuzztime 60s ./cmd/llmmetrics/internal/report
func FuzzReport(f *testing.F) {
	names := append([]string{"auto"}, formatNames()...)
	files, err := filepath.Glob("testdata/*.json*")
	if err != nil {
		f.Fatal(err)
	}
	yamls, err := filepath.Glob("testdata/*.yaml")
	if err != nil {
		f.Fatal(err)
	}
	files = append(files, yamls...)
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		for i := range names {
			f.Add(append([]byte{byte(i)}, b...))
		}
	}
	f.Add([]byte("\x02" + `{"duration": NaN, "ttfts": [-Infinity], "itls": [[1e300]], "input_lens": [-1], "output_lens": [3e9], "errors": [null]}`))
	f.Add([]byte("\x04" + `[{"start_time": 1, "end_time": 2, "info": {"response_metrics": {"output_token_times": ["NaN"]}}}]`))
	defer func(old, oldYAML int) { maxValueBytes, maxYAMLBytes = old, oldYAML }(maxValueBytes, maxYAMLBytes)
	maxValueBytes, maxYAMLBytes = 64<<10, 64<<10
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		format := names[int(in[0])%len(names)]
		in = in[1:]
		// A hang becomes a finding with its input, not a stalled fuzzer.
		watchdog := time.AfterFunc(10*time.Second, func() {
			panic(fmt.Sprintf("report -format %s over 10 s on %q", format, in))
		})
		defer watchdog.Stop()
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
	})
}
