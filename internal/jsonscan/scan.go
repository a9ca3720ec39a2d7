package jsonscan

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// MaxDepth is encoding/json's nesting limit: a text with more containers
// nested in one another is invalid to both.
const MaxDepth = 10000

// Scanner holds the text being walked and the scratch space of the walk. Its
// zero value is ready to use; reuse one Scanner for the events of a stream,
// so its scratch buffer is allocated once. A Scanner is not safe for
// concurrent use.
type Scanner struct {
	s   []byte
	buf []byte // scratch for strings with escapes (Text)
	// Container kinds for Skip, one bit per open level (1 = object): the
	// first 128 levels in small, deeper ones in deep, grown on demand, so
	// a Scanner stays small (a decoder holds one per stream) and a stream
	// allocates only when its JSON nests deeper than 128.
	small [2]uint64
	deep  []uint64
	// hot0 and hot1 span (quotes included) the last string read by
	// NonEmptyString; hot0 is -1 when there was none.
	hot0, hot1 int
}

// Walker reads the facts of one JSON object into f: i is the index of the
// object's '{' and its depth is 0. It returns the index just after the
// object and whether the object was valid JSON; it must read or skip the
// whole object with the Scanner's primitives (see the package doc).
type Walker[F any] func(j *Scanner, i int, f *F) (next int, ok bool)

// Walk sets *f to its zero value and walks data, which must be one JSON
// object with optional whitespace around it, with walk. It reports whether
// data was valid and an object; when it was not, *f holds what walk read
// before the error. data is not modified; the Scanner keeps it until the
// next Walk.
func Walk[F any](j *Scanner, data []byte, f *F, walk Walker[F]) bool {
	j.s, j.hot0 = data, -1
	var zero F
	*f = zero
	i := j.SkipSpace(0)
	if j.At(i) != '{' {
		return false
	}
	i, ok := walk(j, i, f)
	return ok && j.SkipSpace(i) == len(data)
}

// Hot returns the span of the last string value NonEmptyString read in this
// walk, quotes included: data[start:end]. start is -1 when there was none.
// Cache keys on it.
func (j *Scanner) Hot() (start, end int) { return j.hot0, j.hot1 }

// At returns the byte at i, or 0 past the end of the text.
func (j *Scanner) At(i int) byte {
	if i < len(j.s) {
		return j.s[i]
	}
	return 0
}

// SkipSpace returns the index of the first byte at or after i that is not
// JSON whitespace (len of the text when there is none).
//
// The first test is the usual case (compact JSON: a value or a delimiter,
// never a space), so that the whole call is one inlined comparison there.
// Measured: 1.6× faster than the loop alone at the 29 places a walker calls
// it in a compact chat chunk (go test -run '^$' -bench BenchmarkSkipSpace
// -count 20 ./internal/jsonscan, median of the per-run ratios, 2026-11-22).
func (j *Scanner) SkipSpace(i int) int {
	if i < len(j.s) && j.s[i] > ' ' {
		return i
	}
	return j.skipSpaceLoop(i)
}

func (j *Scanner) skipSpaceLoop(i int) int {
	for i < len(j.s) {
		switch j.s[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// Str scans the string whose opening quote is at i. It returns the index
// after its closing quote and whether it holds an escape (then Text must
// decode it). ok is false when there is no valid string at i.
func (j *Scanner) Str(i int) (end int, esc, ok bool) {
	s := j.s
	if i >= len(s) || s[i] != '"' {
		return 0, false, false
	}
	for i++; i < len(s); {
		// Skip 8 bytes at a time while none is a quote, a backslash or a
		// control character: string bodies (ids, model names, delta text)
		// are most of an event's bytes. Measured against a byte-at-a-time
		// loop: 2.1× faster on the 17 strings (2–29 bytes) of a chat chunk,
		// 2.4× on a 256-byte text (go test -run '^$' -bench BenchmarkStr
		// -count 20 ./internal/jsonscan, medians of the per-run ratios,
		// 2026-11-22).
		for i+8 <= len(s) {
			x := binary.LittleEndian.Uint64(s[i:])
			if m := hasLess(x, 0x20) | hasZero(x^(lsb*'"')) | hasZero(x^(lsb*'\\')); m != 0 {
				// The lowest flagged byte is exact (higher ones may be
				// false positives): go straight to it.
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			i++
			continue
		}
		switch c {
		case '"':
			return i + 1, esc, true
		case '\\':
			esc = true
			if i+1 >= len(s) {
				return 0, false, false
			}
			switch s[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(s) || !isHex(s[i+2]) || !isHex(s[i+3]) || !isHex(s[i+4]) || !isHex(s[i+5]) {
					return 0, false, false
				}
				i += 6
			default:
				return 0, false, false
			}
		default: // control character
			return 0, false, false
		}
	}
	return 0, false, false
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// hasZero is non-zero when a byte of x is 0; hasLess when a byte of x is
// less than n (n ≤ 128). Both are the classic SWAR tests.
func hasZero(x uint64) uint64 { return (x - lsb) &^ x & msb }

func hasLess(x uint64, n byte) uint64 { return (x - lsb*uint64(n)) &^ x & msb }

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func hexVal(c byte) rune {
	switch {
	case c <= '9':
		return rune(c - '0')
	case c >= 'a':
		return rune(c - 'a' + 10)
	}
	return rune(c - 'A' + 10)
}

// Text returns the unescaped text of the string at i that Str scanned up to
// end (with esc as Str returned it). Without escapes it is a slice of the
// text being walked; with escapes it is decoded into the Scanner's scratch
// space. Either way it is valid only until the next call of Text and must not
// be modified.
//
// Any non-ASCII character written as a \u escape becomes the single byte
// 0xFF (raw UTF-8 is kept as is). That is enough for what the text is for:
// comparing with ASCII names, tags and prefixes.
func (j *Scanner) Text(i, end int, esc bool) []byte {
	raw := j.s[i+1 : end-1]
	if !esc {
		return raw
	}
	b := j.buf[:0]
	for k := 0; k < len(raw); {
		c := raw[k]
		if c != '\\' {
			b = append(b, c)
			k++
			continue
		}
		switch e := raw[k+1]; e {
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r := hexVal(raw[k+2])<<12 | hexVal(raw[k+3])<<8 | hexVal(raw[k+4])<<4 | hexVal(raw[k+5])
			if r < 0x80 {
				b = append(b, byte(r))
			} else {
				b = append(b, 0xFF)
			}
			k += 6
			continue
		default: // '"', '\\', '/'
			b = append(b, e)
		}
		k += 2
	}
	j.buf = b
	return b
}

// number scans the number at i. isInt reports a non-negative integer
// literal (no sign, fraction or exponent) that fits an int; v is its value
// (0 when !isInt).
func (j *Scanner) number(i int) (end, v int, isInt, ok bool) {
	s := j.s
	isInt = true
	if i < len(s) && s[i] == '-' {
		isInt = false
		i++
	}
	switch {
	case i >= len(s):
		return 0, 0, false, false
	case s[i] == '0':
		i++
	case '1' <= s[i] && s[i] <= '9':
		for ; i < len(s) && '0' <= s[i] && s[i] <= '9'; i++ {
			d := int(s[i] - '0')
			if v > (math.MaxInt-d)/10 {
				isInt = false
			} else {
				v = v*10 + d
			}
		}
	default:
		return 0, 0, false, false
	}
	if i < len(s) && s[i] == '.' {
		isInt = false
		i++
		if i >= len(s) || s[i] < '0' || s[i] > '9' {
			return 0, 0, false, false
		}
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		isInt = false
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) || s[i] < '0' || s[i] > '9' {
			return 0, 0, false, false
		}
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
	}
	if !isInt {
		v = 0
	}
	return i, v, isInt, true
}

func (j *Scanner) literal(i int, lit string) (int, bool) {
	if len(j.s)-i >= len(lit) && string(j.s[i:i+len(lit)]) == lit {
		return i + len(lit), true
	}
	return 0, false
}

// scalar scans a string, number or literal at i.
func (j *Scanner) scalar(i int) (int, bool) {
	if i >= len(j.s) {
		return 0, false
	}
	switch c := j.s[i]; {
	case c == '"':
		end, _, ok := j.Str(i)
		return end, ok
	case c == 't':
		return j.literal(i, "true")
	case c == 'f':
		return j.literal(i, "false")
	case c == 'n':
		return j.literal(i, "null")
	case c == '-' || '0' <= c && c <= '9':
		end, _, _, ok := j.number(i)
		return end, ok
	}
	return 0, false
}

// Skip scans (validates) any value at i, at the given depth.
func (j *Scanner) Skip(i, depth int) (next int, ok bool) {
	if i < len(j.s) && (j.s[i] == '{' || j.s[i] == '[') {
		return j.skipContainer(i, depth)
	}
	return j.scalar(i)
}

// kindWord returns the word of the container kinds that holds level n,
// growing deep to reach it.
func (j *Scanner) kindWord(n int) *uint64 {
	w := n >> 6
	if w < len(j.small) {
		return &j.small[w]
	}
	w -= len(j.small)
	if w >= len(j.deep) {
		j.deep = append(j.deep, make([]uint64, w+1-len(j.deep))...)
	}
	return &j.deep[w]
}

// skipContainer validates a container without recursion: the kinds of the
// open containers are one bit each (kindWord).
func (j *Scanner) skipContainer(i, depth int) (int, bool) {
	s := j.s
	n := 0 // containers opened by this call and not closed yet
	isObj := func() bool { return *j.kindWord(n - 1)&(1<<((n-1)&63)) != 0 }
	const (
		stOpen = iota
		stMember
		stAfter
	)
	state := stOpen
	for {
		switch state {
		case stOpen: // s[i] is '{' or '['
			if depth+n+1 > MaxDepth {
				return 0, false
			}
			obj := s[i] == '{'
			if w := j.kindWord(n); obj {
				*w |= 1 << (n & 63)
			} else {
				*w &^= 1 << (n & 63)
			}
			n++
			i = j.SkipSpace(i + 1)
			if i >= len(s) {
				return 0, false
			}
			if obj && s[i] == '}' || !obj && s[i] == ']' {
				i++
				n--
				if n == 0 {
					return i, true
				}
				state = stAfter
				continue
			}
			state = stMember
		case stMember:
			if isObj() {
				if i >= len(s) || s[i] != '"' {
					return 0, false
				}
				end, _, ok := j.Str(i)
				if !ok {
					return 0, false
				}
				i = j.SkipSpace(end)
				if i >= len(s) || s[i] != ':' {
					return 0, false
				}
				i = j.SkipSpace(i + 1)
			}
			if i < len(s) && (s[i] == '{' || s[i] == '[') {
				state = stOpen
				continue
			}
			end, ok := j.scalar(i)
			if !ok {
				return 0, false
			}
			i, state = end, stAfter
		case stAfter:
			i = j.SkipSpace(i)
			if i >= len(s) {
				return 0, false
			}
			obj := isObj()
			switch {
			case s[i] == ',':
				i = j.SkipSpace(i + 1)
				state = stMember
			case obj && s[i] == '}' || !obj && s[i] == ']':
				i++
				n--
				if n == 0 {
					return i, true
				}
			default:
				return 0, false
			}
		}
	}
}

// OpenObject enters the object at i (at the given depth; ok is false when
// the value at i is not an object). When the object is empty, more is false
// and next is after it; otherwise next is at its first member's key, for
// Key. Its members are at depth+1.
func (j *Scanner) OpenObject(i, depth int) (next int, more, ok bool) {
	return j.open(i, depth, '{', '}')
}

// OpenArray is OpenObject for an array: next is at its first element.
func (j *Scanner) OpenArray(i, depth int) (next int, more, ok bool) {
	return j.open(i, depth, '[', ']')
}

func (j *Scanner) open(i, depth int, op, cl byte) (next int, more, ok bool) {
	if j.At(i) != op || depth+1 > MaxDepth {
		return 0, false, false
	}
	i = j.SkipSpace(i + 1)
	if i >= len(j.s) {
		return 0, false, false
	}
	if j.s[i] == cl {
		return i + 1, false, true
	}
	return i, true, true
}

// Members reads the object at i (at the given depth) member by member:
// member is called with each member's unescaped name (see Key: valid during
// the call) and the index of its value, at depth+1, and must read or skip
// that value with the Scanner's primitives and return the index just after
// it. A value at i that is not an object is skipped: member is not called.
// Members returns the index just after the value and whether it was valid
// (false as soon as member reports so). It is the loop of OpenObject, Key
// and NextMember that a walker would write, and allocates nothing when
// member is a function literal that does not escape. It costs an indirect
// call per member: a walker that runs on every event of a stream without a
// Cache to spare it (Ollama's lines, Gemini 2.5's chunks, Ints) keeps the
// loop written out, where Members measured 8–10% slower (go test -run '^$'
// -bench 'BenchmarkOllamaDecode/decoder|BenchmarkGeminiDecode/sse/decoder'
// -benchtime=2000x ., 5 alternating runs each, 2026-11-25).
func (j *Scanner) Members(i, depth int, member func(k []byte, i int) (next int, ok bool)) (next int, ok bool) {
	if j.At(i) != '{' {
		return j.Skip(i, depth)
	}
	i, more, ok := j.OpenObject(i, depth)
	for ok && more {
		var k []byte
		if k, i, ok = j.Key(i); !ok {
			break
		}
		if i, ok = member(k, i); ok {
			i, more, ok = j.NextMember(i)
		}
	}
	return i, ok
}

// NextMember moves past the end of an object's member at i: more is true
// after a ',' (next is at the next member's key), false after the object's
// closing '}' (next is after it).
func (j *Scanner) NextMember(i int) (next int, more, ok bool) { return j.next(i, '}') }

// NextElement is NextMember for an array's elements.
func (j *Scanner) NextElement(i int) (next int, more, ok bool) { return j.next(i, ']') }

func (j *Scanner) next(i int, cl byte) (next int, more, ok bool) {
	i = j.SkipSpace(i)
	if i >= len(j.s) {
		return 0, false, false
	}
	switch j.s[i] {
	case ',':
		return j.SkipSpace(i + 1), true, true
	case cl:
		return i + 1, false, true
	}
	return 0, false, false
}

// Key reads a member's name and its colon at i. It returns the unescaped
// name (see Text: valid until the next Text or Key) and the index of the
// member's value.
func (j *Scanner) Key(i int) (k []byte, next int, ok bool) {
	end, esc, ok := j.Str(i)
	if !ok {
		return nil, 0, false
	}
	k = j.Text(i, end, esc)
	i = j.SkipSpace(end)
	if i >= len(j.s) || j.s[i] != ':' {
		return nil, 0, false
	}
	return k, j.SkipSpace(i + 1), true
}

// NonEmptyString reads the value at i: yes when it is a string with at least
// one character (any other value is skipped and is not). The string becomes
// the walk's hot span (see Hot and Cache): read a text whose presence means
// output with it.
func (j *Scanner) NonEmptyString(i, depth int) (next int, yes, ok bool) {
	if i < len(j.s) && j.s[i] == '"' {
		end, _, ok := j.Str(i)
		j.hot0, j.hot1 = i, end
		return end, ok && end-i > 2, ok
	}
	next, ok = j.Skip(i, depth)
	return next, false, ok
}

// NonEmptyArray reads the value at i: yes when it is an array with at least
// one element.
func (j *Scanner) NonEmptyArray(i, depth int) (next int, yes, ok bool) {
	return j.nonEmpty(i, depth, '[')
}

// NonEmptyObject reads the value at i: yes when it is an object with at
// least one member.
func (j *Scanner) NonEmptyObject(i, depth int) (next int, yes, ok bool) {
	return j.nonEmpty(i, depth, '{')
}

func (j *Scanner) nonEmpty(i, depth int, open byte) (next int, yes, ok bool) {
	next, ok = j.Skip(i, depth)
	if !ok || j.At(i) != open {
		return next, false, ok
	}
	c := j.At(j.SkipSpace(i + 1))
	return next, c != '}' && c != ']', true
}

// StringValue reads the value at i: when it is a string, isString is true
// and text is its unescaped text (see Text); any other value is skipped.
// Read a tag ("type": "message_start") with it.
func (j *Scanner) StringValue(i, depth int) (next int, text []byte, isString, ok bool) {
	if i < len(j.s) && j.s[i] == '"' {
		end, esc, ok := j.Str(i)
		if !ok {
			return 0, nil, false, false
		}
		return end, j.Text(i, end, esc), true, true
	}
	next, ok = j.Skip(i, depth)
	return next, nil, false, ok
}

// Int reads the value at i: isInt is true when it is a non-negative JSON
// integer (no sign, fraction or exponent) that fits an int, and v is then
// its value (else 0). Any other value is skipped. Read a token count with it.
func (j *Scanner) Int(i, depth int) (next, v int, isInt, ok bool) {
	if i < len(j.s) && (j.s[i] == '-' || '0' <= j.s[i] && j.s[i] <= '9') {
		return j.number(i)
	}
	next, ok = j.Skip(i, depth)
	return next, 0, false, ok
}

// Number reads the value at i: when it is a JSON number, isNum is true
// and text is its bytes (valid until the next Walk); any other value is
// skipped. Read a figure that may have a fraction (a time in
// milliseconds) with it, and parse text with strconv.ParseFloat.
func (j *Scanner) Number(i, depth int) (next int, text []byte, isNum, ok bool) {
	if i < len(j.s) && (j.s[i] == '-' || '0' <= j.s[i] && j.s[i] <= '9') {
		end, _, _, ok := j.number(i)
		if !ok {
			return 0, nil, false, false
		}
		return end, j.s[i:end], true, true
	}
	next, ok = j.Skip(i, depth)
	return next, nil, false, ok
}

// True reads the value at i: yes when it is the literal true (any other
// value is skipped and is not).
func (j *Scanner) True(i, depth int) (next int, yes, ok bool) {
	if i < len(j.s) && j.s[i] == 't' {
		next, ok = j.literal(i, "true")
		return next, ok, ok
	}
	next, ok = j.Skip(i, depth)
	return next, false, ok
}

// MaxInts is the number of counts an Ints holds.
const MaxInts = 8

// Ints holds the named integer members of one object, such as a usage
// object: Has[n] and Val[n] are for the member named names[n] in the call
// to Scanner.Ints that filled it. Has[n] is true when the last member of
// that name is a non-negative JSON integer that fits an int; Val[n] is then
// its value, else 0. The zero Ints has no counts. Ints values compare with
// ==.
type Ints struct {
	Val [MaxInts]int
	Has [MaxInts]bool
}

// Get returns Val[n]: the count, or 0 when it is absent.
func (u *Ints) Get(n int) int { return u.Val[n] }

// Ints reads the value at i into u, which it resets first: when the value
// is an object, its members named in names (at most MaxInts) are read as
// counts (see Ints) and the others are skipped. Any other value is skipped
// and leaves u empty.
func (j *Scanner) Ints(i, depth int, names []string, u *Ints) (next int, ok bool) {
	// The loop of Members, written out: Gemini reads its usageMetadata
	// with Ints on every chunk, and the indirect call per member cost it
	// about 8% (see Members).
	*u = Ints{}
	if i >= len(j.s) || j.s[i] != '{' {
		return j.Skip(i, depth)
	}
	i, more, ok := j.OpenObject(i, depth)
	for ok && more {
		var k []byte
		if k, i, ok = j.Key(i); !ok {
			break
		}
		field := -1
		for n, name := range names {
			if string(k) == name {
				field = n
				break
			}
		}
		if field < 0 {
			i, ok = j.Skip(i, depth+1)
		} else {
			i, u.Val[field], u.Has[field], ok = j.Int(i, depth+1)
		}
		if ok {
			i, more, ok = j.NextMember(i)
		}
	}
	return i, ok
}
