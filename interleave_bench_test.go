package llmmetrics

import (
	"testing"
	"time"

	"github.com/llmmetrics/llmmetrics/internal/benchloop"
)

// The interleaved-benchmark loop lives in internal/benchloop (the otelsdk
// benchmarks use it too); these names keep the root benchmarks short.

// blockTimes holds the times of an interleaved benchmark's blocks: [block][round].
type blockTimes struct{ benchloop.Times }

// interleave is benchloop.Interleave.
func interleave(b *testing.B, blocks ...func()) blockTimes {
	return blockTimes{benchloop.Interleave(b, blocks...)}
}

// median is the median time of block k.
func (t blockTimes) median(k int) time.Duration { return t.Median(k) }

// ratio is the median over rounds of f of one round's block times.
func (t blockTimes) ratio(f func(round []time.Duration) float64) float64 { return t.Ratio(f) }

var (
	over          = benchloop.Over
	perUnit       = benchloop.PerUnit
	parallelBlock = benchloop.ParallelBlock
)
