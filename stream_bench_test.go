package llmmetrics

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// chunkedReader returns at most n bytes per Read, like a network body.
type chunkedReader struct {
	r *bytes.Reader
	n int
}

func (c *chunkedReader) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }

// BenchmarkReaderOpenAI reads a 1,000-event OpenAI chat stream (996
// token-carrying events) in 4 KiB pieces through the whole measuring path —
// NewReader, the OpenAI decoder and a Tracker on the OpenTelemetry SDK,
// Start to End — next to its floor: the same body read in the same pieces
// and given to the OpenAI decoder alone, plus, per token-carrying event,
// Chunk's floor (one time.Now() and one SDK Float64Histogram.Record with a
// prebuilt attribute set). Reading the body is in both: a caller reads it
// anyway. Compare the two in one run; "interleaved" is the robust figure:
// it alternates whole streams of the two (see interleave) and reports each
// per token-carrying event, and the median per-round ratio.
func BenchmarkReaderOpenAI(b *testing.B) {
	stream := chatStream(1000)
	const piece, events = 4096, 996
	ctx := context.Background()
	floor := func(b *testing.B) func() {
		h, _ := benchProvider(b).Meter("bench").Float64Histogram("h", metric.WithExplicitBucketBoundaries(itlBuckets...))
		opts := []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(staticAttrs...))}
		body := &chunkedReader{bytes.NewReader(stream), piece}
		buf := make([]byte, piece)
		last, n := time.Now(), 0
		emit := func(f Frame) {
			if f.Tokens != 0 {
				now := time.Now()
				h.Record(ctx, now.Sub(last).Seconds(), opts...)
				last = now
				n++
			}
		}
		return func() {
			body.r.Reset(stream)
			d := newOpenAIDecoder()
			n = 0
			for {
				k, err := body.Read(buf)
				d.Decode(buf[:k], emit)
				if err == io.EOF {
					break
				}
			}
			d.Flush(emit)
			if n != events {
				b.Fatalf("floor: %d token-carrying events, want %d", n, events)
			}
		}
	}
	reader := func(b *testing.B) func() {
		tr, _ := NewTracker(WithMeterProvider(benchProvider(b)), WithAttributes(staticAttrs...), WithoutWindow())
		body := &chunkedReader{bytes.NewReader(stream), piece}
		buf := make([]byte, piece)
		return func() {
			body.r.Reset(stream)
			req := tr.Start(ctx)
			rc := NewReader(req, body, newOpenAIDecoder())
			for {
				if _, err := rc.Read(buf); err == io.EOF {
					break
				}
			}
			if rec := req.End(nil); rec.OutputTokens == 0 || rec.Chunks != events {
				b.Fatalf("measured %d tokens in %d chunks", rec.OutputTokens, rec.Chunks)
			}
		}
	}
	b.Run("floor", func(b *testing.B) {
		f := floor(b)
		b.ReportAllocs()
		b.SetBytes(int64(len(stream)))
		for b.Loop() {
			f()
		}
	})
	b.Run("reader+tracker", func(b *testing.B) {
		f := reader(b)
		b.ReportAllocs()
		b.SetBytes(int64(len(stream)))
		for b.Loop() {
			f()
		}
	})
	b.Run("interleaved", func(b *testing.B) {
		fl, rd := floor(b), reader(b)
		b.ReportAllocs()
		t := interleave(b, fl, rd)
		b.ReportMetric(perUnit(t.median(0), events), "floor-ns/event")
		b.ReportMetric(perUnit(t.median(1), events), "reader-ns/event")
		b.ReportMetric(t.ratio(over(1)), "reader/floor")
	})
}
