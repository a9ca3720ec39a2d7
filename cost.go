package llmmetrics

import (
	"fmt"
	"math"
)

// CostPerMillionTokens returns what a million tokens cost on hardware that
// costs hourlyCost per hour and produces tokensPerSecond tokens per second,
// hourlyCost / (tokensPerSecond × 3600) × 1,000,000 ($3/h at 4,000 tokens/s
// is ≈ $0.208). Pass Summary.Goodput.TokensPerSecond for the cost per good
// token. The error wraps ErrInvalid for a negative, NaN or infinite input
// or an overflow, and ErrUndefined when tokensPerSecond is 0.
func CostPerMillionTokens(hourlyCost, tokensPerSecond float64) (float64, error) {
	if err := nonNegFinite("hourly cost", hourlyCost); err != nil {
		return 0, err
	}
	if err := nonNegFinite("tokens per second", tokensPerSecond); err != nil {
		return 0, err
	}
	if tokensPerSecond == 0 {
		return 0, fmt.Errorf("%w: cost per token at 0 tokens per second", ErrUndefined)
	}
	c := hourlyCost / (tokensPerSecond * 3600) * 1e6
	if !finiteFloat(c) {
		return 0, fmt.Errorf("%w: $%g/h at %g tokens/s overflows", ErrInvalid, hourlyCost, tokensPerSecond)
	}
	return c, nil
}

// nonNegFinite returns an error wrapping ErrInvalid unless v is ≥ 0
// and finite.
func nonNegFinite(what string, v float64) error {
	if !(v >= 0) || math.IsInf(v, 0) {
		return fmt.Errorf("%w: %s must be ≥ 0 and finite, got %v", ErrInvalid, what, v)
	}
	return nil
}

// Price is an API price list: what a provider charges per million tokens,
// in any currency. Cached and cache-write input tokens are priced apart;
// Anthropic's Claude Sonnet is Price{Input: 3, CachedInput: 0.30,
// CacheWriteInput: 3.75, Output: 15}. The zero Price costs nothing.
type Price struct {
	// Input is the price of a million uncached input (prompt) tokens.
	Input float64 `json:"input"`
	// CachedInput is the price of a million input tokens read from the
	// provider's prompt cache. Zero means no cache discount: cached tokens
	// are billed at Input.
	CachedInput float64 `json:"cached_input"`
	// CacheWriteInput is the price of a million input tokens written to
	// the provider's prompt cache. Zero means no surcharge: they are
	// billed at Input (OpenAI, Gemini's implicit cache).
	CacheWriteInput float64 `json:"cache_write_input,omitempty"`
	// Output is the price of a million output tokens.
	Output float64 `json:"output"`
}

// validate returns an error wrapping ErrInvalid when a price is negative,
// NaN or infinite.
func (p Price) validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"input price", p.Input}, {"cached input price", p.CachedInput}, {"cache write input price", p.CacheWriteInput}, {"output price", p.Output}} {
		if err := nonNegFinite(f.name, f.v); err != nil {
			return err
		}
	}
	return nil
}

// Usage is what a request or a run consumed, in tokens: what a Price bills.
// InputTokens is the whole prompt, cached and cache-write tokens included.
type Usage struct {
	InputTokens           int
	CachedInputTokens     int
	CacheWriteInputTokens int
	OutputTokens          int
}

// Cost returns the price of u:
//
//	((input − cached − cacheWrite) × Input + cached × CachedInput
//	  + cacheWrite × CacheWriteInput + output × Output) / 1,000,000
//
// The error wraps ErrInvalid for an invalid price, a negative or saturated
// count (Summary.TokensSaturated), cached parts above the input, or an
// overflow.
func (p Price) Cost(u Usage) (float64, error) {
	if err := p.validate(); err != nil {
		return 0, err
	}
	input, cachedInput, cacheWrite, output := u.InputTokens, u.CachedInputTokens, u.CacheWriteInputTokens, u.OutputTokens
	if input < 0 || cachedInput < 0 || cacheWrite < 0 || output < 0 {
		return 0, fmt.Errorf("%w: negative token count (input %d, cached %d, cache write %d, output %d)", ErrInvalid, input, cachedInput, cacheWrite, output)
	}
	if input == math.MaxInt || output == math.MaxInt {
		return 0, fmt.Errorf("%w: a token total saturated", ErrInvalid)
	}
	if cachedInput > input || cacheWrite > input-cachedInput {
		return 0, fmt.Errorf("%w: %d cached and %d cache-write input tokens of %d", ErrInvalid, cachedInput, cacheWrite, input)
	}
	cachedPrice, writePrice := p.CachedInput, p.CacheWriteInput
	if cachedPrice == 0 {
		cachedPrice = p.Input
	}
	if writePrice == 0 {
		writePrice = p.Input
	}
	plain := input - cachedInput - cacheWrite
	// Each product is rounded before the sum (no FMA; see internal/stats),
	// so every CPU gives the same bits.
	c := (float64(float64(plain)*p.Input) + float64(float64(cachedInput)*cachedPrice) +
		float64(float64(cacheWrite)*writePrice) + float64(float64(output)*p.Output)) / 1e6
	if !finiteFloat(c) {
		return 0, fmt.Errorf("%w: the cost overflows", ErrInvalid)
	}
	return c, nil
}

// Usage returns the token totals of s, for Price.Cost.
func (s Summary) Usage() Usage {
	return Usage{InputTokens: s.InputTokens, CachedInputTokens: s.CachedInputTokens,
		CacheWriteInputTokens: s.CacheWriteInputTokens, OutputTokens: s.OutputTokens}
}
