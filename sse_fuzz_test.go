package llmmetrics

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// refFacts is the reference for jsonScanner.scan, built on encoding/json:
// for every input both must agree on validity and on every fact. The one
// documented leniency of the scanner is not visible here: it decodes a \u
// escape of a non-ASCII character as one placeholder byte, which changes no
// comparison with the ASCII names and prefixes it looks for.
func refFacts(data []byte) (facts, bool) {
	if !json.Valid(data) {
		return facts{}, false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return facts{}, false
	}
	m, ok := v.(map[string]any)
	if !ok {
		return facts{}, false
	}
	var f facts
	if c, ok := m["choices"].([]any); ok {
		f.choices = len(c)
		for _, e := range c {
			if co, ok := e.(map[string]any); ok && refChoiceCarries(co) {
				f.carrying++
			}
		}
	}
	f.usage = refUsage(m["usage"])
	if e, ok := m["error"]; ok && e != nil {
		f.err = true
	}
	f.typ = refKind(m["type"])
	switch d := m["delta"].(type) {
	case string:
		f.deltaStr = d != ""
	case map[string]any:
		f.delta = refDelta(d)
	}
	if r, ok := m["response"].(map[string]any); ok {
		f.respUsage = refUsage(r["usage"])
	}
	if r, ok := m["message"].(map[string]any); ok {
		f.msgUsage = refUsage(r["usage"])
	}
	return f, true
}

func refKind(v any) kind {
	if s, ok := v.(string); ok {
		return classify([]byte(s))
	}
	return kindNone
}

func refChoiceCarries(c map[string]any) bool {
	if s, _ := c["text"].(string); s != "" {
		return true
	}
	d, ok := c["delta"].(map[string]any)
	return ok && refDelta(d).bits&chatDeltaBits != 0
}

func refDelta(d map[string]any) deltaFacts {
	var f deltaFacts
	strs := map[string]uint16{
		"content": bitContent, "reasoning_content": bitReasoningContent, "reasoning": bitReasoning,
		"refusal": bitRefusal, "text": bitText, "thinking": bitThinking, "partial_json": bitPartialJSON,
	}
	for k, bit := range strs {
		if s, _ := d[k].(string); s != "" {
			f.bits |= bit
		}
	}
	if a, _ := d["tool_calls"].([]any); len(a) > 0 {
		f.bits |= bitToolCalls
	}
	if o, _ := d["function_call"].(map[string]any); len(o) > 0 {
		f.bits |= bitFunctionCall
	}
	f.typ = refKind(d["type"])
	return f
}

func refUsage(v any) usageVals {
	var u usageVals
	m, ok := v.(map[string]any)
	if !ok {
		return u
	}
	for i, name := range usageNames {
		n, ok := m[name].(json.Number)
		if !ok || strings.ContainsAny(n.String(), "-.eE") {
			continue
		}
		if x, err := strconv.ParseInt(n.String(), 10, strconv.IntSize); err == nil {
			u.ok[i], u.v[i] = true, int(x)
		}
	}
	return u
}

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
		d := NewSSEDecoder(func(event, data []byte) Frame {
			got = append(got, sseEvent{string(event), string(data)})
			return Frame{}
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
		if f.Err != "" && f.Tokens != 0 {
			t.Fatalf("an error frame carries tokens: %+v", f)
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

// checkBounded checks that a decoder with a small limit holds at most about
// three times the limit, whatever it is fed.
func checkBounded(t *testing.T, d *sseDecoder, data []byte) {
	for _, p := range splitAt(data, []byte{3, 17, 64}) {
		d.Decode(p, func(Frame) {})
		n := cap(d.line) + cap(d.data) + cap(d.event)
		if d.cache != nil {
			n += cap(d.cache.prefix) + cap(d.cache.tail)
		}
		if n > 10*d.max+64 {
			t.Fatalf("decoder holds %d bytes with a limit of %d", n, d.max)
		}
	}
	d.Flush(func(Frame) {})
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
		checkCache(t, func(cache bool) Decoder { return newOpenAIDecoder(nil, cache) }, data)
		checkBounded(t, NewOpenAIDecoder(WithMaxFrameBytes(64)).(*sseDecoder), data)
	})
}

func FuzzAnthropicDecoder(f *testing.F) {
	streams, _ := fixtureSeeds(f, "anthropic_")
	for _, s := range streams {
		f.Add(s, []byte{10, 200, 7})
	}
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		quietOtel(t)
		checkSplitInvariant(t, func() Decoder { return NewAnthropicDecoder() }, data, cuts)
		checkCache(t, func(cache bool) Decoder { return newAnthropicDecoder(nil, cache) }, data)
		checkBounded(t, NewAnthropicDecoder(WithMaxFrameBytes(64)).(*sseDecoder), data)
	})
}

func FuzzSSEDecoder(f *testing.F) {
	streams, _ := fixtureSeeds(f, "")
	for _, s := range streams {
		f.Add(s, []byte{10, 200, 7})
	}
	f.Add([]byte("\xEF\xBB\xBFevent: x\r\ndata: a\r\ndata\r\n\r\n:c\rdata:b"), []byte{1, 2})
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		// Frames that echo the event: a split that changed an event or its data
		// would change the frames.
		dec := func() Decoder {
			return NewSSEDecoder(func(event, data []byte) Frame {
				return Frame{Tokens: len(data), InputTokens: len(event), OutputTokens: int(crc(event, data))}
			})
		}
		checkSplitInvariant(t, dec, data, cuts)
		checkBounded(t, dec().(*sseDecoder), data)
	})
}

// crc is a small checksum of an event, so frames depend on its exact bytes.
func crc(event, data []byte) uint32 {
	h := uint32(2166136261)
	for _, b := range event {
		h = (h ^ uint32(b)) * 16777619
	}
	h = (h ^ 0xFF) * 16777619
	for _, b := range data {
		h = (h ^ uint32(b)) * 16777619
	}
	return h >> 1
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

// FuzzJSONFacts cross-checks the allocation-free JSON scanner against
// encoding/json: for any input, both agree on whether it is a JSON object
// and on every fact the decoders use (tokens, usage counts, errors, types).
func FuzzJSONFacts(f *testing.F) {
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
		var j jsonScanner
		var got facts
		ok := j.scan(data, &got)
		want, refOK := refFacts(data)
		if ok != refOK {
			t.Fatalf("scanner valid=%v, encoding/json valid=%v", ok, refOK)
		}
		if ok && got != want {
			t.Fatalf("facts differ\nscanner: %+v\nencoding/json: %+v", got, want)
		}
	})
}
