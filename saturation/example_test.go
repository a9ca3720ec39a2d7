package saturation_test

import (
	"fmt"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/saturation"
)

func ExampleFind() {
	level := func(users, tokPerSec float64) saturation.Level {
		return saturation.Level{Load: users, Summary: llmmetrics.Summary{OutputThroughput: tokPerSec}}
	}
	kv := 0.98
	levels := []saturation.Level{level(10, 5_000), level(50, 25_000), level(100, 35_000), level(200, 30_000)}
	levels[2].Server = &saturation.Server{KVCacheUsage: &kv}
	res, err := saturation.Find(levels, saturation.Options{})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Found, res.Load)
	for _, r := range res.Reasons {
		fmt.Printf("%s: %s\n", r.Signal, r)
	}
	// Output:
	// true 100
	// knee: knee: from load 50 to 100 throughput grew by 200 tok/s per unit of load, 40% of linear scaling (threshold 50%)
	// kv_cache: KV cache at 98% on average
}

func ExampleFind_repeats() {
	// Each load ran three times; the knee is decided from the intervals.
	repeat := func(users float64, tokPerSec ...float64) saturation.Level {
		l := saturation.Level{Load: users}
		for _, t := range tokPerSec {
			l.Repeats = append(l.Repeats, llmmetrics.Summary{OutputThroughput: t})
		}
		return l
	}
	res, err := saturation.Find([]saturation.Level{
		repeat(8, 1000, 1010, 990), repeat(16, 1950, 1990, 1970), repeat(32, 2400, 2500, 2450),
	}, saturation.Options{})
	if err != nil {
		panic(err)
	}
	for _, l := range res.Levels {
		fmt.Printf("load %g: %.0f ± %.0f tok/s\n", l.Load, l.Throughput, l.ThroughputCI)
	}
	fmt.Println(res.Found, res.Load)
	fmt.Println(res.Reasons[0])
	// Output:
	// load 8: 1000 ± 25 tok/s
	// load 16: 1970 ± 50 tok/s
	// load 32: 2450 ± 124 tok/s
	// true 32
	// knee: from load 16 to 32 throughput grew by 30 tok/s per unit of load, 24% of linear scaling (95% interval 15% to 34%) (threshold 50%)
}
