package llmmetrics

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/llmmetrics/llmmetrics/internal/jsonscan"
)

// geminiTestInterp is the Gemini interpreter with its scan cache turned off
// (useCache false), so FuzzGeminiDecoder can check that the cache changes no
// frame. Bare lines go to the embedded interpreter, as in production.
type geminiTestInterp struct {
	*geminiInterp
	useCache bool
	full     geminiFacts
	hits     *int // events the cache answered, when not nil
}

func (g *geminiTestInterp) interpret(_, data []byte) (Frame, error) {
	f, hit := testWalk(&g.j, &g.cache, &g.full, data, walkGemini, g.useCache, g.hits)
	fr, err := g.frame(f, data)
	if f != nil && !hit {
		g.answer(f, data, &fr)
	}
	return fr, err
}

// newGeminiTestDecoder returns a Gemini decoder (array: the JSON-array
// framing) that walks every event in full when cache is false, and else
// counts the events its cache answered in *hits (when hits is not nil).
func newGeminiTestDecoder(cache, array bool, hits *int) Decoder {
	in := &geminiTestInterp{geminiInterp: &geminiInterp{}, useCache: cache, hits: hits}
	if array {
		return &jsonArrayDecoder{in: in, max: defaultMaxFrameBytes, name: "gemini"}
	}
	return newSSE("gemini", in, nil)
}

// geminiSeeds returns the Gemini fixtures, and the data of their events
// (the JSON files whole).
func geminiSeeds(tb testing.TB) (streams, datas [][]byte) {
	tb.Helper()
	names, err := filepath.Glob(filepath.Join("testdata", "gemini", "*"))
	if err != nil || len(names) == 0 {
		tb.Fatalf("no Gemini fixtures: %v", err)
	}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			tb.Fatal(err)
		}
		streams = append(streams, b)
		if filepath.Ext(n) == ".json" {
			datas = append(datas, b)
			continue
		}
		decodePieces(NewSSEDecoder(func(_, data []byte) (Frame, error) {
			datas = append(datas, append([]byte(nil), data...))
			return Frame{}, nil
		}), b)
	}
	return streams, datas
}

func FuzzGeminiDecoder(f *testing.F) {
	streams, _ := geminiSeeds(f)
	for _, s := range streams {
		f.Add(s, []byte{10, 200, 7})
	}
	f.Add([]byte("data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\",\"thought\":true}]}}]}\r\r{\"error\":{\"status\":\"X\"}}\r"), []byte{1})
	f.Add([]byte(` [ {"candidates":[{"content":{"parts":[{"text":"}\"{"}]}}]} ,, {"usageMetadata":{"promptTokenCount":1}} ] `), []byte{3, 9})
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		quietOtel(t)
		// The same bytes as an SSE stream and as a JSON array.
		for _, array := range []bool{false, true} {
			dec := func() Decoder { return newGeminiDecoder() }
			if array {
				dec = func() Decoder { return newGeminiArrayDecoder() }
			}
			whole := checkSplitFull(t, dec, data, cuts)
			if without := decodeFull(newGeminiTestDecoder(false, array, nil), data); !equalFull(whole, without) {
				t.Fatalf("array %v: the scan cache changed the frames\nwith:    %+v\nwithout: %+v", array, whole, without)
			}
		}
		checkBounded(t, newGeminiDecoder(WithMaxFrameBytes(64)).(*sseDecoder), data)
		d := newGeminiArrayDecoder(WithMaxFrameBytes(64)).(*jsonArrayDecoder)
		for _, p := range splitAt(data, []byte{3, 17, 64}) {
			d.Decode(p, func(Frame) {})
			if cap(d.buf) > 10*d.max+64 {
				t.Fatalf("array decoder holds %d bytes with a limit of %d", cap(d.buf), d.max)
			}
		}
		d.Flush(func(Frame) {})
	})
}

// refGeminiFacts is the reference for walkGemini, built on encoding/json
// (see refOpenAIFacts).
func refGeminiFacts(data []byte) (geminiFacts, geminiStrings, bool) {
	m, ok := refObject(data)
	if !ok {
		return geminiFacts{}, geminiStrings{}, false
	}
	var f geminiFacts
	str := geminiStrings{model: refString(m["modelVersion"]), id: refString(m["responseId"])}
	if e, ok := m["error"]; ok && e != nil {
		f.err = true
	}
	f.usage = refInts(m["usageMetadata"], gemUsageNames)
	if pf, ok := m["promptFeedback"].(map[string]any); ok {
		s, _ := pf["blockReason"].(string)
		f.blocked = s != ""
	}
	cands, _ := m["candidates"].([]any)
	for pos, c := range cands {
		c, isObject := c.(map[string]any)
		if s, _ := c["finishReason"].(string); s != "" {
			f.finished = true
			if isObject && len(str.finishes) < maxFinishes {
				index := pos
				if isInt, v := refCount(c["index"]); isInt {
					index = v
				}
				str.finishes = append(str.finishes, fmt.Sprintf("%d:%s", index, s))
			}
		}
		content, _ := c["content"].(map[string]any)
		parts, _ := content["parts"].([]any)
		carries := false
		for _, p := range parts {
			p, _ := p.(map[string]any)
			text, _ := p["text"].(string)
			nonEmpty := func(k string) bool { o, _ := p[k].(map[string]any); return len(o) > 0 }
			if text != "" || nonEmpty("functionCall") || nonEmpty("executableCode") || nonEmpty("inlineData") {
				carries = true
				if p["thought"] != true {
					f.answer = true
				}
			}
		}
		if carries {
			f.carrying++
		}
	}
	return f, str, true
}

// geminiStrings is what the string spans of geminiFacts hold.
type geminiStrings struct {
	model, id string
	finishes  []string
}

// stringsOf reads f's spans in data and clears them (see openAIFacts').
func (f *geminiFacts) stringsOf(data []byte) geminiStrings {
	s := geminiStrings{spanText(data, f.model), spanText(data, f.id), finishTexts(data, &f.finishes)}
	f.model, f.id, f.finishes = strSpan{}, strSpan{}, finishList{}
	return s
}

// FuzzGeminiFacts cross-checks walkGemini against encoding/json (see
// FuzzOpenAIFacts).
func FuzzGeminiFacts(f *testing.F) {
	_, datas := geminiSeeds(f)
	for _, d := range datas {
		f.Add(d)
	}
	for _, s := range []string{
		`{"candidates":[{"content":{"parts":[{"text":"a","text":""}]}},{"content":{"parts":[{"functionCall":{"name":"f"},"thought":true}]}}]}`,
		`{"usageMetadata":{"promptTokenCount":1e2,"thoughtsTokenCount":-1,"candidatesTokenCount":9223372036854775808}}`,
		`{"promptFeedback":{"blockReason":"\u0053"},"error":null,"candidates":{}}`,
		`{"candidates":[{"content":{"parts":[{"inlineData":{}},{"executableCode":{"code":""}}]},"content":null,"finishReason":"STOP"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var j jsonscan.Scanner
		var got geminiFacts
		ok := jsonscan.Walk(&j, data, &got, walkGemini)
		want, wantStr, refOK := refGeminiFacts(data)
		if ok != refOK {
			t.Fatalf("scanner valid=%v, encoding/json valid=%v", ok, refOK)
		}
		if !ok {
			return
		}
		if gotStr := got.stringsOf(data); !reflect.DeepEqual(gotStr, wantStr) {
			t.Fatalf("strings differ\nscanner: %+v\nencoding/json: %+v", gotStr, wantStr)
		}
		if got != want {
			t.Fatalf("facts differ\nscanner: %+v\nencoding/json: %+v", got, want)
		}
	})
}
