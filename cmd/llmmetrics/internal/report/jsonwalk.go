package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"time"
)

// jdec walks a JSON document token by token so that only one array
// element at a time is held, never the document's text.
type jdec struct {
	*json.Decoder
	src *source
}

func newJdec(src *source) *jdec {
	d := json.NewDecoder(src.br)
	d.UseNumber()
	return &jdec{Decoder: d, src: src}
}

// errorf returns an error naming the line at the decoder's position.
func (d *jdec) errorf(format string, args ...any) error {
	return d.src.errorAt(d.InputOffset(), format, args...)
}

// wrap turns a decoding error into bad input at the decoder's position.
func (d *jdec) wrap(err error) error {
	var ie *inputError
	if errors.As(err, &ie) {
		return err
	}
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return d.errorf("malformed JSON: %v", err)
}

// delim reads the next token and requires it to be the delimiter want.
func (d *jdec) delim(want json.Delim, what string) error {
	t, err := d.Token()
	if err != nil {
		return d.wrap(err)
	}
	if t != want {
		return d.errorf("%s: want %q, got %v", what, want, t)
	}
	return nil
}

// object walks an object, calling fn with each key; fn must consume the
// value (decode it, walk it or skip it).
func (d *jdec) object(what string, fn func(key string) error) error {
	if err := d.delim('{', what); err != nil {
		return err
	}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return d.wrap(err)
		}
		key, _ := t.(string)
		if err := fn(key); err != nil {
			return err
		}
	}
	_, err := d.Token() // '}'
	if err != nil {
		return d.wrap(err)
	}
	return nil
}

// array walks an array, calling fn for each element (which fn consumes).
func (d *jdec) array(what string, fn func(i int) error) error {
	t, err := d.Token()
	if err != nil {
		return d.wrap(err)
	}
	if t == nil { // null: an empty array
		return nil
	}
	if t != json.Delim('[') {
		return d.errorf("%s: want an array, got %v", what, t)
	}
	for i := 0; d.More(); i++ {
		if err := fn(i); err != nil {
			return err
		}
	}
	if _, err := d.Token(); err != nil { // ']'
		return d.wrap(err)
	}
	return nil
}

// skip consumes one value of any kind, token by token.
func (d *jdec) skip() error {
	depth := 0
	for {
		t, err := d.Token()
		if err != nil {
			return d.wrap(err)
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}

// value decodes one value into v.
func (d *jdec) value(what string, v any) error {
	if err := d.Decode(v); err != nil {
		return d.errorf("%s: %v", what, err)
	}
	return nil
}

// seconds converts a float number of seconds to a Duration, rounded to the
// nanosecond. ok is false for NaN, infinities or values out of range.
func seconds(s float64) (time.Duration, bool) {
	ns := math.Round(s * 1e9)
	if math.IsNaN(ns) || math.Abs(ns) > math.MaxInt64/2 {
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
