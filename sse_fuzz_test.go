package llmmetrics

import "testing"

// checkBounded checks that a decoder with a small limit holds at most about
// three times the limit in its SSE buffers, whatever it is fed. (What an
// interpreter's scan cache holds is bounded by the event it was given:
// jsonscan's TestCacheRetainsOneEvent.)
func checkBounded(t *testing.T, d *sseDecoder, data []byte) {
	for _, p := range splitAt(data, []byte{3, 17, 64}) {
		d.Decode(p, func(Frame) {})
		n := cap(d.line) + cap(d.data) + cap(d.event)
		if n > 10*d.max+64 {
			t.Fatalf("decoder holds %d bytes with a limit of %d", n, d.max)
		}
	}
	d.Flush(func(Frame) {})
}

func FuzzSSEDecoder(f *testing.F) {
	streams, _ := fixtureSeeds(f, "")
	for _, s := range streams {
		f.Add(s, []byte{10, 200, 7})
	}
	f.Add([]byte("\xEF\xBB\xBFevent: x\r\ndata: a\r\ndata\r\n\r\n:c\rdata:b"), []byte{1, 2})
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		// Frames that echo the event: a split that changed an event or its data
		// would change the frames.
		dec := func() Decoder {
			return NewSSEDecoder(func(event, data []byte) (Frame, error) {
				return Frame{Tokens: len(data), InputTokens: len(event), OutputTokens: int(crc(event, data))}, nil
			})
		}
		checkSplitInvariant(t, dec, data, cuts)
		checkBounded(t, dec().(*sseDecoder), data)
	})
}

// crc is a small checksum of an event, so frames depend on its exact bytes.
func crc(event, data []byte) uint32 {
	h := uint32(2166136261)
	for _, b := range event {
		h = (h ^ uint32(b)) * 16777619
	}
	h = (h ^ 0xFF) * 16777619
	for _, b := range data {
		h = (h ^ uint32(b)) * 16777619
	}
	return h >> 1
}
