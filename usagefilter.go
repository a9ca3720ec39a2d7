package llmmetrics

import (
	"io"

	"github.com/llmmetrics/llmmetrics/internal/jsonstream"
)

// This file holds usageFilter, which keeps WithIncludeUsage invisible to
// the caller. When the library itself added stream_options.include_usage
// to a request, the server ends the stream with a chunk the caller did not
// ask for: "choices": [] and the usage object. A loop written for streams
// without it (go-openai's README reads response.Choices[0].Delta.Content)
// fails on it. The decoder sees every byte; the caller reads the stream
// without that one event.

// maxHeldEvent bounds the bytes of one event held while it is undecided;
// a longer event is passed on (a usage chunk is a few hundred bytes).
const maxHeldEvent = 64 << 10

var usageChunkSchema = jsonstream.NewSchema(
	jsonstream.Field{Path: "choices"},
	jsonstream.Field{Path: "usage"},
)

// Members of a chunk, by index in usageChunkSchema.
const (
	ucChoices = iota
	ucUsage
)

// What usageFilter does with the current SSE event.
const (
	evUndecided uint8 = iota // it may be a usage-only chunk: its bytes are held
	evKeep                   // it goes to the caller as it comes
	evDrop                   // it is a usage-only chunk: its bytes are dropped
)

var dataField = []byte("data:")

// What becomes of a '\n' that completes the "\r\n" ending the event before.
const (
	lfNone uint8 = iota
	lfKeep
	lfDrop
)

// lineEnd returns the index of the first '\r' or '\n' in b, or -1.
func lineEnd(b []byte) int {
	for i, c := range b {
		if c == '\r' || c == '\n' {
			return i
		}
	}
	return -1
}

// usageFilter passes an OpenAI chat completions (or completions) event
// stream from src to the caller, less the usage-only chunks: events whose
// data is a JSON object with "choices" an empty array and "usage" an
// object. An event is held only until it is known not to be one: for a
// chunk, until the first byte inside its "choices" array (or a null
// "usage"), a few dozen bytes into it; a usage-only chunk is held to its
// end and dropped. Bytes reach the caller in order with no other delay.
// Lines end at "\r\n", '\n' or '\r' (every line end SSE allows); an
// event ends at an empty line, and a '\n' that completes the "\r\n" of
// its last line end (perhaps in the next Read) goes with it. Its memory is one event's bytes at most
// (maxHeldEvent), reused from event to event: no allocation per event.
type usageFilter struct {
	src io.ReadCloser
	// buf holds bytes for the caller: buf[off:ready] decided, to be read;
	// buf[ready:] the undecided event so far.
	buf        []byte
	off, ready int
	err        error // src's error, returned once buf is drained

	scan      *jsonstream.Scanner
	ev        uint8
	evStart   int   // index in the current Read's bytes where the undecided event's unheld bytes begin
	blankLine bool  // the current line is empty so far
	afterCR   bool  // the last byte was a '\r' ending a line of the current event: a '\n' may complete it
	pendingLF uint8 // the event before ended with '\r': a '\n' next goes with it (lfKeep or lfDrop)
	trailing  bool  // the data has bytes other than white space after its JSON value
	prefix    int   // bytes of "data:" matched at the start of the line; -1: not a data line
	space     bool  // a data line's optional space after the colon may come next
	inChoices bool  // "choices" is an open array whose first inner byte is not yet known
	nonEmpty  bool  // "choices" has an element
}

func newUsageFilter(src io.ReadCloser) *usageFilter {
	f := &usageFilter{src: src, scan: jsonstream.NewScanner(usageChunkSchema)}
	f.startEvent(0)
	return f
}

// Close closes src.
func (f *usageFilter) Close() error { return f.src.Close() }

// Read implements io.Reader.
func (f *usageFilter) Read(p []byte) (int, error) {
	for {
		if f.off < f.ready {
			n := copy(p, f.buf[f.off:f.ready])
			f.off += n
			if f.off == f.ready { // drained: keep only the undecided event
				f.buf = f.buf[:copy(f.buf, f.buf[f.ready:])]
				f.off, f.ready = 0, 0
			}
			return n, nil
		}
		if f.err != nil || len(p) == 0 {
			return 0, f.err
		}
		n, err := f.src.Read(p)
		w := f.filter(p[:n])
		if err != nil {
			if f.ev == evUndecided && len(f.buf) > f.ready {
				f.decideAtEnd() // a last event without its empty line
			}
			f.err = err
		}
		switch {
		case w > 0:
			return w, nil
		case f.off < f.ready:
			continue
		case f.err != nil:
			return 0, f.err
		}
		// All that was read is held (an undecided event) or dropped: read on.
	}
}

// startEvent begins a new event at index i of the current Read's bytes.
func (f *usageFilter) startEvent(i int) {
	f.ev, f.evStart = evUndecided, i
	f.blankLine, f.prefix, f.space = true, 0, false
	f.inChoices, f.nonEmpty, f.trailing = false, false, false
	f.scan.Reset()
}

// endEvent is called when the current event ends at p[i-1] (kept: its
// bytes go to the caller) and starts the next at i.
func (f *usageFilter) endEvent(i int, kept bool) {
	if f.afterCR {
		f.afterCR, f.pendingLF = false, lfDrop
		if kept {
			f.pendingLF = lfKeep
		}
	}
	f.startEvent(i)
}

// filter takes p, the bytes just read: what can go to the caller at once
// is moved to the front of p (w bytes); the rest is held in buf or dropped.
func (f *usageFilter) filter(p []byte) (w int) {
	f.evStart = 0 // an undecided event goes on from p[0]
	i := 0
	for i < len(p) {
		if f.pendingLF != lfNone {
			keep := f.pendingLF == lfKeep
			f.pendingLF = lfNone
			if p[i] == '\n' { // the end of the event before
				if keep {
					w = f.emit(p, w, i, i+1)
				}
				i++
				f.evStart = i
				continue
			}
		}
		switch f.ev {
		case evKeep, evDrop:
			j, end := f.skipToEventEnd(p, i)
			if f.ev == evKeep {
				w = f.emit(p, w, i, j)
			}
			if i = j; end {
				f.endEvent(i, f.ev == evKeep)
			}
		default:
			i, w = f.undecided(p, i, w)
		}
	}
	if f.ev == evUndecided {
		f.buf = append(f.buf, p[f.evStart:]...) // hold the part of the event read now
	}
	return w
}

// skipToEventEnd returns the index just past the empty line that ends the
// event in p[i:], and true; or len(p) and false when it does not end there.
func (f *usageFilter) skipToEventEnd(p []byte, i int) (int, bool) {
	for i < len(p) {
		if f.afterCR {
			f.afterCR = false
			if p[i] == '\n' { // "\r\n": one line end
				i++
				continue
			}
		}
		k := lineEnd(p[i:])
		if k < 0 {
			f.blankLine = false
			return len(p), false
		}
		blank := f.blankLine && k == 0
		f.afterCR = p[i+k] == '\r'
		i += k + 1
		f.blankLine = true
		if blank {
			return i, true
		}
	}
	return i, false
}

// emit sends p[i:j] to the caller: in place at p[w:] when nothing is
// waiting in buf, else after what is.
func (f *usageFilter) emit(p []byte, w, i, j int) int {
	if len(f.buf) == 0 {
		return w + copy(p[w:], p[i:j])
	}
	f.buf = append(f.buf, p[i:j]...)
	f.ready = len(f.buf)
	return w
}

// undecided scans the undecided event from p[i]: one line's worth (or up
// to a decision), and returns where it stopped and the new w.
func (f *usageFilter) undecided(p []byte, i, w int) (int, int) {
	c := p[i]
	if f.afterCR {
		f.afterCR = false
		if c == '\n' { // "\r\n": one line end
			return i + 1, w
		}
	}
	switch {
	case c == '\n' || c == '\r':
		i++
		f.afterCR = c == '\r'
		if f.blankLine { // the event ends
			return i, f.decideAt(p, i, w, true)
		}
		if f.prefix == len(dataField) {
			f.scan.Feed(newline) // data lines are joined by '\n'
		}
		f.blankLine, f.prefix, f.space = true, 0, false
		return i, w
	case f.prefix >= 0 && f.prefix < len(dataField):
		if c == dataField[f.prefix] {
			f.prefix++
			f.space = f.prefix == len(dataField)
		} else {
			f.prefix = -1
		}
		f.blankLine = false
		return i + 1, w
	case f.prefix < 0:
		f.blankLine = false
		k := lineEnd(p[i:])
		if k < 0 {
			k = len(p) - i
		}
		return i + k, w
	}
	// The payload of a data line.
	f.blankLine = false
	if f.space && c == ' ' {
		f.space = false
		return i + 1, w
	}
	f.space = false
	k := lineEnd(p[i:])
	if k < 0 {
		k = len(p) - i
	}
	run := p[i : i+k]
	base := f.scan.Offset()
	f.scan.Feed(run)
	f.noteChoices(run, base)
	f.noteTrailing(run, base)
	i += k
	if f.keepNow(p, i) {
		f.ev = evKeep
		return i, f.release(p, i, w)
	}
	return i, w
}

var newline = []byte{'\n'}

// noteChoices looks at the bytes just fed (run, from scanner offset base)
// for the first byte inside an open "choices" array.
func (f *usageFilter) noteChoices(run []byte, base int64) {
	v := &f.scan.Values[ucChoices]
	if v.Kind != jsonstream.KindArray || f.nonEmpty {
		return
	}
	from := v.Start + 1 - base
	if v.Complete {
		f.nonEmpty = !v.Empty
		return
	}
	for j := max(from, 0); j < int64(len(run)); j++ {
		switch run[j] {
		case ' ', '\t', '\r', '\n':
			continue
		case ']':
			return
		}
		f.nonEmpty = true
		return
	}
}

// noteTrailing looks at the bytes just fed (run, from scanner offset
// base) for anything but white space after the JSON value: such data is
// not a usage-only chunk ("data: {usage}\ndata: [DONE]" is one event).
func (f *usageFilter) noteTrailing(run []byte, base int64) {
	s := f.scan
	if f.trailing || !s.Done() {
		return
	}
	for _, c := range run[max(s.Root.End-base, 0):] {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			f.trailing = true
			return
		}
	}
}

// usageOnly reports whether the event's JSON is a usage-only chunk.
func (f *usageFilter) usageOnly() bool {
	s := f.scan
	ch, u := &s.Values[ucChoices], &s.Values[ucUsage]
	return s.Done() && s.Err() == nil && !f.trailing && s.Root.Kind == jsonstream.KindObject &&
		ch.Kind == jsonstream.KindArray && ch.Empty && u.Kind == jsonstream.KindObject
}

// keepNow reports whether the undecided event is known, at p[:i], not to
// be a usage-only chunk (or is too long to hold).
func (f *usageFilter) keepNow(p []byte, i int) bool {
	s := f.scan
	u := &s.Values[ucUsage]
	held := len(f.buf) - f.ready + i - f.evStart
	switch {
	case s.Err() != nil, f.nonEmpty, f.trailing, held > maxHeldEvent:
		return true
	case s.Values[ucChoices].Kind != jsonstream.KindNone && s.Values[ucChoices].Kind != jsonstream.KindArray:
		return true
	case u.Kind != jsonstream.KindNone && u.Kind != jsonstream.KindObject:
		return true
	case s.Done():
		return !f.usageOnly()
	}
	return false
}

// decideAt decides the undecided event that ended at p[i] (end) and sends
// or drops its bytes.
func (f *usageFilter) decideAt(p []byte, i, w int, end bool) int {
	drop := f.usageOnly()
	if drop {
		f.buf = f.buf[:f.ready] // dropped
	} else {
		w = f.release(p, i, w)
	}
	if end {
		f.endEvent(i, !drop)
	}
	return w
}

// decideAtEnd decides an undecided event cut by the end of the stream.
func (f *usageFilter) decideAtEnd() {
	if f.usageOnly() {
		f.buf = f.buf[:f.ready]
	} else {
		f.ready = len(f.buf)
	}
	f.ev = evKeep
}

// release sends the undecided event's bytes so far (those held in buf, and
// p[evStart:i]) to the caller.
func (f *usageFilter) release(p []byte, i, w int) int {
	if len(f.buf) > f.ready { // its start was held in earlier Reads
		f.buf = append(f.buf, p[f.evStart:i]...)
		f.ready = len(f.buf)
	} else {
		w = f.emit(p, w, f.evStart, i)
	}
	f.evStart = i
	return w
}
