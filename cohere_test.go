package llmmetrics

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/llmmetrics/llmmetrics/internal/jsonscan"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// Cohere's fixtures, counted by hand from the files (their sources are in
// their headers).
func init() {
	cohere := func() Decoder { return newCohereDecoder() }
	fixtures = append(fixtures,
		// 5 content deltas; usage.tokens (498 in, 6 out) wins over
		// billed_units; 448 of the input hit the cache.
		fixture{"cohere_chat.sse", cohere, summary{Frames: 9, Tokens: 5, TokenFrames: 5, FirstToken: 2, FirstAnswer: 2,
			HasUsage: true, In: 498, Out: 6, Cached: 448, Done: true}, 6, false},
		// 3 tool-plan deltas (reasoning), the tool call's start (its name)
		// and 3 argument deltas (answer); [DONE] after message-end.
		fixture{"cohere_tool_call.sse", cohere, summary{Frames: 11, Tokens: 7, TokenFrames: 7, ReasoningFrames: 3, FirstToken: 1,
			FirstAnswer: 4, HasUsage: true, In: 1204, Out: 40, Done: true}, 40, false},
		// 3 thinking deltas, then 2 text deltas; the empty content-starts
		// carry nothing.
		fixture{"cohere_thinking.sse", cohere, summary{Frames: 11, Tokens: 5, TokenFrames: 5, ReasoningFrames: 3, FirstToken: 2,
			FirstAnswer: 7, HasUsage: true, In: 52, Out: 27, Done: true}, 27, false},
		// finish_reason ERROR with delta.error, billed units only.
		fixture{"cohere_error.sse", cohere, summary{Frames: 5, Tokens: 2, TokenFrames: 2, FirstToken: 2, FirstAnswer: 2,
			HasUsage: true, In: 12, Out: 3, Done: true, Errs: 1, ErrType: "ERROR"}, 3, false},
	)
}

// TestCohereChosen: the one-liners choose Cohere's decoder by path and, on a
// path that does not tell, by the first event; the provider and operation
// follow.
func TestCohereChosen(t *testing.T) {
	assert.Equal(t, ProtocolCohere, detectProtocol("/v2/chat", "text/event-stream"))
	assert.Equal(t, ProtocolCohere, detectProtocol("/gateway/cohere/v2/chat/", "text/event-stream; charset=utf-8"))
	assert.Equal(t, ProtocolJSON, detectProtocol("/v2/chat", "application/json"))
	assert.Equal(t, ProtocolUnknown, detectProtocol("/v1/chat", "text/event-stream"), "v1 Chat is another protocol")
	ep := classifyPath("/v2/chat")
	assert.Equal(t, semconv.GenAIOperationNameChat, ep.op)
	assert.Equal(t, semconv.GenAIProviderNameCohere, providerOf("llm.internal:8080", ProtocolCohere))
	assert.Equal(t, "cohere", ProtocolCohere.String())

	// Sniffed: the same stream read by ProtocolUnknown's decoder gives the
	// same frames.
	data := readFixture(t, "cohere_tool_call.sse")
	assert.Equal(t, decodePieces(newCohereDecoder(), data), decodePieces(ProtocolUnknown.NewDecoder(), data))
}

// TestCohereThroughTheOneLiners: NewTransport and NewHandler measure a
// Cohere stream served on /v2/chat (and one on another path, by its
// content) as its fixture says.
func TestCohereThroughTheOneLiners(t *testing.T) {
	stream := testdataFile(t, "sse", "cohere_chat.sse")
	for _, path := range []string{"/v2/chat", "/proxy/stream"} {
		t.Run(path, func(t *testing.T) {
			tr, _ := httpTracker(t)
			mux := http.NewServeMux()
			mux.Handle("/", NewHandler(tr, answer(http.StatusOK, "text/event-stream", stream)))
			hc, url := newLLMClient(t, tr, mux.ServeHTTP)
			resp, err := hc.Do(post(t, context.Background(), url+path, `{"model":"command-a-03-2025","stream":true,"messages":[]}`))
			require.NoError(t, err)
			_, err = io.Copy(io.Discard, resp.Body)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			recs := ended(tr)
			require.Len(t, recs, 2, "the server's and the client's")
			for _, r := range recs {
				assert.Equal(t, OutcomeOK, r.Outcome)
				assert.Equal(t, 5, r.Chunks)
				assert.Equal(t, 6, r.OutputTokens)
				assert.Equal(t, 498, r.InputTokens)
				assert.Equal(t, 448, r.CachedInputTokens)
			}
		})
	}
}

// TestCohereJSONAnswer: a non-streaming V2ChatResponse's usage.
func TestCohereJSONAnswer(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "json", "cohere_chat.json"))
	require.NoError(t, err)
	assert.Equal(t, []Frame{{HasUsage: true, InputTokens: 498, OutputTokens: 6, CachedInputTokens: 448, Done: true,
		ResponseID: "5f1a9c2e-7b3d-4e8a-9c61-2d4b8e0f3a17", FinishReasons: []string{"COMPLETE"}}}, jsonFrames(data))
	for _, tc := range []struct {
		name, in string
		want     Frame
	}{
		{"billed units only", `{"usage":{"billed_units":{"input_tokens":7,"output_tokens":6}}}`, Frame{HasUsage: true, InputTokens: 7, OutputTokens: 6, Done: true}},
		{"cached above the input", `{"usage":{"tokens":{"input_tokens":10,"output_tokens":1},"cached_tokens":11}}`, Frame{HasUsage: true, InputTokens: 10, OutputTokens: 1, Done: true}},
		{"no counts", `{"usage":{"cached_tokens":5}}`, Frame{Done: true}},
		{"counts not integers", `{"usage":{"tokens":{"input_tokens":1.5,"output_tokens":"2"}}}`, Frame{Done: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, []Frame{tc.want}, jsonFrames([]byte(tc.in)))
		})
	}
}

// TestCohereEvents: what each event carries, by hand.
func TestCohereEvents(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		want       frameView
	}{
		{"text", `{"type":"content-delta","delta":{"message":{"content":{"text":"a"}}}}`, frameView{Tokens: 1}},
		{"empty text", `{"type":"content-delta","delta":{"message":{"content":{"text":""}}}}`, frameView{}},
		{"thinking", `{"type":"content-delta","delta":{"message":{"content":{"thinking":"a"}}}}`, frameView{Tokens: 1, Reasoning: true}},
		{"thinking and text", `{"type":"content-delta","delta":{"message":{"content":{"thinking":"a","text":"b"}}}}`, frameView{Tokens: 1}},
		{"tool plan", `{"type":"tool-plan-delta","delta":{"message":{"tool_plan":"a"}}}`, frameView{Tokens: 1, Reasoning: true}},
		{"tool call name", `{"type":"tool-call-start","delta":{"message":{"tool_calls":{"id":"x","function":{"name":"f","arguments":""}}}}}`, frameView{Tokens: 1}},
		{"tool call arguments", `{"type":"tool-call-delta","delta":{"message":{"tool_calls":{"function":{"arguments":"{"}}}}}`, frameView{Tokens: 1}},
		{"citation text is not output", `{"type":"citation-start","delta":{"message":{"citations":{"text":"quoted"}}}}`, frameView{}},
		{"message-start", `{"id":"x","type":"message-start","delta":{"message":{"role":"assistant","content":[],"tool_plan":"","tool_calls":[]}}}`, frameView{}},
		{"last text member wins", `{"type":"content-delta","delta":{"message":{"content":{"text":"a","text":""}}}}`, frameView{}},
		{"usage without message-end is not read", `{"type":"debug","delta":{"usage":{"tokens":{"input_tokens":1,"output_tokens":2}}}}`, frameView{}},
		{"timeout", `{"type":"message-end","delta":{"finish_reason":"TIMEOUT"}}`,
			frameView{Done: true, Err: "llmmetrics: stream error (TIMEOUT)", streamErrType: "TIMEOUT"}},
		{"error text without an error finish", `{"type":"message-end","delta":{"finish_reason":"COMPLETE","error":"x"}}`,
			frameView{Done: true, Err: "llmmetrics: stream error: x", streamErrType: "stream_error"}},
		{"max tokens is no error", `{"type":"message-end","delta":{"finish_reason":"MAX_TOKENS","usage":{"tokens":{"input_tokens":3,"output_tokens":9}}}}`,
			frameView{Done: true, HasUsage: true, In: 3, Out: 9}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := otelErrors(t)
			got := decodePieces(newCohereDecoder(), []byte("data: "+tc.data+"\n\n"))
			assert.Equal(t, []frameView{tc.want}, countsOnly(got))
			assert.Empty(t, errs())
		})
	}
}

// refCohereFacts is the reference for walkCohere, built on encoding/json
// (see refOpenAIFacts).
func refCohereFacts(data []byte) (cohereFacts, [2]string, bool) {
	m, ok := refObject(data)
	if !ok {
		return cohereFacts{}, [2]string{}, false
	}
	var f cohereFacts
	str := [2]string{refString(m["id"])}
	if s, _ := m["type"].(string); s == "message-end" {
		f.typ = cohereMessageEnd
	}
	nonEmpty := func(m map[string]any, k string) bool { s, _ := m[k].(string); return s != "" }
	d, ok := m["delta"].(map[string]any)
	if !ok {
		return f, str, true
	}
	if r, ok := d["finish_reason"].(string); ok {
		f.failed = r == "ERROR" || r == "TIMEOUT"
		str[1] = r
	}
	f.errText = nonEmpty(d, "error")
	f.usage = refUsage(d["usage"], cohereUsage)
	if msg, ok := d["message"].(map[string]any); ok {
		if c, ok := msg["content"].(map[string]any); ok {
			f.text, f.thinking = nonEmpty(c, "text"), nonEmpty(c, "thinking")
		}
		f.toolPlan = nonEmpty(msg, "tool_plan")
		if tc, ok := msg["tool_calls"].(map[string]any); ok {
			if fn, ok := tc["function"].(map[string]any); ok {
				f.fnName, f.fnArgs = nonEmpty(fn, "name"), nonEmpty(fn, "arguments")
			}
		}
	}
	return f, str, true
}

func FuzzCohereDecoder(f *testing.F) {
	streams, _ := fixtureSeeds(f, "cohere_")
	for _, s := range streams {
		f.Add(s, []byte{10, 200, 7})
	}
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		quietOtel(t)
		checkSplitInvariant(t, func() Decoder { return newCohereDecoder() }, data, cuts)
		checkCache(t, func(cache bool) Decoder { return newCohereTestDecoder(cache) }, data)
		checkBounded(t, newCohereDecoder(WithMaxFrameBytes(64)).(*sseDecoder), data)
	})
}

// FuzzCohereFacts cross-checks walkCohere against encoding/json (see
// FuzzOpenAIFacts).
func FuzzCohereFacts(f *testing.F) {
	_, datas := fixtureSeeds(f, "cohere_")
	for _, d := range datas {
		f.Add(d)
	}
	for _, s := range []string{
		`{"type":"content-delta","delta":{"message":{"content":{"text":"a"},"content":[]}}}`,
		`{"type":"message-end","delta":{"usage":{"tokens":{"input_tokens":1},"tokens":null,"cached_tokens":2.0}}}`,
		`{"type":"tool-call-delta","delta":{"message":{"tool_calls":{"function":{"arguments":"x"},"function":{"name":""}}}},"delta":{}}`,
		`{"type":"message-end","delta":{"finish_reason":"ERROR","finish_reason":"COMPLETE","error":"\u0065"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var j jsonscan.Scanner
		var got cohereFacts
		ok := jsonscan.Walk(&j, data, &got, walkCohere)
		want, wantStr, refOK := refCohereFacts(data)
		if ok != refOK {
			t.Fatalf("scanner valid=%v, encoding/json valid=%v", ok, refOK)
		}
		if !ok {
			return
		}
		gotStr := [2]string{spanText(data, got.id), spanText(data, got.finish)}
		got.id, got.finish = strSpan{}, strSpan{}
		if gotStr != wantStr {
			t.Fatalf("strings differ\nscanner: %q\nencoding/json: %q", gotStr, wantStr)
		}
		if got != want {
			t.Fatalf("facts differ\nscanner: %+v\nencoding/json: %+v", got, want)
		}
	})
}

// newCohereTestDecoder returns a Cohere decoder that walks every event in
// full when cache is false (see newOpenAITestDecoder).
func newCohereTestDecoder(cache bool) *sseDecoder {
	c := &cohereInterp{}
	var scratch cohereFacts
	return newSSE("cohere", interpretFunc(func(_, data []byte) (Frame, error) {
		f, hit := testWalk(&c.j, &c.cache, &scratch, data, walkCohere, cache, nil)
		fr, err := c.frame(f, data)
		if f != nil && !hit {
			c.answer(f, data, &fr)
		}
		return fr, err
	}), nil)
}
