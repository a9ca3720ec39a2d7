package llmmetrics

import (
	"testing"

	"github.com/llmmetrics/llmmetrics/internal/jsonscan"
)

// refOpenAIFacts is the reference for walkOpenAI, built on encoding/json:
// for every input both must agree on validity and on every fact (see
// refObject for the one leniency of the scanner).
func refOpenAIFacts(data []byte) (openAIFacts, bool) {
	m, ok := refObject(data)
	if !ok {
		return openAIFacts{}, false
	}
	var f openAIFacts
	if c, ok := m["choices"].([]any); ok {
		f.choices = len(c)
		for _, e := range c {
			if co, ok := e.(map[string]any); ok && refChoiceCarries(co) {
				f.carrying++
			}
		}
	}
	f.usage = refInts(m["usage"], oaiUsageNames)
	if e, ok := m["error"]; ok && e != nil {
		f.err = true
	}
	if s, ok := m["type"].(string); ok {
		f.typ = classifyOpenAI([]byte(s))
	}
	if d, ok := m["delta"].(string); ok {
		f.deltaStr = d != ""
	}
	if r, ok := m["response"].(map[string]any); ok {
		f.respUsage = refInts(r["usage"], oaiRespUsageNames)
	}
	return f, true
}

func refChoiceCarries(c map[string]any) bool {
	if s, _ := c["text"].(string); s != "" {
		return true
	}
	d, ok := c["delta"].(map[string]any)
	if !ok {
		return false
	}
	for _, k := range []string{"content", "reasoning_content", "reasoning", "refusal"} {
		if s, _ := d[k].(string); s != "" {
			return true
		}
	}
	if a, _ := d["tool_calls"].([]any); len(a) > 0 {
		return true
	}
	o, _ := d["function_call"].(map[string]any)
	return len(o) > 0
}

func FuzzOpenAIDecoder(f *testing.F) {
	streams, _ := fixtureSeeds(f, "openai_")
	vllm, _ := fixtureSeeds(f, "vllm_")
	for _, s := range append(streams, vllm...) {
		f.Add(s, []byte{10, 200, 7})
	}
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\r\rdata: [DONE]\r"), []byte{1})
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		quietOtel(t)
		checkSplitInvariant(t, func() Decoder { return NewOpenAIDecoder() }, data, cuts)
		checkCache(t, func(cache bool) Decoder { return newOpenAITestDecoder(cache, nil) }, data)
		checkBounded(t, NewOpenAIDecoder(WithMaxFrameBytes(64)).(*sseDecoder), data)
	})
}

// FuzzOpenAIFacts cross-checks walkOpenAI against encoding/json: for any
// input, both agree on whether it is a JSON object and on every fact the
// decoder uses (tokens, usage counts, errors, types). jsonscan's FuzzWalk
// checks the scanner's primitives themselves.
func FuzzOpenAIFacts(f *testing.F) {
	_, datas := fixtureSeeds(f, "")
	for _, d := range datas {
		f.Add(d)
	}
	for _, s := range []string{
		`{"choices":[{"delta":{"content":"a","content":""}}]}`,
		`{"usage":{"prompt_tokens":1e2,"completion_tokens":-1,"input_tokens":9223372036854775808}}`,
		`{"type":"response.\u006fut.delta","delta":"\u00e9"}`,
		`{"choices":[{"delta":{"tool_calls":[{}],"function_call":{}}},{"text":"\ud83d\ude00"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var j jsonscan.Scanner
		var got openAIFacts
		ok := jsonscan.Walk(&j, data, &got, walkOpenAI)
		want, refOK := refOpenAIFacts(data)
		if ok != refOK {
			t.Fatalf("scanner valid=%v, encoding/json valid=%v", ok, refOK)
		}
		if ok && got != want {
			t.Fatalf("facts differ\nscanner: %+v\nencoding/json: %+v", got, want)
		}
	})
}
