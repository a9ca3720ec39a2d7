package workload

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// buildN builds n requests of w (each turn answered "ok") and encodes
// their chat bodies.
func buildN(b *testing.B, w *Workload, n int) {
	for built := 0; built < n; {
		s, err := w.Next()
		if err == io.EOF {
			b.Fatalf("the source ended after %d requests", built)
		}
		if err != nil {
			b.Fatal(err)
		}
		for built < n {
			r, ok := s.Next()
			if !ok {
				break
			}
			_ = Body("chat", "model", r, false)
			s.Answer("ok", 1)
			built++
		}
	}
}

// writeTrace writes a Mooncake trace of n lines: a 100-token prompt each
// (one hash block of 512 shared by every tenth line), 10 ms apart.
func writeTrace(tb testing.TB, n int) string {
	path := filepath.Join(tb.TempDir(), "trace.jsonl")
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for i := range n {
		fmt.Fprintf(w, "{\"timestamp\": %d, \"input_length\": 100, \"output_length\": 10, \"hash_ids\": [%d]}\n", 10*i, i/10)
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	f.Close()
	return path
}

// writeDatasets writes a ShareGPT array and an OpenAI JSONL file of n
// entries each (a 170-token prompt, an answer of 100 tokens).
func writeDatasets(tb testing.TB, n int) (sharegpt, openai string) {
	dir := tb.TempDir()
	sharegpt, openai = filepath.Join(dir, "sharegpt.json"), filepath.Join(dir, "openai.jsonl")
	tx := Text{CharsPerToken: 4}
	rng := seeded(9, 9, 9)
	var sg, oa []byte
	sg = append(sg, '[')
	for i := range n {
		p, a := tx.Words(rng, 170), tx.Words(rng, 100)
		if i > 0 {
			sg = append(sg, ",\n"...)
		}
		sg = fmt.Appendf(sg, `{"id": "e%d", "conversations": [{"from": "human", "value": %q}, {"from": "gpt", "value": %q}]}`, i, p, a)
		oa = fmt.Appendf(oa, "{\"messages\": [{\"role\": \"user\", \"content\": %q}], \"max_tokens\": 100}\n", p)
	}
	sg = append(sg, "]\n"...)
	if os.WriteFile(sharegpt, sg, 0o644) != nil || os.WriteFile(openai, oa, 0o644) != nil {
		tb.Fatal("cannot write the datasets")
	}
	return sharegpt, openai
}

// BenchmarkBuild10k: the time to build and encode 10,000 requests of each
// source; "baseline" encodes one fixed 170-token request 10,000 times.
func BenchmarkBuild10k(b *testing.B) {
	const n = 10_000
	trace := writeTrace(b, n)
	sharegpt, openai := writeDatasets(b, n)
	fixed := Request{Messages: []Message{{Role: "user", Content: Text{CharsPerToken: 4}.Words(seeded(1, 1, 1), 170)}}, OutputTokens: 128}
	// A real server's per-word counts (here 1 or 2 tokens a word).
	counts := make([]int, len(FillerWords()))
	for i := range counts {
		counts[i] = 1 + i%2
	}
	counted, err := CountedText(4, counts)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for range n {
				_ = Body("chat", "model", fixed, false)
			}
		}
	})
	for _, tc := range []struct {
		name string
		c    Config
	}{
		{"synthetic", Config{Input: Dist{Kind: "fixed", A: 170}, Output: Dist{Kind: "fixed", A: 128}}},
		{"distributions", Config{Input: Dist{Kind: "lognormal", A: 170, B: 80}, Output: Dist{Kind: "normal", A: 128, B: 30}}},
		{"prefix", Config{Input: Dist{Kind: "fixed", A: 70}, PrefixTokens: 100, PrefixGroups: 8}},
		{"sessions", Config{Input: Dist{Kind: "fixed", A: 170}, Turns: 4}},
		{"dataset-sharegpt", Config{Dataset: sharegpt}},
		{"dataset-openai", Config{Dataset: openai}},
		{"trace", Config{Trace: trace}},
		{"synthetic-counted", Config{Input: Dist{Kind: "fixed", A: 170}, Output: Dist{Kind: "fixed", A: 128}, Text: counted}},
		{"sessions-counted", Config{Input: Dist{Kind: "fixed", A: 170}, Turns: 4, Text: counted}},
		{"trace-counted", Config{Trace: trace, Text: counted}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				w, err := Open(tc.c)
				if err != nil {
					b.Fatal(err)
				}
				buildN(b, w, n)
				w.Close()
			}
		})
	}
}

// BenchmarkReplayMemory: the heap held while a 1,000,000-line trace is
// opened and all its requests built, one at a time (the largest HeapInuse
// seen, sampled every 10,000 requests, after a GC).
func BenchmarkReplayMemory(b *testing.B) {
	const n = 1_000_000
	trace := writeTrace(b, n)
	st, _ := os.Stat(trace)
	for b.Loop() {
		var peak uint64
		sample := func() {
			runtime.GC()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapInuse)
		}
		sample()
		base := peak
		w, err := Open(Config{Trace: trace})
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; ; i++ {
			s, err := w.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			r, _ := s.Next()
			_ = Body("chat", "model", r, false)
			if i%10_000 == 0 {
				sample()
			}
		}
		w.Close()
		b.ReportMetric(float64(peak-base)/(1<<20), "MiB-held")
		b.ReportMetric(float64(st.Size())/(1<<20), "MiB-file")
	}
}
