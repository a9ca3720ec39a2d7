package workload

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// vowelCount is a test tokenizer: a word counts one token and one more for
// each of its vowels, so the filler words count 2, 3 or 4 tokens.
func vowelCount(s string) int {
	n := 0
	for _, w := range strings.Fields(s) {
		n += 1 + strings.Count(w, "a") + strings.Count(w, "e") + strings.Count(w, "i") + strings.Count(w, "o") + strings.Count(w, "u")
	}
	return n
}

func vowelText(t *testing.T) Text {
	t.Helper()
	words := FillerWords()
	counts := make([]int, len(words))
	for i, w := range words {
		counts[i] = vowelCount(w)
	}
	tx, err := CountedText(5, counts)
	require.NoError(t, err)
	require.True(t, tx.Counted())
	return tx
}

// TestCountedTextExactLength: a counted Text's words count exactly the
// length asked, by the tokenizer's own count of the text.
func TestCountedTextExactLength(t *testing.T) {
	tx := vowelText(t)
	for _, n := range []int{2, 3, 4, 5, 7, 17, 100, 512, 4000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(n), 9))
			s := tx.Words(rng, n)
			assert.Equal(t, n, vowelCount(s), "the tokenizer's count of %q", s)
			assert.Equal(t, n, tx.Count(s))
			assert.NotContains(t, s, "  ")
			assert.Equal(t, s, strings.TrimSpace(s))
			assert.Equal(t, s, tx.Words(rand.New(rand.NewPCG(uint64(n), 9)), n), "the same rng, the same words")
		})
	}
	// 1 token is under every word's count (2 at least): the shortest word.
	one := tx.Words(rand.New(rand.NewPCG(1, 1)), 1)
	assert.Equal(t, 2, vowelCount(one))
	assert.Len(t, strings.Fields(one), 1)
	assert.Empty(t, tx.Words(rand.New(rand.NewPCG(1, 1)), 0))
}

// TestCountedTextUnreachable: when every word counts 2 tokens, an odd
// length is met one token short.
func TestCountedTextUnreachable(t *testing.T) {
	counts := make([]int, len(FillerWords()))
	for i := range counts {
		counts[i] = 2
	}
	tx, err := CountedText(4, counts)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(5, 5))
	assert.Len(t, strings.Fields(tx.Words(rng, 7)), 3)
	assert.Len(t, strings.Fields(tx.Words(rng, 8)), 4)
}

// TestCount: filler words count what the server counts for them; other
// text ⌈characters/CharsPerToken⌉, spaces included; a Text by characters
// counts every message's characters at once.
func TestCount(t *testing.T) {
	tx := vowelText(t)
	for _, tc := range []struct {
		name  string
		texts []string
		want  int
	}{
		{"nothing", nil, 0},
		{"an empty message", []string{""}, 0},
		{"filler", []string{"that with"}, 2 + 2},
		{"two messages", []string{"that", "area"}, 2 + 4},
		{"other words", []string{"Hello, world!"}, 3},             // ⌈13/5⌉
		{"mixed", []string{"that Hello, world! with"}, 2 + 2 + 3}, // "Hello," and " world!": 14 characters
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tx.Count(tc.texts...))
		})
	}
	chars := Text{CharsPerToken: 4}
	assert.Equal(t, 3, chars.Count("12345", "123456")) // ⌈11/4⌉, not ⌈5/4⌉ + ⌈6/4⌉
	assert.Equal(t, 0, chars.Count())
}

func TestCountedTextErrors(t *testing.T) {
	_, err := CountedText(4, []int{1, 2})
	assert.ErrorContains(t, err, "2 word counts for 74 filler words")
	counts := make([]int, len(FillerWords()))
	for i := range counts {
		counts[i] = 1
	}
	counts[2] = 0
	_, err = CountedText(4, counts)
	assert.ErrorContains(t, err, `filler word "have" counts 0 tokens`)
}

// TestCountedSynthetic: with a counted Text, the server counts (template
// overhead included) exactly the lengths drawn.
func TestCountedSynthetic(t *testing.T) {
	w := open(t, Config{Input: mustDist(t, "uniform:20-900"), Output: mustDist(t, "5"), Text: vowelText(t), Overhead: 7, Seed: 3})
	for i, r := range drain(t, w, 50, fixedAnswer) {
		server := 7 + vowelCount(r.Messages[0].Content)
		assert.Equal(t, server, r.InputTokens, "request %d", i)
		assert.GreaterOrEqual(t, r.InputTokens, 20)
		assert.LessOrEqual(t, r.InputTokens, 900)
	}
}

// TestCountedTrace: with a counted Text, a trace's prompts count their
// input_length, and requests that share hash ids share their words: the
// whole first block, and the blocks a shorter prompt cuts but for its last
// few tokens.
func TestCountedTrace(t *testing.T) {
	w := open(t, Config{Trace: filepath.Join("testdata", "trace.jsonl"), Text: vowelText(t)})
	reqs := drain(t, w, 10, fixedAnswer)
	require.Len(t, reqs, 4)
	var prompts []string
	for i, r := range reqs {
		p := r.Messages[0].Content
		prompts = append(prompts, p)
		assert.Equal(t, []int{1000, 700, 1200, 300}[i], vowelCount(p), "request %d", i)
		assert.Equal(t, vowelCount(p), r.InputTokens)
	}
	shared := func(a, b string) int { // tokens of the words a and b start with
		x, y := strings.Fields(a), strings.Fields(b)
		n := 0
		for n < len(x) && n < len(y) && x[n] == y[n] {
			n++
		}
		return vowelCount(strings.Join(x[:n], " "))
	}
	assert.GreaterOrEqual(t, shared(prompts[0], prompts[1]), 512, "hash id 0 shared")
	assert.Less(t, shared(prompts[0], prompts[1]), 512+16, "ids 1 and 2 differ")
	assert.GreaterOrEqual(t, shared(prompts[0], prompts[2]), 1000-16, "ids 0, 1 shared")
	assert.Less(t, shared(prompts[3], prompts[0]), 16)
}

// TestCountedHistory: a turn's asked length adds the template's overheads
// (a system message, each earlier exchange) and counts an answer as the
// output tokens the server reported for it, or by its text when it
// reported none.
func TestCountedHistory(t *testing.T) {
	w := open(t, Config{Input: mustDist(t, "30"), Output: mustDist(t, "5"), Text: vowelText(t), Turns: 3,
		PrefixTokens: 40, Overhead: 7, SystemOverhead: 3, TurnOverhead: 11, Seed: 2})
	s, err := w.Next()
	require.NoError(t, err)
	r1, ok := s.Next()
	require.True(t, ok)
	assert.Equal(t, 7+3+40+30-7, r1.InputTokens, "the first prompt leaves room for the template")
	s.Answer("that with", 9) // the server's 9 tokens, not the text's 4
	r2, ok := s.Next()
	require.True(t, ok)
	p2 := vowelCount(r2.Messages[2].Content)
	assert.Equal(t, 30, p2)
	assert.Equal(t, r1.InputTokens+9+11+p2, r2.InputTokens)
	s.Answer("area", 0) // no count: the text's, 4
	r3, ok := s.Next()
	require.True(t, ok)
	assert.Equal(t, r2.InputTokens+4+11+vowelCount(r3.Messages[4].Content), r3.InputTokens)
}
