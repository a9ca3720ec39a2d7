package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
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

// Text builds prompt text of a length in tokens: by characters (ASCII
// only, so a byte is a character) at CharsPerToken, or, for a Text made by
// CountedText, by adding up what the server counts for each word.
type Text struct {
	// CharsPerToken converts a token length to characters: 4 for the fake
	// server (which counts ⌈characters/4⌉), or calibrated for a real one.
	CharsPerToken float64

	counted *wordCounts // nil: lengths by characters alone
}

// FillerWords returns the words of the filler text, in the order of
// CountedText's counts.
func FillerWords() []string { return slices.Clone(vocabulary) }

// CountedText returns a Text that builds prompts word by word to the
// exact length: counts[i] is what the server counts for FillerWords()[i]
// after a space (at least 1 token each). Text that is not filler (a
// dataset's, a model's answers) is still counted at charsPerToken.
func CountedText(charsPerToken float64, counts []int) (Text, error) {
	if len(counts) != len(vocabulary) {
		return Text{}, fmt.Errorf("%d word counts for %d filler words", len(counts), len(vocabulary))
	}
	c := &wordCounts{count: make(map[string]int, len(counts)), tokens: slices.Clone(counts)}
	for i, n := range counts {
		if n < 1 {
			return Text{}, fmt.Errorf("filler word %q counts %d tokens", vocabulary[i], n)
		}
		c.count[vocabulary[i]] = n
		c.max = max(c.max, n)
	}
	c.buildTail()
	return Text{CharsPerToken: charsPerToken, counted: c}, nil
}

// Counted reports whether t builds prompts from per-word counts.
func (t Text) Counted() bool { return t.counted != nil }

// wordCounts is what a server counts for each filler word.
type wordCounts struct {
	count  map[string]int // by word
	tokens []int          // by vocabulary index
	max    int
	// tail[n], for the last len(tail)−1 tokens of a prompt: the words
	// that leave a remainder the other words can fill exactly (or, when
	// none can, every word that fits).
	tail [][]int
}

// buildTail fills tail up to 4 × the longest word's count: from there
// down, a prompt can end exactly on its length whenever the counts allow.
func (c *wordCounts) buildTail() {
	n := 4 * c.max
	reach := make([]bool, n+1) // reach[x]: x tokens are a sum of counts
	reach[0] = true
	c.tail = make([][]int, n+1)
	for x := 1; x <= n; x++ {
		var exact, fit []int
		for i, k := range c.tokens {
			if k <= x {
				fit = append(fit, i)
				if reach[x-k] {
					exact = append(exact, i)
				}
			}
		}
		reach[x] = len(exact) > 0
		c.tail[x] = fit
		if reach[x] {
			c.tail[x] = exact
		}
	}
}

// words returns words, drawn from rng, that count n tokens: fewer when
// no sum of counts makes n, one word (the shortest) when n is under every
// word's count, "" for n ≤ 0.
func (c *wordCounts) words(rng *rand.Rand, n int) string {
	var b strings.Builder
	b.Grow(5 * max(n, 0)) // at most a word and its space a token
	for left := n; left > 0; {
		var i int
		if left >= len(c.tail) {
			i = rng.IntN(len(vocabulary))
		} else {
			cand := c.tail[left]
			switch {
			case len(cand) > 0:
				i = cand[rng.IntN(len(cand))]
			case b.Len() == 0: // a length under every word's: the shortest word
				i = slices.Index(c.tokens, slices.Min(c.tokens))
			default:
				return b.String()
			}
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(vocabulary[i])
		left -= c.tokens[i]
	}
	return b.String()
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

// Count returns the tokens the server counts for texts, one message
// each: ⌈characters/CharsPerToken⌉ of them all, or, for a counted Text,
// the sum of their filler words' counts plus the other words' characters
// at CharsPerToken.
func (t Text) Count(texts ...string) int {
	chars, n := 0, 0
	for _, s := range texts {
		if t.counted == nil {
			chars += len(s)
			continue
		}
		i := 0
		for w := range strings.SplitSeq(s, " ") {
			if k, ok := t.counted.count[w]; ok {
				n += k
			} else if w != "" || i > 0 {
				chars += len(w) + min(i, 1) // and its space
			}
			i++
		}
	}
	return n + t.Tokens(chars)
}

// Words returns tokens tokens' worth of words drawn from rng: for a
// counted Text, whole words that count exactly tokens (or, when no sum of
// the counts makes it, just under; the shortest word when tokens is under
// every word's count); else tokens × CharsPerToken
// characters, the last word cut.
func (t Text) Words(rng *rand.Rand, tokens int) string {
	if t.counted != nil {
		return t.counted.words(rng, tokens)
	}
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
