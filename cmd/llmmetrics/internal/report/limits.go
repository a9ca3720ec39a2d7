package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"time"
)

// The limits every format is read under, the same on every path.
// maxValueBytes is the longest line of a JSON Lines file, and the longest
// single value (a string, a number, one request of a JSON document) a
// document may hold: what bounds the memory a file's text costs, whatever
// the file holds. A variable only so that tests reach it quickly.
var maxValueBytes = 16 << 20

const (
	// maxCount is the largest token count or length accepted: what an
	// int32 holds, so that it is an int on every platform.
	maxCount = math.MaxInt32
	// maxNanos bounds every time and duration (2^62 ns, about 146 years):
	// a Unix time in nanoseconds is under it, 1e300 seconds is not.
	maxNanos = 1 << 62
)

// errTooLong is a line or value over maxValueBytes.
var errTooLong = errors.New("over the length limit")

// overLimit says what is over the limit, and the limit.
func overLimit(what string) string {
	return fmt.Sprintf("%s longer than the limit of %d MiB (on a line of a JSON Lines file, and on one value of a JSON document)", what, maxValueBytes>>20)
}

// countOf checks that x is a count: a whole number in [0, maxCount].
func countOf(x float64) (int, error) {
	if !(x >= 0 && x <= maxCount) || x != math.Trunc(x) {
		return 0, fmt.Errorf("%v is not a count (a whole number from 0 to %d)", x, maxCount)
	}
	return int(x), nil
}

// seconds converts a float number of seconds to a Duration, rounded to the
// nanosecond. ok is false for NaN, infinities or values beyond ±maxNanos.
func seconds(s float64) (time.Duration, bool) {
	return nanos(s * 1e9)
}

// nanos converts a float number of nanoseconds to a Duration; ok is false
// beyond ±maxNanos.
func nanos(ns float64) (time.Duration, bool) {
	ns = math.Round(ns)
	if !(math.Abs(ns) <= maxNanos) {
		return 0, false
	}
	return time.Duration(ns), true
}

// unitScale returns how many nanoseconds one unit is, for the time units
// the tools write ("ns", "us", "ms", "sec", "s").
func unitScale(unit string) (float64, error) {
	switch unit {
	case "ns":
		return 1, nil
	case "us":
		return 1e3, nil
	case "ms":
		return 1e6, nil
	case "sec", "s":
		return 1e9, nil
	}
	return 0, fmt.Errorf("unknown time unit %q", unit)
}

// nonFinite quotes the bare NaN, Infinity and -Infinity that Python's
// json.dump writes (they are not JSON) so that encoding/json reads them as
// the strings "NaN", "Infinity" and "-Infinity": a field the report does
// not read is then skipped like any string, and a field it reads as a
// number is bad input. It is a byte-at-a-time state machine, so it works on
// a whole line or on a stream split anywhere.
type nonFinite struct {
	inStr, esc, bare, minus bool
}

// step appends c, transformed, to out.
func (q *nonFinite) step(out []byte, c byte) []byte {
	switch {
	case q.inStr:
		switch {
		case q.esc:
			q.esc = false
		case c == '\\':
			q.esc = true
		case c == '"':
			q.inStr = false
		}
		return append(out, c)
	case q.bare:
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			return append(out, c)
		}
		q.bare = false
		out = append(out, '"')
	case q.minus:
		q.minus = false
		if c == 'I' {
			q.bare = true
			return append(out, '"', '-', c)
		}
		out = append(out, '-')
	}
	switch c {
	case '"':
		q.inStr = true
	case 'N', 'I':
		q.bare = true
		return append(out, '"', c)
	case '-':
		q.minus = true
		return out
	}
	return append(out, c)
}

// flush ends a value cut by the end of the input.
func (q *nonFinite) flush(out []byte) []byte {
	if q.bare {
		out = append(out, '"')
	}
	if q.minus {
		out = append(out, '-')
	}
	*q = nonFinite{}
	return out
}

// hasNonFinite reports whether line may hold a bare NaN or Infinity.
func hasNonFinite(line []byte) bool {
	return bytes.Contains(line, []byte("NaN")) || bytes.Contains(line, []byte("Infinity"))
}

// quoteLine returns line with its bare NaN and Infinity quoted, in buf.
func quoteLine(buf, line []byte) []byte {
	var q nonFinite
	buf = buf[:0]
	for _, c := range line {
		buf = q.step(buf, c)
	}
	return q.flush(buf)
}

// quoter is nonFinite over a stream; it counts the newlines it has
// returned, so that a position can be named by line without reading the
// input again.
type quoter struct {
	r        io.Reader
	q        nonFinite
	in       [32 << 10]byte
	obuf     []byte // the transformed input
	out      []byte // the part of obuf not yet returned
	err      error
	newlines int64
}

func (r *quoter) Read(p []byte) (int, error) {
	for len(r.out) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		n, err := r.r.Read(r.in[:])
		r.obuf = r.obuf[:0]
		for _, c := range r.in[:n] {
			r.obuf = r.q.step(r.obuf, c)
		}
		if err != nil {
			r.obuf, r.err = r.q.flush(r.obuf), err
		}
		r.out = r.obuf
	}
	n := copy(p, r.out)
	r.newlines += int64(bytes.Count(p[:n], []byte{'\n'}))
	r.out = r.out[n:]
	return n, nil
}

// tooLong reports whether err is errTooLong.
func tooLong(err error) bool { return errors.Is(err, errTooLong) }
