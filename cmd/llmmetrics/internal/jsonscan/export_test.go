package jsonscan

// Test hooks: compiled only with this package's tests.

// SetText makes s the text of single-primitive tests and benchmarks.
func (j *Scanner) SetText(s []byte) { j.s, j.hot0 = s, -1 }

// SkipSpaceLoop is SkipSpace without its first test: the baseline of
// BenchmarkSkipSpace.
func (j *Scanner) SkipSpaceLoop(i int) int { return j.skipSpaceLoop(i) }

// Retained returns the bytes the cache holds.
func (c *Cache[F]) Retained() int { return cap(c.prefix) + cap(c.tail) }

// StrBytewise is Str without the 8-byte skip: the baseline of BenchmarkStr.
func (j *Scanner) StrBytewise(i int) (end int, esc, ok bool) {
	s := j.s
	if i >= len(s) || s[i] != '"' {
		return 0, false, false
	}
	for i++; i < len(s); {
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
		default:
			return 0, false, false
		}
	}
	return 0, false, false
}
