package llmmetrics

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/bits"
)

// ---------------------------------------------------------------------------
// A small JSON scanner: it validates a whole JSON text as encoding/json does
// (same grammar, same nesting limit) and extracts only what the decoders
// need, without allocating.

// maxJSONDepth is encoding/json's nesting limit.
const maxJSONDepth = 10000

// kind classifies the "type" strings the decoders look at.
type kind uint8

const (
	kindNone kind = iota // no "type", or not a string
	kindOther
	kindError
	kindRespDelta // "response.….delta"
	kindRespCompleted
	kindRespIncomplete
	kindRespFailed
	kindRespOther // any other "response.…"
	kindMessageStart
	kindContentBlockDelta
	kindMessageDelta
	kindMessageStop
	kindPing
	kindTextDelta
	kindThinkingDelta
	kindInputJSONDelta
)

func classify(t []byte) kind {
	switch string(t) {
	case "error":
		return kindError
	case "response.completed":
		return kindRespCompleted
	case "response.incomplete":
		return kindRespIncomplete
	case "response.failed":
		return kindRespFailed
	case "message_start":
		return kindMessageStart
	case "content_block_delta":
		return kindContentBlockDelta
	case "message_delta":
		return kindMessageDelta
	case "message_stop":
		return kindMessageStop
	case "ping":
		return kindPing
	case "text_delta":
		return kindTextDelta
	case "thinking_delta":
		return kindThinkingDelta
	case "input_json_delta":
		return kindInputJSONDelta
	}
	if bytes.HasPrefix(t, []byte("response.")) {
		if bytes.HasSuffix(t, []byte(".delta")) && len(t) >= len("response.")+len(".delta") {
			return kindRespDelta
		}
		return kindRespOther
	}
	return kindOther
}

// Usage fields, by index in usageVals.
const (
	usePromptTokens = iota
	useCompletionTokens
	useInputTokens
	useOutputTokens
	useCacheCreation
	useCacheRead
	numUsageFields
)

var usageNames = [numUsageFields]string{
	usePromptTokens:     "prompt_tokens",
	useCompletionTokens: "completion_tokens",
	useInputTokens:      "input_tokens",
	useOutputTokens:     "output_tokens",
	useCacheCreation:    "cache_creation_input_tokens",
	useCacheRead:        "cache_read_input_tokens",
}

// usageVals holds the integer fields of a usage object: ok[i] when the
// (last) member of that name is a non-negative JSON integer that fits an int.
type usageVals struct {
	ok [numUsageFields]bool
	v  [numUsageFields]int
}

func (u *usageVals) get(i int) int {
	if u.ok[i] {
		return u.v[i]
	}
	return 0
}

// inOut returns whether either field is present, and both values (0 when absent).
func (u *usageVals) inOut(in, out int) (bool, int, int) {
	return u.ok[in] || u.ok[out], u.get(in), u.get(out)
}

// Delta bits: which members of a delta object carry output.
const (
	bitContent = 1 << iota
	bitReasoningContent
	bitReasoning
	bitRefusal
	bitToolCalls    // non-empty array
	bitFunctionCall // non-empty object
	bitText
	bitThinking
	bitPartialJSON

	chatDeltaBits = bitContent | bitReasoningContent | bitReasoning | bitRefusal | bitToolCalls | bitFunctionCall
)

type deltaFacts struct {
	bits uint16
	typ  kind
}

func (d deltaFacts) carriesAnthropic() bool {
	switch d.typ {
	case kindTextDelta:
		return d.bits&bitText != 0
	case kindThinkingDelta:
		return d.bits&bitThinking != 0
	case kindInputJSONDelta:
		return d.bits&bitPartialJSON != 0
	}
	return false
}

// facts is what one event's JSON says, for every built-in protocol. Where a
// member appears twice, the last one counts (as with encoding/json into a map).
type facts struct {
	typ       kind       // top-level "type"
	choices   int        // length of the top-level "choices" array (0 if not an array)
	carrying  int        // choices that carry tokens
	usage     usageVals  // top-level "usage"
	respUsage usageVals  // "response": {"usage": ...}
	msgUsage  usageVals  // "message": {"usage": ...}
	err       bool       // top-level "error" is present and not null
	deltaStr  bool       // top-level "delta" is a non-empty string (Responses)
	delta     deltaFacts // top-level "delta" object (Anthropic)
}

// scanCache makes the usual event cheap. Consecutive events of one stream
// are mostly the same bytes: the same id, model and fingerprint before the
// delta text and the same closing members after it. After a full scan the
// cache keeps the bytes before and after the string value that decided
// whether the event carries tokens (prefix ends with its opening quote, tail
// starts with its closing quote) and the facts found. An event made of the
// same prefix, a valid string body and the same tail tokenizes exactly as
// that event did, except for that one string, so it has the same facts when
// the string is as (non-)empty as before: two memory comparisons and a scan
// of the new text replace the full scan.
type scanCache struct {
	prefix, tail []byte
	f            facts
	nonEmpty     bool
	valid        bool
	off          bool // tests compare decoders with and without the cache
	hits         int  // events answered by the cache (for tests)
	scratch      facts
}

// scan returns the facts of data: from the cache when it applies, else from
// a full scan whose result it then keeps.
//
// The facts it returns are valid until the next call; nil means data is not
// a JSON object.
func (c *scanCache) scan(j *jsonScanner, data []byte) *facts {
	if c.valid && !c.off && len(data) >= len(c.prefix)+len(c.tail) &&
		bytes.HasPrefix(data, c.prefix) && bytes.HasSuffix(data, c.tail) {
		open, closeAt := len(c.prefix)-1, len(data)-len(c.tail)
		j.s = data
		if end, _, ok := j.str(open); ok && end == closeAt+1 && (closeAt > open+1) == c.nonEmpty {
			c.hits++
			return &c.f
		}
	}
	if !j.scan(data, &c.scratch) {
		return nil
	}
	if j.hot0 >= 0 && !c.off {
		c.prefix = append(c.prefix[:0], data[:j.hot0+1]...)
		c.tail = append(c.tail[:0], data[j.hot1-1:]...)
		c.f, c.nonEmpty, c.valid = c.scratch, j.hot1-j.hot0 > 2, true
	}
	return &c.scratch
}

type jsonScanner struct {
	s     []byte
	buf   []byte                      // scratch for strings with escapes
	stack [maxJSONDepth/64 + 1]uint64 // container kinds for skip (1 = object)
	// hot0 and hot1 span (quotes included) the last string value whose
	// emptiness decided a "carries tokens" fact; hot0 is -1 when there was none.
	hot0, hot1 int
}

// scan validates s and fills f. It reports false when s is not valid JSON or
// not an object.
func (j *jsonScanner) scan(s []byte, f *facts) bool {
	j.s = s
	j.hot0 = -1
	*f = facts{}
	i := j.ws(0)
	if i >= len(s) || s[i] != '{' {
		return false
	}
	i, ok := j.top(i, f)
	if !ok {
		return false
	}
	return j.ws(i) == len(s)
}

// at returns s[i], or 0 past the end.
func (j *jsonScanner) at(i int) byte {
	if i < len(j.s) {
		return j.s[i]
	}
	return 0
}

func (j *jsonScanner) ws(i int) int {
	if i < len(j.s) && j.s[i] > ' ' {
		return i // compact JSON: the usual case, inlined
	}
	return j.wsSlow(i)
}

func (j *jsonScanner) wsSlow(i int) int {
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

// str scans the string at s[i] == '"' and returns the index after it and
// whether it holds escapes.
func (j *jsonScanner) str(i int) (end int, esc, ok bool) {
	s := j.s
	for i++; i < len(s); {
		// Skip 8 bytes at a time while none is a quote, a backslash or a
		// control character.
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

// text returns the string at s[i] (scanned by str up to end). Escapes are
// decoded into scratch space; any non-ASCII character from a \u escape
// becomes the single byte 0xFF. That is enough for what the text is used for:
// comparing with ASCII names and prefixes.
func (j *jsonScanner) text(i, end int, esc bool) []byte {
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

// num scans the number at s[i]. isInt reports a non-negative integer
// literal (no sign, fraction or exponent) that fits an int; v is its value.
func (j *jsonScanner) num(i int) (end, v int, isInt, ok bool) {
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

func (j *jsonScanner) literal(i int, lit string) (int, bool) {
	if len(j.s)-i >= len(lit) && string(j.s[i:i+len(lit)]) == lit {
		return i + len(lit), true
	}
	return 0, false
}

// scalar scans a string, number or literal at s[i].
func (j *jsonScanner) scalar(i int) (int, bool) {
	if i >= len(j.s) {
		return 0, false
	}
	switch c := j.s[i]; {
	case c == '"':
		end, _, ok := j.str(i)
		return end, ok
	case c == 't':
		return j.literal(i, "true")
	case c == 'f':
		return j.literal(i, "false")
	case c == 'n':
		return j.literal(i, "null")
	case c == '-' || '0' <= c && c <= '9':
		end, _, _, ok := j.num(i)
		return end, ok
	}
	return 0, false
}

// skip scans any value at s[i]; depth is the number of containers around it.
func (j *jsonScanner) skip(i, depth int) (int, bool) {
	if i < len(j.s) && (j.s[i] == '{' || j.s[i] == '[') {
		return j.skipContainer(i, depth)
	}
	return j.scalar(i)
}

func (j *jsonScanner) skipContainer(i, depth int) (int, bool) {
	s := j.s
	n := 0 // containers opened by this call and not closed yet
	isObj := func() bool { return j.stack[(n-1)>>6]&(1<<((n-1)&63)) != 0 }
	const (
		stOpen = iota
		stMember
		stAfter
	)
	state := stOpen
	for {
		switch state {
		case stOpen: // s[i] is '{' or '['
			if depth+n+1 > maxJSONDepth {
				return 0, false
			}
			obj := s[i] == '{'
			if obj {
				j.stack[n>>6] |= 1 << (n & 63)
			} else {
				j.stack[n>>6] &^= 1 << (n & 63)
			}
			n++
			i = j.ws(i + 1)
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
				end, _, ok := j.str(i)
				if !ok {
					return 0, false
				}
				i = j.ws(end)
				if i >= len(s) || s[i] != ':' {
					return 0, false
				}
				i = j.ws(i + 1)
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
			i = j.ws(i)
			if i >= len(s) {
				return 0, false
			}
			obj := isObj()
			switch {
			case s[i] == ',':
				i = j.ws(i + 1)
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

// open starts the container at s[i] (which must be open) whose enclosing
// depth is depth. more is false for an empty container.
func (j *jsonScanner) open(i, depth int, op, cl byte) (next int, more, ok bool) {
	if j.at(i) != op || depth+1 > maxJSONDepth {
		return 0, false, false
	}
	i = j.ws(i + 1)
	if i >= len(j.s) {
		return 0, false, false
	}
	if j.s[i] == cl {
		return i + 1, false, true
	}
	return i, true, true
}

// next moves past a member: more is true after a ',' (i at the next member),
// false after the closing byte.
func (j *jsonScanner) next(i int, cl byte) (next int, more, ok bool) {
	i = j.ws(i)
	if i >= len(j.s) {
		return 0, false, false
	}
	switch j.s[i] {
	case ',':
		return j.ws(i + 1), true, true
	case cl:
		return i + 1, false, true
	}
	return 0, false, false
}

// key reads "name" : at s[i] and returns the name and the index of the value.
func (j *jsonScanner) key(i int) (k []byte, next int, ok bool) {
	if i >= len(j.s) || j.s[i] != '"' {
		return nil, 0, false
	}
	end, esc, ok := j.str(i)
	if !ok {
		return nil, 0, false
	}
	k = j.text(i, end, esc)
	i = j.ws(end)
	if i >= len(j.s) || j.s[i] != ':' {
		return nil, 0, false
	}
	return k, j.ws(i + 1), true
}

// nonEmptyString scans the value at s[i]: is it a string with at least one character?
func (j *jsonScanner) nonEmptyString(i, depth int) (next int, yes, ok bool) {
	if i < len(j.s) && j.s[i] == '"' {
		end, _, ok := j.str(i)
		j.hot0, j.hot1 = i, end
		return end, ok && end-i > 2, ok
	}
	next, ok = j.skip(i, depth)
	return next, false, ok
}

// nonEmptyContainer scans the value at s[i]: is it a container opened by
// open with at least one member?
func (j *jsonScanner) nonEmptyContainer(i, depth int, open byte) (next int, yes, ok bool) {
	next, ok = j.skip(i, depth)
	if !ok || j.at(i) != open {
		return next, false, ok
	}
	c := j.at(j.ws(i + 1))
	return next, c != '}' && c != ']', true
}

func (j *jsonScanner) typeOf(i, depth int) (next int, t kind, ok bool) {
	if i < len(j.s) && j.s[i] == '"' {
		end, esc, ok := j.str(i)
		if !ok {
			return 0, 0, false
		}
		return end, classify(j.text(i, end, esc)), true
	}
	next, ok = j.skip(i, depth)
	return next, kindNone, ok
}

// top scans the top-level object at s[i].
func (j *jsonScanner) top(i int, f *facts) (int, bool) {
	i, more, ok := j.open(i, 0, '{', '}')
	for ok && more {
		var k []byte
		if k, i, ok = j.key(i); !ok {
			break
		}
		switch string(k) {
		case "choices":
			i, ok = j.choices(i, 1, f)
		case "usage":
			i, ok = j.usage(i, 1, &f.usage)
		case "error":
			f.err = i < len(j.s) && j.s[i] != 'n'
			i, ok = j.skip(i, 1)
		case "type":
			i, f.typ, ok = j.typeOf(i, 1)
		case "delta":
			f.delta, f.deltaStr = deltaFacts{}, false
			switch {
			case j.at(i) == '{':
				i, ok = j.deltaObj(i, 1, &f.delta)
			default:
				i, f.deltaStr, ok = j.nonEmptyString(i, 1)
			}
		case "response":
			i, ok = j.holder(i, 1, &f.respUsage)
		case "message":
			i, ok = j.holder(i, 1, &f.msgUsage)
		default:
			i, ok = j.skip(i, 1)
		}
		if ok {
			i, more, ok = j.next(i, '}')
		}
	}
	return i, ok
}

// holder scans a value that may be an object with a "usage" member (the
// Responses "response" and the Anthropic "message"), and fills u from it.
func (j *jsonScanner) holder(i, depth int, u *usageVals) (int, bool) {
	*u = usageVals{}
	if i >= len(j.s) || j.s[i] != '{' {
		return j.skip(i, depth)
	}
	i, more, ok := j.open(i, depth, '{', '}')
	for ok && more {
		var k []byte
		if k, i, ok = j.key(i); !ok {
			break
		}
		if string(k) == "usage" {
			i, ok = j.usage(i, depth+1, u)
		} else {
			i, ok = j.skip(i, depth+1)
		}
		if ok {
			i, more, ok = j.next(i, '}')
		}
	}
	return i, ok
}

// usage scans a usage value into u (reset first; left empty unless it is an object).
func (j *jsonScanner) usage(i, depth int, u *usageVals) (int, bool) {
	*u = usageVals{}
	if i >= len(j.s) || j.s[i] != '{' {
		return j.skip(i, depth)
	}
	i, more, ok := j.open(i, depth, '{', '}')
	for ok && more {
		var k []byte
		if k, i, ok = j.key(i); !ok {
			break
		}
		field := -1
		for n, name := range usageNames {
			if string(k) == name {
				field = n
				break
			}
		}
		if field < 0 {
			i, ok = j.skip(i, depth+1)
		} else if i < len(j.s) && (j.s[i] == '-' || '0' <= j.s[i] && j.s[i] <= '9') {
			i, u.v[field], u.ok[field], ok = j.num(i)
		} else {
			u.ok[field], u.v[field] = false, 0
			i, ok = j.skip(i, depth+1)
		}
		if ok {
			i, more, ok = j.next(i, '}')
		}
	}
	return i, ok
}

// choices scans the "choices" value at s[i] into f.choices and f.carrying.
func (j *jsonScanner) choices(i, depth int, f *facts) (int, bool) {
	f.choices, f.carrying = 0, 0
	if i >= len(j.s) || j.s[i] != '[' {
		return j.skip(i, depth)
	}
	i, more, ok := j.open(i, depth, '[', ']')
	for ok && more {
		f.choices++
		if j.at(i) == '{' {
			var carries bool
			if i, carries, ok = j.choice(i, depth+1); carries {
				f.carrying++
			}
		} else {
			i, ok = j.skip(i, depth+1)
		}
		if ok {
			i, more, ok = j.next(i, ']')
		}
	}
	return i, ok
}

// choice scans one choice object: it carries tokens when its "delta" object
// has a chat member that carries output, or its "text" is a non-empty string.
func (j *jsonScanner) choice(i, depth int) (next int, carries, ok bool) {
	var delta deltaFacts
	var text bool
	i, more, ok := j.open(i, depth, '{', '}')
	for ok && more {
		var k []byte
		if k, i, ok = j.key(i); !ok {
			break
		}
		switch string(k) {
		case "delta":
			delta = deltaFacts{}
			if j.at(i) == '{' {
				i, ok = j.deltaObj(i, depth+1, &delta)
			} else {
				i, ok = j.skip(i, depth+1)
			}
		case "text":
			i, text, ok = j.nonEmptyString(i, depth+1)
		default:
			i, ok = j.skip(i, depth+1)
		}
		if ok {
			i, more, ok = j.next(i, '}')
		}
	}
	return i, text || delta.bits&chatDeltaBits != 0, ok
}

// deltaObj scans a delta object at s[i] into d.
func (j *jsonScanner) deltaObj(i, depth int, d *deltaFacts) (int, bool) {
	i, more, ok := j.open(i, depth, '{', '}')
	for ok && more {
		var k []byte
		if k, i, ok = j.key(i); !ok {
			break
		}
		var bit uint16
		var yes bool
		switch string(k) {
		case "content":
			bit = bitContent
		case "reasoning_content":
			bit = bitReasoningContent
		case "reasoning":
			bit = bitReasoning
		case "refusal":
			bit = bitRefusal
		case "text":
			bit = bitText
		case "thinking":
			bit = bitThinking
		case "partial_json":
			bit = bitPartialJSON
		case "tool_calls":
			i, yes, ok = j.nonEmptyContainer(i, depth+1, '[')
			bit = bitToolCalls
		case "function_call":
			i, yes, ok = j.nonEmptyContainer(i, depth+1, '{')
			bit = bitFunctionCall
		case "type":
			i, d.typ, ok = j.typeOf(i, depth+1)
		default:
			i, ok = j.skip(i, depth+1)
		}
		if bit&(bitToolCalls|bitFunctionCall) == 0 && bit != 0 {
			i, yes, ok = j.nonEmptyString(i, depth+1)
		}
		if bit != 0 {
			if yes {
				d.bits |= bit
			} else {
				d.bits &^= bit
			}
		}
		if ok {
			i, more, ok = j.next(i, '}')
		}
	}
	return i, ok
}
