package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
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

// MaxToolTime bounds a drawn tool time: 10 minutes, the longest a Claude
// Code Bash command may run (its timeout's upper limit), past which an
// agent's harness gives up on a tool.
const MaxToolTime = 10 * time.Minute

// DurationDist is a distribution of durations (tool times): fixed, or
// uniform, normal or lognormal, drawn to the nanosecond and clamped to
// [0, MaxToolTime]. Get one from ParseDurationDist.
type DurationDist struct {
	Kind string        // "fixed", "uniform", "normal", "lognormal"
	A, B time.Duration // as Dist's A and B
}

// ParseDurationDist parses "D", "uniform:MIN-MAX", "normal:MEAN,SD" or
// "lognormal:MEAN,SD", each a Go duration ("250ms", "16.8s"); for
// lognormal, MEAN and SD are those of the durations themselves.
func ParseDurationDist(s string) (DurationDist, error) {
	kind, args, found := strings.Cut(strings.TrimSpace(s), ":")
	bad := func(why string) (DurationDist, error) {
		return DurationDist{}, fmt.Errorf("bad duration %q: %s", s, why)
	}
	if !found {
		d, err := time.ParseDuration(kind)
		if err != nil || d < 0 {
			return bad("want D ≥ 0, uniform:MIN-MAX, normal:MEAN,SD or lognormal:MEAN,SD (Go durations: 250ms, 2s)")
		}
		return DurationDist{Kind: "fixed", A: d}, nil
	}
	sep := ","
	if kind == "uniform" {
		sep = "-"
	}
	x, y, ok := strings.Cut(args, sep)
	a, errA := time.ParseDuration(strings.TrimSpace(x))
	b, errB := time.ParseDuration(strings.TrimSpace(y))
	if !ok || errA != nil || errB != nil {
		return bad(fmt.Sprintf("want %s:%s of Go durations", kind, map[bool]string{true: "MIN-MAX", false: "MEAN,SD"}[kind == "uniform"]))
	}
	switch kind {
	case "uniform":
		if a < 0 || b < a {
			return bad("uniform needs 0 ≤ MIN ≤ MAX")
		}
	case "normal", "lognormal":
		if a <= 0 || b < 0 {
			return bad(kind + " needs MEAN > 0 and SD ≥ 0")
		}
	default:
		return bad(fmt.Sprintf("unknown distribution %q (fixed D, uniform, normal, lognormal)", kind))
	}
	return DurationDist{Kind: kind, A: a, B: b}, nil
}

// String returns the distribution as ParseDurationDist reads it.
func (d DurationDist) String() string {
	switch d.Kind {
	case "fixed":
		return d.A.String()
	case "uniform":
		return fmt.Sprintf("uniform:%v-%v", d.A, d.B)
	}
	return fmt.Sprintf("%s:%v,%v", d.Kind, d.A, d.B)
}

// Scale returns d with every duration multiplied by f (f ≥ 0).
func (d DurationDist) Scale(f float64) DurationDist {
	d.A = time.Duration(float64(d.A) * f)
	d.B = time.Duration(float64(d.B) * f)
	return d
}

// Draw returns one duration from rng, clamped to [0, MaxToolTime].
func (d DurationDist) Draw(rng *rand.Rand) time.Duration {
	a, b := float64(d.A), float64(d.B)
	var v float64
	switch d.Kind {
	case "fixed":
		v = a
	case "uniform":
		v = a + rng.Float64()*(b-a)
	case "normal":
		v = a + b*rng.NormFloat64()
	case "lognormal":
		s2 := math.Log1p(b * b / (a * a))
		v = math.Exp(math.Log(a) - s2/2 + math.Sqrt(s2)*rng.NormFloat64())
	}
	return time.Duration(min(max(v, 0), float64(MaxToolTime)))
}
