package llmmetrics

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/llmmetrics/llmmetrics/internal/jsonscan"
)

// openAIStrings is what the string spans of openAIFacts hold, as text.
type openAIStrings struct {
	model, id                                 string
	finishes                                  []string
	respModel, respID, respStatus, respReason string
}

// stringsOf reads f's spans in data and clears them, so the rest of f
// compares with ==.
func (f *openAIFacts) stringsOf(data []byte) openAIStrings {
	s := openAIStrings{model: spanText(data, f.model), id: spanText(data, f.id), finishes: finishTexts(data, &f.finishes),
		respModel: spanText(data, f.resp.model), respID: spanText(data, f.resp.id),
		respStatus: spanText(data, f.resp.status), respReason: spanText(data, f.resp.reason)}
	f.model, f.id, f.finishes, f.resp = strSpan{}, strSpan{}, finishList{}, respFacts{}
	return s
}

// refOpenAIFacts is the reference for walkOpenAI, built on encoding/json:
// for every input both must agree on validity and on every fact (see
// refObject for the one leniency of the scanner), the texts of its string
// spans included.
func refOpenAIFacts(data []byte) (openAIFacts, openAIStrings, bool) {
	m, ok := refObject(data)
	if !ok {
		return openAIFacts{}, openAIStrings{}, false
	}
	var f openAIFacts
	var str openAIStrings
	str.model, str.id = refString(m["model"]), refString(m["id"])
	if c, ok := m["choices"].([]any); ok {
		f.choices = len(c)
		for pos, e := range c {
			co, ok := e.(map[string]any)
			if !ok {
				continue
			}
			if r := refString(co["finish_reason"]); r != "" && len(str.finishes) < maxFinishes {
				index := pos
				if isInt, v := refCount(co["index"]); isInt {
					index = v
				}
				str.finishes = append(str.finishes, fmt.Sprintf("%d:%s", index, r))
			}
			answer, reasoning := refChoice(co)
			if answer || reasoning {
				f.carrying++
			}
			if answer {
				f.answering++
			}
		}
	}
	f.usage = refUsage(m["usage"], oaiChatUsage)
	f.timings = refUsage(m["timings"], llamaTimings)
	if x, ok := m["x_groq"].(map[string]any); ok {
		f.groqUsage = refUsage(x["usage"], oaiChatUsage)
		s, _ := x["error"].(string)
		f.groqErr = s != ""
	}
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
		f.respUsage = refUsage(r["usage"], oaiRespUsage)
		str.respModel, str.respID, str.respStatus = refString(r["model"]), refString(r["id"]), refString(r["status"])
		if d, ok := r["incomplete_details"].(map[string]any); ok {
			str.respReason = refString(d["reason"])
		}
	}
	return f, str, true
}

// refChoice is the reference for walkChoice.
func refChoice(c map[string]any) (answer, reasoning bool) {
	nonEmpty := func(m map[string]any, k string) bool { s, _ := m[k].(string); return s != "" }
	if nonEmpty(c, "text") {
		answer = true
	}
	d, ok := c["delta"].(map[string]any)
	if !ok {
		return answer, false
	}
	if parts, ok := d["content"].([]any); ok {
		for _, p := range parts {
			a, r := refPart(p, false)
			answer, reasoning = answer || a, reasoning || r
		}
	} else if nonEmpty(d, "content") {
		answer = true
	}
	if nonEmpty(d, "refusal") {
		answer = true
	}
	if a, _ := d["tool_calls"].([]any); len(a) > 0 {
		answer = true
	}
	if o, _ := d["function_call"].(map[string]any); len(o) > 0 {
		answer = true
	}
	if nonEmpty(d, "reasoning_content") || nonEmpty(d, "reasoning") {
		reasoning = true
	}
	if details, ok := d["reasoning_details"].([]any); ok {
		for _, v := range details {
			if dm, ok := v.(map[string]any); ok {
				switch typ, _ := dm["type"].(string); typ {
				case "reasoning.text":
					reasoning = reasoning || nonEmpty(dm, "text")
				case "reasoning.summary":
					reasoning = reasoning || nonEmpty(dm, "summary")
				}
			}
		}
	}
	return answer, reasoning
}

// refPart is the reference for walkContentPart.
func refPart(v any, inner bool) (answer, reasoning bool) {
	p, ok := v.(map[string]any)
	if !ok {
		return false, false
	}
	typ, typed := p["type"].(string)
	text, _ := p["text"].(string)
	thinking := false
	if inParts, ok := p["thinking"].([]any); ok && !inner {
		for _, in := range inParts {
			if a, _ := refPart(in, true); a {
				thinking = true
			}
		}
	}
	answer = text != "" && (!typed || typ == "text")
	reasoning = thinking && (!typed || typ == "thinking")
	return answer, reasoning
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
		checkSplitInvariant(t, func() Decoder { return newOpenAIDecoder() }, data, cuts)
		checkCache(t, func(cache bool) Decoder { return newOpenAITestDecoder(cache, nil) }, data)
		checkBounded(t, newOpenAIDecoder(WithMaxFrameBytes(64)).(*sseDecoder), data)
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
		`{"choices":[{"delta":{"content":[{"type":"thinking","thinking":[{"text":"a"},{"type":"reference","reference_ids":[1]}]},{"text":""},7]}}]}`,
		`{"choices":[{"delta":{"content":[{"thinking":[{"type":"text","text":"a","thinking":[{"text":"b"}]}],"type":null}],"content":[]}}]}`,
		`{"choices":[{"delta":{"reasoning_details":[{"type":"reasoning.encrypted","data":"x","text":"y"},{"summary":"a","type":"reasoning.summary","summary":""},{"type":"reasoning.text","text":"b"}]}}]}`,
		`{"choices":[{"delta":{"reasoning_details":[{"type":"reasoning.\u0074ext","text":"b"}],"reasoning_details":null}}]}`,
		`{"x_groq":{"usage":{"prompt_tokens":3,"completion_tokens":4,"completion_tokens_details":{"reasoning_tokens":5}},"error":"stopped"}}`,
		`{"id":"a","model":"m\u00e9","id":7,"choices":[{"finish_reason":"stop","index":3},{"finish_reason":"len\u0067th","finish_reason":null},{"index":-1,"finish_reason":"x"}]}`,
		`{"type":"response.incomplete","response":{"id":"r","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"model":"gpt"},"response":{"status":"completed"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var j jsonscan.Scanner
		var got openAIFacts
		ok := jsonscan.Walk(&j, data, &got, walkOpenAI)
		want, wantStr, refOK := refOpenAIFacts(data)
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
