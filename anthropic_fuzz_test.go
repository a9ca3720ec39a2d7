package llmmetrics

import (
	"testing"

	"github.com/llmmetrics/llmmetrics/internal/jsonscan"
)

// refAnthropicFacts is the reference for walkAnthropic, built on
// encoding/json (see refOpenAIFacts).
func refAnthropicFacts(data []byte) (anthropicFacts, anthropicStrings, bool) {
	m, ok := refObject(data)
	if !ok {
		return anthropicFacts{}, anthropicStrings{}, false
	}
	var f anthropicFacts
	var str anthropicStrings
	if s, ok := m["type"].(string); ok {
		f.typ = classifyAnthropic([]byte(s))
	}
	if e, ok := m["error"]; ok && e != nil {
		f.err = true
	}
	if d, ok := m["delta"].(map[string]any); ok {
		if s, ok := d["type"].(string); ok {
			f.delta.typ = classifyAnthropic([]byte(s))
		}
		nonEmpty := func(k string) bool { s, _ := d[k].(string); return s != "" }
		f.delta.text, f.delta.thinking, f.delta.partialJSON = nonEmpty("text"), nonEmpty("thinking"), nonEmpty("partial_json")
		str.stopReason = refString(d["stop_reason"])
	}
	f.usage = refUsage(m["usage"], anthUsage)
	if r, ok := m["message"].(map[string]any); ok {
		f.msgUsage = refUsage(r["usage"], anthUsage)
		str.model, str.id = refString(r["model"]), refString(r["id"])
	}
	return f, str, true
}

// anthropicStrings is what the string spans of anthropicFacts hold.
type anthropicStrings struct{ model, id, stopReason string }

// stringsOf reads f's spans in data and clears them (see openAIFacts').
func (f *anthropicFacts) stringsOf(data []byte) anthropicStrings {
	s := anthropicStrings{spanText(data, f.model), spanText(data, f.id), spanText(data, f.delta.stopReason)}
	f.model, f.id, f.delta.stopReason = strSpan{}, strSpan{}, strSpan{}
	return s
}

func FuzzAnthropicDecoder(f *testing.F) {
	streams, _ := fixtureSeeds(f, "anthropic_")
	for _, s := range streams {
		f.Add(s, []byte{10, 200, 7})
	}
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		quietOtel(t)
		checkSplitInvariant(t, func() Decoder { return newAnthropicDecoder() }, data, cuts)
		checkCache(t, func(cache bool) Decoder { return newAnthropicTestDecoder(cache, nil) }, data)
		checkBounded(t, newAnthropicDecoder(WithMaxFrameBytes(64)).(*sseDecoder), data)
	})
}

// FuzzAnthropicFacts cross-checks walkAnthropic against encoding/json (see
// FuzzOpenAIFacts).
func FuzzAnthropicFacts(f *testing.F) {
	_, datas := fixtureSeeds(f, "anthropic_")
	for _, d := range datas {
		f.Add(d)
	}
	for _, s := range []string{
		`{"type":"content_block_delta","delta":{"type":"text_delta","text":"a","text":""}}`,
		`{"type":"message_start","message":{"usage":{"input_tokens":1e2,"cache_read_input_tokens":-1,"output_tokens":9223372036854775808}}}`,
		`{"type":"\u0065rror","error":null,"delta":"x"}`,
		`{"type":"message_delta","usage":{"output_tokens":3},"usage":7}`,
		`{"type":"message_delta","usage":{"output_tokens":3,"output_tokens_details":{"thinking_tokens":2},"output_tokens_details":null}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var j jsonscan.Scanner
		var got anthropicFacts
		ok := jsonscan.Walk(&j, data, &got, walkAnthropic)
		want, wantStr, refOK := refAnthropicFacts(data)
		if ok != refOK {
			t.Fatalf("scanner valid=%v, encoding/json valid=%v", ok, refOK)
		}
		if !ok {
			return
		}
		if gotStr := got.stringsOf(data); gotStr != wantStr {
			t.Fatalf("strings differ\nscanner: %+v\nencoding/json: %+v", gotStr, wantStr)
		}
		if got != want {
			t.Fatalf("facts differ\nscanner: %+v\nencoding/json: %+v", got, want)
		}
	})
}
