package llmmetrics_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/llmmetrics/llmmetrics"
)

// streamedRecord builds an OK record: first token after ttft, then one chunk every
// gap, n output tokens.
func streamedRecord(start time.Time, ttft, gap time.Duration, n int) llmmetrics.Record {
	r := llmmetrics.Record{Start: start, FirstToken: start.Add(ttft), InputTokens: 100, OutputTokens: n, Chunks: n}
	last := r.FirstToken
	for range n - 1 {
		r.ITL = append(r.ITL, gap)
		last = last.Add(gap)
	}
	r.LastToken, r.End = last, last
	return r
}

func ExampleSummarize() {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	records := []llmmetrics.Record{
		streamedRecord(t0, 120*time.Millisecond, 20*time.Millisecond, 51),
		streamedRecord(t0.Add(time.Second), 180*time.Millisecond, 25*time.Millisecond, 41),
		streamedRecord(t0.Add(2*time.Second), 450*time.Millisecond, 30*time.Millisecond, 21),
		{Start: t0.Add(3 * time.Second), End: t0.Add(3100 * time.Millisecond), Outcome: llmmetrics.OutcomeError},
	}
	s := llmmetrics.Summarize(records, llmmetrics.SummaryOptions{
		Duration: 4 * time.Second,
		SLO:      llmmetrics.SLO{TTFT: 200 * time.Millisecond, TPOT: 100 * time.Millisecond},
	})
	p99, _ := s.TTFT.Percentile(99)
	fmt.Printf("completed %d of %d, %.2f req/s, %.2f tok/s\n", s.Completed, s.Requests, s.RequestThroughput, s.OutputThroughput)
	fmt.Printf("TTFT median %v, p99 %v; TPOT mean %v; ITL mean %v\n", s.TTFT.Median, p99, s.TPOT.Mean, s.ITL.Mean)
	fmt.Printf("good %d, attainment %.0f%%, goodput %.2f tok/s\n", s.Goodput.Good, 100*s.Goodput.Attainment, s.Goodput.TokensPerSecond)
	// Output:
	// completed 3 of 4, 0.75 req/s, 28.25 tok/s
	// TTFT median 180ms, p99 444.6ms; TPOT mean 25ms; ITL mean 23.636364ms
	// good 2, attainment 50%, goodput 23.00 tok/s
}

func ExampleParseSLO() {
	slo, err := llmmetrics.ParseSLO("ttft=200ms,tpot=50ms,e2el=5s")
	if err != nil {
		panic(err)
	}
	fmt.Println(slo.TTFT, slo.TPOT, slo.E2EL)
	_, err = llmmetrics.ParseSLO("ttft=-1s")
	fmt.Println(err)
	// Output:
	// 200ms 50ms 5s
	// llmmetrics: invalid argument: negative SLO ttft limit -1s
}

func ExampleObjective_Check() {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var records []llmmetrics.Record
	for i := range 20 {
		records = append(records, streamedRecord(t0, time.Duration(100+10*i)*time.Millisecond, 20*time.Millisecond, 10))
	}
	s := llmmetrics.Summarize(records, llmmetrics.SummaryOptions{Percentiles: []float64{95}})
	for _, text := range []string{"p95 ttft<=300ms", "p95 ttft<=250ms"} {
		o, err := llmmetrics.ParseObjective(text)
		if err != nil {
			panic(err)
		}
		r, err := o.Check(s)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%v: pass=%v value=%v margin=%v\n", o, r.Pass, r.Value, r.Margin)
	}
	// Output:
	// p95 ttft<=300ms: pass=true value=280.5ms margin=19.5ms
	// p95 ttft<=250ms: pass=false value=280.5ms margin=-30.5ms
}

func ExampleCostPerMillionTokens() {
	usd, err := llmmetrics.CostPerMillionTokens(3.00, 4000) // $3/h GPU at 4,000 tok/s
	if err != nil {
		panic(err)
	}
	fmt.Printf("$%.3f per million tokens\n", usd)
	price := llmmetrics.Price{Input: 3, CachedInput: 0.30, Output: 15}
	cost, err := price.Cost(llmmetrics.Usage{InputTokens: 10_000, CachedInputTokens: 8_000, OutputTokens: 1_000})
	if err != nil {
		panic(err)
	}
	fmt.Printf("$%.4f for 10k input (8k cached) + 1k output tokens\n", cost)
	// Nothing produced: the cost per token is undefined, not infinite.
	_, err = llmmetrics.CostPerMillionTokens(3.00, 0)
	fmt.Println(errors.Is(err, llmmetrics.ErrUndefined), err)
	// Output:
	// $0.208 per million tokens
	// $0.0234 for 10k input (8k cached) + 1k output tokens
	// true llmmetrics: undefined result: cost per token at 0 tokens per second
}

// A Summarizer gives Summarize's figures for records added one at a time,
// keeping only the numbers: for a run too large to hold as Records.
func ExampleSummarizer() {
	z, err := llmmetrics.NewSummarizer(llmmetrics.SummaryOptions{SLO: llmmetrics.SLO{TTFT: 200 * time.Millisecond, TPOT: 100 * time.Millisecond}})
	if err != nil {
		panic(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 1000 {
		// e.g. one line of a benchmark tool's results at a time
		ttft := time.Duration(100+i%200) * time.Millisecond
		z.Add(streamedRecord(t0.Add(time.Duration(i)*10*time.Millisecond), ttft, 20*time.Millisecond, 11))
	}
	z.SetDuration(10 * time.Second) // known once the run ends
	s := z.Summary()
	// TTFT: 100 … 299 ms, five of each. The median is between the 500th
	// and 501st values, 199 and 200 ms; p99 at rank 0.99 × 999 = 989.01,
	// between 297 and 298 ms. 505 requests have TTFT ≤ 200 ms.
	p99, _ := s.TTFT.Percentile(99)
	fmt.Printf("%d requests, %.0f tok/s; TTFT median %v, p99 %v; %d ITL gaps; attainment %.1f%%\n",
		s.Requests, s.OutputThroughput, s.TTFT.Median, p99, s.ITL.Count, 100*s.Goodput.Attainment)
	// Output:
	// 1000 requests, 1100 tok/s; TTFT median 199.5ms, p99 297.01ms; 10000 ITL gaps; attainment 50.5%
}
