package jsonstream

import (
	"encoding/json"
	"strings"
	"testing"
)

// BenchmarkFeed scans a 16 KB answer in 4 KiB pieces, capturing a few
// members, next to json.Valid on the whole text (a validating scan that
// captures nothing: the floor of reading JSON with the standard library).
func BenchmarkFeed(b *testing.B) {
	text := []byte(`{"id":"x","choices":[{"message":{"content":"` + strings.Repeat("plain words and more words ", 600) +
		`"}}],"a":{"n":12,"s":"m","d":{"n":3}},"s":"model","n":7,"b":true}`)
	b.Run("json.Valid", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			if !json.Valid(text) {
				b.Fatal("invalid")
			}
		}
	})
	b.Run("Feed", func(b *testing.B) {
		s := NewScanner(testSchema)
		b.SetBytes(int64(len(text)))
		b.ReportAllocs()
		for b.Loop() {
			s.Reset()
			for p := text; len(p) > 0; p = p[min(len(p), 4096):] {
				s.Feed(p[:min(len(p), 4096)])
			}
		}
		if !s.Done() || s.Values[fADN].Int != 3 {
			b.Fatal("not scanned")
		}
	})
}
