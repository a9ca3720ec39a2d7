package llmmetrics

import (
	"errors"
	"fmt"
	"math"
)

// ErrInvalidCost is returned (wrapped) by the cost functions for a zero,
// negative, NaN or infinite input where a positive finite number is needed.
var ErrInvalidCost = errors.New("llmmetrics: invalid cost input")

// CostPerMillionTokens returns what a million tokens cost on hardware that
// costs hourlyCost per hour and produces tokensPerSecond tokens per second:
//
//	hourlyCost / (tokensPerSecond × 3600) × 1,000,000
//
// For example $3/h at 4,000 tokens/s is ≈ $0.208 per million tokens. The
// currency is whatever hourlyCost is in. Pass Summary.OutputThroughput for
// the cost per output token, Summary.TotalTokenThroughput to spread the
// cost over input and output tokens, or see CostPerMillionGoodTokens.
//
// Both inputs must be positive and finite; otherwise the error wraps
// ErrInvalidCost. It is a pure function, safe for concurrent use.
func CostPerMillionTokens(hourlyCost, tokensPerSecond float64) (float64, error) {
	if err := positiveFinite("hourly cost", hourlyCost); err != nil {
		return 0, err
	}
	if err := positiveFinite("tokens per second", tokensPerSecond); err != nil {
		return 0, err
	}
	c := hourlyCost / (tokensPerSecond * 3600) * 1e6
	if math.IsInf(c, 0) || math.IsNaN(c) {
		return 0, fmt.Errorf("%w: $%g/h at %g tokens/s overflows", ErrInvalidCost, hourlyCost, tokensPerSecond)
	}
	return c, nil
}

// CostPerMillionGoodTokens returns the cost per million output tokens that
// met the SLO: CostPerMillionTokens(hourlyCost, s.Goodput.TokensPerSecond).
// Tokens of requests that missed the SLO or failed are paid for but not
// counted, so this is the cost of useful work. It returns an error wrapping
// ErrInvalidCost when hourlyCost is not positive and finite or the run had
// no good tokens.
func CostPerMillionGoodTokens(hourlyCost float64, s Summary) (float64, error) {
	return CostPerMillionTokens(hourlyCost, s.Goodput.TokensPerSecond)
}

func positiveFinite(what string, v float64) error {
	if !(v > 0) || math.IsInf(v, 0) {
		return fmt.Errorf("%w: %s must be positive and finite, got %v", ErrInvalidCost, what, v)
	}
	return nil
}

// Price is an API price list: what a provider charges per million tokens,
// in any currency. The zero Price costs nothing. A Price is a plain value,
// safe for concurrent use.
//
// Record has no cached-input field (providers report cached prompt tokens
// in their usage objects, not in the stream's timing), so the cost methods
// take the number of cached input tokens as an argument; pass 0 when you do
// not know it, which prices every input token at Input.
type Price struct {
	// Input is the price of a million uncached input (prompt) tokens.
	Input float64 `json:"input"`
	// CachedInput is the price of a million input tokens read from the
	// provider's prompt cache. Zero means no cache discount: cached tokens
	// are billed at Input.
	CachedInput float64 `json:"cached_input"`
	// Output is the price of a million output tokens.
	Output float64 `json:"output"`
}

// Validate returns an error wrapping ErrInvalidCost when a price is
// negative, NaN or infinite.
func (p Price) Validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"input", p.Input}, {"cached input", p.CachedInput}, {"output", p.Output}} {
		if f.v < 0 || math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			return fmt.Errorf("%w: %s price must be ≥ 0 and finite, got %v", ErrInvalidCost, f.name, f.v)
		}
	}
	return nil
}

// Cost returns the price of input prompt tokens, of which cachedInput were
// cache hits, and output generated tokens. cachedInput is clamped to
// [0, input] and negative counts count as 0.
func (p Price) Cost(input, cachedInput, output int) float64 {
	input, output = max(input, 0), max(output, 0)
	cachedInput = min(max(cachedInput, 0), input)
	cachedPrice := p.CachedInput
	if cachedPrice == 0 {
		cachedPrice = p.Input
	}
	// Each product is rounded before the sum (no FMA; see lerp), so every
	// CPU gives the same bits.
	return (float64(float64(input-cachedInput)*p.Input) + float64(float64(cachedInput)*cachedPrice) + float64(float64(output)*p.Output)) / 1e6
}

// RecordCost returns the price of one request: its InputTokens (cachedInput
// of them cached) and OutputTokens, whatever its outcome (providers bill
// failed and canceled streams for what they generated).
func (p Price) RecordCost(r Record, cachedInput int) float64 {
	return p.Cost(r.InputTokens, cachedInput, r.OutputTokens)
}

// SummaryCost returns the price of a run's completed requests: the
// Summary's InputTokens (cachedInput of them cached) and OutputTokens. A
// Summary holds no token counts for failed or canceled requests; add
// RecordCost over those records if the provider bills them.
func (p Price) SummaryCost(s Summary, cachedInput int) float64 {
	return p.Cost(s.InputTokens, cachedInput, s.OutputTokens)
}
