package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// jsonLevels runs "report -json" and returns each level's Summary and raw
// JSON by its label.
func jsonLevels(t *testing.T, args ...string) (map[string]llmmetrics.Summary, map[string]map[string]json.RawMessage) {
	t.Helper()
	code, out, errOut := runReport(t, append([]string{"-json"}, args...)...)
	require.Equal(t, 0, code, "stderr: %s", errOut)
	var doc struct {
		Levels []struct {
			Level   string          `json:"level"`
			Summary json.RawMessage `json:"summary"`
		} `json:"levels"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	sums, raws := map[string]llmmetrics.Summary{}, map[string]map[string]json.RawMessage{}
	for _, l := range doc.Levels {
		var s llmmetrics.Summary
		require.NoError(t, json.Unmarshal(l.Summary, &s))
		var raw map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(l.Summary, &raw))
		sums[l.Level], raws[l.Level] = s, raw
	}
	return sums, raws
}

// The GuideLLM fixtures hold one sweep of three benchmarks, each in the
// shape of its version's writer (testdata/README.md), with times on exact
// binary fractions of a second from T = 2026-01-01T00:00:00Z. By hand:
//
//   - synchronous (concurrency 1): requests [0, 1.3125 s) and [1.5,
//     2.25 s); first tokens at +0.25 and +1.625 (TTFT 250 and 125 ms), last
//     at +1.25 and +2.125 with 5 and 3 tokens (TPOT 1000/4 = 250 and 500/2
//     = 250 ms; E2EL 1250 and 625 ms); first answer tokens (v0.7) at +0.5
//     and +1.625 (TTFO 500 and 125 ms); inputs 100 and 50.
//   - constant rate 2: requests at +10 (TTFT 500 ms, 9 tokens to +11.5:
//     TPOT 1000/8 = 125 ms, E2EL 1500 ms) and +10.5 (TTFT 250 ms, 5 tokens to
//     +11.25: TPOT 500/4 = 125 ms, E2EL 750 ms), inputs 200; one errored
//     (HTTP 500) from +11.5 to +11.625 and one incomplete (canceled) from +11
//     to +12 (v0.2 and later).
//   - Poisson rate 4: one request at +20, TTFT 62.5 ms, 9 tokens to
//     +20.5625 (TPOT 500/8 = 62.5 ms), end +20.625; its input count is not
//     saved (v0.4 and later), and the benchmark's totals say 10 successful
//     (a sample of one was saved).
const (
	glSync   = "concurrency 1 (synchronous)"
	glConst  = "rate 2 (constant arrivals)"
	glPois   = "rate 4 (Poisson arrivals)"
	glAsync2 = "rate 2 (asynchronous)" // v0.1's names
	glAsync4 = "rate 4 (asynchronous)"
)

func TestGuideLLMVersions(t *testing.T) {
	for _, tt := range []struct {
		file                string
		rate2, rate4        string
		itl, ttfo, canceled bool
		inputKnown4, cached bool
	}{
		{file: "guidellm_v01.json", rate2: glAsync2, rate4: glAsync4, itl: true},
		{file: "guidellm_v01.yaml", rate2: glAsync2, rate4: glAsync4, itl: true},
		{file: "guidellm_v02.json", rate2: glConst, rate4: glPois, canceled: true, inputKnown4: true},
		{file: "guidellm_v04.json", rate2: glConst, rate4: glPois, canceled: true},
		{file: "guidellm_v06.yaml", rate2: glConst, rate4: glPois, canceled: true},
		{file: "guidellm_v07.json", rate2: glConst, rate4: glPois, canceled: true, ttfo: true},
		{file: "guidellm_v07.yaml", rate2: glConst, rate4: glPois, canceled: true, ttfo: true},
		{file: "guidellm_v08.json", rate2: glConst, rate4: glPois, canceled: true, ttfo: true, cached: true},
	} {
		t.Run(tt.file, func(t *testing.T) {
			sums, raws := jsonLevels(t, "testdata/"+tt.file)
			require.Len(t, sums, 3)
			s := sums[glSync]
			assert.Equal(t, 2, s.Completed)
			assert.Equal(t, 2250*ms, s.Duration)
			assert.InDelta(t, 2/2.25, s.RequestThroughput, 1e-12)
			assert.Equal(t, 150, s.InputTokens)
			assert.Equal(t, 8, s.OutputTokens)
			assert.Equal(t, 187500*time.Microsecond, s.TTFT.Mean)
			assert.Equal(t, 243750*time.Microsecond, p(s.TTFT, 95)) // 125 + 0.95·125
			assert.Equal(t, 250*ms, s.TPOT.Mean)
			assert.Equal(t, 937500*time.Microsecond, s.E2EL.Mean)
			if tt.ttfo {
				assert.Equal(t, 312500*time.Microsecond, s.TTFO.Mean)
			} else {
				assert.Equal(t, 0, s.TTFO.Count)
			}
			if tt.itl {
				assert.Equal(t, 6, s.ITL.Count)
				assert.Equal(t, 250*ms, s.ITL.Mean)
			} else {
				assert.JSONEq(t, `{"count":0}`, string(raws[glSync]["itl"]), "no ITL: only its count, never a 0")
			}

			s = sums[tt.rate2]
			assert.Equal(t, 2, s.Completed)
			assert.Equal(t, 1, s.Failed)
			assert.Equal(t, 400, s.InputTokens)
			assert.Equal(t, 14, s.OutputTokens)
			assert.Equal(t, 375*ms, s.TTFT.Mean)
			assert.Equal(t, 125*ms, s.TPOT.Mean)
			assert.Equal(t, 1125*ms, s.E2EL.Mean)
			if tt.canceled {
				assert.Equal(t, 1, s.Canceled)
				assert.Equal(t, 2*time.Second, s.Duration) // +10 to the incomplete one's end, +12
			} else {
				assert.Equal(t, 0, s.Canceled)
				assert.Equal(t, 1500*ms, s.Duration) // v0.1's error has no time
			}
			assert.InDelta(t, 14/s.Duration.Seconds(), s.OutputThroughput, 1e-12)

			s = sums[tt.rate4]
			assert.Equal(t, 1, s.Completed)
			assert.Equal(t, 62500*time.Microsecond, s.TTFT.Mean)
			assert.Equal(t, 62500*time.Microsecond, s.TPOT.Mean)
			assert.Equal(t, 9, s.OutputTokens)
			assert.Equal(t, 625*ms, s.Duration)
			if tt.inputKnown4 {
				assert.Equal(t, 64, s.InputTokens)
			} else {
				assert.Equal(t, "null", string(raws[tt.rate4]["input_tokens"]), "an unknown input count is null, not 0")
				assert.Equal(t, "null", string(raws[tt.rate4]["total_token_throughput"]))
			}
			if tt.cached {
				assert.Equal(t, 128, sums[tt.rate2].CachedInputTokens) // 64 + 64
			} else {
				assert.Equal(t, "null", string(raws[glSync]["cached_input_tokens"]))
			}
		})
	}
}

// The errors of each version: an HTTP status from httpx's message, the
// incomplete request canceled.
func TestGuideLLMErrorTypes(t *testing.T) {
	for _, f := range []string{"guidellm_v02.json", "guidellm_v07.json", "guidellm_v06.yaml"} {
		code, out, _ := runReport(t, "-level", "rate 2", "testdata/"+f)
		require.Equal(t, 0, code)
		assert.Contains(t, out, "failed and canceled by error_type: 500 ×1, canceled ×1", f)
	}
	code, out, _ := runReport(t, "testdata/guidellm_v01.json")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "failed and canceled by error_type: 500 ×1")
	assert.Contains(t, out, "saves no times for a failed request")
	for _, tt := range []struct{ msg, tb, want string }{
		{"Client error '429 Too Many Requests' for url 'http://x/v1/chat/completions'", "", "429"},
		{"boom", "Traceback (most recent call last):\n  File \"x.py\", line 1\nhttpx.ReadTimeout: timed out", "ReadTimeout"},
		{"boom", "", "_OTHER"},
		{"", "", ""},
	} {
		msg, tb := tt.msg, tt.tb
		var tbp *string
		if tb != "" {
			tbp = &tb
		}
		assert.Equal(t, tt.want, glErrorType(&msg, tbp), tt.msg)
	}
}

// A sweep gives one level per benchmark; -level picks one to print and
// gate, by its name or its number; objectives apply to every level
// otherwise, each failure naming its level.
func TestGuideLLMLevelsAndGate(t *testing.T) {
	s := summaryOf(t, "-level", "rate 2", "testdata/guidellm_v07.json")
	assert.Equal(t, 375*ms, s.TTFT.Mean)
	s = summaryOf(t, "-level", "4", "testdata/guidellm_v07.json")
	assert.Equal(t, 1, s.Requests)
	s = summaryOf(t, "-level", "Concurrency=1", "testdata/guidellm_v07.json")
	assert.Equal(t, 2, s.Requests)

	code, out, _ := runReport(t, "-level", "rate 2", "-objective", "p95 ttft<=200ms", "testdata/guidellm_v07.json")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "FAIL p95 ttft<=200ms: value 487.5ms, limit 200ms, margin -287.5ms") // 250 + 0.95·250
	assert.NotContains(t, out, "level: concurrency 1")

	code, out, _ = runReport(t, "-objective", "p99 ttft<=300ms", "testdata/guidellm_v07.json")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "PASS p99 ttft<=300ms at "+glSync+": value 248.75ms")
	assert.Contains(t, out, "FAIL p99 ttft<=300ms at "+glConst+": value 497.5ms")
	assert.Contains(t, out, "PASS p99 ttft<=300ms at "+glPois+": value 62.5ms")

	code, _, errOut := runReport(t, "-level", "rate 3", "testdata/guidellm_v07.json")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, `-level "rate 3": no such level; the input has "concurrency 1 (synchronous)", "rate 2 (constant arrivals)", "rate 4 (Poisson arrivals)"`)
	code, _, errOut = runReport(t, "-level", "rate", "testdata/guidellm_v07.json")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "names 2 levels")
}

// What the file's own counts say against what its lists hold is said, and
// what GuideLLM cannot say is named.
func TestGuideLLMNotes(t *testing.T) {
	code, out, _ := runReport(t, "testdata/guidellm_v07.json")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "its request_totals say 10 successful, 0 incomplete, 0 errored; its lists hold 1, 0, 0")
	assert.Contains(t, out, "no ITL: GuideLLM (v0.2 and later)")
	assert.Contains(t, out, "N is GuideLLM's token_iterations")
	assert.Contains(t, out, "input tokens unknown")
	assert.NotContains(t, out, "no TTFO")
	_, out, _ = runReport(t, "testdata/guidellm_v04.json")
	assert.Contains(t, out, "no TTFO: GuideLLM saves the first answer token (first_output_token_iteration) from v0.7 only")
}

// Bad GuideLLM input is exit 2 with the file, line and request named.
func TestGuideLLMBadInput(t *testing.T) {
	b, err := os.ReadFile("testdata/guidellm_v07.json")
	require.NoError(t, err)
	dir := t.TempDir()
	for _, tt := range []struct{ name, from, to, want string }{
		{"end before start", `"request_end": 1767225601.3125`, `"request_end": 1767225599.0`, "benchmark 0: requests.successful[0]: record times out of order"},
		{"strategy", `"type_": "poisson"`, `"type_": "zigzag"`, `benchmark 2: config.strategy: unknown strategy "zigzag"`},
		{"count", `"text_tokens": 9,`, `"text_tokens": -9,`, "output_metrics: -9 is not a count"},
		{"truncated", `"total": null}`, `"total": nul`, "malformed JSON"},
		{"time out of range", `"request_start": 1767225600.0,`, `"request_start": 1e300,`, "info.timings.request_start 1e+300 out of range"},
		{"NaN time", `"request_start": 1767225600.0,`, `"request_start": NaN,`, "a string (or NaN or Infinity) where a number is expected"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := string(b)
			require.Contains(t, s, tt.from)
			name := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_")+".json")
			require.NoError(t, os.WriteFile(name, []byte(strings.Replace(s, tt.from, tt.to, 1)), 0o600))
			code, _, errOut := runReport(t, name)
			assert.Equal(t, 2, code)
			assert.Contains(t, errOut, name+":1: ")
			assert.Contains(t, errOut, tt.want)
		})
	}
	y, err := os.ReadFile("testdata/guidellm_v07.yaml")
	require.NoError(t, err)
	bad := filepath.Join(dir, "bad.yaml")
	ys := strings.Replace(string(y), "token_iterations: 5", "token_iterations: [5]", 1)
	require.NoError(t, os.WriteFile(bad, []byte(ys), 0o600))
	code, _, errOut := runReport(t, bad)
	assert.Equal(t, 2, code)
	line := 1 + strings.Count(ys[:strings.Index(ys, "token_iterations: [5]")], "\n")
	assert.Contains(t, errOut, bad+":")
	assert.Contains(t, errOut, "malformed YAML")
	assert.Contains(t, errOut, bad+":"+strconv.Itoa(line)+": ")

	// YAML cut anywhere in a benchmark still parses; its sorted keys tell:
	// every benchmark and request ends with its type_.
	cut := filepath.Join(dir, "cut.yaml")
	require.NoError(t, os.WriteFile(cut, y[:5000], 0o600))
	code, _, errOut = runReport(t, cut)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, cut+":2: benchmark 0 ends before its last key (type_): the file is cut")

	defer func(old int) { maxYAMLBytes = old }(maxYAMLBytes)
	maxYAMLBytes = 1 << 10
	code, _, errOut = runReport(t, "testdata/guidellm_v07.yaml")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "a YAML report longer than the limit")
}
