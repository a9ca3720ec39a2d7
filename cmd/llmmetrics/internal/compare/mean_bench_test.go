package compare

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkResampledMean measures the inner loop of a mean's bootstrap
// against a loop of rand.Rand.IntN draws (the baseline).
func BenchmarkResampledMean(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	xs := lognormal(rng, 1000, 1)
	b.Run("IntN", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sum := 0.0
			for range len(xs) {
				sum += xs[rng.IntN(len(xs))]
			}
			_ = sum
		}
	})
	b.Run("resampledMean", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = resampledMean(xs, rng.Uint64())
		}
	})
}
