package bench

import (
	"testing"

	"github.com/llmmetrics/llmmetrics"
	"github.com/stretchr/testify/assert"
)

// levelOf returns a level at load whose repeats had these output
// throughputs, each of 10 requests with failed of them failed.
func levelOf(load float64, failed int, tputs ...float64) *Level {
	l := &Level{Load: load, RepeatThroughput: tputs}
	for _, tp := range tputs {
		l.repeats = append(l.repeats, llmmetrics.Summary{Requests: 10, Completed: 10 - failed, Failed: failed, OutputThroughput: tp})
	}
	l.Summary = l.repeats[0]
	return l
}

// TestEnoughRepeats: the repeat rule, and repeats past maxRepeats while
// failures keep the knee undecided.
func TestEnoughRepeats(t *testing.T) {
	// Load 1 gives 100 tok/s exactly; at load 2 the knee's gain is
	// (T/100 − 1), its threshold 50 %: 150 ± 31 straddles it.
	noisy := []float64{120, 180, 150, 130, 170}
	tests := []struct {
		name    string
		repeats int // -repeats
		l       *Level
		want    bool
	}{
		{"one repeat is never enough", 0, levelOf(2, 0, 150), false},
		{"two tight repeats are", 0, levelOf(2, 0, 150, 151), true},
		{"noisy, below the cap", 0, levelOf(2, 0, noisy[:4]...), false},
		{"noisy at the cap, no failures: stop", 0, levelOf(2, 0, noisy...), true},
		{"noisy at the cap, failures keep the knee undecided: go on", 0, levelOf(2, 1, noisy...), false},
		{"failures, but the knee is decided: stop", 0, levelOf(2, 1, 300, 320, 280, 330, 270), true},
		{"failures and undecided, at the second cap: stop", 0, levelOf(2, 1, append(append([]float64{}, noisy...), noisy...)...), true},
		{"-repeats N is exact", 3, levelOf(2, 1, noisy[:3]...), true},
		{"-repeats N is exact, not yet", 3, levelOf(2, 1, noisy[:2]...), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &bench{o: options{repeats: tt.repeats}}
			b.levels = []*Level{levelOf(1, 0, 100, 100)}
			assert.Equal(t, tt.want, b.enoughRepeats(tt.l))
		})
	}
}
