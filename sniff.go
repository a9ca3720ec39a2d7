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

var sniffSchema = jsonstream.NewSchema(
	jsonstream.Field{Path: "type", MaxString: 32},
	jsonstream.Field{Path: "choices"},
	jsonstream.Field{Path: "candidates"},
	jsonstream.Field{Path: "usageMetadata"},
)

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
	if string(bytes.TrimSpace(data)) == "[DONE]" {
		d.found = ProtocolOpenAI
		return Frame{}, nil
	}
	if d.scan == nil {
		d.scan = jsonstream.NewScanner(sniffSchema)
	}
	s := d.scan
	s.Reset()
	s.Feed(data)
	s.Feed(space)
	if !s.Done() || s.Root.Kind != jsonstream.KindObject {
		return Frame{}, nil
	}
	typ := s.Values[0].Str
	switch {
	case s.Values[1].Kind != jsonstream.KindNone:
		d.found = ProtocolOpenAI
	case strings.HasPrefix(string(typ), "response."):
		d.found = ProtocolOpenAI
	case string(typ) == "message_start" || string(event) == "message_start":
		d.found = ProtocolAnthropic
	case s.Values[2].Kind != jsonstream.KindNone || s.Values[3].Kind != jsonstream.KindNone:
		d.found = ProtocolGemini
	}
	return Frame{}, nil
}
