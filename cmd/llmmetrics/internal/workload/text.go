package workload

import (
	"math"
	"math/rand/v2"
	"strings"
)

// vocabulary is the filler text's words: common four-letter English words,
// which most BPE tokenizers (Llama, Qwen, GPT, Gemma) hold as one token
// each with their leading space. All the same length, they make a text's
// token count follow its length closely: about 5 characters a token on a
// real server, whatever words were drawn.
var vocabulary = strings.Fields(`that with have this from they will been were said each more time very
	when come make like long look many some what your into them than then only over also back most such
	even much know take year good work well give just here find part down made both life same last city
	name line high hand head side case week home area room fact word play move live help show form turn`)

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
