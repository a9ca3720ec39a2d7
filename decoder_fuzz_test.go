package llmmetrics

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmmetrics/llmmetrics/internal/jsonscan"
)

// fixtureSeeds returns the fixtures of a decoder kind, and the data of their events.
func fixtureSeeds(tb testing.TB, prefix string) (streams, datas [][]byte) {
	tb.Helper()
	names, err := filepath.Glob(filepath.Join("testdata", "sse", prefix+"*.sse"))
	if err != nil || len(names) == 0 {
		tb.Fatalf("no fixtures %q: %v", prefix, err)
	}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			tb.Fatal(err)
		}
		streams = append(streams, b)
		var got []sseEvent
		d := NewSSEDecoder(func(event, data []byte) (Frame, error) {
			got = append(got, sseEvent{string(event), string(data)})
			return Frame{}, nil
		})
		decodePieces(d, b)
		for _, e := range got {
			datas = append(datas, []byte(e.Data))
		}
	}
	return streams, datas
}

// quietOtel drops what the decoders report through otel.Handle during a fuzz run.
func quietOtel(tb testing.TB) {
	handleOtel(tb, func(error) {})
}

// splitAt cuts data at the positions given by cuts (each taken modulo len+1, sorted by use).
func splitAt(data []byte, cuts []byte) [][]byte {
	var pieces [][]byte
	rest := data
	for _, c := range cuts {
		if len(rest) == 0 {
			break
		}
		n := int(c) % (len(rest) + 1)
		pieces, rest = append(pieces, rest[:n]), rest[n:]
	}
	return append(pieces, rest)
}

// checkSplitInvariant decodes data whole, split where the fuzzer says and in
// 1-byte pieces, and checks that the frames agree and data is unchanged.
func checkSplitInvariant(t *testing.T, dec func() Decoder, data, cuts []byte) {
	orig := bytes.Clone(data)
	whole := decodePieces(dec(), data)
	if got := decodePieces(dec(), splitAt(data, cuts)...); !equalFrames(whole, got) {
		t.Fatalf("split %v: frames differ\nwhole: %+v\nsplit: %+v", cuts, whole, got)
	}
	if len(data) <= 512 { // larger inputs would make each run (and minimizing) slow
		bytewise := make([][]byte, len(data))
		for i := range data {
			bytewise[i] = data[i : i+1]
		}
		if got := decodePieces(dec(), bytewise...); !equalFrames(whole, got) {
			t.Fatalf("1-byte pieces: frames differ\nwhole: %+v\nsplit: %+v", whole, got)
		}
	}
	if !bytes.Equal(orig, data) {
		t.Fatal("the decoder modified its input")
	}
	for _, f := range whole {
		if f.Tokens < 0 || f.In < 0 || f.Out < 0 {
			t.Fatalf("negative count in %+v", f)
		}
	}
}

// checkCache checks that the scan cache changes no frame.
func checkCache(t *testing.T, dec func(cache bool) Decoder, data []byte) {
	with, without := decodePieces(dec(true), data), decodePieces(dec(false), data)
	if !equalFrames(with, without) {
		t.Fatalf("the scan cache changed the frames\nwith:    %+v\nwithout: %+v", with, without)
	}
}

func equalFrames(a, b []frameView) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func FuzzTextDecoder(f *testing.F) {
	streams, _ := fixtureSeeds(f, "")
	for _, s := range streams {
		f.Add(s, []byte{10, 200, 7})
	}
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		orig := bytes.Clone(data)
		pieces := splitAt(data, cuts)
		nonEmpty := 0
		for _, p := range pieces {
			if len(p) > 0 {
				nonEmpty++
			}
		}
		frames := decodePieces(NewTextDecoder(nil), pieces...)
		if len(frames) != nonEmpty {
			t.Fatalf("%d frames for %d non-empty pieces", len(frames), nonEmpty)
		}
		total := 0
		for _, fr := range decodePieces(NewTextDecoder(func(p []byte) int { return len(p) }), pieces...) {
			total += fr.Tokens
		}
		if total != len(data) {
			t.Fatalf("byte counter saw %d bytes of %d", total, len(data))
		}
		if !bytes.Equal(orig, data) {
			t.Fatal("the decoder modified its input")
		}
	})
}

// refObject decodes data with encoding/json when it is a valid JSON object:
// the reference the protocols' walkers are checked against. The one
// documented leniency of the scanner (jsonscan.Scanner.Text) is not visible
// through it: the scanner decodes a \u escape of a non-ASCII character as
// one placeholder byte, which changes no comparison with the ASCII names,
// tags and prefixes the walkers look for.
func refObject(data []byte) (map[string]any, bool) {
	if !json.Valid(data) {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	m, ok := v.(map[string]any)
	return m, ok
}

// spanText is a strSpan's text as the decoders read it: "" when it holds no
// string or an empty one.
func spanText(data []byte, s strSpan) string {
	if !s.set() {
		return ""
	}
	return s.text(data)
}

// refString is the reference for a strSpan: the value's text when it is a
// string.
func refString(v any) string {
	s, _ := v.(string)
	return s
}

// finishTexts writes a finishList as "choice:reason" texts.
func finishTexts(data []byte, l *finishList) []string {
	var out []string
	for _, f := range l.list[:l.n] {
		out = append(out, fmt.Sprintf("%d:%s", f.choice, f.reason.text(data)))
	}
	return out
}

// refUsage is the reference for walkUsage.
func refUsage(v any, s *usageShape) jsonscan.Ints {
	var u jsonscan.Ints
	refShape(v, s, &u)
	return u
}

// refShape reads the counts s declares in v into u.
func refShape(v any, s *usageShape, u *jsonscan.Ints) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	for _, c := range s.counts {
		x, present := m[c.name]
		switch {
		case !present:
		case c.unit > 0:
			n, isNum := x.(json.Number)
			var d time.Duration
			if isNum {
				d, isNum = durationOf([]byte(n), c.unit)
			}
			u.Has[c.idx], u.Val[c.idx] = isNum, int(d)
		default:
			u.Has[c.idx], u.Val[c.idx] = refCount(x)
		}
	}
	for _, n := range s.nested {
		if x, present := m[n.name]; present {
			for _, idx := range n.shape.indices(nil) {
				u.Has[idx], u.Val[idx] = false, 0
			}
			refShape(x, n.shape, u)
		}
	}
}

// refCount reads a count as jsonscan does: a non-negative JSON integer
// that fits an int.
func refCount(v any) (bool, int) {
	n, ok := v.(json.Number)
	if !ok || strings.ContainsAny(n.String(), "-.eE") {
		return false, 0
	}
	if x, err := strconv.ParseInt(n.String(), 10, strconv.IntSize); err == nil {
		return true, int(x)
	}
	return false, 0
}

// refInts is the reference for jsonscan.Scanner.Ints.
func refInts(v any, names []string) jsonscan.Ints {
	var u jsonscan.Ints
	m, ok := v.(map[string]any)
	if !ok {
		return u
	}
	for i, name := range names {
		n, ok := m[name].(json.Number)
		if !ok || strings.ContainsAny(n.String(), "-.eE") {
			continue
		}
		if x, err := strconv.ParseInt(n.String(), 10, strconv.IntSize); err == nil {
			u.Has[i], u.Val[i] = true, int(x)
		}
	}
	return u
}
