package llmmetrics

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
)

// noFastPath is an SSE decoder without feed's one-line-event fast path:
// every event goes through processLine and dispatch, its data copied into
// d.data. It is the baseline that measures the fast path
// (BenchmarkOpenAIDecode/decoder-nofastpath); TestNoFastPathSameFrames keeps
// the copy honest. It does not handle a BOM.
type noFastPath struct{ *sseDecoder }

func (d noFastPath) Decode(p []byte, emit func(Frame)) {
	d.bomDone = true
	lf, cr := -1, -1
	lfSeen, crSeen := false, false
	pos := 0
	for pos < len(p) && !d.stopped {
		if d.skipLF {
			d.skipLF = false
			if p[pos] == '\n' {
				pos++
				continue
			}
		}
		if !lfSeen || lf >= 0 && lf < pos {
			lf, lfSeen = indexFrom(p, pos, '\n'), true
		}
		if !crSeen || cr >= 0 && cr < pos {
			cr, crSeen = indexFrom(p, pos, '\r'), true
		}
		eol := lf
		if cr >= 0 && (eol < 0 || cr < eol) {
			eol = cr
		}
		if eol < 0 {
			rest := p[pos:]
			if len(d.line)+len(rest)+len(d.data) > d.max {
				d.tooLarge()
				return
			}
			d.line = append(d.line, rest...)
			return
		}
		line := p[pos:eol]
		if len(d.line)+len(line)+len(d.data) > d.max {
			d.tooLarge()
			return
		}
		if len(d.line) > 0 {
			d.line = append(d.line, line...)
			line = d.line
		}
		d.skipLF = p[eol] == '\r'
		pos = eol + 1
		d.processLine(line, emit)
		d.line = d.line[:0]
	}
}

func TestNoFastPathSameFrames(t *testing.T) {
	for _, fx := range fixtures {
		data := readFixture(t, fx.file)
		fast := decodePieces(fx.dec(), data)
		var d Decoder = noFastPath{fx.dec().(*sseDecoder)}
		assert.Equal(t, fast, decodePieces(d, data), fx.file)
	}
	stream := chatStream(100)
	assert.Equal(t, decodePieces(newOpenAIDecoder(), stream), decodePieces(noFastPath{newOpenAIDecoder().(*sseDecoder)}, bytes.Clone(stream)))
}
