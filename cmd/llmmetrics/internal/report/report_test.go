package report

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runReport runs Main and returns its exit status, stdout and stderr.
func runReport(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(context.Background(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// summaryOf runs "report -json" over files and decodes the Summary.
func summaryOf(t *testing.T, args ...string) llmmetrics.Summary {
	t.Helper()
	code, out, errOut := runReport(t, append([]string{"-json"}, args...)...)
	require.Equal(t, 0, code, "stderr: %s", errOut)
	var s llmmetrics.Summary
	require.NoError(t, json.Unmarshal([]byte(out), &s), out)
	return s
}

func p(d llmmetrics.Distribution, pc float64) time.Duration {
	v, _ := d.Percentile(pc)
	return v
}

const ms = time.Millisecond

// testdata/records.jsonl, by hand: requests [0, 410 ms) ok (TTFT 100 ms,
// 4 tokens, 3 gaps of 100 ms), [200, 600 ms) ok (TTFT 200 ms, 3 tokens, 2
// gaps of 100 ms), [300, 500 ms) error. The run spans 0–600 ms.
func checkRecordsFixture(t *testing.T, s llmmetrics.Summary) {
	t.Helper()
	assert.Equal(t, 3, s.Requests)
	assert.Equal(t, 2, s.Completed)
	assert.Equal(t, 1, s.Failed)
	assert.Equal(t, 600*ms, s.Duration)
	assert.Equal(t, 30, s.InputTokens) // completed requests only
	assert.Equal(t, 7, s.OutputTokens)
	assert.InDelta(t, 2/0.6, s.RequestThroughput, 1e-9)
	assert.InDelta(t, 7/0.6, s.OutputThroughput, 1e-9)
	assert.Equal(t, 2, s.TTFT.Count)
	assert.Equal(t, 150*ms, s.TTFT.Mean)
	assert.Equal(t, 195*ms, p(s.TTFT, 95)) // 100 + 0.95·100
	assert.Equal(t, 100*ms, s.TPOT.Mean)   // 300/3 and 200/2
	assert.Equal(t, 5, s.ITL.Count)
	assert.Equal(t, 100*ms, s.ITL.Max)
	assert.Equal(t, 400*ms, s.E2EL.Mean) // to the last token: 400 and 400
	assert.Equal(t, 3, s.PeakConcurrency)
}

func TestRecordsFixture(t *testing.T) {
	checkRecordsFixture(t, summaryOf(t, "testdata/records.jsonl"))
	checkRecordsFixture(t, summaryOf(t, "-format", "records", "testdata/records.jsonl"))
}

// Several files are one run: the records of all files are summarized
// together, the duration spanning the earliest start to the latest end.
func TestSeveralFilesAreOneRun(t *testing.T) {
	lines := readLines(t, "testdata/records.jsonl")
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	require.NoError(t, os.WriteFile(a, []byte(lines[2]+"\n"), 0o600))
	require.NoError(t, os.WriteFile(b, []byte(lines[0]+"\n"+lines[1]+"\n"), 0o600))
	checkRecordsFixture(t, summaryOf(t, a, b))
}

func readLines(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile(name)
	require.NoError(t, err)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func TestTable(t *testing.T) {
	code, out, errOut := runReport(t, "testdata/records.jsonl")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "testdata/records.jsonl: records, 3 requests")
	assert.Contains(t, out, "3 requests: 2 ok, 1 failed, 0 canceled, over 600ms")
	assert.Regexp(t, `TTFT\s+2\s+150\.00\s+150\.00\s+190\.00\s+195\.00\s+199\.00\s+200\.00`, out)
	assert.Regexp(t, `ITL\s+5\s+100\.00`, out)
}

func TestGate(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		code int
		line string
	}{
		{"objective passes", []string{"-objective", "p95 ttft<=200ms"}, 0,
			"PASS p95 ttft<=200ms: value 195ms, limit 200ms, margin +5ms"},
		{"objective fails", []string{"-objective", "p95 ttft<=150ms"}, 1,
			"FAIL p95 ttft<=150ms: value 195ms, limit 150ms, margin -45ms"},
		{"one of two fails", []string{"-objective", "p95 ttft<=200ms", "-objective", "p99 e2el<=399ms"}, 1,
			"FAIL p99 e2el<=399ms: value 400ms, limit 399ms, margin -1ms"},
		{"objective at a percentile not in the defaults", []string{"-objective", "p99.9 itl<=100ms"}, 0,
			"PASS p99.9 itl<=100ms: value 100ms, limit 100ms, margin +0s"},
		{"slo attainment below the target", []string{"-slo", "ttft=300ms"}, 1,
			"FAIL slo ttft=300ms attainment>=90.00%: value 66.67% (2 of 3 requests), limit 90.00%, margin -23.33 points"},
		{"slo attainment at a lower target", []string{"-slo", "ttft=300ms", "-attainment", "0.6"}, 0,
			"PASS slo ttft=300ms attainment>=60.00%: value 66.67% (2 of 3 requests), limit 60.00%, margin +6.67 points"},
		{"no objective: no gate", nil, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runReport(t, append(tc.args, "testdata/records.jsonl")...)
			assert.Equal(t, tc.code, code, errOut)
			assert.Contains(t, out, tc.line)
			if tc.line == "" {
				assert.NotContains(t, out, "PASS")
				assert.NotContains(t, out, "FAIL")
			}
			// With -json the gate lines go to stderr, the Summary to stdout.
			code, out, errOut = runReport(t, append(append([]string{"-json"}, tc.args...), "testdata/records.jsonl")...)
			assert.Equal(t, tc.code, code)
			assert.Contains(t, errOut, tc.line)
			assert.True(t, json.Valid([]byte(out)))
		})
	}
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		f := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(f, []byte(text), 0o600))
		return f
	}
	good := readLines(t, "testdata/records.jsonl")[0]
	for _, tc := range []struct {
		name string
		args []string
		msg  string
	}{
		{"missing file", []string{filepath.Join(dir, "nope.jsonl")}, "nope.jsonl: no such file"},
		{"unknown format", []string{write("x.txt", "hello\n")}, "x.txt:1: unknown format"},
		{"empty file", []string{write("e.jsonl", "\n\n")}, "e.jsonl:1: empty file"},
		{"malformed line", []string{write("m.jsonl", good+"\n\n"+`{"record": {"start": 3}}`+"\n")}, "m.jsonl:3: malformed line"},
		{"truncated line", []string{write("t.jsonl", good+"\n"+good[:40])}, "t.jsonl:2: malformed line"},
		{"times out of order", []string{write("o.jsonl", good+"\n"+
			strings.Replace(good, `"end":"2026-11-25T02:00:00.41Z"`, `"end":"2026-11-25T02:00:00.3Z"`, 1)+"\n")},
			"o.jsonl:2: record times out of order: end -100ms before the last token"},
		{"unknown -format", []string{"-format", "csv", "testdata/records.jsonl"}, `-format "csv": unknown format`},
		{"no file", nil, "no FILE given"},
		{"bad objective", []string{"-objective", "p95 ttft", "testdata/records.jsonl"}, "invalid argument: objective"},
		{"bad slo", []string{"-slo", "ttft=fast", "testdata/records.jsonl"}, "invalid argument: SLO ttft"},
		{"second file bad", []string{"testdata/records.jsonl", write("b.jsonl", "{")}, "b.jsonl:1:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runReport(t, tc.args...)
			assert.Equal(t, 2, code)
			assert.Empty(t, out)
			assert.Contains(t, errOut, tc.msg)
		})
	}
}

func TestStdin(t *testing.T) {
	b, err := os.ReadFile("testdata/records.jsonl")
	require.NoError(t, err)
	var out, errb bytes.Buffer
	code := Main(context.Background(), []string{"-json", "-"}, bytes.NewReader(b), &out, &errb)
	require.Equal(t, 0, code, errb.String())
	var s llmmetrics.Summary
	require.NoError(t, json.Unmarshal(out.Bytes(), &s))
	checkRecordsFixture(t, s)
}

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	f := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(f, []byte(text), 0o600))
	return f
}

func TestFlagsAfterFiles(t *testing.T) {
	code, out, errOut := runReport(t, "testdata/records.jsonl", "-objective", "p95 ttft<=150ms")
	assert.Equal(t, 1, code, errOut)
	assert.Contains(t, out, "FAIL p95 ttft<=150ms")
	code, _, errOut = runReport(t, "--", "-objective")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "open -objective")
}

// Every fixture cut short anywhere is either still whole lines (JSON Lines
// formats: exit 0) or bad input (exit 2) named with the file; never a
// panic, never a silent partial summary of a JSON document.
func TestTruncatedFixtures(t *testing.T) {
	dir := t.TempDir()
	for _, fx := range []string{"records.jsonl", "records_bench.jsonl", "aiperf_docs.jsonl", "aiperf_derived.jsonl", "vllm_detailed.json",
		"vllm_benchmark_serving_append.json", "inference_perf_shape.json", "inference_perf_errors.json",
		"genai_perf_docs.json", "genai_perf_triton_test.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", fx))
		require.NoError(t, err)
		jsonl := strings.HasSuffix(fx, ".jsonl")
		for cut := 1; cut < len(b)-1; cut += 1 + len(b)/97 {
			if jsonl && (b[cut-1] == '\n' || b[cut] == '\n') {
				continue // whole lines: a valid shorter file
			}
			f := writeFile(t, dir, "cut-"+fx, string(b[:cut]))
			code, _, errOut := runReport(t, "-format", formatOf(fx), f)
			if strings.HasPrefix(fx, "vllm_append") && code == 0 {
				continue // cut after the first document: one whole result
			}
			require.Equal(t, 2, code, "%s cut at %d: %s", fx, cut, errOut)
			assert.Contains(t, errOut, "cut-"+fx)
		}
	}
}

func formatOf(fixture string) string {
	for _, p := range []struct{ prefix, format string }{{"records", "records"}, {"aiperf", "aiperf"}, {"vllm", "vllm"},
		{"inference_perf", "inference-perf"}, {"genai_perf", "genai-perf"}} {
		if strings.HasPrefix(fixture, p.prefix) {
			return p.format
		}
	}
	return "auto"
}

// testdata/records_bench.jsonl, a real bench run's first three records;
// figures from their timestamps: the run spans 16,109,057 ns; TTFTs
// 9,989,247, 7,876,948 and 2,936,373 ns; E2ELs 11,613,994, 9,736,970 and
// 4,403,763 ns; TPOTs 541,582.33, 620,007.33 and 489,130 ns.
func TestRecordsFromBench(t *testing.T) {
	s := summaryOf(t, "testdata/records_bench.jsonl")
	assert.Equal(t, 3, s.Completed)
	assert.Equal(t, 16109057*time.Nanosecond, s.Duration)
	assert.Equal(t, 50, s.InputTokens)
	assert.Equal(t, 12, s.OutputTokens)
	assert.Equal(t, 6934189*time.Nanosecond, s.TTFT.Mean) // 20,802,568 / 3
	assert.Equal(t, 6934189*time.Nanosecond, s.TTFO.Mean) // first_output = first_token
	assert.Equal(t, 11613994*time.Nanosecond, s.E2EL.Max)
	assert.Equal(t, 550240*time.Nanosecond, s.TPOT.Mean) // 550,239.89 rounded
	assert.Equal(t, 9, s.ITL.Count)
	assert.Equal(t, 1860022*time.Nanosecond, s.ITL.Max)
	assert.Equal(t, 2, s.PeakConcurrency)
}
