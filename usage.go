package llmmetrics

import (
	"math"
	"strconv"
	"time"

	"github.com/llmmetrics/llmmetrics/internal/jsonscan"
)

// This file holds the declared shape of a usage object and its walker:
// each protocol declares where its usage keeps its counts (usageShape), and
// walkUsage reads them into a jsonscan.Ints by index, without allocating.

// usageShape declares the counts of a usage object: members of the object
// read as counts, and member objects declared the same way (OpenAI's
// completion_tokens_details, Cohere's tokens and billed_units), each count
// landing at its own index of one jsonscan.Ints. As everywhere, the last
// member of a name wins: a repeated nested object clears the counts it
// declares before it is read.
type usageShape struct {
	counts []usageCount
	nested []nestedUsage
	// owned lists the indices the shape's nested objects fill, by nested
	// object (ownIndices).
	owned [][]int
}

// usageCount is one member read as a count at index idx, or (unit > 0)
// as a time in that unit, kept at idx in nanoseconds: llama.cpp's
// prompt_ms, Groq's prompt_time in seconds.
type usageCount struct {
	name string
	idx  int
	unit time.Duration
}

// nestedUsage is a member object whose counts the shape declares.
type nestedUsage struct {
	name  string
	shape *usageShape
}

// The indices of an OpenAI-style usage object's counts read from its
// breakdowns (oaiChatUsage, oaiRespUsage, anthUsage); its top-level counts
// come first.
const (
	usReasoning = jsonscan.MaxInts - 2
	usCached    = jsonscan.MaxInts - 1
)

// count declares a count member.
func count(name string, idx int) usageCount { return usageCount{name, idx, 0} }

// timeIn declares a member that is a time in unit (a JSON number, perhaps
// with a fraction).
func timeIn(name string, idx int, unit time.Duration) usageCount { return usageCount{name, idx, unit} }

// durationOf converts a time in unit to a Duration: false when it is not a
// finite number from 0 to about 292 years.
func durationOf(text []byte, unit time.Duration) (time.Duration, bool) {
	v, err := strconv.ParseFloat(string(text), 64)
	if err != nil || !(v >= 0) {
		return 0, false
	}
	ns := math.Round(float64(v * float64(unit)))
	if ns >= math.MaxInt64 {
		return 0, false
	}
	return time.Duration(ns), true
}

// shape builds a usageShape of counts and nested objects.
func shape(counts []usageCount, nested ...nestedUsage) *usageShape {
	s := &usageShape{counts: counts, nested: nested}
	for _, n := range nested {
		s.owned = append(s.owned, n.shape.indices(nil))
	}
	return s
}

// nest declares the member object name, read with its own counts.
func nest(name string, counts ...usageCount) nestedUsage {
	return nestedUsage{name, shape(counts)}
}

// indices appends every index s fills, nested ones included.
func (s *usageShape) indices(to []int) []int {
	for _, c := range s.counts {
		to = append(to, c.idx)
	}
	for _, n := range s.nested {
		to = n.shape.indices(to)
	}
	return to
}

// walkUsage reads a usage object of shape s at i into u (reset first). Any
// value that is not an object is skipped and leaves u empty.
func walkUsage(j *jsonscan.Scanner, i, depth int, s *usageShape, u *jsonscan.Ints) (int, bool) {
	*u = jsonscan.Ints{}
	return s.walk(j, i, depth, u)
}

// walk reads the object at i into u without resetting it.
func (s *usageShape) walk(j *jsonscan.Scanner, i, depth int, u *jsonscan.Ints) (int, bool) {
	return j.Members(i, depth, func(k []byte, i int) (int, bool) {
		for _, c := range s.counts {
			if string(k) != c.name {
				continue
			}
			if c.unit > 0 {
				next, text, isNum, ok := j.Number(i, depth+1)
				var d time.Duration
				if isNum {
					d, isNum = durationOf(text, c.unit)
				}
				u.Val[c.idx], u.Has[c.idx] = int(d), isNum
				return next, ok
			}
			next, v, isInt, ok := j.Int(i, depth+1)
			u.Val[c.idx], u.Has[c.idx] = v, isInt
			return next, ok
		}
		for n, nu := range s.nested {
			if string(k) == nu.name {
				for _, idx := range s.owned[n] {
					u.Val[idx], u.Has[idx] = 0, false
				}
				return nu.shape.walk(j, i, depth+1, u)
			}
		}
		return j.Skip(i, depth+1)
	})
}
