package saturation

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmmetrics/llmmetrics"
)

// realData is the project's real third-party data beside the repository
// (never copied into it).
const realData = "../../shared/realdata/saved-results/"

// aiperfRecords reads an aiperf profile_export.jsonl into Records: the
// request's start, its first token TTFT later, and its inter-chunk
// latencies as gaps.
func aiperfRecords(t *testing.T, name string) []llmmetrics.Record {
	t.Helper()
	f, err := os.Open(realData + name)
	if err != nil {
		t.Skip("the real data is not beside the repository:", err)
	}
	defer f.Close()
	type value struct {
		Value json.RawMessage `json:"value"`
	}
	var out []llmmetrics.Record
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		var line struct {
			Metadata struct {
				Start int64 `json:"request_start_ns"`
			} `json:"metadata"`
			Metrics struct {
				TTFT value `json:"time_to_first_token"`
				ICL  value `json:"inter_chunk_latency"`
			} `json:"metrics"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line))
		var ttft float64
		var gaps []float64
		require.NoError(t, json.Unmarshal(line.Metrics.TTFT.Value, &ttft))
		require.NoError(t, json.Unmarshal(line.Metrics.ICL.Value, &gaps))
		ns := func(ms float64) time.Duration { return time.Duration(math.Round(ms * 1e6)) }
		r := llmmetrics.Record{Start: time.Unix(0, line.Metadata.Start), Chunks: len(gaps) + 1}
		r.FirstToken = r.Start.Add(ns(ttft))
		r.LastToken = r.FirstToken
		for _, g := range gaps {
			r.ITL = append(r.ITL, ns(g))
			r.LastToken = r.LastToken.Add(ns(g))
		}
		r.End, r.OutputTokens = r.LastToken, r.Chunks
		out = append(out, r)
	}
	require.NoError(t, sc.Err())
	return out
}

// A real aiperf run of 64 requests at concurrency 8 (NVIDIA's aiperf test
// fixture): 12,729 gaps, median 18.459965 ms (the middle one). None is
// over 5× the median; 6 are over 2× (37–45 ms), and no other request's
// first token arrived at the end or the middle of any of them (counted
// independently, in Python, from the file): no prefill stall.
func TestCountStallsRealRun(t *testing.T) {
	recs := aiperfRecords(t, "aiperf_qwen_concurrency8.jsonl")
	require.Len(t, recs, 64)
	for _, tc := range []struct {
		factor                   float64
		threshold                time.Duration
		long, overlap, atRandomN int
	}{
		{5, 92299825, 0, 0, 0},
		{2, 36919930, 6, 0, 0},
	} {
		st, ok := CountStalls(recs, tc.factor)
		require.True(t, ok)
		assert.Equal(t, Stalls{MedianITL: 18459965, Factor: tc.factor, Threshold: tc.threshold, Gaps: 12729,
			LongGaps: tc.long, Overlapping: tc.overlap, AtRandom: tc.atRandomN}, st)
		res, err := Find([]Level{{Load: 8, Summary: llmmetrics.Summary{OutputThroughput: 1}, PrefillStalls: &st}}, Options{})
		require.NoError(t, err)
		assert.Empty(t, res.Levels[0].Reasons)
	}
}
