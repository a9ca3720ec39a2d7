package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRadixSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	shapes := map[string]func() uint64{
		"8 bits":    func() uint64 { return rng.Uint64() & 0xff },
		"32 bits":   func() uint64 { return rng.Uint64() & 0xffff_ffff },
		"64 bits":   func() uint64 { return rng.Uint64() },
		"sparse":    func() uint64 { return rng.Uint64() & 0xff00 },
		"all equal": func() uint64 { return 42 },
		// One far key puts every other key into the first top-digit
		// bucket: that bucket goes through lsdRadixSort.
		"clustered": func() uint64 {
			if rng.IntN(5000) == 0 {
				return math.MaxUint64
			}
			return rng.Uint64() & 0xf_ffff
		},
	}
	for name, gen := range shapes {
		for _, n := range []int{0, 1, 2, 255, 511, 512, 1000, 5000, 20000} {
			k := make([]uint64, n)
			for i := range k {
				k[i] = gen()
			}
			want := slices.Clone(k)
			slices.Sort(want)
			RadixSort(k, make([]uint64, n))
			require.Equal(t, want, k, "%s n=%d", name, n)
		}
	}
}

func TestLSDRadixSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, bitsWide := range []uint{1, 13, 14, 26, 27, 39, 40, 63, 64} {
		k := make([]uint64, 3000)
		for i := range k {
			k[i] = 1000 + rng.Uint64()>>(64-bitsWide)
		}
		want := slices.Sorted(slices.Values(k))
		lsdRadixSort(k, make([]uint64, len(k)))
		require.Equal(t, want, k, "spread of %d bits", bitsWide)
	}
}
