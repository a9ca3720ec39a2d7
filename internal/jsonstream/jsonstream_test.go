package jsonstream

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var testSchema = NewSchema(
	Field{Path: "a"},
	Field{Path: "a.n", MaxString: 8},
	Field{Path: "a.s", MaxString: 8},
	Field{Path: "s", MaxString: 16},
	Field{Path: "n"},
	Field{Path: "b"},
	Field{Path: "a.d"},
	Field{Path: "a.d.n"},
)

const (
	fA = iota
	fAN
	fAS
	fS
	fN
	fB
	fAD
	fADN
)

// feedAll feeds p in pieces of size step (0: whole) and returns the scanner.
func feedAll(p []byte, step int) *Scanner {
	s := NewScanner(testSchema)
	if step <= 0 {
		step = len(p) + 1
	}
	for len(p) > 0 && !s.Done() && s.Err() == nil {
		n := min(step, len(p))
		s.Feed(p[:n])
		p = p[n:]
	}
	return s
}

func TestScannerCaptures(t *testing.T) {
	in := []byte(` {"x":[1,{"a":2}],"a":{"n":42,"s":"h\u00e9llo\ud83d\ude00!","deep":{"n":7}},"s":"model-1","n":-3,"b":true} `)
	s := feedAll(in, 0)
	require.NoError(t, s.Err())
	require.True(t, s.Done())
	assert.Equal(t, int64(len(in)-1), s.Offset(), "the trailing space is not scanned")
	assert.Equal(t, KindObject, s.Root.Kind)
	assert.Equal(t, int64(1), s.Root.Start)
	assert.Equal(t, int64(len(in)-1), s.Root.End)

	a := s.Values[fA]
	assert.Equal(t, KindObject, a.Kind)
	assert.True(t, a.Complete)
	assert.Equal(t, `{"n":42,"s":"h\u00e9llo\ud83d\ude00!","deep":{"n":7}}`, string(in[a.Start:a.End]))
	assert.Equal(t, Value{Kind: KindNumber, Start: a.Start + 5, End: a.Start + 7, Complete: true, Int: 42, IntOK: true, Str: []byte("42")}, s.Values[fAN])
	// "héllo😀!" is 11 bytes; 8 are kept (the cut falls inside the emoji).
	assert.Equal(t, []byte("h\xc3\xa9llo\xf0\x9f"), s.Values[fAS].Str)
	assert.True(t, s.Values[fAS].Truncated)
	assert.Equal(t, "model-1", string(s.Values[fS].Str))
	assert.False(t, s.Values[fS].Truncated)
	assert.Equal(t, KindNumber, s.Values[fN].Kind)
	assert.False(t, s.Values[fN].IntOK, "a negative number is not a count")
	assert.Equal(t, KindTrue, s.Values[fB].Kind)
	assert.Equal(t, "true", string(in[s.Values[fB].Start:s.Values[fB].End]))
}

func TestScannerLastMemberWins(t *testing.T) {
	s := feedAll([]byte(`{"a":{"n":1,"s":"x"},"s":"one","a":{"n":2},"s":"two"}`), 0)
	require.NoError(t, s.Err())
	assert.Equal(t, 2, s.Values[fAN].Int)
	assert.Equal(t, KindNone, s.Values[fAS].Kind, "a second parent clears its children")
	assert.Equal(t, "two", string(s.Values[fS].Str))

	s = feedAll([]byte(`{"a":{"n":1},"a":null}`), 0)
	assert.Equal(t, KindNull, s.Values[fA].Kind)
	assert.Equal(t, KindNone, s.Values[fAN].Kind)
}

func TestScannerThirdLevel(t *testing.T) {
	s := feedAll([]byte(`{"a":{"d":{"x":[1],"n":5},"n":1},"d":{"n":9}}`), 1)
	require.NoError(t, s.Err())
	assert.Equal(t, 5, s.Values[fADN].Int)
	assert.Equal(t, KindObject, s.Values[fAD].Kind)
	s = feedAll([]byte(`{"a":{"d":{"n":5}},"a":{"n":2}}`), 0)
	assert.Equal(t, KindNone, s.Values[fADN].Kind, "a parent that appears again clears its grandchildren")
	assert.Equal(t, 2, s.Values[fAN].Int)
}

func TestNewSchemaRejectsBadPaths(t *testing.T) {
	for _, fields := range [][]Field{
		{{Path: ""}},
		{{Path: "a."}},
		{{Path: "a.b"}},            // parent not listed
		{{Path: "a"}, {Path: "a"}}, // repeated
		{{Path: "a"}, {Path: "a.b"}, {Path: "a.b.c"}, {Path: "a.b.c.d"}}, // too deep
		{{Path: "a", MaxString: -1}},
	} {
		assert.Panics(t, func() { NewSchema(fields...) }, "%v", fields)
	}
}

func TestScannerOnlyTopLevelObjectsMatch(t *testing.T) {
	for _, in := range []string{
		`[{"s":"x"}]`,                              // an element, not a top-level member
		`{"o":{"s":"x"}}`,                          // nested under another member
		`{"a":[{"n":1}]}`,                          // a's array, not object
		`{"a":{"o":{"n":1}}}`,                      // too deep
		`{"\u0073x":"x","sx":"y"}`,                 // other names
		`{"` + strings.Repeat("s", 100) + `":"x"}`, // a long name
	} {
		t.Run(in, func(t *testing.T) {
			s := feedAll([]byte(in), 0)
			require.NoError(t, s.Err())
			require.True(t, s.Done())
			assert.Equal(t, KindNone, s.Values[fS].Kind)
			assert.Equal(t, KindNone, s.Values[fAN].Kind)
		})
	}
	s := feedAll([]byte(`{"\u0073":"escaped name"}`), 0)
	assert.Equal(t, "escaped name", string(s.Values[fS].Str), "names are compared decoded, as encoding/json does")
}

func TestScannerNumbers(t *testing.T) {
	for _, tc := range []struct {
		in    string
		intOK bool
		v     int
	}{
		{`0`, true, 0},
		{`7`, true, 7},
		{`1234567`, true, 1234567},
		{strconv.Itoa(math.MaxInt), true, math.MaxInt}, // 9223372036854775807 on a 64-bit system
		{strconv.FormatUint(math.MaxInt+1, 10), false, 0},
		{`9223372036854775808`, false, 0},
		{`-1`, false, 0},
		{`1.0`, false, 0},
		{`1e3`, false, 0},
		{`0.5E-2`, false, 0},
	} {
		t.Run(tc.in, func(t *testing.T) {
			in := `{"n":` + tc.in + `}`
			s := feedAll([]byte(in), 1)
			require.NoError(t, s.Err())
			v := s.Values[fN]
			assert.Equal(t, tc.intOK, v.IntOK)
			assert.Equal(t, tc.v, v.Int)
			assert.Equal(t, tc.in, in[v.Start:v.End])
		})
	}
}

func TestScannerTopLevelScalars(t *testing.T) {
	for _, tc := range []struct {
		in   string
		kind Kind
		n    int // bytes Feed reports as the value's
	}{
		{`"x" `, KindString, 3},
		{` true`, KindTrue, 5},
		{`null`, KindNull, 4},
		{`12 `, KindNumber, 2},
		{`[] x`, KindArray, 2},
	} {
		t.Run(tc.in, func(t *testing.T) {
			s := NewScanner(testSchema)
			n := s.Feed([]byte(tc.in))
			require.NoError(t, s.Err())
			assert.True(t, s.Done())
			assert.Equal(t, tc.n, n)
			assert.Equal(t, tc.kind, s.Root.Kind)
			assert.Equal(t, 0, s.Feed([]byte(" ")), "nothing is scanned after the value")
		})
	}
	s := NewScanner(testSchema)
	s.Feed([]byte("12"))
	assert.False(t, s.Done(), "a number goes on until a byte ends it")
}

func TestScannerErrors(t *testing.T) {
	for _, in := range []string{
		``, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `[1,]`, `{,}`, `tru`, `trux`, `"\x"`, "\"\x01\"",
		`01`, `-`, `1.`, `1e`, `1e+`, `.5`, `{"a":1 "b":2}`, `[1}`, `{"a":1]`, `"\u12G4"`, `}`, `nul`,
	} {
		t.Run(in, func(t *testing.T) {
			s := feedAll([]byte(in+" "), 1)
			assert.False(t, json.Valid([]byte(in)), "test input must be invalid")
			assert.False(t, s.Done() && s.Err() == nil && trailingSpace(in+" ", s.Offset()))
		})
	}
	s := NewScanner(testSchema)
	assert.Equal(t, 3, s.Feed([]byte(`[1,]`)), "Feed stops at the bad byte")
	assert.ErrorIs(t, s.Err(), ErrSyntax)
	assert.Equal(t, 0, s.Feed([]byte(`1`)))
}

func TestScannerDepth(t *testing.T) {
	ok := strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)
	s := feedAll([]byte(ok), 0)
	require.NoError(t, s.Err())
	assert.True(t, s.Done())
	tooDeep := "[" + ok + "]"
	s = feedAll([]byte(tooDeep), 0)
	assert.ErrorIs(t, s.Err(), ErrSyntax)
	// Object and array levels are told apart beyond the inline stack.
	mixed := strings.Repeat(`{"k":[`, 300) + strings.Repeat(`]}`, 300)
	s = feedAll([]byte(mixed), 7)
	require.NoError(t, s.Err())
	assert.True(t, s.Done())
	s = feedAll([]byte(strings.Repeat(`{"k":[`, 300)+`}`), 0)
	assert.ErrorIs(t, s.Err(), ErrSyntax)
}

func TestScannerReset(t *testing.T) {
	s := NewScanner(testSchema)
	s.Feed([]byte(`{"s":"first","n":1}`))
	require.True(t, s.Done())
	s.Reset()
	s.Feed([]byte(`{"n":2}`))
	require.True(t, s.Done())
	assert.Equal(t, KindNone, s.Values[fS].Kind)
	assert.Equal(t, 2, s.Values[fN].Int)
}

func TestScannerFeedAllocs(t *testing.T) {
	in := []byte(`{"id":"x","a":{"n":12,"s":"abc\u00e9"},"s":"m","content":"` + strings.Repeat("word ", 40) + `","b":false}`)
	s := NewScanner(testSchema)
	allocs := testing.AllocsPerRun(100, func() {
		s.Reset()
		for p := in; len(p) > 0; p = p[min(len(p), 13):] {
			s.Feed(p[:min(len(p), 13)])
		}
	})
	assert.Zero(t, allocs)
	assert.True(t, s.Done())
}

func trailingSpace(in string, off int64) bool {
	return strings.TrimLeft(in[off:], " \t\r\n") == ""
}

// check compares a scan of in against encoding/json, whatever in is.
func check(t *testing.T, in []byte) {
	// A trailing space ends a top-level number, as EOF would for
	// json.Valid.
	padded := append(append([]byte{}, in...), ' ')
	whole := feedAll(padded, 0)
	valid := whole.Err() == nil && whole.Done() && trailingSpace(string(padded), whole.Offset())
	require.Equal(t, json.Valid(in), valid, "validity of %q (err %v)", in, whole.Err())

	for _, step := range []int{1, 2, 3, 7} {
		s := feedAll(padded, step)
		require.Equal(t, whole.Err() == nil, s.Err() == nil, "step %d", step)
		require.Equal(t, whole.Done(), s.Done(), "step %d", step)
		require.Equal(t, whole.Offset(), s.Offset(), "step %d", step)
		require.Equal(t, whole.Root, s.Root, "step %d", step)
		require.Equal(t, whole.Values, s.Values, "step %d", step)
	}
	if !valid {
		return
	}
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(in))
	d.UseNumber()
	if d.Decode(&m) != nil || m == nil {
		require.NotEqual(t, KindObject, whole.Root.Kind)
		return
	}
	get := func(m map[string]any, k string) (any, bool) { v, ok := m[k]; return v, ok }
	w, ok := get(m, "s")
	checkValue(t, in, whole.Values[fS], w, ok)
	w, ok = get(m, "n")
	checkValue(t, in, whole.Values[fN], w, ok)
	w, ok = get(m, "b")
	checkValue(t, in, whole.Values[fB], w, ok)
	w, ok = get(m, "a")
	checkValue(t, in, whole.Values[fA], w, ok)
	a, _ := m["a"].(map[string]any)
	w, ok = get(a, "n")
	checkValue(t, in, whole.Values[fAN], w, ok)
	w, ok = get(a, "s")
	checkValue(t, in, whole.Values[fAS], w, ok)
	w, ok = get(a, "d")
	checkValue(t, in, whole.Values[fAD], w, ok)
	ad, _ := a["d"].(map[string]any)
	w, ok = get(ad, "n")
	checkValue(t, in, whole.Values[fADN], w, ok)
}

// checkValue compares one captured Value with encoding/json's view of it.
func checkValue(t *testing.T, in []byte, v Value, want any, present bool) {
	if !present {
		require.Equal(t, KindNone, v.Kind)
		return
	}
	require.True(t, v.Complete)
	raw := in[v.Start:v.End]
	var got any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	require.NoError(t, d.Decode(&got), "raw value %q", raw)
	require.Equal(t, want, got, "the offsets span the member's value")
	switch w := want.(type) {
	case string:
		require.Equal(t, KindString, v.Kind)
		if cap(v.Str) == 0 {
			require.Empty(t, v.Str, "a field with MaxString 0 keeps no text")
		} else if utf8.Valid(raw) {
			// encoding/json replaces invalid UTF-8 bytes; the scanner keeps them.
			if !v.Truncated {
				require.Equal(t, w, string(v.Str))
			} else {
				require.True(t, strings.HasPrefix(w, string(v.Str)))
			}
		}
	case json.Number:
		require.Equal(t, KindNumber, v.Kind)
		n, err := strconv.ParseUint(string(w), 10, 63)
		require.Equal(t, err == nil, v.IntOK, "%s", w)
		if err == nil {
			require.Equal(t, int(n), v.Int)
		}
	case bool:
		require.Equal(t, map[bool]Kind{true: KindTrue, false: KindFalse}[w], v.Kind)
	case nil:
		require.Equal(t, KindNull, v.Kind)
	case map[string]any:
		require.Equal(t, KindObject, v.Kind)
		require.Equal(t, len(w) == 0, v.Empty)
	case []any:
		require.Equal(t, KindArray, v.Kind)
		require.Equal(t, len(w) == 0, v.Empty)
	}
}

var seeds = []string{
	`{"a":{"n":1,"s":"x"},"s":"m","n":3,"b":false}`,
	`{"a":{"n":1,"s":"x"},"a":{"s":"y"}}`,
	`{"s":"\ud800x","n":0}`,
	`{"s":"\ud83d\ude00\u0041\"\\\/\b\f\n\r\t"}`,
	`{"s":"` + "\xff\xfe" + `"}`,
	`[1,2,{"s":"x"}]`,
	`{"n":1e5,"b":null}`,
	`{"a":[],"s":{}}`,
	`{"a":{"d":{"n":3,"d":{"n":4}},"d":null}}`,
	`{"a":{"d":{"n":3}},"a":{"d":[1]}}`,
	` 12 `, `"str"`, `{}`, `[]`, `{"a":{}}`, `{"a":1`,
	`{"n":-0.5e+3}`, `{"s":"` + strings.Repeat("z", 40) + `"}`,
}

func TestScannerMatchesEncodingJSON(t *testing.T) {
	for _, in := range seeds {
		t.Run(in, func(t *testing.T) { check(t, []byte(in)) })
	}
}

func FuzzScanner(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		check(t, in)
	})
}

// TestScannerFirstElement: a field named "0" under an array field is the
// array's first element, at every cut of the input; later elements, and a
// member "0" of an object that is not the array, are not captured.
func TestScannerFirstElement(t *testing.T) {
	schema := NewSchema(
		Field{Path: "c"},
		Field{Path: "c.0"},
		Field{Path: "c.0.r", MaxString: 8},
		Field{Path: "o"},
		Field{Path: "o.0", MaxString: 8},
	)
	for _, tc := range []struct {
		name, in    string
		r           string // c.0.r, "" when not captured
		first, zero Kind   // c.0's kind, o.0's kind
	}{
		{"first of two", `{"c":[{"r":"stop"},{"r":"length"}],"o":{"0":"x"}}`, "stop", KindObject, KindString},
		{"first is not an object", `{"c":[7,{"r":"length"}]}`, "", KindNumber, KindNone},
		{"empty array", `{"c":[]}`, "", KindNone, KindNone},
		{"nested arrays", `{"c":[[{"r":"no"}],{"r":"no"}]}`, "", KindArray, KindNone},
		{"repeated member: the last wins", `{"c":[{"r":"a"}],"c":[{"x":1}]}`, "", KindObject, KindNone},
		{"not an array", `{"c":{"0":{"r":"obj"}}}`, "obj", KindObject, KindNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := []byte(tc.in)
			for cut := 0; cut <= len(in); cut++ {
				s := NewScanner(schema)
				s.Feed(in[:cut])
				s.Feed(in[cut:])
				require.NoError(t, s.Err())
				require.True(t, s.Done())
				assert.Equal(t, tc.r, string(s.Values[2].Str), "cut %d", cut)
				assert.Equal(t, tc.first, s.Values[1].Kind, "cut %d", cut)
				assert.Equal(t, tc.zero, s.Values[4].Kind, "cut %d", cut)
			}
		})
	}
}

// TestScannerNumberText: a number's text is kept in Str like a string's,
// up to MaxString, at every cut of the input.
func TestScannerNumberText(t *testing.T) {
	schema := NewSchema(Field{Path: "a", MaxString: 8}, Field{Path: "b", MaxString: 3}, Field{Path: "c"})
	in := []byte(`{"a":83.203,"b":-1.5e-3,"c":7,"d":1.25}`)
	for cut := 0; cut <= len(in); cut++ {
		s := NewScanner(schema)
		s.Feed(in[:cut])
		s.Feed(in[cut:])
		require.True(t, s.Done())
		assert.Equal(t, "83.203", string(s.Values[0].Str), "cut %d", cut)
		assert.False(t, s.Values[0].Truncated)
		assert.Equal(t, "-1.", string(s.Values[1].Str), "cut %d", cut)
		assert.True(t, s.Values[1].Truncated)
		assert.Empty(t, s.Values[2].Str, "a field with no MaxString keeps no text")
		assert.True(t, s.Values[2].IntOK)
		assert.Equal(t, 7, s.Values[2].Int)
	}
}
