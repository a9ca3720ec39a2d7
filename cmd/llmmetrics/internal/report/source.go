package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/llmmetrics/llmmetrics"
)

// format is one input format: its name for -format, how to recognise it
// from the first bytes of a file, and its decoder.
type format struct {
	name string
	// detect reports whether head (the first bytes of a file, leading
	// white space removed) is this format's.
	detect func(head []byte) bool
	// decode reads the whole file and emits every request.
	decode func(fr *fileRun) error
	// notes say what this format cannot provide (e.g. no ITL); printed
	// with the summary.
	notes []string
	// ttft says which TTFT definition the numbers follow.
	ttft string
	// says is what the format saves where a 0 would otherwise mean "not
	// said" (cached and reasoning tokens).
	says says
	// cannot names the latencies the format never gives ("ttfo": why).
	cannot map[string]string
	// defs name where the tool's own figures are defined apart from
	// these (its TPOT, its ITL), for a comparison across tools.
	defs []string
	// clock says what the format's times are measured on: clockWall
	// (Unix time), clockMonotonic (a monotonic clock of the machine, e.g.
	// Python's time.perf_counter: comparable between files of one machine
	// since boot) or clockRelative (vLLM: each file's times are its own, so
	// files are laid end to end and the run duration is the sum of the
	// durations they state). Files on different clocks are not one run.
	clock string
}

const (
	clockWall      = "wall-clock"
	clockMonotonic = "monotonic (perf_counter)"
	clockRelative  = "per-file relative"
)

// formats lists the formats in detection order.
var formats []*format

func formatByName(name string) *format {
	for _, f := range formats {
		if f.name == name {
			return f
		}
	}
	return nil
}

func formatNames() []string {
	var ns []string
	for _, f := range formats {
		ns = append(ns, f.name)
	}
	return ns
}

// headSize is how much of a file detection looks at.
const headSize = 64 << 10

// readBufSize is the read buffer of every file: the memory a file's text
// costs, whatever its size.
const readBufSize = 256 << 10

// source is one input file being read: a buffered reader that counts lines
// for the JSON Lines formats.
type source struct {
	name string
	br   *bufio.Reader
	line int    // the number of the line last returned by nextLine
	buf  []byte // a line longer than the read buffer, assembled
	qbuf []byte // a line with NaN or Infinity quoted
}

func newSource(name string, r io.Reader) *source {
	return &source{name: name, br: bufio.NewReaderSize(r, readBufSize)}
}

// errorf returns an error naming the file and line.
func (s *source) errorf(line int, format string, args ...any) error {
	return &inputError{file: s.name, line: line, msg: fmt.Sprintf(format, args...)}
}

// inputError is bad input, named by file and line.
type inputError struct {
	file string
	line int
	msg  string
}

func (e *inputError) Error() string {
	if e.line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.file, e.line, e.msg)
	}
	return fmt.Sprintf("%s: %s", e.file, e.msg)
}

// head returns up to headSize first bytes of the file without consuming
// them, leading white space (and a UTF-8 byte order mark) skipped.
func (s *source) head() ([]byte, error) {
	b, err := s.br.Peek(headSize)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return nil, &inputError{file: s.name, msg: err.Error()}
	}
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	return bytes.TrimLeft(b, " \t\r\n"), nil
}

// detect returns the format of the file, from its first bytes.
func detect(s *source) (*format, error) {
	h, err := s.head()
	if err != nil {
		return nil, err
	}
	if len(h) == 0 {
		return nil, s.errorf(1, "empty file: nothing to report")
	}
	for _, f := range formats {
		if f.detect(h) {
			return f, nil
		}
	}
	return nil, s.errorf(1, "unknown format: not %s (name one with -format)", joinOr(formatNames()))
}

func joinOr(ns []string) string {
	if len(ns) < 2 {
		return fmt.Sprint(ns)
	}
	out := ""
	for i, n := range ns {
		switch {
		case i == 0:
		case i == len(ns)-1:
			out += " or "
		default:
			out += ", "
		}
		out += n
	}
	return out
}

// nextLine returns the next non-blank line (without its end of line) and
// its number, or io.EOF. The slice is valid until the next call. A line
// longer than the read buffer is assembled in s.buf, up to maxValueBytes:
// a longer line is bad input, named by its number, and is not read further.
func (s *source) nextLine() ([]byte, int, error) {
	for {
		line, err := s.br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			s.buf = append(s.buf[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				if len(s.buf) > maxValueBytes {
					return nil, s.line + 1, s.errorf(s.line+1, "%s", overLimit("a line"))
				}
				line, err = s.br.ReadSlice('\n')
				s.buf = append(s.buf, line...)
			}
			line = s.buf
		}
		if len(line) > maxValueBytes+1 {
			return nil, s.line + 1, s.errorf(s.line+1, "%s", overLimit("a line"))
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, s.line + 1, s.errorf(s.line+1, "%v", err)
		}
		if len(line) == 0 && err != nil {
			return nil, s.line, io.EOF
		}
		s.line++
		if t := bytes.TrimSpace(line); len(t) > 0 {
			return t, s.line, nil
		}
		if err != nil {
			return nil, s.line, io.EOF
		}
	}
}

// unmarshalLine decodes one JSON line into v; Python's bare NaN and
// Infinity are quoted first (then read as strings: skipped where the format
// does not read them, bad input where it reads a number).
func (s *source) unmarshalLine(line []byte, v any) error {
	err := json.Unmarshal(line, v)
	if err != nil && hasNonFinite(line) {
		s.qbuf = quoteLine(s.qbuf, line)
		err = json.Unmarshal(s.qbuf, v)
	}
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Value == "string" {
		return fmt.Errorf("%s: a string (or NaN or Infinity) where a number is expected", te.Field)
	}
	return err
}

// fileRun is what a decoder writes into: the run's levels.
type fileRun struct {
	run *run
	src *source
	fm  *format
	lv  *level // the level records go to; nil: the level of no load
	// says is what this file's records say beyond the format's own says
	// (set by a decoder that finds, e.g., cached token counts).
	says says
}

// setLevel sends the next records to the level of load.
func (fr *fileRun) setLevel(load Load) error {
	lv, err := fr.run.levelOf(load)
	if err != nil {
		return err
	}
	fr.lv = lv
	lv.addFormat(fr.fm.name)
	return nil
}

// level returns the level records go to.
func (fr *fileRun) level() (*level, error) {
	if fr.lv == nil {
		if err := fr.setLevel(Load{}); err != nil {
			return nil, err
		}
	}
	return fr.lv, nil
}

// emit validates rec (where names its position) and adds it to the
// current level (the Summarizer copies what it keeps: rec.ITL may be the
// decoder's scratch). A record whose counts are not counts, or whose times
// are out of order, is bad input.
func (fr *fileRun) emit(where func(format string, args ...any) error, rec llmmetrics.Record) error {
	if why := badCount(&rec); why != "" {
		return where("%s", why)
	}
	if why := outOfOrder(&rec); why != "" {
		return where("record times out of order: %s", why)
	}
	if why := badServerTime(&rec); why != "" {
		return where("%s", why)
	}
	lv, err := fr.level()
	if err != nil {
		return where("%v", err)
	}
	lv.sum.Add(rec)
	lv.n++
	fr.run.n++
	lv.says |= fr.fm.says | fr.says
	if rec.Outcome == llmmetrics.OutcomeOK {
		lv.completed++
		if rec.InputTokens == 0 {
			lv.noInput++
		}
		if lv.keep {
			if d, ok := rec.TTFT(); ok {
				lv.ttft = append(lv.ttft, d)
			}
			lv.itl = append(lv.itl, rec.ITL...)
		}
	} else {
		lv.countErrorType(rec.ErrorType)
	}
	if fr.run.keepRecords {
		rec.ITL = slices.Clone(rec.ITL) // a decoder may reuse its ITL scratch
		lv.recs = append(lv.recs, rec)
		fr.run.recs = append(fr.run.recs, rec)
	}
	return nil
}

// badCount says which count of rec is not a count ("" when all are).
func badCount(r *llmmetrics.Record) string {
	for _, c := range []struct {
		name string
		n    int
	}{{"input_tokens", r.InputTokens}, {"cached_input_tokens", r.CachedInputTokens}, {"cache_write_input_tokens", r.CacheWriteInputTokens},
		{"output_tokens", r.OutputTokens}, {"reasoning_tokens", r.ReasoningTokens}, {"chunks", r.Chunks}} {
		if c.n < 0 || c.n > maxCount {
			return fmt.Sprintf("%s %d is not a count (a whole number from 0 to %d)", c.name, c.n, maxCount)
		}
	}
	return ""
}

// outOfOrder says why rec's times are not Start ≤ FirstToken ≤ FirstOutput
// ≤ End and FirstToken ≤ LastToken ≤ End, or a gap is negative ("" when
// they are in order).
func outOfOrder(r *llmmetrics.Record) string {
	if r.Start.IsZero() {
		return "no start time"
	}
	if r.End.Before(r.Start) {
		return fmt.Sprintf("end %v before start", r.End.Sub(r.Start))
	}
	if !r.FirstToken.IsZero() {
		if r.FirstToken.Before(r.Start) {
			return fmt.Sprintf("first token %v before start", r.FirstToken.Sub(r.Start))
		}
		if r.End.Before(r.FirstToken) {
			return fmt.Sprintf("end %v before the first token", r.End.Sub(r.FirstToken))
		}
		if !r.LastToken.IsZero() {
			if r.LastToken.Before(r.FirstToken) {
				return fmt.Sprintf("last token %v before the first token", r.LastToken.Sub(r.FirstToken))
			}
			if r.End.Before(r.LastToken) {
				return fmt.Sprintf("end %v before the last token", r.End.Sub(r.LastToken))
			}
		}
	}
	if !r.FirstOutput.IsZero() && (r.FirstOutput.Before(r.Start) || r.End.Before(r.FirstOutput)) {
		return "first output token outside [start, end]"
	}
	if slices.ContainsFunc(r.ITL, func(d time.Duration) bool { return d < 0 }) {
		return "a negative inter-token gap"
	}
	return ""
}

// cannot records that the file gives no values of latency metric ("itl",
// "ttfo"), and why, for a comparison.
func (fr *fileRun) cannot(metric, why string) {
	if fr.run.cannot == nil {
		fr.run.cannot = map[string]string{}
	}
	if _, ok := fr.run.cannot[metric]; !ok {
		fr.run.cannot[metric] = fr.fm.name + ": " + why
	}
}

// note records something the reader should know about the run (said once).
func (fr *fileRun) note(s string) {
	switch {
	case slices.Contains(fr.run.notes, s):
	case len(fr.run.notes) == maxNotes:
		fr.run.notes = append(fr.run.notes, "further notes left out")
	case len(fr.run.notes) < maxNotes:
		fr.run.notes = append(fr.run.notes, s)
	}
}

// maxNotes bounds the notes of a run (a file of many levels may give one
// note each).
const maxNotes = 100

// maxErrorTypes is how many distinct error types are counted apart (per
// level); the rest (and any longer than 64 bytes) are counted as "_OTHER",
// so that a file cannot grow the count without bound.
const maxErrorTypes = 64
