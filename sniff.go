package llmmetrics

import (
	"bytes"
	"strings"

	"github.com/llmmetrics/llmmetrics/internal/jsonstream"
)

// Bounds of the sniff: the events and bytes looked at before giving up.
const (
	maxSniffEvents = 8
	maxSniffBytes  = 64 << 10
)

// unknownSpec is ProtocolUnknown's row of the protocol table: its decoder
// sniffs the body.
var unknownSpec = protocolSpec{
	name:    "unknown",
	title:   "sniffed",
	decoder: func(opts []DecoderOption) Decoder { return newSniffDecoder(opts) },
}

// sniffRule says how the first events of an event stream of unknown
// protocol show a protocol: an event whose JSON object has one of the
// members, or whose "type" (or SSE event name) is one of the types or
// starts with typePrefix, or a [DONE] event. The protocols are tried in the
// order of the protocol table; the first that matches is chosen.
type sniffRule struct {
	members    []string // top-level members ("choices")
	types      []string // "type" values or event names ("message_start")
	typePrefix string   // a "type" prefix ("response.")
	done       bool     // a "data: [DONE]" event
	memberIdx  []int    // the members' indices in sniffSchema (initSniff)
}

// sniffSchema reads "type" and every protocol's sniff members (initSniff).
var sniffSchema *jsonstream.Schema

// initSniff builds sniffSchema from the protocol table.
func initSniff() {
	fields := []jsonstream.Field{{Path: "type", MaxString: 32}}
	index := map[string]int{}
	for _, s := range protocolSpecs {
		s.sniff.memberIdx = s.sniff.memberIdx[:0]
		for _, m := range s.sniff.members {
			i, ok := index[m]
			if !ok {
				i = len(fields)
				index[m] = i
				fields = append(fields, jsonstream.Field{Path: m})
			}
			s.sniff.memberIdx = append(s.sniff.memberIdx, i)
		}
	}
	sniffSchema = jsonstream.NewSchema(fields...)
}

// matches reports whether an event (its name, its JSON object scanned by
// s, or nil when it is [DONE]) shows the rule's protocol.
func (r *sniffRule) matches(event []byte, s *jsonstream.Scanner, done bool) bool {
	if done {
		return r.done
	}
	for _, i := range r.memberIdx {
		if s.Values[i].Kind != jsonstream.KindNone {
			return true
		}
	}
	typ := s.Values[0].Str
	if r.typePrefix != "" && strings.HasPrefix(string(typ), r.typePrefix) {
		return true
	}
	for _, t := range r.types {
		if string(typ) == t || string(event) == t {
			return true
		}
	}
	return false
}

// sniffDecoder is ProtocolUnknown's decoder: it keeps the bytes until the
// body tells its protocol, then gives them to that protocol's decoder, which
// decodes the rest.
type sniffDecoder struct {
	opts    []DecoderOption
	real    Decoder // the protocol's decoder, once known
	off     bool    // gave up, or the protocol has no decoder: no frames
	started bool    // the first non-space byte has been seen
	buf     []byte  // the bytes seen while undecided
	probe   Decoder // SSE framing of the undecided bytes
	scan    *jsonstream.Scanner
	found   Protocol
	events  int
	ignore  func(Frame)
}

func newSniffDecoder(opts []DecoderOption) *sniffDecoder {
	d := &sniffDecoder{opts: opts, ignore: func(Frame) {}}
	d.probe = NewSSEDecoder(d.classify, opts...)
	return d
}

// Decode implements Decoder.
func (d *sniffDecoder) Decode(p []byte, emit func(Frame)) {
	switch {
	case d.real != nil:
		d.real.Decode(p, emit)
		return
	case d.off || len(p) == 0:
		return
	}
	if !d.started {
		i := 0
		for i < len(p) && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r') {
			i++
		}
		if i < len(p) {
			d.started = true
			if p[i] == '{' || p[i] == '[' {
				d.found = ProtocolJSON
			}
		}
	}
	if len(d.buf)+len(p) > maxSniffBytes {
		d.giveUp()
		return
	}
	d.buf = append(d.buf, p...)
	if d.found == ProtocolUnknown {
		d.probe.Decode(p, d.ignore)
	}
	d.decide(emit)
}

// Err implements Decoder: the problems of the protocol's decoder, once the
// protocol is known (the sniff itself reports none).
func (d *sniffDecoder) Err() error {
	if d.real != nil {
		return d.real.Err()
	}
	return nil
}

// Flush implements Decoder.
func (d *sniffDecoder) Flush(emit func(Frame)) {
	if d.real == nil && !d.off {
		d.probe.Flush(d.ignore) // a last event without its blank line
		d.decide(emit)
	}
	if d.real != nil {
		d.real.Flush(emit)
	}
	d.giveUp()
}

// decide switches to the protocol found, if any.
func (d *sniffDecoder) decide(emit func(Frame)) {
	switch {
	case d.found != ProtocolUnknown:
		d.real = d.found.NewDecoder(d.opts...)
		if d.real == nil {
			d.giveUp()
			return
		}
		buf := d.buf
		d.buf, d.probe, d.scan = nil, nil, nil
		d.real.Decode(buf, emit)
	case d.events >= maxSniffEvents:
		d.giveUp()
	}
}

func (d *sniffDecoder) giveUp() {
	d.off = d.real == nil
	d.buf, d.probe, d.scan = nil, nil, nil
}

// classify looks at one SSE event of the undecided stream. It reports no
// problem: an event it cannot read only tells nothing.
func (d *sniffDecoder) classify(event, data []byte) (Frame, error) {
	d.events++
	if d.found != ProtocolUnknown {
		return Frame{}, nil
	}
	done := string(bytes.TrimSpace(data)) == "[DONE]"
	if !done {
		if d.scan == nil {
			d.scan = jsonstream.NewScanner(sniffSchema)
		}
		d.scan.Reset()
		d.scan.Feed(data)
		d.scan.Feed(space)
		if !d.scan.Done() || d.scan.Root.Kind != jsonstream.KindObject {
			return Frame{}, nil
		}
	}
	for p, s := range protocolSpecs {
		if s.sniff.matches(event, d.scan, done) {
			d.found = Protocol(p)
			break
		}
	}
	return Frame{}, nil
}
