package llmmetrics

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// sseEvents splits stream into its events as SSE reads them: lines end at
// "\r\n", "\n" or "\r", and an event ends at an empty line. Each event
// keeps its bytes, line ends included; the last one may lack its empty
// line.
func sseEvents(stream string) []string {
	var events []string
	start, lineStart := 0, 0
	for i := 0; i < len(stream); i++ {
		c := stream[i]
		if c != '\r' && c != '\n' {
			continue
		}
		blank := i == lineStart
		if c == '\r' && i+1 < len(stream) && stream[i+1] == '\n' {
			i++
		}
		lineStart = i + 1
		if blank {
			events = append(events, stream[start:i+1])
			start = i + 1
		}
	}
	if start < len(stream) {
		events = append(events, stream[start:])
	}
	return events
}

// sseData returns the data of an event: its data lines' values joined by
// "\n".
func sseData(ev string) string {
	var data []string
	lines := strings.FieldsFunc(strings.ReplaceAll(ev, "\r\n", "\n"), func(r rune) bool { return r == '\r' || r == '\n' })
	for _, line := range lines {
		if d, ok := strings.CutPrefix(line, "data:"); ok {
			data = append(data, strings.TrimPrefix(d, " "))
		}
	}
	return strings.Join(data, "\n")
}

// mayBeUsageOnly reports whether ev's data is a JSON object with both
// "choices" and "usage": what the filter may leave out (lenient on their
// values: a duplicate member, which encoding/json reads last-wins, may be
// read otherwise by the filter; the exact rule is checked on known
// streams).
func mayBeUsageOnly(ev string) bool {
	var m map[string]json.RawMessage
	data := sseData(ev)
	if json.Unmarshal([]byte(data), &m) != nil {
		return false
	}
	_, c := m["choices"]
	_, u := m["usage"]
	return c && u
}

// filtered reads stream through a usageFilter in Reads cut at the given
// sizes (cycled).
func filtered(t *testing.T, stream string, cuts []byte) string {
	t.Helper()
	f := newUsageFilter(io.NopCloser(&cutReader{s: stream, cuts: cuts}))
	got, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(got)
}

// cutReader returns s in Reads of cuts[0], cuts[1], … bytes (cycled; 0
// counts as 1).
type cutReader struct {
	s    string
	cuts []byte
	i    int
}

func (r *cutReader) Read(p []byte) (int, error) {
	if len(r.s) == 0 {
		return 0, io.EOF
	}
	n := len(r.s)
	if len(r.cuts) > 0 {
		n = max(int(r.cuts[r.i%len(r.cuts)]), 1)
		r.i++
	}
	n = copy(p, r.s[:min(n, len(r.s))])
	r.s = r.s[n:]
	return n, nil
}

// lineEndings are the three line ends SSE allows.
var lineEndings = []string{"\n", "\r\n", "\r"}

// FuzzUsageFilter: the caller reads the upstream's bytes less whole
// usage-only events, under every line ending and every cut into Reads.
// With structure (a content chunk, the usage-only chunk first or last,
// [DONE] in its own event or on the usage event's second data line, one
// line ending) the expected bytes are known exactly; any other input is
// checked for the weaker property: the output is the input's events in
// order, some left out, and each left out is a JSON object with "choices"
// and "usage".
func FuzzUsageFilter(f *testing.F) {
	f.Add("hi", uint8(0), false, false, []byte{1})
	f.Add("hi", uint8(2), true, false, []byte{7, 1, 3})  // CR-only, usage first
	f.Add("hi", uint8(2), true, true, []byte{200})       // CR-only, usage first, [DONE] on its second line
	f.Add("a\rb", uint8(1), false, true, []byte{2, 64})  // CRLF cut inside the line ends
	f.Add("", uint8(2), false, false, []byte{1, 1, 255}) // CR-only, empty content
	f.Fuzz(func(t *testing.T, content string, ending uint8, usageFirst, doneWithUsage bool, cuts []byte) {
		if len(content) > 1024 || len(cuts) > 64 {
			return
		}
		nl := lineEndings[int(ending)%len(lineEndings)]
		c, _ := json.Marshal(content)
		chunk := `data: {"choices":[{"index":0,"delta":{"content":` + string(c) + `}}]}` + nl + nl
		usage := `data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}` + nl
		done := "data: [DONE]" + nl + nl
		var stream, want string
		switch {
		case doneWithUsage: // one event: the usage and [DONE] lines: not usage-only
			usage += "data: [DONE]" + nl + nl
			stream = chunk + usage
			if usageFirst {
				stream = usage + chunk
			}
			want = stream
		case usageFirst:
			stream, want = usage+nl+chunk+done, chunk+done
		default:
			stream, want = chunk+usage+nl+done, chunk+done
		}
		if got := filtered(t, stream, cuts); got != want {
			t.Fatalf("stream %q, cuts %v:\ngot  %q\nwant %q", stream, cuts, got, want)
		}
		// The fuzzer's content as a stream of its own.
		raw := content
		got := filtered(t, raw, cuts)
		rest := got
		for _, ev := range sseEvents(raw) {
			if after, ok := strings.CutPrefix(rest, ev); ok {
				rest = after
				continue
			}
			if !mayBeUsageOnly(ev) {
				t.Fatalf("stream %q, cuts %v: event %q is missing from %q", raw, cuts, ev, got)
			}
		}
		if rest != "" {
			t.Fatalf("stream %q, cuts %v: %q left over in %q", raw, cuts, rest, got)
		}
	})
}
