package llmmetrics

import (
	"flag"
	"io"
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
		want SLOCheck
	}{
		{"zero SLO, OK request", SLO{}, okRecord(0, 900, []float64{900}, 2), SLOCheck{true, true, true, true, true}},
		{"failed request is never good", SLO{}, endedRecord(0, 10, OutcomeError), SLOCheck{false, true, true, true, true}},
		{"canceled request is never good", SLO{}, endedRecord(0, 10, OutcomeCanceled), SLOCheck{false, true, true, true, true}},
		{"no token fails TTFT", SLO{TTFT: time.Second}, noToken, SLOCheck{true, false, true, true, true}},
		{"no token, E2EL from End", SLO{E2EL: msDur(50)}, noToken, SLOCheck{true, true, true, true, true}},
		{"N = 1 meets any TPOT", SLO{TPOT: 1}, okRecord(0, 10, nil, 1), SLOCheck{true, true, true, true, true}},
		{"one chunk has no gap", SLO{ITL: 1}, okRecord(0, 10, nil, 30), SLOCheck{true, true, true, true, true}},
		{"stutter: one long gap", SLO{ITL: msDur(100)}, okRecord(0, 10, []float64{20, 150, 20}, 4), SLOCheck{true, true, true, false, true}},
		{"MaxITL without a list", SLO{ITL: msDur(100)}, func() Record { r := okRecord(0, 10, nil, 4); r.MaxITL = msDur(101); return r }(),
			SLOCheck{true, true, true, false, true}},
		{"TPOT over", SLO{TPOT: msDur(20)}, okRecord(0, 10, []float64{30, 30}, 3), SLOCheck{true, true, false, true, true}},
		{"negative limit ignored", SLO{TTFT: -1}, okRecord(0, 10, nil, 1), SLOCheck{true, true, true, true, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.slo.Check(tt.r)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestSLOValidate(t *testing.T) {
	require.NoError(t, SLO{}.Validate())
	for _, s := range []SLO{SLOChat, SLOCodeCompletion, SLODocumentProcessing} {
		require.NoError(t, s.Validate(), s.String())
		assert.False(t, s.IsZero())
	}
	for _, s := range []SLO{{TTFT: -1}, {TPOT: -1}, {ITL: -time.Second}, {E2EL: -1}} {
		err := s.Validate()
		require.ErrorIs(t, err, ErrInvalidSLO)
		assert.Regexp(t, `^llmmetrics: invalid SLO: negative (ttft|tpot|itl|e2el) limit`, err.Error())
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
		{"ttft=-1s", SLO{}, "negative ttft limit"},
		{"ttft=1s,ttft=2s", SLO{}, "ttft given twice"},
		{"p99=1s", SLO{}, `unknown key "p99"`},
		{"ttft", SLO{}, `"ttft" is not key=duration`},
		{"ttft=1s,", SLO{}, `"" is not key=duration`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseSLO(tt.in)
			if tt.wantErr != "" {
				require.ErrorIs(t, err, ErrInvalidSLO)
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
	assert.ErrorIs(t, err, ErrInvalidObjective, "an invalid objective is an error")
	assert.Equal(t, "p99.9 e2el<=5s", Objective{Latency: LatencyE2EL, Percentile: 99.9, Limit: 5 * time.Second}.String())
}

func TestParseObjectiveErrors(t *testing.T) {
	for _, in := range []string{"", "95 ttft<=1s", "p95ttft<=1s", "px ttft<=1s", "p95 ttft<1s", "p95 foo<=1s",
		"p95 ttft<=fast", "p101 ttft<=1s", "p95 ttft<=-1s", "pNaN ttft<=1s"} {
		t.Run(in, func(t *testing.T) {
			_, err := ParseObjective(in)
			require.ErrorIs(t, err, ErrInvalidObjective)
			assert.Regexp(t, "^llmmetrics: ", err.Error())
		})
	}
	assert.Error(t, Objective{Latency: Latency(9)}.Validate())
}

func TestLatencyText(t *testing.T) {
	for l := range Latency(4) {
		b, err := l.MarshalText()
		require.NoError(t, err)
		var back Latency
		require.NoError(t, back.UnmarshalText(b))
		assert.Equal(t, l, back)
	}
	_, err := Latency(4).MarshalText()
	assert.ErrorIs(t, err, ErrInvalidText)
	assert.Equal(t, "Latency(4)", Latency(4).String())
	var l Latency
	err = l.UnmarshalText([]byte("latency"))
	assert.ErrorIs(t, err, ErrInvalidText)
	assert.ErrorContains(t, err, `llmmetrics: invalid text: unknown latency "latency"`)
}
