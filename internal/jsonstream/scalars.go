package jsonstream

import (
	"encoding/binary"
	"math"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
)

// This file holds the scalar states of the Scanner: numbers, member names
// and strings with their escapes, and the captures they fill.

// num1 advances the number state by c; false when c is not part of the number.
func (s *Scanner) num1(c byte) bool {
	digit := '0' <= c && c <= '9'
	switch s.state {
	case stNumMinus:
		switch {
		case c == '0':
			s.state = stNumZero
		case digit:
			s.state = stNumInt
		default:
			return false
		}
	case stNumZero, stNumInt:
		switch {
		case digit && s.state == stNumInt:
			if s.cur >= 0 {
				d := int(c - '0')
				if s.num > (math.MaxInt-d)/10 {
					s.numOver = true
				} else {
					s.num = s.num*10 + d
				}
			}
		case c == '.':
			s.state = stNumDot
		case c == 'e' || c == 'E':
			s.state = stNumE
		default:
			return false
		}
	case stNumDot:
		if !digit {
			return false
		}
		s.state = stNumFrac
	case stNumFrac:
		switch {
		case digit:
		case c == 'e' || c == 'E':
			s.state = stNumE
		default:
			return false
		}
	case stNumE:
		switch {
		case c == '+' || c == '-':
			s.state = stNumESign
		case digit:
			s.state = stNumExp
		default:
			return false
		}
	case stNumESign:
		if !digit {
			return false
		}
		s.state = stNumExp
	case stNumExp:
		return digit
	}
	return true
}

// startKey begins a member name.
func (s *Scanner) startKey() {
	s.inKey, s.state = true, stStr
	s.keyLen, s.keyLong = 0, false
	switch {
	case s.depth == 1:
		s.capKey = len(s.schema.top) > 0
	case s.depth < len(s.fieldAt) && s.fieldAt[s.depth] >= 0:
		s.capKey = len(s.schema.children[s.fieldAt[s.depth]]) > 0
	default:
		s.capKey = false
	}
}

// endKey finds the field of the member name just read.
func (s *Scanner) endKey() {
	s.inKey, s.state, s.pending = false, stColon, -1
	if !s.capKey || s.keyLong {
		return
	}
	names := s.schema.top
	if s.depth > 1 {
		names = s.schema.children[s.fieldAt[s.depth]]
	}
	k := s.key[:s.keyLen]
	for _, n := range names {
		if string(k) == n.name {
			s.pending = n.idx
			return
		}
	}
}

// str scans string bytes from p[i] and returns the index after them.
func (s *Scanner) str(p []byte, i int, base int64) int {
	j := i
	for j < len(p) {
		// Skip 8 bytes at a time while none is a quote, a backslash or a
		// control character (SWAR tests: hasLess, hasZero).
		for j+8 <= len(p) {
			x := binary.LittleEndian.Uint64(p[j:])
			if m := (x-lsb*0x20)&^x&msb | hasZero(x^(lsb*'"')) | hasZero(x^(lsb*'\\')); m != 0 {
				j += bits.TrailingZeros64(m) >> 3
				break
			}
			j += 8
		}
		if j >= len(p) {
			break
		}
		if c := p[j]; c == '"' || c == '\\' || c < 0x20 {
			break
		}
		j++
	}
	if j > i {
		s.putRun(p[i:j])
	}
	if j == len(p) {
		return j
	}
	switch c := p[j]; c {
	case '"':
		s.flushHigh()
		if s.inKey {
			s.endKey()
		} else {
			s.endScalar(base + int64(j) + 1)
		}
	case '\\':
		s.state = stEsc
	default:
		s.fail(base+int64(j), "control character %#x in a string", c)
		return j
	}
	return j + 1
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

func hasZero(x uint64) uint64 { return (x - lsb) &^ x & msb }

// escape handles the byte after a backslash; false when it is not an escape.
func (s *Scanner) escape(c byte) bool {
	var b byte
	switch c {
	case '"', '\\', '/':
		b = c
	case 'b':
		b = '\b'
	case 'f':
		b = '\f'
	case 'n':
		b = '\n'
	case 'r':
		b = '\r'
	case 't':
		b = '\t'
	case 'u':
		s.hex, s.hexN, s.state = 0, 0, stHex
		return true
	default:
		return false
	}
	s.flushHigh()
	s.put(b)
	s.state = stStr
	return true
}

// putEscaped stores the rune of a \u escape, pairing surrogates as
// encoding/json does (an unpaired one becomes U+FFFD).
func (s *Scanner) putEscaped(r rune) {
	if s.high != 0 {
		h := s.high
		s.high = 0
		if 0xDC00 <= r && r < 0xE000 {
			s.putRune(utf16.DecodeRune(h, r))
			return
		}
		s.putRune(utf8.RuneError)
	}
	switch {
	case 0xD800 <= r && r < 0xDC00:
		s.high = r
	case 0xDC00 <= r && r < 0xE000:
		s.putRune(utf8.RuneError)
	default:
		s.putRune(r)
	}
}

func (s *Scanner) flushHigh() {
	if s.high != 0 {
		s.high = 0
		s.putRune(utf8.RuneError)
	}
}

func (s *Scanner) putRune(r rune) {
	var b [utf8.UTFMax]byte
	n := utf8.EncodeRune(b[:], r)
	s.putRun(b[:n])
}

func (s *Scanner) put(c byte) {
	b := [1]byte{c}
	s.putRun(b[:])
}

// putRun stores decoded string bytes in the current capture, if any.
func (s *Scanner) putRun(b []byte) {
	if s.high != 0 {
		s.flushHigh()
	}
	if s.inKey {
		if !s.capKey {
			return
		}
		if s.keyLen+len(b) > maxKey {
			s.keyLong = true
			return
		}
		s.keyLen += copy(s.key[s.keyLen:], b)
		return
	}
	v := s.field(s.cur)
	if v == nil || cap(v.Str) == 0 {
		return
	}
	room := cap(v.Str) - len(v.Str)
	if len(b) > room {
		b, v.Truncated = b[:room], true
	}
	v.Str = append(v.Str, b...)
}
