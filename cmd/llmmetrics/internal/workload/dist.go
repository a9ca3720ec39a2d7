package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// MaxLength bounds the lengths a Dist takes (1,000,000 tokens, past every
// model's context; about 4 MB of text per request).
const MaxLength = 1_000_000

// Dist is a distribution of token lengths: a fixed number, or uniform,
// normal or lognormal. Draws are rounded to whole tokens and clamped to
// [1, Max] (Max 0: no upper bound). The zero value is not usable; get one
// from ParseDist.
type Dist struct {
	Kind   string  // "fixed", "uniform", "normal", "lognormal"
	A, B   float64 // fixed: A; uniform: MIN A, MAX B; normal and lognormal: MEAN A, SD B (of the lengths, not of their log)
	Max    int     // upper clamp (the model's context when known); 0: none
	source string
}

// ParseDist parses "N", "uniform:MIN-MAX", "normal:MEAN,SD" or
// "lognormal:MEAN,SD". For lognormal, MEAN and SD are those of the lengths
// themselves (as aiperf and inference-perf take them), converted to the
// parameters of the underlying normal.
func ParseDist(s string) (Dist, error) {
	d := Dist{source: s}
	kind, args, found := strings.Cut(strings.TrimSpace(s), ":")
	if !found {
		v, err := strconv.Atoi(kind)
		if err != nil || v < 1 {
			return d, fmt.Errorf("bad length %q: want N ≥ 1, uniform:MIN-MAX, normal:MEAN,SD or lognormal:MEAN,SD", s)
		}
		if v > MaxLength {
			return d, fmt.Errorf("bad length %q: must be ≤ %d", s, MaxLength)
		}
		d.Kind, d.A = "fixed", float64(v)
		return d, nil
	}
	sep := ","
	if kind == "uniform" {
		sep = "-"
	}
	x, y, ok := strings.Cut(args, sep)
	a, errA := strconv.ParseFloat(strings.TrimSpace(x), 64)
	b, errB := strconv.ParseFloat(strings.TrimSpace(y), 64)
	if !ok || errA != nil || errB != nil || math.IsInf(a, 0) || math.IsInf(b, 0) || a != a || b != b {
		return d, fmt.Errorf("bad length %q: want %s:%s", s, kind, map[bool]string{true: "MIN-MAX", false: "MEAN,SD"}[kind == "uniform"])
	}
	d.Kind, d.A, d.B = kind, a, b
	if a > MaxLength || b > MaxLength {
		return d, fmt.Errorf("bad length %q: must be ≤ %d", s, MaxLength)
	}
	switch kind {
	case "uniform":
		if a < 1 || b < a {
			return d, fmt.Errorf("bad length %q: uniform needs 1 ≤ MIN ≤ MAX", s)
		}
	case "normal", "lognormal":
		if a <= 0 || b < 0 {
			return d, fmt.Errorf("bad length %q: %s needs MEAN > 0 and SD ≥ 0", s, kind)
		}
	default:
		return d, fmt.Errorf("bad length %q: unknown distribution %q (fixed N, uniform, normal, lognormal)", s, kind)
	}
	return d, nil
}

// String returns the distribution as ParseDist reads it.
func (d Dist) String() string {
	switch d.Kind {
	case "fixed":
		return strconv.Itoa(int(d.A))
	case "uniform":
		return fmt.Sprintf("uniform:%g-%g", d.A, d.B)
	}
	return fmt.Sprintf("%s:%g,%g", d.Kind, d.A, d.B)
}

// Mean returns the distribution's mean before clamping.
func (d Dist) Mean() float64 {
	if d.Kind == "uniform" {
		return (d.A + d.B) / 2
	}
	return d.A
}

// Draw returns one length from rng, rounded and clamped to [1, Max].
func (d Dist) Draw(rng *rand.Rand) int {
	var v float64
	switch d.Kind {
	case "fixed":
		v = d.A
	case "uniform":
		v = math.Floor(d.A + rng.Float64()*(d.B-d.A+1)) // whole numbers MIN…MAX, each equally likely
		v = min(v, d.B)
	case "normal":
		v = math.Round(d.A + d.B*rng.NormFloat64())
	case "lognormal":
		// The normal's σ² = ln(1 + SD²/MEAN²), μ = ln MEAN − σ²/2.
		s2 := math.Log1p(d.B * d.B / (d.A * d.A))
		v = math.Round(math.Exp(math.Log(d.A) - s2/2 + math.Sqrt(s2)*rng.NormFloat64()))
	}
	n := 1
	if v > 1 {
		n = int(min(v, 1<<30))
	}
	if d.Max > 0 {
		n = min(n, d.Max)
	}
	return n
}
