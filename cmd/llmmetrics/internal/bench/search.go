package bench

import (
	"context"
	"math"
)

// searchConfig bounds the search for the highest load that meets the SLO.
type searchConfig struct {
	// Start is the first load tried (> 0).
	Start float64
	// Integer: loads are whole numbers (concurrency).
	Integer bool
	// Precision: bisection stops when hi − lo ≤ Precision × lo (and, with
	// Integer, when hi − lo ≤ 1).
	Precision float64
	// Max caps the doubling.
	Max float64
}

// maxHalvings bounds how far below Start the search looks when Start
// itself fails.
const maxHalvings = 4

// search finds the highest load that passes, with step measuring one load:
// pass = it meets the SLO and objectives, past = the loads measured so far
// show it is past the saturation point.
//
//  1. Doubling from Start while levels pass, stopping at the first failing
//     level, or early at a passing level past saturation (more load only
//     queues: no level is run far past the knee), or at Max.
//  2. When Start fails, halving instead until a level passes (at most
//     maxHalvings times; concurrency stops at 1).
//  3. Bisection between the highest passing and the lowest failing load
//     until the interval is within Precision.
//
// It returns the highest passing load and whether one passed; on an error
// (ctx done) the best found so far.
func search(ctx context.Context, c searchConfig, step func(context.Context, float64) (pass, past bool, err error)) (float64, bool, error) {
	var lo, hi float64 // highest passing, lowest failing (0: none yet)
	load := c.Start
	for {
		pass, past, err := step(ctx, load)
		if err != nil {
			return lo, lo > 0, err
		}
		if !pass {
			hi = load
			break
		}
		lo = load
		if past || 2*load > c.Max {
			return lo, true, nil // bounded by saturation or the cap, not by the SLO
		}
		load *= 2
	}
	if lo == 0 { // the first load failed: look below it
		for range maxHalvings {
			load = hi / 2
			if c.Integer {
				load = math.Floor(load)
			}
			if load < 1 && c.Integer || load <= 0 {
				return 0, false, nil
			}
			pass, _, err := step(ctx, load)
			if err != nil {
				return 0, false, err
			}
			if pass {
				lo = load
				break
			}
			hi = load
		}
		if lo == 0 {
			return 0, false, nil
		}
	}
	for hi-lo > c.Precision*lo && !(c.Integer && hi-lo <= 1) {
		mid := (lo + hi) / 2
		if c.Integer {
			mid = math.Floor(mid)
		}
		pass, _, err := step(ctx, mid)
		if err != nil {
			return lo, true, err
		}
		if pass {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, true, nil
}
