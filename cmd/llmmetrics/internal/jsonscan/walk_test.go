package jsonscan_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/llmmetrics/llmmetrics/cmd/llmmetrics/internal/jsonscan"
)

// This file holds a walker that reads every value of a document with the
// exported primitives, and its reference built on encoding/json's
// Decoder.Token: the two must agree on validity and on every token, for any
// input (FuzzWalk). The walker uses nothing but the exported API, as a
// protocol's walker in another package does.

// intNames are the members every object is read for with Ints (ASCII, as
// the names a walker looks for are; see ascii).
var intNames = []string{"a", "b", "prompt_tokens"}

// deepest is the depth from which containers are no longer also read with
// NonEmptyArray/NonEmptyObject/Ints (each of which skips the whole
// container), so deep documents stay linear.
const deepest = 32

// tokens is the facts of the full walker: every token, as text.
type tokens struct{ s string }

// tokenWalker returns a walker that records every token. With texts false it
// reads strings only through NonEmptyString (their emptiness), as a walker
// used with a Cache must; with texts true it also records their text
// (StringValue).
func tokenWalker(texts bool) jsonscan.Walker[tokens] {
	return func(j *jsonscan.Scanner, i int, f *tokens) (int, bool) {
		var b strings.Builder
		next, ok := walkValue(j, i, 0, texts, &b)
		f.s = b.String()
		return next, ok
	}
}

func walkValue(j *jsonscan.Scanner, i, depth int, texts bool, b *strings.Builder) (int, bool) {
	switch c := j.At(i); {
	case c == '{' || c == '[':
		var ints jsonscan.Ints
		if depth < deepest {
			var yes, ok bool
			if c == '{' {
				_, yes, ok = j.NonEmptyObject(i, depth)
				if ok {
					_, ok = j.Ints(i, depth, intNames, &ints)
				}
			} else {
				_, yes, ok = j.NonEmptyArray(i, depth)
			}
			if !ok {
				return 0, false
			}
			fmt.Fprintf(b, "%c%v ", c, yes)
		} else {
			fmt.Fprintf(b, "%c ", c)
		}
		var more, ok bool
		if c == '{' {
			i, more, ok = j.OpenObject(i, depth)
		} else {
			i, more, ok = j.OpenArray(i, depth)
		}
		for ok && more {
			if c == '{' {
				var k []byte
				if k, i, ok = j.Key(i); !ok {
					break
				}
				fmt.Fprintf(b, "k:%s ", ascii(string(k)))
			}
			if i, ok = walkValue(j, i, depth+1, texts, b); !ok {
				break
			}
			if c == '{' {
				i, more, ok = j.NextMember(i)
			} else {
				i, more, ok = j.NextElement(i)
			}
		}
		if ok {
			if c == '{' && depth < deepest {
				fmt.Fprintf(b, "} ints:%v ", ints)
			} else {
				fmt.Fprintf(b, "%c ", c+2) // '}' or ']'
			}
		}
		return i, ok
	case c == '"':
		next, yes, ok := j.NonEmptyString(i, depth)
		if !ok {
			return 0, false
		}
		if h0, h1 := j.Hot(); h0 != i || h1 != next {
			panic(fmt.Sprintf("hot span [%d,%d) for the string at [%d,%d)", h0, h1, i, next))
		}
		fmt.Fprintf(b, "s%v ", yes)
		if texts {
			next2, text, isString, ok := j.StringValue(i, depth)
			if !ok || !isString || next2 != next {
				panic("StringValue disagrees with NonEmptyString")
			}
			fmt.Fprintf(b, "%q ", ascii(string(text)))
		}
		return next, true
	case c == 't' || c == 'f' || c == 'n':
		next, yes, ok := j.True(i, depth)
		if !ok {
			return 0, false
		}
		switch {
		case yes:
			b.WriteString("true ")
		case c == 'f':
			b.WriteString("false ")
		default:
			b.WriteString("null ")
		}
		return next, true
	default:
		next, v, isInt, ok := j.Int(i, depth)
		if !ok {
			return 0, false
		}
		fmt.Fprintf(b, "n:%v:%d ", isInt, v)
		return next, true
	}
}

// ascii drops the bytes of non-ASCII characters: the scanner's Text
// decodes a \u escape of a non-ASCII character as one placeholder byte (its
// documented leniency) and keeps invalid UTF-8 as is, where encoding/json
// decodes the character and replaces invalid UTF-8 with U+FFFD.
func ascii(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 0x80 {
			return -1
		}
		return r
	}, s)
}

// refTokens is tokenWalker built on encoding/json.
func refTokens(data []byte, texts bool) (tokens, bool) {
	if !json.Valid(data) || !bytes.HasPrefix(bytes.TrimLeft(data, " \t\r\n"), []byte("{")) {
		return tokens{}, false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var b strings.Builder
	refValue(dec, 0, texts, &b)
	return tokens{b.String()}, true
}

// refValue writes the tokens of the next value and returns it when it is a
// number (for Ints).
func refValue(dec *json.Decoder, depth int, texts bool, b *strings.Builder) json.Number {
	t, err := dec.Token()
	if err != nil {
		panic(err) // json.Valid said it is valid
	}
	switch v := t.(type) {
	case json.Delim:
		if depth < deepest {
			fmt.Fprintf(b, "%c%v ", v, dec.More())
		} else {
			fmt.Fprintf(b, "%c ", v)
		}
		var ints jsonscan.Ints
		for dec.More() {
			if v == '{' {
				k, _ := dec.Token()
				name := k.(string)
				fmt.Fprintf(b, "k:%s ", ascii(name))
				n := refValue(dec, depth+1, texts, b)
				for f, want := range intNames {
					if name == want {
						ints.Has[f], ints.Val[f] = refInt(n)
					}
				}
			} else {
				refValue(dec, depth+1, texts, b)
			}
		}
		if _, err := dec.Token(); err != nil {
			panic(err)
		}
		if v == '{' && depth < deepest {
			fmt.Fprintf(b, "} ints:%v ", ints)
		} else {
			fmt.Fprintf(b, "%c ", v+2)
		}
	case string:
		fmt.Fprintf(b, "s%v ", v != "")
		if texts {
			fmt.Fprintf(b, "%q ", ascii(v))
		}
	case bool:
		fmt.Fprintf(b, "%v ", v)
	case nil:
		b.WriteString("null ")
	case json.Number:
		isInt, n := refInt(v)
		fmt.Fprintf(b, "n:%v:%d ", isInt, n)
		return v
	}
	return ""
}

// refInt is what Int reads from a number: a non-negative integer literal
// that fits an int.
func refInt(n json.Number) (bool, int) {
	if n == "" || strings.ContainsAny(string(n), "-.eE") {
		return false, 0
	}
	x, err := strconv.ParseInt(string(n), 10, strconv.IntSize)
	if err != nil {
		return false, 0
	}
	return true, int(x)
}
