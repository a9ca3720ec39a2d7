package jsonscan_test

import (
	"bytes"
	"testing"

	"github.com/llmmetrics/llmmetrics/cmd/llmmetrics/internal/jsonscan"
)

// seeds are realistic events of the built-in and coming protocols, and the
// corners of the grammar.
var seeds = []string{
	chatChunk,
	`{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null}}],"usage":null}`,
	`{"choices":[],"usage":{"prompt_tokens":31,"completion_tokens":1200,"total_tokens":1231}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi \u00e9\ud83d\ude00"}}`,
	`{"candidates":[{"content":{"parts":[{"text":"Hi","thought":true}],"role":"model"}}],"usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":3,"thoughtsTokenCount":12}}`,
	`{"model":"llama3.2","created_at":"2024-07-22T20:33:28Z","message":{"role":"assistant","content":"Hi"},"done":false}`,
	` { "a" : [ 1 , -0.5e+3 , true , false , null , { } , [ ] , "" ] , "b" : 9223372036854775808 } `,
	`{"a":1,"a":"x","b":[[[[{"a":2}]]]],"\u0061":3}`,
	`{"k":"\"\\\/\b\f\n\r\t\u0000\u001f"}`,
	`{"a":1}x`, `[1]`, `{"a":01}`, `{"a":1.}`, `{"a":"\x"}`, "{\"a\":\"\x01\"}", `{"a":tru}`, `{"a" 1}`, `{,}`, `{"a":1,}`, ``,
}

// FuzzWalk cross-checks the scanner against encoding/json: for any input,
// tokenWalker and refTokens agree on whether it is a JSON object and on
// every token (structure, keys, string emptiness and text, integers,
// literals, Ints of every object), with and without string texts.
func FuzzWalk(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		orig := bytes.Clone(data)
		for _, texts := range []bool{false, true} {
			var j jsonscan.Scanner
			var got tokens
			ok := jsonscan.Walk(&j, data, &got, tokenWalker(texts))
			want, refOK := refTokens(data, texts)
			if ok != refOK {
				t.Fatalf("scanner valid=%v, encoding/json valid=%v", ok, refOK)
			}
			if ok && got != want {
				t.Fatalf("tokens differ (texts %v)\nscanner:       %s\nencoding/json: %s", texts, got.s, want.s)
			}
		}
		if !bytes.Equal(orig, data) {
			t.Fatal("the scanner modified its input")
		}
	})
}

// FuzzCache checks the cache against a full walk on the events it is meant
// for: an event a, then a with the body of its hot string replaced by body
// (valid or not, quotes and all). The cache must give the facts a full walk
// gives, or nil when the event is not valid.
func FuzzCache(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s), []byte("x"))
		f.Add([]byte(s), []byte(""))
		f.Add([]byte(s), []byte(`a","content":"`))
		f.Add([]byte(s), []byte(`\"`))
	}
	walk := tokenWalker(false)
	f.Fuzz(func(t *testing.T, a, body []byte) {
		var j jsonscan.Scanner
		var c jsonscan.Cache[tokens]
		fa, _ := c.Walk(&j, a, walk)
		if fa == nil {
			return
		}
		h0, h1 := j.Hot()
		if h0 < 0 {
			return
		}
		b := append(append(append([]byte(nil), a[:h0+1]...), body...), a[h1-1:]...)
		got, hit := c.Walk(&j, b, walk)
		var want tokens
		var j2 jsonscan.Scanner
		ok := jsonscan.Walk(&j2, b, &want, walk)
		if (got != nil) != ok {
			t.Fatalf("cache valid=%v (hit %v), full walk valid=%v for %q", got != nil, hit, ok, b)
		}
		if ok && *got != want {
			t.Fatalf("facts differ (hit %v) for %q\ncache: %s\nwalk:  %s", hit, b, got.s, want.s)
		}
	})
}
