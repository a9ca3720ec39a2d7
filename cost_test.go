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
		{"negative cost", -1, 100, 0, ErrInvalidCost},
		{"negative throughput", 3, -5, 0, ErrInvalidCost},
		{"NaN cost", math.NaN(), 100, 0, ErrInvalidCost},
		{"NaN throughput", 3, math.NaN(), 0, ErrInvalidCost},
		{"Inf cost", math.Inf(1), 100, 0, ErrInvalidCost},
		{"Inf throughput", 3, math.Inf(1), 0, ErrInvalidCost},
		{"result overflows (tiny throughput)", 1, 1e-310, 0, ErrInvalidCost},
		{"result overflows (huge cost)", 1e308, 1, 0, ErrInvalidCost},
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
			got, err := tt.price.Cost(tt.in, tt.cached, tt.out)
			if tt.wantErr {
				assert.ErrorIs(t, err, ErrInvalidCost)
				return
			}
			require.NoError(t, err)
			assert.InDelta(t, tt.want, got, 1e-12)
		})
	}

	require.NoError(t, p.Validate())
	require.NoError(t, Price{}.Validate())
	for _, bad := range []Price{{Input: -1}, {CachedInput: math.NaN()}, {Output: math.Inf(1)}} {
		assert.ErrorIs(t, bad.Validate(), ErrInvalidCost)
	}
}
