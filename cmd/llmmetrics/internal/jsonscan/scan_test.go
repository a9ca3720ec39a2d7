package jsonscan_test

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/llmmetrics/llmmetrics/cmd/llmmetrics/internal/jsonscan"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chatChunk is a realistic OpenAI chat completions chunk, as the decoders
// see it most: the data of one SSE event.
const chatChunk = `{"id":"chatcmpl-AZ9kQ2mVb1rT7xY3wQ8e","object":"chat.completion.chunk","created":1731511200,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_0ba0d124f1","choices":[{"index":0,"delta":{"content":" Paris"},"logprobs":null,"finish_reason":null}],"usage":null}`

// walkOne returns a walker that reads the top-level member key with read
// (at depth 1) and skips the others.
func walkOne[F any](key string, read func(j *jsonscan.Scanner, i int, f *F) (int, bool)) jsonscan.Walker[F] {
	return func(j *jsonscan.Scanner, i int, f *F) (int, bool) {
		i, more, ok := j.OpenObject(i, 0)
		for ok && more {
			var k []byte
			if k, i, ok = j.Key(i); !ok {
				break
			}
			if string(k) == key {
				i, ok = read(j, i, f)
			} else {
				i, ok = j.Skip(i, 1)
			}
			if ok {
				i, more, ok = j.NextMember(i)
			}
		}
		return i, ok
	}
}

func TestWalkValidity(t *testing.T) {
	skipAll := func(j *jsonscan.Scanner, i int, _ *struct{}) (int, bool) { return j.Skip(i, 0) }
	tests := []struct {
		doc  string
		want bool
	}{
		{chatChunk, true},
		{` {"a":[1,{"b":null}]} `, true},
		{"{}\n", true},
		{`{"a":"\u00e9\ud83d\ude00"}`, true},
		{`[]`, false},         // not an object
		{`"x"`, false},        // not an object
		{``, false},           // empty
		{`{"a":1} {}`, false}, // two values
		{`{"a":1`, false},     // unterminated
		{`{"a":1,}`, false},   // trailing comma
		{`{"a":0x1}`, false},  // not a JSON number
		{`{"a":-}`, false},
		{`{"a":1e}`, false},
		{`{"a":"` + "\t" + `"}`, false}, // raw control character
		{`{"a":"\u12"}`, false},
		{`{a:1}`, false},
		{`{"a":nul}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.doc, func(t *testing.T) {
			var j jsonscan.Scanner
			var f struct{}
			assert.Equal(t, tt.want, jsonscan.Walk(&j, []byte(tt.doc), &f, skipAll))
			assert.Equal(t, json.Valid([]byte(tt.doc)) && strings.HasPrefix(strings.TrimSpace(tt.doc), "{"), tt.want, "encoding/json agrees")
		})
	}
}

// Skip keeps each open container's kind past the first 128 levels (where
// they are kept apart from the shallow ones): a closer of the wrong kind
// at any depth is an error, as encoding/json says; a shallow Skip
// allocates nothing.
func TestSkipDeepKinds(t *testing.T) {
	const levels = 300
	var open, closers []string
	for i := range levels {
		if i%3 == 0 {
			open, closers = append(open, "["), append(closers, "]")
		} else {
			open, closers = append(open, `{"a":`), append(closers, "}")
		}
	}
	doc := func(swapAt int) []byte {
		var b strings.Builder
		b.WriteString(`{"x":` + strings.Join(open, "") + "1")
		for i := levels - 1; i >= 0; i-- {
			c := closers[i]
			if i == swapAt {
				c = map[string]string{"]": "}", "}": "]"}[c]
			}
			b.WriteString(c)
		}
		b.WriteString("}")
		return []byte(b.String())
	}
	skipX := walkOne("x", func(j *jsonscan.Scanner, i int, _ *struct{}) (int, bool) { return j.Skip(i, 1) })
	for _, swapAt := range []int{-1, 0, 64, 127, 128, 129, 200, levels - 1} {
		t.Run(fmt.Sprintf("wrong closer at %d", swapAt), func(t *testing.T) {
			d := doc(swapAt)
			var j jsonscan.Scanner
			var f struct{}
			require.Equal(t, swapAt < 0, json.Valid(d), "encoding/json")
			assert.Equal(t, swapAt < 0, jsonscan.Walk(&j, d, &f, skipX))
			assert.Equal(t, swapAt < 0, jsonscan.Walk(&j, d, &f, skipX), "a reused Scanner")
		})
	}
	t.Run("shallow allocates nothing", func(t *testing.T) {
		d := []byte(`{"x":[{"a":[1,{"b":null}]},[2]]}`)
		var j jsonscan.Scanner
		var f struct{}
		assert.Zero(t, testing.AllocsPerRun(100, func() { jsonscan.Walk(&j, d, &f, skipX) }))
	})
}

// Walk enforces encoding/json's nesting limit exactly, in Skip and in the
// walker's own OpenObject/OpenArray.
func TestWalkDepthLimit(t *testing.T) {
	for _, depth := range []int{jsonscan.MaxDepth - 1, jsonscan.MaxDepth, jsonscan.MaxDepth + 1} {
		for _, open := range []string{"[", `{"a":`} {
			closer := map[string]string{"[": "]", `{"a":`: "}"}[open]
			// The top-level object is one level; the rest nest inside "x".
			doc := []byte(`{"x":` + strings.Repeat(open, depth-1) + "1" + strings.Repeat(closer, depth-1) + "}")
			refOK := json.Valid(doc)
			require.Equal(t, depth <= jsonscan.MaxDepth, refOK, "encoding/json's limit")
			t.Run(fmt.Sprintf("Skip %s%d", open[:1], depth), func(t *testing.T) {
				var j jsonscan.Scanner
				var f struct{}
				assert.Equal(t, refOK, jsonscan.Walk(&j, doc, &f, walkOne("x", func(j *jsonscan.Scanner, i int, _ *struct{}) (int, bool) {
					return j.Skip(i, 1)
				})))
			})
			t.Run(fmt.Sprintf("walker %s%d", open[:1], depth), func(t *testing.T) {
				var j jsonscan.Scanner
				var f tokens
				assert.Equal(t, refOK, jsonscan.Walk(&j, doc, &f, tokenWalker(false)))
			})
		}
	}
}

// The primitives a walker reads values with, on each kind of value.
func TestReadValues(t *testing.T) {
	type got struct {
		NonEmptyString, NonEmptyArray, NonEmptyObject, True, IsInt, IsString, IsNum bool
		Int                                                                         int
		Text, Num                                                                   string
	}
	read := func(j *jsonscan.Scanner, i int, f *got) (int, bool) {
		// Every primitive reads the same value; all must end at the same index.
		ends := map[string]int{}
		var ok bool
		var text []byte
		if ends["NonEmptyString"], f.NonEmptyString, ok = j.NonEmptyString(i, 1); !ok {
			return 0, false
		}
		ends["NonEmptyArray"], f.NonEmptyArray, _ = j.NonEmptyArray(i, 1)
		ends["NonEmptyObject"], f.NonEmptyObject, _ = j.NonEmptyObject(i, 1)
		ends["True"], f.True, _ = j.True(i, 1)
		ends["Int"], f.Int, f.IsInt, _ = j.Int(i, 1)
		ends["StringValue"], text, f.IsString, _ = j.StringValue(i, 1)
		f.Text = string(text)
		ends["Number"], text, f.IsNum, _ = j.Number(i, 1)
		f.Num = string(text)
		ends["Skip"], _ = j.Skip(i, 1)
		for name, end := range ends {
			if end != ends["Skip"] {
				panic(name + " ends elsewhere than Skip")
			}
		}
		return ends["Skip"], true
	}
	tests := []struct {
		value string
		want  got
	}{
		{`"Hi"`, got{NonEmptyString: true, IsString: true, Text: "Hi"}},
		{`""`, got{IsString: true}},
		{`"a\"b\\c\/d\n\u0041\u00e9"`, got{NonEmptyString: true, IsString: true, Text: "a\"b\\c/d\nA\xff"}},
		{`"é"`, got{NonEmptyString: true, IsString: true, Text: "é"}},
		{`[1]`, got{NonEmptyArray: true}},
		{`[ ]`, got{}},
		{`{"a":1}`, got{NonEmptyObject: true}},
		{`{ }`, got{}},
		{`true`, got{True: true}},
		{`false`, got{}},
		{`null`, got{}},
		{`0`, got{IsInt: true, IsNum: true, Num: "0"}},
		{`42`, got{IsInt: true, Int: 42, IsNum: true, Num: "42"}},
		{strconv.Itoa(math.MaxInt), got{IsInt: true, Int: math.MaxInt, IsNum: true, Num: strconv.Itoa(math.MaxInt)}}, // 9223372036854775807 on a 64-bit system
		{strconv.FormatUint(math.MaxInt+1, 10), got{IsNum: true, Num: strconv.FormatUint(math.MaxInt+1, 10)}},        // overflows an int
		{`9223372036854775808`, got{IsNum: true, Num: "9223372036854775808"}},                                        // overflows an int anywhere
		{`-1`, got{IsNum: true, Num: "-1"}},
		{`1.0`, got{IsNum: true, Num: "1.0"}},
		{`83.203`, got{IsNum: true, Num: "83.203"}},
		{`-0.5e-3`, got{IsNum: true, Num: "-0.5e-3"}},
		{`1e3`, got{IsNum: true, Num: "1e3"}},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			var j jsonscan.Scanner
			var f got
			require.True(t, jsonscan.Walk(&j, []byte(`{"v":`+tt.value+`,"w":0}`), &f, walkOne("v", read)))
			assert.Equal(t, tt.want, f)
		})
	}
}

func TestInts(t *testing.T) {
	names := []string{"prompt_tokens", "completion_tokens", "cached"}
	tests := []struct {
		usage string
		want  jsonscan.Ints
	}{
		{`{"prompt_tokens":9,"completion_tokens":12,"total_tokens":21}`, jsonscan.Ints{Val: [8]int{9, 12}, Has: [8]bool{true, true}}},
		{`{"completion_tokens":1.5,"prompt_tokens":9}`, jsonscan.Ints{Val: [8]int{9}, Has: [8]bool{true}}},
		{`{"cached":3,"cached":"x"}`, jsonscan.Ints{}}, // the last member wins
		{`{"cached":"x","cached":3}`, jsonscan.Ints{Val: [8]int{2: 3}, Has: [8]bool{2: true}}},
		{`{"\u0063ached":-3,"prompt_tokens":{"a":1}}`, jsonscan.Ints{}},
		{`null`, jsonscan.Ints{}},
		{`[1,2]`, jsonscan.Ints{}},
	}
	for _, tt := range tests {
		t.Run(tt.usage, func(t *testing.T) {
			var j jsonscan.Scanner
			f := jsonscan.Ints{Val: [8]int{7, 7, 7}, Has: [8]bool{true, true, true}} // Walk resets it
			require.True(t, jsonscan.Walk(&j, []byte(`{"usage":`+tt.usage+`}`), &f, walkOne("usage", func(j *jsonscan.Scanner, i int, f *jsonscan.Ints) (int, bool) {
				return j.Ints(i, 1, names, f)
			})))
			assert.Equal(t, tt.want, f)
			assert.Equal(t, tt.want.Val[0], f.Get(0))
		})
	}
}

// Str skips 8 bytes at a time: a quote, a backslash or a control character
// must be found at every offset, in keys and values, as encoding/json finds
// it.
func TestStringsAtEveryOffset(t *testing.T) {
	specials := []string{`"`, `\"`, `\\`, `\n`, `\u00e9`, `\x`, "\x00", "\x1f", "\x7f", "\x80", "\xff", " "}
	for _, sp := range specials {
		t.Run(fmt.Sprintf("%q", sp), func(t *testing.T) {
			for k := range 20 {
				body := strings.Repeat("a", k) + sp + strings.Repeat("b", 20-k)
				for _, doc := range []string{
					`{"choices":[{"delta":{"content":"` + body + `"}}]}`,
					`{"` + body + `":1,"choices":[{"text":"x"}]}`,
				} {
					var j jsonscan.Scanner
					var got tokens
					ok := jsonscan.Walk(&j, []byte(doc), &got, tokenWalker(true))
					want, refOK := refTokens([]byte(doc), true)
					require.Equal(t, refOK, ok, "validity of %q", doc)
					assert.Equal(t, want, got, "tokens of %q", doc)
				}
			}
		})
	}
}

// Hot spans the last string NonEmptyString read, quotes included; -1 when
// there was none.
func TestHot(t *testing.T) {
	var j jsonscan.Scanner
	var f tokens
	doc := []byte(`{"a":"x","b":[1,""],"c":2}`)
	require.True(t, jsonscan.Walk(&j, doc, &f, tokenWalker(false)))
	start, end := j.Hot()
	assert.Equal(t, `""`, string(doc[start:end]))

	require.True(t, jsonscan.Walk(&j, []byte(`{"a":1}`), &f, tokenWalker(false)))
	start, _ = j.Hot()
	assert.Equal(t, -1, start, "a new Walk forgets the last one's span")
}

// The Example's walker: a protocol's walker written with the exported API
// only.
func TestWalkAllocatesNothing(t *testing.T) {
	var j jsonscan.Scanner
	var f ollamaFacts
	data := []byte(`{"model":"llama3.2","message":{"role":"assistant","content":"The \"sky\""},"done":true,"eval_count":290}`)
	require.True(t, jsonscan.Walk(&j, data, &f, walkOllama))
	assert.Equal(t, ollamaFacts{content: true, done: true, evals: 290, hasEvals: true}, f)
	assert.Zero(t, testing.AllocsPerRun(100, func() { jsonscan.Walk(&j, data, &f, walkOllama) }))
}

// Members calls its function once per member, in order, with the unescaped
// name at the member's value; it skips a value that is not an object and
// stops at the first member that is not valid.
func TestMembers(t *testing.T) {
	type facts struct {
		keys  []string
		a     int
		inner bool // a non-object "o" was skipped without a call
	}
	walk := func(j *jsonscan.Scanner, i int, f *facts) (int, bool) {
		return j.Members(i, 0, func(k []byte, i int) (int, bool) {
			f.keys = append(f.keys, string(k))
			switch string(k) {
			case "a":
				next, v, _, ok := j.Int(i, 1)
				f.a = v
				return next, ok
			case "o":
				calls := 0
				next, ok := j.Members(i, 1, func(_ []byte, i int) (int, bool) { calls++; return j.Skip(i, 2) })
				f.inner = f.inner || calls == 0 && j.At(i) != '{'
				return next, ok
			}
			return j.Skip(i, 1)
		})
	}
	tests := []struct {
		name string
		in   string
		ok   bool
		want facts
	}{
		{"empty object", `{}`, true, facts{}},
		{"members in order, the last duplicate wins", `{"a":1,"b":[1,{"a":9}],"a":2}`, true, facts{keys: []string{"a", "b", "a"}, a: 2}},
		{"escaped name", `{"\u0061":7}`, true, facts{keys: []string{"a"}, a: 7}},
		{"a value that is not an object is skipped", `{"o":[1,2],"a":3}`, true, facts{keys: []string{"o", "a"}, a: 3, inner: true}},
		{"nested object", `{"o":{"x":1,"y":{}},"a":4}`, true, facts{keys: []string{"o", "a"}, a: 4}},
		{"invalid member value stops", `{"a":1,"b":tru,"a":2}`, false, facts{keys: []string{"a", "b"}, a: 1}},
		{"missing colon", `{"a" 1}`, false, facts{}},
		{"trailing comma", `{"a":1,}`, false, facts{keys: []string{"a"}, a: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var j jsonscan.Scanner
			var f facts
			ok := jsonscan.Walk(&j, []byte(tt.in), &f, walk)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.ok, json.Valid([]byte(tt.in)), "the case's validity is encoding/json's")
			assert.Equal(t, tt.want, f)
		})
	}
}
