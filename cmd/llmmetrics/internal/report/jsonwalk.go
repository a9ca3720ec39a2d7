package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// jdec walks a JSON document token by token so that only one value at a
// time is held, never the document's text. Its input passes through a
// quoter (Python's NaN and Infinity) and a feeder that refuses to let the
// decoder hold more than maxValueBytes not yet decoded.
type jdec struct {
	*json.Decoder
	src *source
	q   *quoter
}

// feeder gives the decoder its input, and errTooLong once the decoder
// holds more than maxValueBytes it has not decoded: one value over the
// limit.
type feeder struct {
	r   io.Reader
	d   *json.Decoder
	fed int64
}

func (f *feeder) Read(p []byte) (int, error) {
	if f.fed-f.d.InputOffset() > int64(maxValueBytes) {
		return 0, errTooLong
	}
	n, err := f.r.Read(p)
	f.fed += int64(n)
	return n, err
}

func newJdec(src *source) *jdec {
	q := &quoter{r: src.br}
	f := &feeder{r: q}
	d := json.NewDecoder(f)
	f.d = d
	d.UseNumber()
	return &jdec{Decoder: d, src: src, q: q}
}

// line returns the number of the line the decoder is at, from the newlines
// read so far less those still in the decoder's buffer: the input is never
// read again (it may be a pipe).
func (d *jdec) line() int {
	rest, _ := io.ReadAll(d.Buffered())
	n := d.q.newlines
	for _, c := range rest {
		if c == '\n' {
			n--
		}
	}
	return int(n) + 1
}

// errorf returns an error naming the line at the decoder's position.
func (d *jdec) errorf(format string, args ...any) error {
	return d.src.errorf(d.line(), format, args...)
}

// wrap turns a decoding error into bad input at the decoder's position.
func (d *jdec) wrap(err error) error {
	var ie *inputError
	switch {
	case errors.As(err, &ie):
		return err
	case tooLong(err):
		return d.errorf("%s", overLimit("a value"))
	case errors.Is(err, io.EOF):
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

// value decodes one value into v. A NaN or Infinity (quoted by the
// quoter) where a number is read is bad input.
func (d *jdec) value(what string, v any) error {
	if err := d.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te) && te.Value == "string":
			return d.errorf("%s: a string (or NaN or Infinity) where a number is expected", what)
		case errors.As(err, &te):
			return d.errorf("%s: %s where %s is expected", what, te.Value, te.Type)
		case tooLong(err):
			return d.errorf("%s: %s", what, overLimit("a value"))
		}
		return d.wrap(fmt.Errorf("%s: %w", what, err))
	}
	return nil
}

// float decodes one number.
func (d *jdec) float(what string) (float64, error) {
	var x float64
	err := d.value(what, &x)
	return x, err
}

// floats reads an array of numbers into dst.
func (d *jdec) floats(what string, dst *[]float64) error {
	return d.array(what, func(int) error {
		x, err := d.float(what)
		*dst = append(*dst, x)
		return err
	})
}

// counts reads an array of counts (countOf) into dst.
func (d *jdec) counts(what string, dst *[]int32) error {
	return d.array(what, func(i int) error {
		x, err := d.float(what)
		if err != nil {
			return err
		}
		c, err := countOf(x)
		if err != nil {
			return d.errorf("%s[%d]: %v", what, i, err)
		}
		*dst = append(*dst, int32(c))
		return nil
	})
}
