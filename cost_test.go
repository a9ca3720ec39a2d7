package llmmetrics

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCostPerMillionTokens(t *testing.T) {
	tests := []struct {
		name    string
		hourly  float64
		tps     float64
		want    float64
		wantErr error
	}{
		{"$3/h at 4,000 tok/s", 3, 4000, 3.0 / 14.4, nil}, // ≈ 0.2083
		{"$2.50/h at 1 tok/s", 2.5, 1, 2.5 / 3600 * 1e6, nil},
		{"free hardware", 0, 100, 0, nil},
		{"zero throughput", 3, 0, 0, ErrUndefined},
		{"negative cost", -1, 100, 0, ErrInvalid},
		{"negative throughput", 3, -5, 0, ErrInvalid},
		{"NaN cost", math.NaN(), 100, 0, ErrInvalid},
		{"NaN throughput", 3, math.NaN(), 0, ErrInvalid},
		{"Inf cost", math.Inf(1), 100, 0, ErrInvalid},
		{"Inf throughput", 3, math.Inf(1), 0, ErrInvalid},
		{"result overflows (tiny throughput)", 1, 1e-310, 0, ErrInvalid},
		{"result overflows (huge cost)", 1e308, 1, 0, ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CostPerMillionTokens(tt.hourly, tt.tps)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				assert.Regexp(t, "^llmmetrics: ", err.Error())
				assert.Zero(t, got)
				return
			}
			require.NoError(t, err)
			assert.InDelta(t, tt.want, got, 1e-12)
		})
	}
	got, _ := CostPerMillionTokens(3, 4000)
	assert.InDelta(t, 0.208, got, 0.0005)
}

// TestCostPerGoodToken prices the good tokens the way the
// CostPerMillionTokens doc says: with token goodput as the throughput.
func TestCostPerGoodToken(t *testing.T) {
	// Two requests of 1,001 tokens over 1 s; only one meets the SLO, so
	// token goodput is 1,001 tok/s while throughput is 2,002 tok/s.
	fast := okRecord(0, 100, repeatMS(0.5, 1000), 1001)
	slow := okRecord(0, 900, repeatMS(0.5, 1000), 1001)
	slo := SLO{TTFT: msDur(500)}
	s := Summarize([]Record{fast, slow}, SummaryOptions{Duration: time.Second, SLO: slo})
	require.InDelta(t, 1001.0, s.Goodput.TokensPerSecond, 1e-9)
	all, err := CostPerMillionTokens(3.6, s.OutputThroughput)
	require.NoError(t, err)
	good, err := CostPerMillionTokens(3.6, s.Goodput.TokensPerSecond)
	require.NoError(t, err)
	assert.InDelta(t, 1e3/1001, good, 1e-12) // $3.6/h = $0.001/s; /1001 tok/s × 1e6
	assert.InDelta(t, 2*all, good, 1e-12)

	none := Summarize([]Record{slow}, SummaryOptions{Duration: time.Second, SLO: slo})
	_, err = CostPerMillionTokens(3.6, none.Goodput.TokensPerSecond)
	assert.ErrorIs(t, err, ErrUndefined, "no good tokens")
}

func TestPrice(t *testing.T) {
	p := Price{Input: 3, CachedInput: 0.3, Output: 15} // per million tokens
	tests := []struct {
		name            string
		in, cached, out int
		price           Price
		want            float64
		wantErr         bool
	}{
		{"uncached", 1_000_000, 0, 1_000_000, p, 18, false},
		{"half cached", 1000, 500, 100, p, (500*3 + 500*0.3 + 100*15) / 1e6, false},
		{"all cached", 100, 100, 0, p, 100 * 0.3 / 1e6, false},
		{"no cache discount", 1000, 1000, 0, Price{Input: 3, Output: 15}, 1000 * 3 / 1e6, false},
		{"zero price", 1e6, 0, 1e6, Price{}, 0, false},
		{"more cached than input", 100, 1000, 0, p, 0, true},
		{"negative input", -5, 0, 7, p, 0, true},
		{"negative output", 5, 0, -7, p, 0, true},
		{"negative cached", 5, -1, 7, p, 0, true},
		{"invalid price", 5, 0, 7, Price{Output: math.NaN()}, 0, true},
		{"overflow", math.MaxInt, 0, 0, Price{Input: math.MaxFloat64}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.price.Cost(Usage{InputTokens: tt.in, CachedInputTokens: tt.cached, OutputTokens: tt.out})
			if tt.wantErr {
				assert.ErrorIs(t, err, ErrInvalid)
				return
			}
			require.NoError(t, err)
			assert.InDelta(t, tt.want, got, 1e-12)
		})
	}

	require.NoError(t, p.validate())
	require.NoError(t, Price{}.validate())
	for _, bad := range []Price{{Input: -1}, {CachedInput: math.NaN()}, {CacheWriteInput: -3}, {Output: math.Inf(1)}} {
		assert.ErrorIs(t, bad.validate(), ErrInvalid)
	}
}

func TestPriceCacheWrites(t *testing.T) {
	// Anthropic's published rates for Claude Sonnet: $3 per million input
	// tokens, a 5-minute cache write at 1.25× ($3.75), a cache read at
	// 0.1× ($0.30), $15 per million output tokens.
	sonnet := Price{Input: 3, CachedInput: 0.1 * 3, CacheWriteInput: 1.25 * 3, Output: 15}
	tests := []struct {
		name                        string
		price                       Price
		in, cached, written, output int
		want                        float64
		wantErr                     bool
	}{
		// A first call writes a 10,000-token system prompt to the cache
		// and sends 200 more: 200 × 3 + 10,000 × 3.75 + 500 × 15 =
		// 600 + 37,500 + 7,500 = 45,600 per million = $0.0456.
		{"first call writes the cache", sonnet, 10_200, 0, 10_000, 500, 0.0456, false},
		// The next call reads it: 200 × 3 + 10,000 × 0.30 + 500 × 15 =
		// 600 + 3,000 + 7,500 = 11,100 per million = $0.0111.
		{"second call reads it", sonnet, 10_200, 10_000, 0, 500, 0.0111, false},
		// OpenAI bills no cache write surcharge and half price for a
		// cached read on gpt-4o ($2.50 input, $1.25 cached, $10 output):
		// 1,000 × 2.5 + 1,152 × 1.25 + 100 × 10 = 2,500 + 1,440 + 1,000
		// = 4,940 per million.
		{"openai: writes at the input price", Price{Input: 2.5, CachedInput: 1.25, Output: 10}, 2_152, 1_152, 0, 100, 4940 / 1e6, false},
		{"openai: a reported write costs Input", Price{Input: 2.5, CachedInput: 1.25, Output: 10}, 2_152, 1_152, 1_000, 100, 4940 / 1e6, false},
		{"cached + written above input", sonnet, 100, 60, 41, 0, 0, true},
		{"negative write", sonnet, 100, 0, -1, 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.price.Cost(Usage{InputTokens: tt.in, CachedInputTokens: tt.cached, CacheWriteInputTokens: tt.written, OutputTokens: tt.output})
			if tt.wantErr {
				assert.ErrorIs(t, err, ErrInvalid)
				return
			}
			require.NoError(t, err)
			assert.InDelta(t, tt.want, got, 1e-15)
		})
	}

	t.Run("a summary priced in one call", func(t *testing.T) {
		// Two completed calls as above and one failed call (not billed
		// here: a Summary counts completed requests).
		first := okRecord(0, 100, []float64{40}, 500)
		first.InputTokens, first.CacheWriteInputTokens = 10_200, 10_000
		second := okRecord(1000, 100, []float64{40}, 500)
		second.InputTokens, second.CachedInputTokens = 10_200, 10_000
		failed := endedRecord(0, 10, OutcomeError)
		s := Summarize([]Record{first, second, failed}, SummaryOptions{})
		got, err := sonnet.Cost(s.Usage())
		require.NoError(t, err)
		assert.InDelta(t, 0.0456+0.0111, got, 1e-15)
	})
	t.Run("a saturated summary is not priced", func(t *testing.T) {
		_, err := sonnet.Cost(Summary{InputTokens: math.MaxInt, TokensSaturated: true}.Usage())
		assert.ErrorIs(t, err, ErrInvalid)
	})
}
