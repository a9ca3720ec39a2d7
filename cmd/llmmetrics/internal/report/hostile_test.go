package report

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// endless is a stream of head then filler bytes, without end: a file of
// any size without the disk. read counts the bytes handed out.
type endless struct {
	head   []byte
	filler byte
	read   int64
}

func (e *endless) Read(p []byte) (int, error) {
	n := copy(p, e.head)
	e.head = e.head[n:]
	for i := n; i < len(p); i++ {
		p[i] = e.filler
	}
	e.read += int64(len(p))
	return len(p), nil
}

// A line or a value longer than the limit is bad input named by its line,
// read no further than the limit and a buffer, whatever the stream's size
// (a 2 GB single-line file is this case), with a bounded allocation.
func TestLongLineOrValue(t *testing.T) {
	for _, tt := range []struct {
		name, format, head string
		filler             byte
		want               string
	}{
		{"records line", "auto", `{"mode":"concurrency","record":{"x":"`, 'x', "<stdin>:1: a line longer than the limit of 1 MiB"},
		{"aiperf line", "aiperf", `{"metadata":{"request_start_ns":1,"x":"`, 'x', "<stdin>:1: a line longer than the limit"},
		{"vllm string", "vllm", "{\"duration\": 1.0,\n\"generated_texts\": [\"", 'x', "<stdin>:2: a value longer than the limit"},
		{"vllm number", "vllm", "{\"ttfts\": [1", '1', "<stdin>:1: ttfts: a value longer than the limit"},
		{"inference-perf element", "inference-perf", "[\n{\"start_time\": [", ' ', "<stdin>:2: request: a value longer than the limit"},
		{"genai-perf", "auto", `{"experiments":[{"requests":[{"timestamp":1,"x":"`, 'y', "<stdin>:1: request: a value longer than the limit"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			defer func(old int) { maxValueBytes = old }(maxValueBytes)
			maxValueBytes = 1 << 20 // the same code at a sixteenth of the length
			in := &endless{head: []byte(tt.head), filler: tt.filler}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			var out, errb bytes.Buffer
			code := Main(context.Background(), []string{"-format", tt.format, "-"}, in, &out, &errb)
			runtime.ReadMemStats(&after)
			assert.Equal(t, 2, code)
			assert.Contains(t, errb.String(), tt.want)
			assert.Less(t, errb.Len(), 1000, "the bad value is not printed")
			assert.Less(t, in.read, int64(3*maxValueBytes+readBufSize+64<<10), "read no further than the limit and buffers")
			assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(16*maxValueBytes), "allocated in all")
		})
	}
}

// Impossible numbers are bad input named by file and line, under one
// limit on every path.
func TestImpossibleNumbers(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	aiperf := func(osl string) string {
		return `{"metadata":{"request_start_ns":1000000000,"request_end_ns":1500000000,"benchmark_phase":"profiling","was_cancelled":false},` +
			`"metrics":{"time_to_first_token":{"value":100,"unit":"ms"},"request_latency":{"value":400,"unit":"ms"},` +
			`"output_sequence_length":{"value":` + osl + `,"unit":"tokens"}},"error":null}` + "\n"
	}
	vllm := func(duration, outLen string) string {
		return `{"duration": ` + duration + `, "ttfts": [0.1], "itls": [[0.1]], "input_lens": [1], "output_lens": [` + outLen + `], "errors": [""]}`
	}
	for _, tt := range []struct{ name, file, want string }{
		{"records negative tokens", write("r.jsonl", `{"record":{"start":"2026-01-01T00:00:00Z","end":"2026-01-01T00:00:01Z","output_tokens":-5,"outcome":"ok"}}`+"\n"),
			"r.jsonl:1: output_tokens -5 is not a count"},
		{"aiperf 3e9 tokens", write("a.jsonl", aiperf("3e9")), "a.jsonl:1: output_sequence_length: 3e+09 is not a count"},
		{"aiperf 2^31 tokens", write("b.jsonl", aiperf("2147483648")), "b.jsonl:1: output_sequence_length: 2.147483648e+09 is not a count"},
		{"aiperf fractional tokens", write("c.jsonl", aiperf("1.5")), "c.jsonl:1: output_sequence_length: 1.5 is not a count"},
		{"vllm negative output_lens", write("v.json", vllm("1.0", "-1000")), "v.json:1: output_lens[0]: -1000 is not a count"},
		{"vllm absurd duration", write("d.json", vllm("1e300", "1")), `d.json:1: vLLM result without a positive "duration" (or one out of range: 1e+300 s)`},
		{"vllm NaN where read", write("n.json", `{"duration": 1.0, "ttfts": [NaN], "itls": [[]], "input_lens": [1], "output_lens": [1], "errors": [""]}`),
			"n.json:1: ttfts: a string (or NaN or Infinity) where a number is expected"},
		{"inference-perf negative tokens", write("i.json", `[{"start_time": 1.0, "end_time": 2.0, "info": {"response_metrics": {"output_tokens": -3, "output_token_times": [1.5]}}}]`),
			"i.json:1: request 0: output_tokens: -3 is not a count"},
		{"inference-perf absurd time", write("j.json", `[{"start_time": 1e300, "end_time": 2.0}]`),
			"j.json:1: request 0: start_time or end_time out of range"},
		{"aiperf NaN where read", write("e.jsonl", strings.Replace(aiperf("4"), `"value":400`, `"value":NaN`, 1)),
			"e.jsonl:1: malformed line: "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := runReport(t, tt.file)
			assert.Equal(t, 2, code)
			assert.Contains(t, errOut, tt.want)
		})
	}
}

// NaN and Infinity, as Python's json.dump writes them, are tolerated in
// the fields the report does not read.
func TestNonFiniteWhereNotRead(t *testing.T) {
	b, err := os.ReadFile("testdata/vllm_serve_start_times.json")
	require.NoError(t, err)
	doc := strings.Replace(string(b), `"std_ttft_ms": 50.0`, `"std_ttft_ms": NaN, "x": -Infinity, "y": [Infinity, "NaN -Infinity"]`, 1)
	require.NotEqual(t, string(b), doc)
	p := filepath.Join(t.TempDir(), "v.json")
	require.NoError(t, os.WriteFile(p, []byte(doc), 0o600))
	want := summaryOf(t, "testdata/vllm_serve_start_times.json")
	assert.Equal(t, want, summaryOf(t, p))

	line := readLines(t, "testdata/aiperf_20251009.jsonl")
	line[0] = strings.Replace(line[0], `"inter_token_latency":{"value":100.0`, `"inter_token_latency":{"value":NaN`, 1)
	p = filepath.Join(t.TempDir(), "a.jsonl")
	require.NoError(t, os.WriteFile(p, []byte(strings.Join(line, "\n")), 0o600))
	checkRecordsFixture(t, summaryOf(t, p))
}

func TestQuoteNonFinite(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`[NaN,-Infinity,Infinity,-1,"NaN\"x",null,true]`, `["NaN","-Infinity","Infinity",-1,"NaN\"x",null,true]`},
		{`{"a":NaN}`, `{"a":"NaN"}`},
		{`-`, `-`},
		{`NaN`, `"NaN"`},
	} {
		assert.Equal(t, tt.want, string(quoteLine(nil, []byte(tt.in))), tt.in)
		// The stream gives the same, split anywhere.
		for split := range len(tt.in) {
			q := &quoter{r: io.MultiReader(strings.NewReader(tt.in[:split]), strings.NewReader(tt.in[split:]))}
			got, err := io.ReadAll(q)
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(got), "%s split at %d", tt.in, split)
		}
	}
}

// A records file read as another format is bad input, not "0 requests".
func TestWrongFormatIsBadInput(t *testing.T) {
	for _, f := range formatNames() {
		if f == "records" {
			continue
		}
		t.Run(f, func(t *testing.T) {
			code, out, errOut := runReport(t, "-format", f, "testdata/records.jsonl")
			assert.Equal(t, 2, code, out)
			assert.Contains(t, errOut, "testdata/records.jsonl:")
		})
	}
}

// The counts by error type stay small whatever a file names.
func TestErrorTypesBounded(t *testing.T) {
	r := &level{}
	for i := range 1000 {
		r.countErrorType(strings.Repeat("x", i%100) + string(rune('a'+i%26)))
	}
	r.countErrorType("")
	assert.LessOrEqual(t, len(r.errorTypes), maxErrorTypes+2)
	assert.Equal(t, 1, r.errorTypes["unknown"])
	total := 0
	for k, n := range r.errorTypes {
		assert.LessOrEqual(t, len(k), 64)
		total += n
	}
	assert.Equal(t, 1001, total)
}
