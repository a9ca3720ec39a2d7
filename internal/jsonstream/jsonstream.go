// Package jsonstream is an incremental JSON scanner that captures a few
// members of one JSON value as its bytes go by, in pieces of any size, with
// bounded memory and without allocating after construction.
//
// It exists for the HTTP integration of llmmetrics: the usage object of a
// non-streaming LLM answer is read on the side while the caller reads the
// body, and the "model" and "stream_options" members of a request body are
// found without parsing the whole body into values. A Schema names the
// members to capture by their path from the top-level object ("usage",
// "usage.prompt_tokens", "usage.completion_tokens_details.reasoning_tokens").
// Everything else is only validated.
//
// The scanner accepts exactly the JSON grammar of RFC 8259 (the same texts as
// encoding/json, with its nesting limit of 10000), reports the first syntax
// error, and gives the same result however the input is cut into pieces.
package jsonstream

import (
	"errors"
	"fmt"
	"strings"
)

// MaxDepth is the deepest nesting the scanner accepts (encoding/json's limit).
const MaxDepth = 10000

// maxKey is the longest member name that can match a schema name; longer
// names are compared only by length and never match.
const maxKey = 64

// ErrSyntax is wrapped by the error a Scanner reports for input that is not JSON.
var ErrSyntax = errors.New("jsonstream: syntax error")

// Kind is the kind of a JSON value.
type Kind uint8

// The kinds of JSON values; KindNone means the member was not seen.
const (
	KindNone Kind = iota
	KindObject
	KindArray
	KindString
	KindNumber
	KindTrue
	KindFalse
	KindNull
)

// MaxPathDepth is the most names a Field's path may have.
const MaxPathDepth = 3

// Field describes one member to capture.
type Field struct {
	// Path names the member from the top-level object: "name" for a member
	// of the top-level object, "parent.name" for a member of the object that
	// is the value of the field "parent" (which must be listed before it),
	// and so on, up to MaxPathDepth names. Names may not contain '.'. The
	// name "0" under a field whose value is an array is the array's first
	// element ("choices.0.finish_reason"); under an object it is the member
	// named "0".
	Path string
	// MaxString is how many bytes of a string value are kept in Value.Str
	// (decoded); 0 keeps none (the kind and offsets are still recorded).
	MaxString int
}

// Schema is an immutable set of fields; build it once with NewSchema and
// share it between scanners.
type Schema struct {
	fields   []Field
	top      []named   // members of the top-level object
	children [][]named // by field index: members of that field's object
	kids     [][]int   // by field index: the indexes of all its descendants
	strTotal int
}

type named struct {
	name string
	idx  int
}

// NewSchema builds a Schema from fields; Values of a Scanner are indexed
// like fields. It panics on a malformed path (a programming error: schemas
// are built at package initialization).
func NewSchema(fields ...Field) *Schema {
	s := &Schema{fields: fields, children: make([][]named, len(fields)), kids: make([][]int, len(fields))}
	byPath := make(map[string]int, len(fields))
	parents := make([]int, len(fields))
	for i, f := range fields {
		names := strings.Split(f.Path, ".")
		bad := len(names) > MaxPathDepth || f.MaxString < 0
		for _, n := range names {
			bad = bad || n == "" || len(n) > maxKey
		}
		if _, dup := byPath[f.Path]; bad || dup {
			panic(fmt.Sprintf("jsonstream: invalid or repeated field path %q", f.Path))
		}
		byPath[f.Path] = i
		name := names[len(names)-1]
		if len(names) == 1 {
			parents[i] = -1
			s.top = append(s.top, named{name, i})
		} else {
			p, ok := byPath[strings.Join(names[:len(names)-1], ".")]
			if !ok {
				panic(fmt.Sprintf("jsonstream: field %q is listed before its parent", f.Path))
			}
			parents[i] = p
			s.children[p] = append(s.children[p], named{name, i})
			for a := p; a >= 0; a = parents[a] {
				s.kids[a] = append(s.kids[a], i)
			}
		}
		s.strTotal += f.MaxString
	}
	return s
}

// Value is what a Scanner captured of one field. Where a member appears
// more than once, the last one counts (as encoding/json does into a map); a
// member that appears again also clears what was captured inside it.
type Value struct {
	Kind Kind
	// Start and End are the offsets in the whole input of the value's first
	// byte and one past its last byte; End is 0 until the value is Complete.
	Start, End int64
	Complete   bool
	// Empty reports an object or array with no members.
	Empty bool
	// Int is the value of a number that is a non-negative integer literal
	// (no sign, fraction or exponent) fitting an int; IntOK reports it.
	Int   int
	IntOK bool
	// Str holds the decoded string, or a number's text, up to the field's
	// MaxString bytes; Truncated reports that the string was longer.
	// Invalid escapes of surrogates decode to U+FFFD as in encoding/json;
	// other bytes are kept as they are.
	Str       []byte
	Truncated bool
}

// reset clears v, keeping the storage of Str.
func (v *Value) reset() {
	*v = Value{Str: v.Str[:0]}
}

type state uint8

const (
	stValue    state = iota // expecting a value
	stArrFirst              // after '[': a value or ']'
	stObjFirst              // after '{': a member name or '}'
	stObjKey                // after ',' in an object: a member name
	stColon                 // after a member name: ':'
	stAfter                 // after a value: ',' or a close
	stStr                   // in a string
	stEsc                   // after a backslash in a string
	stHex                   // in the 4 hex digits of \u
	stNumMinus              // after '-'
	stNumZero               // after a leading 0
	stNumInt                // in the integer digits
	stNumDot                // after '.'
	stNumFrac               // in the fraction digits
	stNumE                  // after 'e' or 'E'
	stNumESign              // after the exponent's sign
	stNumExp                // in the exponent digits
	stLit                   // in true, false or null
	stDone                  // the top-level value is complete
	stErr                   // a syntax error was found
)

// Scanner scans one JSON value fed in pieces. Get one from NewScanner; it
// is not safe for concurrent use.
type Scanner struct {
	schema *Schema
	// Values holds one Value per field of the schema, in its order.
	Values []Value
	// Root describes the top-level value (Kind, Start, End, Complete, Empty).
	Root Value

	state state
	off   int64 // offset of the next byte to scan
	err   error

	depth   int
	stack   [4]uint64             // container kinds (1 = object) of depths 1..256
	deep    []uint64              // and of the deeper ones, grown on demand
	fieldAt [MaxPathDepth + 2]int // field of the open container at depths 1..MaxPathDepth+1 (-1: none)

	pending int  // field of the value that comes next (-1: none)
	cur     int  // field of the scalar being scanned (-1: none)
	inKey   bool // the string being scanned is a member name

	key     [maxKey]byte
	keyLen  int
	keyLong bool // the member name is longer than maxKey
	capKey  bool // the member name may match the schema

	hex  rune // the \u value being read
	hexN int  // hex digits read
	high rune // a high surrogate waiting for its pair (0: none)

	lit  string // the literal being matched
	litN int    // bytes of lit matched

	num     int // the integer being read (when cur captures it)
	numOver bool
}

// NewScanner returns a Scanner for one JSON value that captures the fields
// of schema. All its memory is allocated here, except the nesting stack
// beyond 256 levels.
func NewScanner(schema *Schema) *Scanner {
	s := &Scanner{schema: schema, Values: make([]Value, len(schema.fields))}
	buf := make([]byte, schema.strTotal)
	for i, f := range schema.fields {
		s.Values[i].Str = buf[:0:f.MaxString]
		buf = buf[f.MaxString:]
	}
	s.Reset()
	return s
}

// Reset makes s ready for a new value, keeping its memory.
func (s *Scanner) Reset() {
	for i := range s.Values {
		s.Values[i].reset()
	}
	s.Root = Value{}
	s.state, s.off, s.err, s.depth = stValue, 0, nil, 0
	for i := range s.fieldAt {
		s.fieldAt[i] = -1
	}
	s.pending, s.cur, s.inKey, s.high = -1, -1, false, 0
	s.deep = s.deep[:0]
}

// Done reports that the top-level value is complete.
func (s *Scanner) Done() bool { return s.state == stDone }

// Err returns the syntax error found, or nil.
func (s *Scanner) Err() error { return s.err }

// Offset returns how many bytes have been scanned.
func (s *Scanner) Offset() int64 { return s.off }

// Feed scans p, the next bytes of the input, and returns how many of them
// belong to the value: len(p) while the value goes on. Once the value is
// complete (Done), the bytes after it are not scanned (a top-level number
// completes at the byte after it, which is not counted) and later calls
// return 0. After a syntax error (Err), Feed returns the index of the bad
// byte and later calls return 0.
func (s *Scanner) Feed(p []byte) int {
	if s.state >= stDone {
		return 0
	}
	base := s.off
	i := 0
	for i < len(p) {
		c := p[i]
		at := base + int64(i)
		switch s.state {
		case stStr:
			i = s.str(p, i, base)
		case stValue, stArrFirst:
			switch {
			case isSpace(c):
			case c == ']' && s.state == stArrFirst:
				s.close(false, true, at)
			default:
				if s.state == stArrFirst {
					s.pending = s.firstElement()
				}
				if !s.value(c, at) {
					s.fail(at, "invalid character %q looking for a value", c)
					return i
				}
			}
			i++
		case stObjFirst, stObjKey:
			switch {
			case isSpace(c):
			case c == '"':
				s.startKey()
			case c == '}' && s.state == stObjFirst:
				s.close(true, true, at)
			default:
				s.fail(at, "invalid character %q looking for a member name", c)
				return i
			}
			i++
		case stColon:
			switch {
			case isSpace(c):
			case c == ':':
				s.state = stValue
			default:
				s.fail(at, "invalid character %q after a member name", c)
				return i
			}
			i++
		case stAfter:
			obj := s.isObj()
			switch {
			case isSpace(c):
			case c == ',' && obj:
				s.state = stObjKey
			case c == ',':
				s.pending, s.state = -1, stValue
			case obj && c == '}' || !obj && c == ']':
				s.close(obj, false, at)
			default:
				s.fail(at, "invalid character %q after a value", c)
				return i
			}
			i++
		case stEsc:
			if !s.escape(c) {
				s.fail(at, "invalid escape %q in a string", c)
				return i
			}
			i++
		case stHex:
			d := unhex(c)
			if d < 0 {
				s.fail(at, "invalid character %q in a \\u escape", c)
				return i
			}
			s.hex = s.hex<<4 | d
			if s.hexN++; s.hexN == 4 {
				s.putEscaped(s.hex)
				s.state = stStr
			}
			i++
		case stLit:
			if c != s.lit[s.litN] {
				s.fail(at, "invalid character %q in literal %s", c, s.lit)
				return i
			}
			i++
			if s.litN++; s.litN == len(s.lit) {
				s.endScalar(at + 1)
			}
		default: // in a number
			if s.num1(c) {
				if s.cur >= 0 {
					s.put(c)
				}
				i++
				continue
			}
			// c ends the number and is scanned again after it.
			if s.state == stNumMinus || s.state == stNumDot || s.state == stNumE || s.state == stNumESign {
				s.fail(at, "invalid character %q in a number", c)
				return i
			}
			s.endScalar(at)
		}
		switch s.state {
		case stDone:
			s.off = base + int64(i)
			return i
		case stErr:
			return int(s.off - base)
		}
	}
	s.off = base + int64(len(p))
	return len(p)
}

// fail records a syntax error at offset at.
func (s *Scanner) fail(at int64, format string, args ...any) {
	s.err = fmt.Errorf("%w at offset %d: "+format, append([]any{ErrSyntax, at}, args...)...)
	s.state = stErr
	s.off = at
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func unhex(c byte) rune {
	switch {
	case '0' <= c && c <= '9':
		return rune(c - '0')
	case 'a' <= c && c <= 'f':
		return rune(c - 'a' + 10)
	case 'A' <= c && c <= 'F':
		return rune(c - 'A' + 10)
	}
	return -1
}

// firstElement returns the field of the first element of the array just
// opened (its field's child named "0"), or -1.
func (s *Scanner) firstElement() int {
	if s.depth >= len(s.fieldAt) {
		return -1
	}
	if f := s.fieldAt[s.depth]; f >= 0 {
		for _, n := range s.schema.children[f] {
			if n.name == "0" {
				return n.idx
			}
		}
	}
	return -1
}

// field returns the Value of field i, or nil for -1.
func (s *Scanner) field(i int) *Value {
	if i < 0 {
		return nil
	}
	return &s.Values[i]
}

// begin starts a value of kind k at offset at for the pending field (which
// it consumes) and returns the Value it fills, or nil.
func (s *Scanner) begin(k Kind, at int64) *Value {
	if s.depth == 0 {
		s.Root = Value{Kind: k, Start: at}
	}
	f := s.pending
	s.pending = -1
	if f < 0 {
		return nil
	}
	v := &s.Values[f]
	v.reset()
	for _, kid := range s.schema.kids[f] {
		s.Values[kid].reset()
	}
	v.Kind, v.Start = k, at
	return v
}

// value starts the value whose first byte, at offset at, is c; false when
// no value starts with c.
func (s *Scanner) value(c byte, at int64) bool {
	switch {
	case c == '{' || c == '[':
		if s.depth >= MaxDepth {
			s.fail(at, "exceeded max depth %d", MaxDepth)
			return true
		}
		obj := c == '{'
		k := KindArray
		if obj {
			k = KindObject
		}
		f := s.pending
		s.begin(k, at)
		s.push(obj)
		if s.depth < len(s.fieldAt) {
			s.fieldAt[s.depth] = f
		}
		if obj {
			s.state = stObjFirst
		} else {
			s.state = stArrFirst
		}
	case c == '"':
		s.cur = s.pending
		s.begin(KindString, at)
		s.inKey, s.state = false, stStr
	case c == '-' || '0' <= c && c <= '9':
		s.cur = s.pending
		if v := s.begin(KindNumber, at); v != nil {
			v.IntOK = c != '-'
			s.put(c)
		}
		s.num, s.numOver = 0, false
		switch c {
		case '-':
			s.state = stNumMinus
		case '0':
			s.state = stNumZero
		default:
			s.num, s.state = int(c-'0'), stNumInt
		}
	case c == 't' || c == 'f' || c == 'n':
		s.cur = s.pending
		k, lit := KindTrue, "true"
		if c == 'f' {
			k, lit = KindFalse, "false"
		} else if c == 'n' {
			k, lit = KindNull, "null"
		}
		s.begin(k, at)
		s.lit, s.litN, s.state = lit, 1, stLit
	default:
		return false
	}
	return true
}

// endScalar completes the string, number or literal being scanned; end is
// the offset one past its last byte.
func (s *Scanner) endScalar(end int64) {
	if v := s.field(s.cur); v != nil {
		v.End, v.Complete = end, true
		if v.Kind == KindNumber {
			v.IntOK = v.IntOK && !s.numOver && (s.state == stNumInt || s.state == stNumZero)
			if v.IntOK {
				v.Int = s.num
			}
		}
	}
	s.cur = -1
	s.afterValue(end, false)
}

// afterValue moves past a complete value that ends before offset end.
func (s *Scanner) afterValue(end int64, empty bool) {
	if s.depth > 0 {
		s.state = stAfter
		return
	}
	s.Root.End, s.Root.Complete, s.Root.Empty = end, true, empty
	s.state = stDone
}

// close closes the innermost container at offset at; empty reports that it
// had no members.
func (s *Scanner) close(obj, empty bool, at int64) {
	if s.depth < len(s.fieldAt) {
		if v := s.field(s.fieldAt[s.depth]); v != nil {
			v.End, v.Complete, v.Empty = at+1, true, empty
		}
		s.fieldAt[s.depth] = -1
	}
	s.depth--
	s.afterValue(at+1, empty)
}

func (s *Scanner) word(d int) *uint64 {
	w := d >> 6
	if w < len(s.stack) {
		return &s.stack[w]
	}
	w -= len(s.stack)
	for len(s.deep) <= w {
		s.deep = append(s.deep, 0)
	}
	return &s.deep[w]
}

func (s *Scanner) push(obj bool) {
	d := s.depth
	s.depth++
	w, b := s.word(d), uint64(1)<<(d&63)
	if obj {
		*w |= b
	} else {
		*w &^= b
	}
}

func (s *Scanner) isObj() bool {
	d := s.depth - 1
	return *s.word(d)&(1<<(d&63)) != 0
}
