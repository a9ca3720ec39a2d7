package llmmetrics

import (
	"encoding/json"
	"flag"
	"io"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSLOCheck(t *testing.T) {
	noToken := endedRecord(0, 50, OutcomeOK) // OK but no token arrived
	tests := []struct {
		name string
		slo  SLO
		r    Record
		want sloCheck
	}{
		{"zero SLO, OK request", SLO{}, okRecord(0, 900, []float64{900}, 2), sloCheck{true, true, true, true, true, true}},
		{"failed request is never good", SLO{}, endedRecord(0, 10, OutcomeError), sloCheck{false, true, true, true, true, true}},
		{"canceled request is never good", SLO{}, endedRecord(0, 10, OutcomeCanceled), sloCheck{false, true, true, true, true, true}},
		{"no token fails TTFT", SLO{TTFT: time.Second}, noToken, sloCheck{true, false, true, true, true, true}},
		{"no token, E2EL from End", SLO{E2EL: msDur(50)}, noToken, sloCheck{true, true, true, true, true, true}},
		{"N = 1 meets any TPOT", SLO{TPOT: 1}, okRecord(0, 10, nil, 1), sloCheck{true, true, true, true, true, true}},
		{"one chunk has no gap", SLO{ITL: 1}, okRecord(0, 10, nil, 30), sloCheck{true, true, true, true, true, true}},
		{"stutter: one long gap", SLO{ITL: msDur(100)}, okRecord(0, 10, []float64{20, 150, 20}, 4), sloCheck{true, true, true, true, false, true}},
		{"MaxITL without a list", SLO{ITL: msDur(100)}, func() Record { r := okRecord(0, 10, nil, 4); r.MaxITL = msDur(101); return r }(),
			sloCheck{true, true, true, true, false, true}},
		{"TPOT over", SLO{TPOT: msDur(20)}, okRecord(0, 10, []float64{30, 30}, 3), sloCheck{true, true, true, false, true, true}},
		{"negative limit ignored", SLO{TTFT: -1}, okRecord(0, 10, nil, 1), sloCheck{true, true, true, true, true, true}},
		// TTFO: the first answer token at 10 ms + 890 ms of reasoning = 900 ms.
		{"TTFO met at the limit", SLO{TTFO: msDur(900)}, withOutput(okRecord(0, 10, nil, 1), 900), sloCheck{true, true, true, true, true, true}},
		{"TTFO over by 1 ms", SLO{TTFO: msDur(899)}, withOutput(okRecord(0, 10, nil, 1), 900), sloCheck{true, true, false, true, true, true}},
		{"no answer token fails TTFO", SLO{TTFO: time.Hour}, okRecord(0, 10, nil, 1), sloCheck{true, true, false, true, true, true}},
		{"TTFT met, TTFO missed: reasoning", SLO{TTFT: msDur(10), TTFO: msDur(500)}, withOutput(okRecord(0, 10, nil, 1), 900), sloCheck{true, true, false, true, true, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.slo.checkRecord(tt.r)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestSLOValidate(t *testing.T) {
	require.NoError(t, SLO{}.Validate())
	for _, s := range []SLO{sloChat, {TTFT: 100 * time.Millisecond, E2EL: time.Second}, {ITL: time.Second}} {
		require.NoError(t, s.Validate(), s.String())
		assert.False(t, s.IsZero())
	}
	for _, s := range []SLO{{TTFT: -1}, {TPOT: -1}, {ITL: -time.Second}, {E2EL: -1}} {
		err := s.Validate()
		require.ErrorIs(t, err, ErrInvalid)
		assert.Regexp(t, `^llmmetrics: invalid argument: negative SLO (ttft|tpot|itl|e2el) limit`, err.Error())
	}
}

func TestParseSLO(t *testing.T) {
	tests := []struct {
		in      string
		want    SLO
		wantErr string
	}{
		{"ttft=200ms,tpot=50ms,e2el=5s", SLO{TTFT: msDur(200), TPOT: msDur(50), E2EL: 5 * time.Second}, ""},
		{" TTFT = 1s , itl=80ms ", SLO{TTFT: time.Second, ITL: msDur(80)}, ""},
		{"", SLO{}, ""},
		{"  ", SLO{}, ""},
		{"ttft=0s", SLO{}, ""},
		{"ttft=200", SLO{}, "ttft: time: missing unit"},
		{"ttft=-1s", SLO{}, "negative SLO ttft limit"},
		{"ttft=1s,ttft=2s", SLO{}, "ttft given twice"},
		{"p99=1s", SLO{}, `unknown SLO key "p99"`},
		{"ttft", SLO{}, `"ttft" is not key=duration`},
		{"ttft=1s,", SLO{}, `"" is not key=duration`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseSLO(tt.in)
			if tt.wantErr != "" {
				require.ErrorIs(t, err, ErrInvalid)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.Equal(t, SLO{}, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			back, err := ParseSLO(got.String())
			require.NoError(t, err)
			assert.Equal(t, got, back, "String round-trips")
		})
	}
}

func TestSLOFlag(t *testing.T) {
	var slo SLO
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Var(&slo, "slo", "per-request SLO")
	require.NoError(t, fs.Parse([]string{"-slo", "ttft=200ms,tpot=50ms"}))
	assert.Equal(t, SLO{TTFT: msDur(200), TPOT: msDur(50)}, slo)
	assert.Equal(t, "ttft=200ms,tpot=50ms", slo.String())
	require.Error(t, fs.Parse([]string{"-slo", "ttft=fast"}))
}

func TestObjective(t *testing.T) {
	s := Summarize([]Record{okRecord(0, 100, []float64{10}, 2), okRecord(0, 300, []float64{10}, 2)},
		SummaryOptions{Percentiles: []float64{95}})
	// TTFT {100, 300} ms: p95 at index 0.95 = 290 ms, median 200 ms.
	tests := []struct {
		text string
		want ObjectiveResult
	}{
		{"p95 ttft<=300ms", ObjectiveResult{Found: true, Pass: true, Value: msDur(290), Margin: msDur(10)}},
		{"p95 ttft<=290ms", ObjectiveResult{Found: true, Pass: true, Value: msDur(290), Margin: 0}},
		{"p95 TTFT <= 200ms", ObjectiveResult{Found: true, Pass: false, Value: msDur(290), Margin: msDur(-90)}},
		{"p50 ttft≤250ms", ObjectiveResult{Found: true, Pass: true, Value: msDur(200), Margin: msDur(50)}},
		{"p99 ttft<=1s", ObjectiveResult{}}, // p99 was not requested
		{"p95 itl<=1s", ObjectiveResult{Found: true, Pass: true, Value: msDur(10), Margin: msDur(990)}},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			o, err := ParseObjective(tt.text)
			require.NoError(t, err)
			tt.want.Objective = o
			got, err := o.Check(s)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			back, err := ParseObjective(o.String())
			require.NoError(t, err)
			assert.Equal(t, o, back)
		})
	}
	empty := Summarize(nil, SummaryOptions{})
	o := Objective{Latency: LatencyE2EL, Percentile: 50, Limit: time.Second}
	res, err := o.Check(empty)
	require.NoError(t, err)
	assert.False(t, res.Found, "empty distribution")
	_, err = Objective{Latency: LatencyTTFT, Percentile: 101}.Check(empty)
	assert.ErrorIs(t, err, ErrInvalid, "an invalid objective is an error")
	assert.Equal(t, "p99.9 e2el<=5s", Objective{Latency: LatencyE2EL, Percentile: 99.9, Limit: 5 * time.Second}.String())
}

func TestParseObjectiveErrors(t *testing.T) {
	for _, in := range []string{"", "95 ttft<=1s", "p95ttft<=1s", "px ttft<=1s", "p95 ttft<1s", "p95 foo<=1s",
		"p95 ttft<=fast", "p101 ttft<=1s", "p95 ttft<=-1s", "pNaN ttft<=1s"} {
		t.Run(in, func(t *testing.T) {
			_, err := ParseObjective(in)
			require.ErrorIs(t, err, ErrInvalid)
			assert.Regexp(t, "^llmmetrics: ", err.Error())
		})
	}
}

// TestObjectiveCheckInvalid: Check rejects an invalid objective whatever
// the summary holds, so an objective built as a literal (or decoded from
// JSON) is validated where it is used.
func TestObjectiveCheckInvalid(t *testing.T) {
	s := Summarize([]Record{okRecord(0, 100, []float64{10}, 2)}, SummaryOptions{Percentiles: []float64{95, 101}})
	tests := []struct {
		name string
		o    Objective
	}{
		{"unknown latency", Objective{Latency: Latency(9), Percentile: 95, Limit: time.Second}},
		{"NaN percentile", Objective{Latency: LatencyTTFT, Percentile: math.NaN(), Limit: time.Second}},
		{"percentile below 0", Objective{Latency: LatencyTTFT, Percentile: -1, Limit: time.Second}},
		{"percentile above 100", Objective{Latency: LatencyTTFT, Percentile: 101, Limit: time.Second}},
		{"negative limit", Objective{Latency: LatencyTTFT, Percentile: 95, Limit: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, sum := range []Summary{s, {}} {
				res, err := tt.o.Check(sum)
				require.ErrorIs(t, err, ErrInvalid)
				assert.Regexp(t, "^llmmetrics: invalid argument: .*objective", err.Error())
				assert.False(t, res.Found || res.Pass, "nothing found, nothing passed")
				assert.Zero(t, res.Value)
				assert.Zero(t, res.Margin)
			}
		})
	}
}

func TestLatencyText(t *testing.T) {
	for l := range Latency(6) {
		b, err := l.MarshalText()
		require.NoError(t, err)
		var back Latency
		require.NoError(t, back.UnmarshalText(b))
		assert.Equal(t, l, back)
	}
	_, err := Latency(6).MarshalText()
	assert.ErrorIs(t, err, ErrInvalid)
	assert.Equal(t, "Latency(6)", Latency(6).String())
	assert.Equal(t, "ttfo", LatencyTTFO.String())
	assert.Equal(t, "generation", LatencyGeneration.String())
	var l Latency
	err = l.UnmarshalText([]byte("latency"))
	assert.ErrorIs(t, err, ErrInvalid)
	assert.ErrorContains(t, err, `llmmetrics: invalid argument: unknown latency "latency"`)
}

// withOutput returns r with its first answer token outMS after its Start.
func withOutput(r Record, outMS float64) Record {
	r.FirstOutput = r.Start.Add(msDur(outMS))
	return r
}

func TestParseSLOTTFO(t *testing.T) {
	s, err := ParseSLO("ttfo=2s, TTFT=200ms")
	require.NoError(t, err)
	assert.Equal(t, SLO{TTFT: 200 * time.Millisecond, TTFO: 2 * time.Second}, s)
	assert.Equal(t, "ttft=200ms,ttfo=2s", s.String())
	_, err = ParseSLO("ttfo=-1s")
	assert.ErrorIs(t, err, ErrInvalid)
}

func TestObjectiveNewLatencies(t *testing.T) {
	for _, tt := range []struct {
		text string
		want Objective
	}{
		{"p95 ttfo<=2s", Objective{Latency: LatencyTTFO, Percentile: 95, Limit: 2 * time.Second}},
		{"p50 Generation <= 1.5s", Objective{Latency: LatencyGeneration, Percentile: 50, Limit: 1500 * time.Millisecond}},
	} {
		t.Run(tt.text, func(t *testing.T) {
			o, err := ParseObjective(tt.text)
			require.NoError(t, err)
			assert.Equal(t, tt.want, o)
			back, err := ParseObjective(o.String())
			require.NoError(t, err)
			assert.Equal(t, o, back, "String round-trips")
		})
	}
	// Two requests: TTFO 300 and 900 ms; generation 40 and 20 ms.
	// numpy-linear p50 of TTFO = 600 ms, of generation = 30 ms.
	recs := []Record{
		withOutput(okRecord(0, 100, []float64{40}, 2), 300),
		withOutput(okRecord(0, 100, []float64{10, 10}, 3), 900),
	}
	s := Summarize(recs, SummaryOptions{})
	for _, tt := range []struct {
		o    Objective
		pass bool
		val  time.Duration
	}{
		{Objective{Latency: LatencyTTFO, Percentile: 50, Limit: 600 * time.Millisecond}, true, 600 * time.Millisecond},
		{Objective{Latency: LatencyTTFO, Percentile: 50, Limit: 599 * time.Millisecond}, false, 600 * time.Millisecond},
		{Objective{Latency: LatencyGeneration, Percentile: 50, Limit: 29 * time.Millisecond}, false, 30 * time.Millisecond},
	} {
		res, err := tt.o.Check(s)
		require.NoError(t, err)
		assert.True(t, res.Found, tt.o.String())
		assert.Equal(t, tt.pass, res.Pass, tt.o.String())
		assert.Equal(t, tt.val, res.Value, tt.o.String())
		assert.Equal(t, tt.o.Limit-tt.val, res.Margin, tt.o.String())
	}
}

func TestObjectiveJSONKey(t *testing.T) {
	b, err := json.Marshal(Objective{Latency: LatencyTTFO, Percentile: 95, Limit: time.Second})
	require.NoError(t, err)
	assert.JSONEq(t, `{"latency":"ttfo","p":95,"limit_ns":1000000000}`, string(b))
}
