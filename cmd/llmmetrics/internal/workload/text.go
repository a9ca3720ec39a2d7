package workload

import (
	"math"
	"math/rand/v2"
	"strings"
)

// vocabulary is the filler text's words: common English words that most
// BPE tokenizers (Llama, Qwen, GPT) hold as one token each, with their
// leading space, so a real server counts about one token per word.
var vocabulary = strings.Fields(`the of and to in is was for that with on as are by this be from at or
	have an which one had not but were all they their there been has when who will more would into some
	time only them other than then its over such first about these also new after two may most made
	where many well some could under three during should between before long each much both those same
	world state part city year people work life school system water house group place point number
	model token cache batch queue server answer request stream latency budget prompt window`)

// Text builds prompt text of an exact length in bytes (ASCII only, so a
// byte is a character): words drawn from rng, cut at the length.
type Text struct {
	// CharsPerToken converts a token length to characters: 4 for the fake
	// server (which counts ⌈characters/4⌉), or calibrated for a real one.
	CharsPerToken float64
}

// chars returns the characters that make tokens tokens (at least 1).
func (t Text) chars(tokens int) int {
	return max(int(math.Round(float64(tokens)*t.CharsPerToken)), 1)
}

// Tokens returns the tokens that n characters count for (⌈n/CharsPerToken⌉).
func (t Text) Tokens(n int) int {
	if n == 0 {
		return 0
	}
	return max(int(math.Ceil(float64(n)/t.CharsPerToken-1e-9)), 1)
}

// Words returns tokens tokens' worth of words drawn from rng.
func (t Text) Words(rng *rand.Rand, tokens int) string {
	return wordsChars(rng, t.chars(tokens))
}

// wordsChars returns n characters of words drawn from rng: a prefix of
// what any longer n gives from the same rng state.
func wordsChars(rng *rand.Rand, n int) string {
	var b strings.Builder
	b.Grow(n + 16)
	for b.Len() < n {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(vocabulary[rng.IntN(len(vocabulary))])
	}
	return b.String()[:n]
}

// seeded returns a random source for the stream (kind, n) of a seed: the
// same text for the same seed, kind and n, whatever else was drawn.
func seeded(seed uint64, kind, n uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed^kind*0x9e3779b97f4a7c15, n*0xbf58476d1ce4e5b9+kind))
}

// Stream kinds of seeded.
const (
	kindPrefix uint64 = iota + 1
	kindBlock
	kindMain
)
