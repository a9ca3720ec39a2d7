package llmmetrics

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type sseEvent struct{ Event, Data string }

// recordEvents returns an SSE decoder that records what interpret is given.
func recordEvents(opts ...DecoderOption) (Decoder, *[]sseEvent) {
	var got []sseEvent
	d := NewSSEDecoder(func(event, data []byte) (Frame, error) {
		got = append(got, sseEvent{string(event), string(data)})
		return Frame{Tokens: 1}, nil
	}, opts...)
	return d, &got
}

func TestSSEFraming(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []sseEvent
	}{
		{"LF", "data: a\n\ndata: b\n\n", []sseEvent{{"", "a"}, {"", "b"}}},
		{"CRLF", "data: a\r\n\r\ndata: b\r\n\r\n", []sseEvent{{"", "a"}, {"", "b"}}},
		{"CR", "data: a\r\rdata: b\r\r", []sseEvent{{"", "a"}, {"", "b"}}},
		{"mixed line endings", "data: a\r\n\rdata: b\n\r\n", []sseEvent{{"", "a"}, {"", "b"}}},
		{"multi-line data joined with LF", "data: a\ndata: b\ndata:\n\n", []sseEvent{{"", "a\nb\n"}}},
		{"only one leading space is dropped", "data:  a\ndata:b\n\n", []sseEvent{{"", " a\nb"}}},
		{"event name", "event: delta\ndata: x\n\n", []sseEvent{{"delta", "x"}}},
		{"event name does not leak to the next event", "event: one\ndata: x\n\ndata: y\n\n", []sseEvent{{"one", "x"}, {"", "y"}}},
		{"event with no data is not dispatched", "event: ping\n\ndata: y\n\n", []sseEvent{{"", "y"}}},
		{"empty data line dispatches empty data", "data\n\n", []sseEvent{{"", ""}}},
		{"comments and keep-alives", ": keep-alive\n:\n\n: ping\ndata: x\n: inside\n\n", []sseEvent{{"", "x"}}},
		{"id, retry and unknown fields", "id: 7\nretry: 1000\nfoo: bar\ndata: x\n\n", []sseEvent{{"", "x"}}},
		{"colon in the value", "data: {\"a\":\"b:c\"}\n\n", []sseEvent{{"", `{"a":"b:c"}`}}},
		{"BOM at the start is skipped", "\xEF\xBB\xBFdata: x\n\n", []sseEvent{{"", "x"}}},
		{"a second BOM is not skipped", "\xEF\xBB\xBF\xEF\xBB\xBFdata: x\n\ndata: y\n\n", []sseEvent{{"", "y"}}},
		{"a partial BOM is ordinary bytes", "\xEF\xBBdata: x\n\ndata: y\n\n", []sseEvent{{"", "y"}}},
		{"Flush ends the last line and event", "data: a\ndata: b", []sseEvent{{"", "a\nb"}}},
		{"Flush with a trailing CR", "data: a\r", []sseEvent{{"", "a"}}},
		{"nothing", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := []byte(tt.in)
			d, got := recordEvents()
			frames := decodePieces(d, in)
			assert.Equal(t, tt.want, *got)
			assert.Len(t, frames, len(tt.want), "one frame per event")
			for cut := 0; cut <= len(in); cut++ {
				d, got2 := recordEvents()
				decodePieces(d, in[:cut], in[cut:])
				assert.Equal(t, tt.want, *got2, "split at byte %d", cut)
			}
		})
	}
}

func TestSSEDecoderNilInterpret(t *testing.T) {
	got := decodePieces(NewSSEDecoder(nil), []byte("data: x\n\ndata: y\n\n"))
	assert.Equal(t, []frameView{{}, {}}, got)
}

func TestFrameTooLarge(t *testing.T) {
	big := "data: " + strings.Repeat("x", 100) + "\n\n"
	tests := []struct {
		name   string
		limit  int
		in     string
		frames int  // frames before decoding stops
		stops  bool // errFrameTooLarge reported
	}{
		{"under the limit", 106, big + big, 2, false},
		{"one line over the limit", 105, "data: a\n\n" + big + "data: b\n\n", 1, true},
		{"many data lines over the limit", 30, "data: a\n\n" + strings.Repeat("data: 0123456789\n", 3) + "\ndata: b\n\n", 1, true},
		{"an unterminated line over the limit", 50, "data: a\n\n" + strings.Repeat("y", 51), 1, true},
		{"long comment lines count too", 50, ":" + strings.Repeat("y", 60) + "\ndata: a\n\n", 0, true},
		{"default limit is 1 MiB", 0, "data: " + strings.Repeat("z", 1<<20) + "\n\n", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := otelErrors(t)
			for _, pieces := range []int{1, 7} {
				rel := &releaseCounter{}
				d := newSSE("sse", rel, []DecoderOption{WithMaxFrameBytes(tt.limit)})
				in := []byte(tt.in)
				var chunks [][]byte
				for len(in) > 0 {
					n := min(len(in), max(1, len(tt.in)/pieces))
					chunks, in = append(chunks, in[:n]), in[n:]
				}
				got := decodePieces(d, chunks...)
				assert.Len(t, got, tt.frames, "%d pieces", pieces)
				// A stopped decoder ignores everything after.
				d.Decode([]byte("data: late\n\n"), func(Frame) { t.Error("frame after the decoder stopped") })
				if tt.stops {
					assert.Len(t, d.data, 0, "buffers are released")
					assert.Equal(t, 1, rel.released, "the interpreter is told to release its memory")
					assert.ErrorIs(t, d.Err(), errFrameTooLarge)
				} else {
					assert.NoError(t, d.Err())
					assert.Zero(t, rel.released)
				}
			}
			reported := errs()
			if !tt.stops {
				assert.Empty(t, reported)
				return
			}
			require.Len(t, reported, 2, "one report per decoder")
			assert.ErrorIs(t, reported[0], errFrameTooLarge)
			assert.ErrorIs(t, reported[0], ErrMalformedFrame, "a frame over the limit is malformed")
		})
	}
}

// releaseCounter is an interpreter that counts its events and its release calls.
type releaseCounter struct{ events, released int }

func (r *releaseCounter) interpret(_, _ []byte) (Frame, error) {
	r.events++
	return Frame{Tokens: 1}, nil
}

func (r *releaseCounter) release() { r.released++ }

// A custom interpreter reports a malformed event by returning an error: the
// decoder emits the frame it returned, reports the stream's first error
// (as an ErrMalformedFrame) through otel.Handle, keeps it for Err, and goes
// on.
func TestSSEInterpretErrors(t *testing.T) {
	errBad := errors.New("no digits")
	errOwn := fmt.Errorf("%w: my protocol: bad tag", ErrMalformedFrame)
	interpret := func(_, data []byte) (Frame, error) {
		switch string(data) {
		case "bad":
			return Frame{}, errBad
		case "own":
			return Frame{Done: true}, errOwn
		}
		return Frame{Tokens: len(data)}, nil
	}
	errs := otelErrors(t)
	d := NewSSEDecoder(interpret)
	got := decodePieces(d, []byte("data: ab\n\ndata: bad\n\ndata: own\n\ndata: abc\n\n"))
	assert.Equal(t, []frameView{{Tokens: 2}, {}, {Done: true}, {Tokens: 3}}, got, "every frame is emitted, as returned")

	reported := errs()
	require.Len(t, reported, 1, "the stream's first problem only")
	assert.ErrorIs(t, reported[0], ErrMalformedFrame, "wrapped in the sentinel")
	assert.ErrorIs(t, reported[0], errBad, "and still the interpreter's error")
	assert.Equal(t, "llmmetrics: malformed frame: sse event: no digits", reported[0].Error())
	assert.Equal(t, reported[0], d.Err(), "Err is the first problem")

	own := NewSSEDecoder(interpret)
	decodePieces(own, []byte("data: own\n\ndata: bad\n\n"))
	require.Len(t, errs(), 2)
	assert.Same(t, errOwn, errs()[1], "an error that wraps the sentinel is reported as is")
	assert.Same(t, errOwn, own.Err())

	clean := NewSSEDecoder(interpret)
	decodePieces(clean, []byte("data: ab\n\n"))
	assert.NoError(t, clean.Err())
}

// Line endings are found in linear time: a long run of CR-only lines (no LF
// anywhere) is not rescanned for an LF once per line (quadratic).
func TestSSEManyCROnlyLines(t *testing.T) {
	const n = 200_000
	in := bytes.Repeat([]byte("data: x\r\r"), n)
	frames := decodePieces(NewSSEDecoder(func(_, data []byte) (Frame, error) { return Frame{Tokens: len(data)}, nil }), in)
	require.Len(t, frames, n)
	assert.Equal(t, frameView{Tokens: 1}, frames[n-1])
}
