package bench

import "math"

// meanCI returns the mean of xs and the half-width of its two-sided 95 %
// Student-t interval (0 for fewer than two values).
func meanCI(xs []float64) (mean, half float64) {
	n := len(xs)
	for _, v := range xs {
		mean += v
	}
	if n == 0 {
		return 0, 0
	}
	mean /= float64(n)
	if n < 2 {
		return mean, 0
	}
	var ss float64
	for _, v := range xs {
		ss += (v - mean) * (v - mean)
	}
	t := 1.96
	if n-1 <= len(tQuantile975) {
		t = tQuantile975[n-2]
	}
	return mean, t * math.Sqrt(ss/float64(n-1)) / math.Sqrt(float64(n))
}
