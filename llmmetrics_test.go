package llmmetrics

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func at(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }

func TestRecordFormulas(t *testing.T) {
	type want struct {
		ttft, tpot, e2el, gap             time.Duration
		hasTTFT, hasTPOT, hasE2EL, hasGap bool
	}
	tests := []struct {
		name string
		rec  Record
		want want
	}{
		{
			name: "no token arrived: no TTFT, no TPOT, E2EL to End",
			rec:  Record{Start: at(0), End: at(300), Outcome: OutcomeError},
			want: want{e2el: 300 * time.Millisecond, hasE2EL: true},
		},
		{
			name: "not ended and no token: nothing defined",
			rec:  Record{Start: at(0)},
			want: want{},
		},
		{
			name: "one token: TTFT and E2EL, no TPOT (N ≤ 1)",
			rec:  Record{Start: at(0), FirstToken: at(120), LastToken: at(120), End: at(130), OutputTokens: 1, Chunks: 1},
			want: want{ttft: 120 * time.Millisecond, hasTTFT: true, e2el: 120 * time.Millisecond, hasE2EL: true},
		},
		{
			name: "five tokens in one chunk: TPOT 0",
			rec:  Record{Start: at(0), FirstToken: at(80), LastToken: at(80), End: at(81), OutputTokens: 5, Chunks: 1},
			want: want{ttft: 80 * time.Millisecond, hasTTFT: true, tpot: 0, hasTPOT: true, e2el: 80 * time.Millisecond, hasE2EL: true},
		},
		{
			// TPOT = (500 − 100) / (5 − 1) = 100 ms; E2EL ends at the last token, not at End.
			name: "five tokens over 400 ms",
			rec: Record{Start: at(0), FirstToken: at(100), LastToken: at(500), End: at(650), OutputTokens: 5, Chunks: 5,
				ITL: []time.Duration{100 * time.Millisecond, 50 * time.Millisecond, 200 * time.Millisecond, 50 * time.Millisecond}},
			want: want{ttft: 100 * time.Millisecond, hasTTFT: true, tpot: 100 * time.Millisecond, hasTPOT: true,
				e2el: 500 * time.Millisecond, hasE2EL: true, gap: 200 * time.Millisecond, hasGap: true},
		},
		{
			// 10 ns / 3 = 3.33 ns → 3 ns.
			name: "TPOT rounds down below half",
			rec:  Record{Start: t0, FirstToken: t0, LastToken: t0.Add(10), OutputTokens: 4},
			want: want{hasTTFT: true, tpot: 3, hasTPOT: true, e2el: 10, hasE2EL: true},
		},
		{
			// 11 ns / 2 = 5.5 ns → 6 ns.
			name: "TPOT rounds half up",
			rec:  Record{Start: t0, FirstToken: t0, LastToken: t0.Add(11), OutputTokens: 3},
			want: want{hasTTFT: true, tpot: 6, hasTPOT: true, e2el: 11, hasE2EL: true},
		},
		{
			name: "times out of order never give a negative duration",
			rec:  Record{Start: at(100), FirstToken: at(50), LastToken: at(40), End: at(10), OutputTokens: 3},
			want: want{ttft: 0, hasTTFT: true, tpot: 0, hasTPOT: true, e2el: 0, hasE2EL: true},
		},
		{
			// A hand-built record may set FirstToken alone: E2EL must not
			// drop below TTFT, and TPOT must not become 0.
			name: "FirstToken without LastToken is taken as the last token too",
			rec:  Record{Start: at(0), FirstToken: at(5000), End: at(6000), OutputTokens: 11},
			want: want{ttft: 5 * time.Second, hasTTFT: true, tpot: 0, hasTPOT: true, e2el: 5 * time.Second, hasE2EL: true},
		},
		{
			name: "negative gaps of a hand-built record are reported as 0",
			rec:  Record{Start: at(0), MaxITL: -5, ITL: []time.Duration{-3}},
			want: want{hasGap: true},
		},
		{
			name: "MaxITL alone gives the largest gap (gaps not kept)",
			rec:  Record{Start: at(0), FirstToken: at(10), LastToken: at(90), OutputTokens: 3, Chunks: 3, MaxITL: 70 * time.Millisecond},
			want: want{ttft: 10 * time.Millisecond, hasTTFT: true, tpot: 40 * time.Millisecond, hasTPOT: true,
				e2el: 90 * time.Millisecond, hasE2EL: true, gap: 70 * time.Millisecond, hasGap: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ttft, ok := tt.rec.TTFT()
			assert.Equal(t, tt.want.hasTTFT, ok, "TTFT defined")
			assert.Equal(t, tt.want.ttft, ttft, "TTFT")
			tpot, ok := tt.rec.TPOT()
			assert.Equal(t, tt.want.hasTPOT, ok, "TPOT defined")
			assert.Equal(t, tt.want.tpot, tpot, "TPOT")
			e2el, ok := tt.rec.E2EL()
			assert.Equal(t, tt.want.hasE2EL, ok, "E2EL defined")
			assert.Equal(t, tt.want.e2el, e2el, "E2EL")
			gap, ok := tt.rec.maxITLGap()
			assert.Equal(t, tt.want.hasGap, ok, "MaxITLGap defined")
			assert.Equal(t, tt.want.gap, gap, "MaxITLGap")
		})
	}
}

func TestRecordGenerationTime(t *testing.T) {
	tests := []struct {
		name string
		rec  Record
		want time.Duration
		ok   bool
	}{
		{"no token", Record{Start: at(0), End: at(300)}, 0, false},
		{"one chunk: 0", Record{Start: at(0), FirstToken: at(120), LastToken: at(120), OutputTokens: 5, Chunks: 1}, 0, true},
		{"first token alone set: 0", Record{Start: at(0), FirstToken: at(120), OutputTokens: 1}, 0, true},
		// 500 − 100 = 400 ms, and TTFT + generation = 100 + 400 = E2EL 500.
		{"five chunks", Record{Start: at(0), FirstToken: at(100), LastToken: at(500), End: at(650), OutputTokens: 5, Chunks: 5}, 400 * time.Millisecond, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.rec.GenerationTime()
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want, got)
			if ttft, has := tt.rec.TTFT(); has {
				e2el, _ := tt.rec.E2EL()
				assert.Equal(t, e2el, ttft+got, "E2EL = TTFT + generation time")
			}
		})
	}
}

func TestOutcomeText(t *testing.T) {
	for _, o := range []Outcome{OutcomeOK, OutcomeError, OutcomeCanceled} {
		b, err := o.MarshalText()
		require.NoError(t, err)
		var back Outcome
		require.NoError(t, back.UnmarshalText(b))
		assert.Equal(t, o, back)
		assert.Equal(t, o.String(), string(b))
	}
	assert.Equal(t, "canceled", OutcomeCanceled.String())
	assert.Equal(t, "Outcome(9)", Outcome(9).String())
	_, err := Outcome(9).MarshalText()
	assert.ErrorIs(t, err, ErrInvalid)
	assert.EqualError(t, err, "llmmetrics: invalid argument: no name for outcome 9")
	var o Outcome
	err = o.UnmarshalText([]byte("cancelled"))
	assert.ErrorIs(t, err, ErrInvalid)
	assert.ErrorContains(t, err, `llmmetrics: invalid argument: unknown outcome "cancelled"`)
}

// TestEnumTextCase: every enum reads its text form in any case (one rule)
// and writes it in lower case.
func TestEnumTextCase(t *testing.T) {
	tests := []struct {
		text string
		into interface {
			UnmarshalText([]byte) error
			MarshalText() ([]byte, error)
		}
		want string
	}{
		{"OK", new(Outcome), "ok"},
		{"Canceled", new(Outcome), "canceled"},
		{"TTFT", new(Latency), "ttft"},
		{"e2EL", new(Latency), "e2el"},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			require.NoError(t, tt.into.UnmarshalText([]byte(tt.text)))
			b, err := tt.into.MarshalText()
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(b))
		})
	}
}

func TestRecordJSON(t *testing.T) {
	rec := Record{
		Start: at(0), FirstToken: at(100), LastToken: at(130), End: at(131),
		InputTokens: 12, OutputTokens: 3, Chunks: 2,
		ITL: []time.Duration{30 * time.Millisecond}, MaxITL: 30 * time.Millisecond, Outcome: OutcomeCanceled,
	}
	b, err := json.Marshal(rec)
	require.NoError(t, err)
	assert.JSONEq(t, `{
		"start": "2025-01-01T00:00:00Z",
		"first_token": "2025-01-01T00:00:00.1Z",
		"last_token": "2025-01-01T00:00:00.13Z",
		"end": "2025-01-01T00:00:00.131Z",
		"input_tokens": 12, "output_tokens": 3, "chunks": 2,
		"itl_ns": [30000000], "max_itl_ns": 30000000,
		"outcome": "canceled"}`, string(b))
	var back Record
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, rec, back)

	// A record with no token omits the token fields, and reads back as "no token".
	b, err = json.Marshal(Record{Start: at(0), End: at(5), Outcome: OutcomeError})
	require.NoError(t, err)
	assert.JSONEq(t, `{"start": "2025-01-01T00:00:00Z", "end": "2025-01-01T00:00:00.005Z",
		"input_tokens": 0, "output_tokens": 0, "chunks": 0, "outcome": "error"}`, string(b))
	back = Record{}
	require.NoError(t, json.Unmarshal(b, &back))
	assert.False(t, back.hasToken())
}
