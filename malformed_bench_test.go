package llmmetrics

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// malformedStream returns n SSE events of the size of chatStream's (about
// 330 bytes each) whose data is not JSON, then [DONE].
func malformedStream(n int) []byte {
	var b bytes.Buffer
	data := strings.Repeat("x", 320)
	for range n {
		fmt.Fprintf(&b, "data: %s\n\n", data)
	}
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes()
}

// shortMalformedStream returns n events "data: x" (9 bytes each), then
// [DONE].
func shortMalformedStream(n int) []byte {
	return append(bytes.Repeat([]byte("data: x\n\n"), n), "data: [DONE]\n\n"...)
}

// readStream reads stream in 4 KiB pieces through NewReader and the OpenAI
// decoder of a Request of tr, and ends the request.
func readStream(tr *Tracker, stream []byte, buf []byte) Record {
	body := &chunkedReader{bytes.NewReader(stream), len(buf)}
	req := tr.Start(context.Background())
	rc := NewReader(req, body, newOpenAIDecoder())
	for {
		if _, err := rc.Read(buf); err == io.EOF {
			break
		}
	}
	return req.End(nil)
}

// BenchmarkMalformedFrames reads 1,000-event OpenAI streams through the
// whole measuring path (NewReader, the decoder, a Tracker on the SDK): the
// baseline "valid" is chatStream; "malformed" has events of the same size
// whose data is not JSON; "malformed-short" has 1,000 events "data: x".
// The error handler counts what it gets, one report per stream. Compare
// the ns/event of each with the baseline's.
func BenchmarkMalformedFrames(b *testing.B) {
	const events = 1000
	for _, bc := range []struct {
		name   string
		stream []byte
	}{
		{"valid", chatStream(events)},
		{"malformed", malformedStream(events)},
		{"malformed-short", shortMalformedStream(events)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			reports := 0
			handleOtel(b, func(error) { reports++ })
			tr, err := NewTracker(WithMeterProvider(benchProvider(b)), WithAttributes(staticAttrs...), WithoutWindow())
			require.NoError(b, err)
			buf := make([]byte, 4096)
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.stream)))
			streams := 0
			for b.Loop() {
				readStream(tr, bc.stream, buf)
				streams++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(streams*events), "ns/event")
			if bc.name != "valid" {
				assert.Equal(b, streams, reports, "one report per stream")
			}
		})
	}
}
