package jsonscan_test

import (
	"strings"
	"testing"

	"github.com/llmmetrics/llmmetrics/cmd/llmmetrics/internal/jsonscan"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCache(t *testing.T) {
	const pre, post = `{"id":"c1","choices":[{"delta":{"content":`, `}}],"n":1}`
	ev := func(s string) string { return pre + s + post }
	tests := []struct {
		name   string
		events []string
		hits   []bool
	}{
		{"same shape, new text", []string{ev(`"a"`), ev(`"bcd"`), ev(`"\"\u00e9"`)}, []bool{false, true, true}},
		{"text becomes empty", []string{ev(`"a"`), ev(`""`), ev(`"b"`)}, []bool{false, false, false}},
		{"empty stays empty", []string{ev(`""`), ev(`""`)}, []bool{false, true}},
		{"a quote ends the string early", []string{ev(`"a"`), ev(`"a","content":""`)}, []bool{false, false}},
		{"an escaped quote runs into the tail", []string{ev(`"a"`), pre + `"a\"` + post}, []bool{false, false}},
		{"other bytes change", []string{ev(`"a"`), strings.Replace(ev(`"b"`), "c1", "c2", 1)}, []bool{false, false}},
		{"no string keeps the old entry", []string{ev(`"a"`), `{"n":2}`, ev(`"b"`)}, []bool{false, false, true}},
		{"invalid keeps the old entry", []string{ev(`"a"`), `{"n":`, ev(`"b"`)}, []bool{false, false, true}},
	}
	walk := tokenWalker(false)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var j, ref jsonscan.Scanner
			var c jsonscan.Cache[tokens]
			for n, e := range tt.events {
				got, hit := c.Walk(&j, []byte(e), walk)
				var want tokens
				ok := jsonscan.Walk(&ref, []byte(e), &want, walk)
				require.Equal(t, ok, got != nil, "validity of %s", e)
				if ok {
					assert.Equal(t, want, *got, "facts of %s", e)
				}
				assert.Equal(t, tt.hits[n], hit, "hit on %s", e)
			}
		})
	}
}

// The cache holds the prefix and tail of an event it walked: no more than
// about twice the largest event's bytes (append's slack), and nothing after
// Reset.
func TestCacheRetainsOneEvent(t *testing.T) {
	var j jsonscan.Scanner
	var c jsonscan.Cache[tokens]
	big := `{"a":"` + strings.Repeat("x", 10_000) + `","b":"y"}`
	small := `{"a":"x","b":"y"}`
	for _, e := range []string{big, small} {
		_, _ = c.Walk(&j, []byte(e), tokenWalker(false))
		assert.LessOrEqual(t, c.Retained(), 2*len(big)+64)
	}
	c.Reset()
	assert.Zero(t, c.Retained())
	f, hit := c.Walk(&j, []byte(small), tokenWalker(false))
	require.NotNil(t, f)
	assert.False(t, hit, "a reset cache answers nothing")
}
