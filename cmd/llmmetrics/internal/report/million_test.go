package report

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/stretchr/testify/require"
)

// TestMillionAIPerfRecords measures report over a generated aiperf
// profile_export.jsonl of LLMMETRICS_REPORT_BENCH records (e.g. 1000000):
// the time to read and to summarize, the peak live heap per record, and a
// plain Python json.loads + numpy pass over the same file, in one run. It
// is skipped unless the variable is set (the file is about 1 GB per
// million records, written to a temporary directory and removed).
//
//	LLMMETRICS_REPORT_BENCH=1000000 go test -run TestMillionAIPerfRecords -v -timeout 30m ./cmd/llmmetrics/internal/report
func TestMillionAIPerfRecords(t *testing.T) {
	nStr := os.Getenv("LLMMETRICS_REPORT_BENCH")
	if nStr == "" {
		t.Skip("set LLMMETRICS_REPORT_BENCH=1000000 to run")
	}
	n, err := strconv.Atoi(nStr)
	require.NoError(t, err)
	dir := t.TempDir()
	file := filepath.Join(dir, "profile_export.jsonl")
	size := writeAIPerfFile(t, file, n)
	t.Logf("file: %d records, %d bytes (%.0f bytes per record), 16 inter-chunk gaps each", n, size, float64(size)/float64(n))

	// Go: read + Summarize, with the live heap sampled every millisecond.
	runtime.GC()
	base := heapBytes()
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tk := time.NewTicker(time.Millisecond)
		defer tk.Stop()
		for {
			if h := heapBytes(); h > peak.Load() {
				peak.Store(h)
			}
			select {
			case <-stop:
				return
			case <-tk.C:
			}
		}
	}()
	t0 := time.Now()
	r, err := readFiles(context.Background(), []string{file}, "auto", nil, llmmetrics.SummaryOptions{}, false, false)
	require.NoError(t, err)
	t1 := time.Now()
	s := r.levels[0].sum.Summary()
	t2 := time.Now()
	if h := heapBytes(); h > peak.Load() {
		peak.Store(h)
	}
	close(stop)
	<-done
	require.Equal(t, n, s.Completed)
	require.Equal(t, 16*n, s.ITL.Count)
	runtime.GC() // twice: Summary's pooled buffers go on the second
	runtime.GC()
	retained := float64(heapBytes()-base) / float64(n) // the numbers, held by r's Summarizer
	runtime.KeepAlive(r)
	perRec := float64(peak.Load()-base) / float64(n)
	t.Logf("go: read %v, Summary %v, total %v; peak heap %.0f MB above the start, %.0f bytes per record (%.1f per gap)",
		t1.Sub(t0).Round(time.Millisecond), t2.Sub(t1).Round(time.Millisecond), t2.Sub(t0).Round(time.Millisecond),
		float64(peak.Load()-base)/1e6, perRec, perRec/16)
	t.Logf("go: live heap after a GC, the Summarizer held: %.0f bytes per record (%.1f per gap)", retained, retained/16)
	t.Logf("go: p99 ttft %v, p99 itl %v", pct99(s.TTFT), pct99(s.ITL))
	r = nil
	runtime.GC()

	// Python: json.loads per line, numpy for the statistics.
	py := `
import json, sys, time, resource
import numpy as np
t0 = time.perf_counter()
ttft, lat, itl = [], [], []
with open(sys.argv[1]) as f:
    for line in f:
        d = json.loads(line)
        m = d["metrics"]
        ttft.append(m["time_to_first_token"]["value"])
        lat.append(m["request_latency"]["value"])
        itl.extend(m["inter_chunk_latency"]["value"])
t1 = time.perf_counter()
a, b, c = np.array(ttft), np.array(lat), np.array(itl)
out = [np.mean(a), np.percentile(a, 99), np.mean(b), np.percentile(c, 99), np.std(c)]
t2 = time.perf_counter()
print("python: read %.1fs, numpy %.2fs, total %.1fs; peak RSS %.0f MB; p99 ttft %.3f ms, p99 itl %.3f ms" % (
    t1 - t0, t2 - t1, t2 - t0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, out[1], out[3]))
`
	cmd := exec.Command("/usr/bin/python3", "-c", py, file)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	t.Logf("%s", out)
}

func pct99(d llmmetrics.Distribution) time.Duration {
	v, _ := d.Percentile(99)
	return v
}

// heapBytes is the live heap objects' size (runtime/metrics: no
// stop-the-world).
func heapBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// writeAIPerfFile writes n aiperf records in the writer's shape (the
// documented success record, with 16 inter-chunk gaps) and returns the
// file's size. LLMMETRICS_REPORT_LUMPY=1 gives the gaps only 13 distinct
// values instead (the worst case of Summary's transient memory).
func writeAIPerfFile(t *testing.T, name string, n int) int64 {
	f, err := os.Create(name)
	require.NoError(t, err)
	w := bufio.NewWriterSize(f, 1<<20)
	start := int64(1759813207532900363)
	lumpy := os.Getenv("LLMMETRICS_REPORT_LUMPY") == "1"
	for i := range n {
		s := start + int64(i)*1_000_000 // one request per millisecond
		ttft := 200 + float64(i%97)
		icl := make([]byte, 0, 256)
		sum := 0.0
		for j := range 16 {
			// 4.5 to 5.5 ms in steps of 100 ns: spread as measured gaps
			// are (with few distinct values, the buckets around each
			// percentile would hold a large share of all gaps, and
			// Summary gathers those buckets: see BENCHMARKS.md).
			v := 4.5 + float64((i*7+j*13)%10007)*0.0001
			if lumpy {
				v = 4.5 + float64((i+j)%13)*0.1
			}
			sum += v
			if j > 0 {
				icl = append(icl, ',')
			}
			icl = strconv.AppendFloat(icl, v, 'f', 6, 64)
		}
		lat := ttft + sum
		end := s + int64(lat*1e6) + 5_000_000
		fmt.Fprintf(w, `{"metadata":{"session_num":%d,"x_request_id":"7609a2e7-aa53-4ab1-98f4-%012d","x_correlation_id":"32ee4f33-cfca-4cfc-988f-%012d","conversation_id":"77aa5b0e-b305-423f-88d5-%012d","turn_index":0,"request_start_ns":%d,"request_ack_ns":%d,"request_end_ns":%d,"worker_id":"worker_359d423a","record_processor_id":"record_processor_1fa47cd7","benchmark_phase":"profiling","was_cancelled":false,"cancellation_time_ns":null},"metrics":{"input_sequence_length":{"value":550,"unit":"tokens"},"time_to_first_token":{"value":%.6f,"unit":"ms"},"request_latency":{"value":%.6f,"unit":"ms"},"output_token_count":{"value":17,"unit":"tokens"},"time_to_second_token":{"value":4.5,"unit":"ms"},"inter_chunk_latency":{"value":[%s],"unit":"ms"},"output_sequence_length":{"value":17,"unit":"tokens"},"inter_token_latency":{"value":5.2,"unit":"ms"},"output_token_throughput_per_user":{"value":192.1291415237666,"unit":"tokens/sec/user"}},"error":null}`+"\n",
			i, i, i, i, s, s+100_000_000, end, ttft, lat, icl)
	}
	require.NoError(t, w.Flush())
	st, err := f.Stat()
	require.NoError(t, err)
	require.NoError(t, f.Close())
	return st.Size()
}
