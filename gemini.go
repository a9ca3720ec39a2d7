package llmmetrics

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/llmmetrics/llmmetrics/internal/jsonscan"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// This file holds the Gemini protocol (the Gemini API and Vertex AI
// streamGenerateContent): its interpreter, used by the SSE framing for
// ?alt=sse, and the JSON-array framing used without it.
// Shapes: googleapis/go-genai types.go (GenerateContentResponse, Candidate,
// Part, GenerateContentResponseUsageMetadata, GenerateContentResponsePromptFeedback)
// and the recorded streams in FirebaseExtended/vertexai-sdk-test-data
// mock-responses/googleai (testdata/gemini, notes in their headers).

// geminiSpec is ProtocolGemini's row of the protocol table: the Gemini API
// and Vertex AI.
var geminiSpec = protocolSpec{
	name:     "gemini",
	title:    "Gemini",
	decoder:  func(opts []DecoderOption) Decoder { return &geminiAutoDecoder{opts: opts} },
	provider: semconv.GenAIProviderNameGCPGemini,
	paths: []pathRule{
		{suffix: ":streamGenerateContent", op: opGenerate, array: true, stream: streamYes},
		{suffix: ":generateContent", op: opGenerate, stream: streamNo},
		{suffix: ":embedContent", op: opEmbeddings},
		{suffix: ":batchEmbedContents", op: opEmbeddings},
	},
	pathModel:   geminiPathModel,
	pathIsModel: true,
	sse:         true,
	sniff:       sniffRule{members: []string{"candidates", "usageMetadata"}},
}

// geminiPathModel reads the model of a Gemini API or Vertex AI path,
// …/models/{model}:method.
func geminiPathModel(path string) string {
	if i := strings.LastIndex(path, "/models/"); i >= 0 {
		m := path[i+len("/models/"):]
		if j := strings.LastIndexByte(m, ':'); j >= 0 {
			return m[:j]
		}
	}
	return ""
}

// newGeminiDecoder returns a Decoder for one Gemini
// streamGenerateContent?alt=sse stream (the Gemini API and Vertex AI; the
// only streaming form google.golang.org/genai requests). The data of each
// event is a GenerateContentResponse:
//
//   - a candidate carries 1 token (a lower bound, as ProtocolOpenAI.NewDecoder counts
//     choices: 1 per candidate that carries output) when a part of its
//     content.parts has a non-empty "text", or a non-empty "functionCall",
//     "executableCode" or "inlineData" (generated code, a generated image).
//     A part marked "thought": true is reasoning: a frame whose carrying
//     parts are all thoughts has Reasoning set. A part whose text is empty
//     (a bare thoughtSignature) carries nothing;
//   - "usageMetadata", which Gemini sends on every chunk with the counts so
//     far, is HasUsage: InputTokens = promptTokenCount (which includes
//     cachedContentTokenCount: "When cachedContent is set, this is still the
//     total effective prompt size meaning this includes the number of tokens
//     in the cached content", https://ai.google.dev/api/generate-content#UsageMetadata)
//     plus toolUsePromptTokenCount (the tool results given back to the
//     model as input); CachedInputTokens = cachedContentTokenCount (part
//     of promptTokenCount; not believed above it); OutputTokens = candidatesTokenCount +
//     thoughtsTokenCount (Gemini counts thoughts apart from the candidates:
//     totalTokenCount is the sum of the four); ReasoningTokens =
//     thoughtsTokenCount. A usageMetadata with none of these counts (Vertex
//     AI's early chunks carry only {"trafficType": …}) is not usage;
//   - a chunk with a candidate's "finishReason" is Done: Gemini has no
//     end-of-stream event, the chunk that finishes the answer is the last;
//   - a blocked prompt (HTTP 200 and one chunk whose promptFeedback has a
//     "blockReason") is Err, a *StreamError with Type = the reason ("SAFETY",
//     "OTHER", …) and Message "prompt blocked", and Done;
//   - an error object {"error": {"code", "message", "status"}} is Err, a
//     *StreamError with Type = status ("RESOURCE_EXHAUSTED"), Code = code
//     ("429") and Message, so the request ends as an error with that
//     error.type. After HTTP 200 Gemini sends it as a bare JSON object with
//     no "data:" field, outside the SSE grammar, on one line (go-genai reads
//     every such line as an error) or pretty-printed over several
//     (python-genai joins the lines until the braces balance): this decoder
//     joins a line that starts with '{' with the lines after it until its
//     brackets balance outside strings, and reads the object (one that is
//     not an error object, or longer than 64 KiB, is a malformed frame), and
//     an error object in an event's data too.
//
// An error frame carries no tokens; usage in it is still applied. Data that
// is not a JSON object is a malformed frame (ErrMalformedFrame, see
// Decoder.Err) and carries nothing. Decoding allocates nothing per event once
// the decoder's buffers have grown to the largest event. The options are
// WithMaxFrameBytes. Without ?alt=sse, Gemini streams a JSON array instead:
// see ProtocolGemini.NewDecoder.
func newGeminiDecoder(opts ...DecoderOption) Decoder {
	return newSSE("gemini", &geminiInterp{}, opts)
}

type geminiInterp struct {
	j       jsonscan.Scanner
	cache   jsonscan.Cache[geminiFacts]
	scratch geminiFacts // the facts of a bare line (kept out of the cache)
	info    answerInfo
}

func (g *geminiInterp) interpret(_, data []byte) (Frame, error) {
	f, hit := g.cache.Walk(&g.j, data, walkGemini)
	fr, err := g.frame(f, data)
	if f != nil && !hit {
		g.answer(f, data, &fr)
	}
	return fr, err
}

// answer puts on fr who answered (modelVersion, responseId, on every
// chunk) and why candidates ended (their finishReason), see answerinfo.go.
func (g *geminiInterp) answer(f *geminiFacts, data []byte, fr *Frame) {
	g.info.note(fr, data, f.model, f.id)
	g.info.finish(fr, data, &f.finishes)
}

func (g *geminiInterp) release() { g.cache.Reset() }

// interpretBareLine implements bareLineInterpreter: a JSON object outside
// the SSE grammar is Gemini's mid-stream error object, or malformed.
func (g *geminiInterp) interpretBareLine(obj []byte) (Frame, error) {
	if jsonscan.Walk(&g.j, obj, &g.scratch, walkGemini) && g.scratch.err {
		return g.frame(&g.scratch, obj)
	}
	const keep = 64
	shown := obj[:min(len(obj), keep)]
	return Frame{}, fmt.Errorf("%w: gemini JSON object outside the SSE grammar that is not an error object (%d bytes: %q)", ErrMalformedFrame, len(obj), shown)
}

// frame turns the facts of one chunk (nil: data is not a JSON object) into
// its Frame.
func (g *geminiInterp) frame(f *geminiFacts, data []byte) (Frame, error) {
	if f == nil {
		return Frame{}, malformed("gemini", data, "is not a JSON object")
	}
	fr := Frame{Tokens: f.carrying, Reasoning: f.carrying > 0 && !f.answer, Done: f.finished}
	u := &f.usage
	switch {
	case u.Has[gemCandidates] || u.Has[gemThoughts]:
		fr.HasUsage = true
		fr.InputTokens = satAdd(u.Get(gemPrompt), u.Get(gemToolUsePrompt))
		fr.OutputTokens = satAdd(u.Get(gemCandidates), u.Get(gemThoughts))
		fr.ReasoningTokens = u.Get(gemThoughts)
	case u.Has[gemPrompt] || u.Has[gemToolUsePrompt]:
		// The first chunks of a stream often tell the prompt's size and no
		// output count yet: that is not a usage of 0 output tokens.
		fr.HasInput = true
		fr.InputTokens = satAdd(u.Get(gemPrompt), u.Get(gemToolUsePrompt))
	}
	if c := u.Get(gemCached); c <= u.Get(gemPrompt) && (fr.HasUsage || fr.HasInput) {
		fr.CachedInputTokens = c // part of promptTokenCount
	}
	// An error keeps the rest of its frame: tokens and usage beside it
	// still arrived, as in every decoder.
	switch {
	case f.err:
		fr.Err = geminiError(data)
	case f.blocked:
		fr.Err, fr.Done = geminiBlocked(data), true
	}
	return fr, nil
}

// The counts of usageMetadata, by index in gemUsageNames.
const (
	gemPrompt = iota
	gemCandidates
	gemThoughts
	gemToolUsePrompt
	gemCached
)

var gemUsageNames = []string{
	gemPrompt:        "promptTokenCount",
	gemCandidates:    "candidatesTokenCount",
	gemThoughts:      "thoughtsTokenCount",
	gemToolUsePrompt: "toolUsePromptTokenCount",
	gemCached:        "cachedContentTokenCount",
}

// geminiError reads Gemini's error object (the rare path, where
// encoding/json is fine): its status is the type.
func geminiError(data []byte) *StreamError {
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&m); err == nil {
		if e, ok := m["error"].(map[string]any); ok {
			se := errorFromMap(e)
			if s, ok := e["status"].(string); ok && s != "" {
				se.Type = s
			}
			return se
		}
	}
	return topLevelError(data)
}

// geminiBlocked reads the blockReason of a blocked prompt.
func geminiBlocked(data []byte) *StreamError {
	var v struct {
		PromptFeedback struct {
			BlockReason string `json:"blockReason"`
		} `json:"promptFeedback"`
	}
	_ = json.Unmarshal(data, &v) // the walker found a non-empty blockReason
	return &StreamError{Type: v.PromptFeedback.BlockReason, Message: "prompt blocked"}
}

// geminiFacts is what one chunk's JSON says. Where a member appears twice,
// the last one counts (as with encoding/json into a map).
type geminiFacts struct {
	carrying int           // candidates with a part that carries output
	answer   bool          // a carrying part is not a thought
	finished bool          // a candidate has a non-empty "finishReason" string
	blocked  bool          // "promptFeedback": {"blockReason": a non-empty string}
	err      bool          // top-level "error" is present and not null
	usage    jsonscan.Ints // "usageMetadata" (gemUsageNames)
	model    strSpan       // "modelVersion"
	id       strSpan       // "responseId"
	finishes finishList    // the candidates' finishReason, with their index
}

// walkGemini reads the top-level object of a GenerateContentResponse at i.
// It and the walkers below it keep jsonscan's member loop written out
// (not Scanner.Members): they run on every chunk of a Gemini 2.5 stream,
// which the scan cache never answers.
func walkGemini(j *jsonscan.Scanner, i int, f *geminiFacts) (int, bool) {
	i, more, ok := j.OpenObject(i, 0)
	for ok && more {
		var k []byte
		if k, i, ok = j.Key(i); !ok {
			break
		}
		switch string(k) {
		case "candidates":
			i, ok = walkCandidates(j, i, 1, f)
		case "usageMetadata":
			i, ok = j.Ints(i, 1, gemUsageNames, &f.usage)
		case "promptFeedback":
			i, f.blocked, ok = walkPromptFeedback(j, i, 1)
		case "modelVersion":
			i, f.model, ok = readStr(j, i, 1)
		case "responseId":
			i, f.id, ok = readStr(j, i, 1)
		case "error":
			f.err = j.At(i) != 'n'
			i, ok = j.Skip(i, 1)
		default:
			i, ok = j.Skip(i, 1)
		}
		if ok {
			i, more, ok = j.NextMember(i)
		}
	}
	return i, ok
}

// walkPromptFeedback reads promptFeedback: is its blockReason a non-empty
// string?
func walkPromptFeedback(j *jsonscan.Scanner, i, depth int) (next int, blocked, ok bool) {
	next, ok = j.Members(i, depth, func(k []byte, i int) (int, bool) {
		if string(k) != "blockReason" {
			return j.Skip(i, depth+1)
		}
		next, t, _, ok := j.StringValue(i, depth+1)
		blocked = len(t) > 0
		return next, ok
	})
	return next, blocked, ok
}

// gemCandidate is what one candidate says.
type gemCandidate struct {
	carries, answer bool
	finish          strSpan // finishReason
	pos, index      int     // its position in candidates; "index", else pos
}

// walkCandidates reads the "candidates" value at i into f.
func walkCandidates(j *jsonscan.Scanner, i, depth int, f *geminiFacts) (int, bool) {
	f.carrying, f.answer, f.finished, f.finishes = 0, false, false, finishList{}
	if j.At(i) != '[' {
		return j.Skip(i, depth)
	}
	i, more, ok := j.OpenArray(i, depth)
	for pos := 0; ok && more; pos++ {
		if j.At(i) == '{' {
			c := gemCandidate{pos: pos, index: pos}
			i, ok = walkCandidate(j, i, depth+1, &c)
			if c.carries {
				f.carrying++
			}
			f.answer = f.answer || c.answer
			f.finished = f.finished || c.finish.set()
			f.finishes.add(c.index, c.finish)
		} else {
			i, ok = j.Skip(i, depth+1)
		}
		if ok {
			i, more, ok = j.NextElement(i)
		}
	}
	return i, ok
}

// walkCandidate reads one candidate object: its content's parts and its
// finishReason.
func walkCandidate(j *jsonscan.Scanner, i, depth int, c *gemCandidate) (int, bool) {
	i, more, ok := j.OpenObject(i, depth)
	for ok && more {
		var k []byte
		if k, i, ok = j.Key(i); !ok {
			break
		}
		switch string(k) {
		case "content":
			c.carries, c.answer = false, false
			if j.At(i) == '{' {
				i, ok = walkContent(j, i, depth+1, c)
			} else {
				i, ok = j.Skip(i, depth+1)
			}
		case "finishReason":
			i, c.finish, ok = readStr(j, i, depth+1)
		case "index":
			var v int
			var isInt bool
			i, v, isInt, ok = j.Int(i, depth+1)
			c.index = c.pos
			if isInt {
				c.index = v
			}
		default:
			i, ok = j.Skip(i, depth+1)
		}
		if ok {
			i, more, ok = j.NextMember(i)
		}
	}
	return i, ok
}

// walkContent reads a candidate's content object: its "parts".
func walkContent(j *jsonscan.Scanner, i, depth int, c *gemCandidate) (int, bool) {
	i, more, ok := j.OpenObject(i, depth)
	for ok && more {
		var k []byte
		if k, i, ok = j.Key(i); !ok {
			break
		}
		if string(k) == "parts" {
			i, ok = walkParts(j, i, depth+1, c)
		} else {
			i, ok = j.Skip(i, depth+1)
		}
		if ok {
			i, more, ok = j.NextMember(i)
		}
	}
	return i, ok
}

// walkParts reads a "parts" value at i into c.carries and c.answer.
func walkParts(j *jsonscan.Scanner, i, depth int, c *gemCandidate) (int, bool) {
	c.carries, c.answer = false, false
	if j.At(i) != '[' {
		return j.Skip(i, depth)
	}
	i, more, ok := j.OpenArray(i, depth)
	for ok && more {
		if j.At(i) == '{' {
			var carries, thought bool
			if i, carries, thought, ok = walkPart(j, i, depth+1); carries {
				c.carries = true
				c.answer = c.answer || !thought
			}
		} else {
			i, ok = j.Skip(i, depth+1)
		}
		if ok {
			i, more, ok = j.NextElement(i)
		}
	}
	return i, ok
}

// Part members that carry output, one bit each (the last member of a name
// decides its bit).
const (
	gemBitText = 1 << iota
	gemBitFunctionCall
	gemBitExecutableCode
	gemBitInlineData
)

// walkPart reads one part object: does it carry output, and is it a
// thought?
func walkPart(j *jsonscan.Scanner, i, depth int) (next int, carries, thought, ok bool) {
	var bits uint8
	i, more, ok := j.OpenObject(i, depth)
	for ok && more {
		var k []byte
		if k, i, ok = j.Key(i); !ok {
			break
		}
		var bit uint8
		var yes bool
		switch string(k) {
		case "text":
			bit = gemBitText
			i, yes, ok = j.NonEmptyString(i, depth+1)
		case "functionCall":
			bit = gemBitFunctionCall
			i, yes, ok = j.NonEmptyObject(i, depth+1)
		case "executableCode":
			bit = gemBitExecutableCode
			i, yes, ok = j.NonEmptyObject(i, depth+1)
		case "inlineData":
			bit = gemBitInlineData
			i, yes, ok = j.NonEmptyObject(i, depth+1)
		case "thought":
			i, thought, ok = j.True(i, depth+1)
		default:
			i, ok = j.Skip(i, depth+1)
		}
		if yes {
			bits |= bit
		} else {
			bits &^= bit
		}
		if ok {
			i, more, ok = j.NextMember(i)
		}
	}
	return i, bits != 0, thought, ok
}

// newGeminiArrayDecoder returns a Decoder for one Gemini
// streamGenerateContent response requested without ?alt=sse: Content-Type
// application/json, and the body one JSON array whose elements (each a
// GenerateContentResponse) are written as they are generated:
//
//	[{…}
//	,
//	{…}
//	]
//
// Each top-level element of the array is a frame, read as ProtocolGemini.NewDecoder
// reads an event's data (the same tokens, usage, Done and Err). The closing
// ']' is an extra frame that is Done. Any JSON whitespace and commas may
// surround the elements, and the body may be cut across Decode calls at any
// byte. A body that is one object instead of an array (a generateContent
// answer) is read as one element, and its frame is Done.
//
// An element is at most WithMaxFrameBytes bytes (1 MiB when
// not given): a larger one is ErrMalformedFrame and stops decoding, as for
// the SSE decoders. A top-level byte that cannot begin an element (what is
// not '[', '{', ',', ']' or whitespace, or anything after the end) is a
// malformed frame (ErrMalformedFrame) and also stops decoding, since the
// frames after it cannot be found. An element cut by the end of the body is
// reported at Flush as a malformed frame carrying nothing. Decoding
// allocates nothing per element once the decoder's buffer has grown to the
// largest element it had to keep across Decode calls.
func newGeminiArrayDecoder(opts ...DecoderOption) Decoder {
	c := newDecoderConfig(opts)
	return &jsonArrayDecoder{in: &geminiInterp{}, max: c.maxFrame, name: "gemini"}
}

// The places of a jsonArrayDecoder in its body.
const (
	arrBefore  uint8 = iota // before the opening '['
	arrBetween              // inside the array, between elements
	arrElement              // inside an element
	arrAfter                // after the closing ']' (or the single object)
)

// jsonArrayDecoder frames the top-level elements of one streamed JSON array
// (objects) and hands each to an interpreter as an event's data. It tracks
// strings, escapes and the nesting depth, so it splits at any byte without
// parsing the JSON itself: the interpreter validates each element.
type jsonArrayDecoder struct {
	in       interpreter
	max      int
	name     string
	problems // Decoder.Err

	place   uint8
	single  bool   // the body is one object, not an array
	depth   int    // containers open in the element
	inStr   bool   // inside a string of the element
	esc     bool   // the last byte was a backslash inside a string
	buf     []byte // the element so far, when it spans Decode calls
	stopped bool   // a problem stopped decoding, or Flush was called
}

// Decode implements Decoder.
func (d *jsonArrayDecoder) Decode(p []byte, emit func(Frame)) {
	for i := 0; i < len(p) && !d.stopped; {
		if d.place == arrElement {
			i = d.element(p, i, emit)
			continue
		}
		c := p[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		case d.place == arrBefore && c == '[':
			d.place = arrBetween
		case d.place == arrBetween && c == ',':
		case d.place == arrBetween && c == ']':
			d.place = arrAfter
			emit(Frame{Done: true})
		case c == '{' && (d.place == arrBetween || d.place == arrBefore):
			d.single = d.place == arrBefore
			d.place, d.depth, d.inStr, d.esc = arrElement, 0, false, false
			continue // element reads the '{'
		default:
			d.stop(fmt.Errorf("%w: %s JSON array: unexpected %q at the top level; decoding of this stream stopped", ErrMalformedFrame, d.name, c))
			return
		}
		i++
	}
}

// element reads the element that starts at or continues from p[i] and
// returns the index after what it consumed.
func (d *jsonArrayDecoder) element(p []byte, i int, emit func(Frame)) int {
	start := i
	end, complete := d.scan(p, i)
	if len(d.buf)+end-start > d.max {
		d.stop(fmt.Errorf("%w: %s JSON array element larger than %d bytes; decoding of this stream stopped", errFrameTooLarge, d.name, d.max))
		return len(p)
	}
	if !complete {
		d.buf = append(d.buf, p[start:end]...)
		return end
	}
	elem := p[start:end] // the whole element in p (the usual case): no copy
	if len(d.buf) > 0 {
		d.buf = append(d.buf, elem...)
		elem = d.buf
	}
	f, err := d.in.interpret(nil, elem)
	if err != nil {
		d.malformed(err)
	}
	d.buf = d.buf[:0]
	d.place = arrBetween
	if d.single {
		d.place, f.Done = arrAfter, true
	}
	emit(f)
	return end
}

// scan moves through an element from p[i], which is inside it (or its
// opening brace): end is after its closing brace when complete, else
// len(p). A plain switch on every byte: jumping through strings with
// bytes.IndexByte and over the rest with a lookup table was no faster on
// Gemini's pretty-printed elements, whose strings are short (both about
// 500 MB/s over the BenchmarkGeminiDecode array body in a throw-away
// benchmark of the framing alone, 5 runs each, 2026-11-22).
func (d *jsonArrayDecoder) scan(p []byte, i int) (end int, complete bool) {
	for ; i < len(p); i++ {
		c := p[i]
		if d.inStr {
			switch {
			case d.esc:
				d.esc = false
			case c == '\\':
				d.esc = true
			case c == '"':
				d.inStr = false
			}
			continue
		}
		switch c {
		case '"':
			d.inStr = true
		case '{', '[':
			d.depth++
		case '}', ']':
			d.depth--
			if d.depth <= 0 {
				return i + 1, true
			}
		}
	}
	return len(p), false
}

// stop reports a problem that ends decoding and drops what the decoder
// holds.
func (d *jsonArrayDecoder) stop(err error) {
	d.stopped = true
	d.buf = nil
	d.in.release()
	d.report(err)
}

// malformed reports the error the interpreter returned for an element.
func (d *jsonArrayDecoder) malformed(err error) {
	if !errors.Is(err, ErrMalformedFrame) {
		err = fmt.Errorf("%w: %s JSON array element: %w", ErrMalformedFrame, d.name, err)
	}
	d.report(err)
}

// Flush implements Decoder: an element cut by the end of the body is a
// malformed frame. Later Decode and Flush calls do nothing.
func (d *jsonArrayDecoder) Flush(emit func(Frame)) {
	if d.stopped {
		return
	}
	d.stopped = true
	if d.place == arrElement {
		d.report(fmt.Errorf("%w: %s JSON array: the body ended inside an element (%d bytes)", ErrMalformedFrame, d.name, len(d.buf)))
		d.buf = nil
		emit(Frame{})
	}
}

// geminiAutoDecoder picks the framing of a Gemini answer from its first
// byte that is not white space: '[' is the streamed JSON array of
// streamGenerateContent without alt=sse (and a lone '{' a generateContent
// answer), anything else the alt=sse event stream. It holds no bytes: the
// first Decode call that sees such a byte builds the decoder and hands it
// every byte from then on, so the frames are those of the chosen decoder.
type geminiAutoDecoder struct {
	opts []DecoderOption
	dec  Decoder
}

func (d *geminiAutoDecoder) Decode(p []byte, emit func(Frame)) {
	if d.dec == nil {
		i := 0
		for i < len(p) && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n') {
			i++
		}
		if i == len(p) {
			return // only white space so far: neither framing gives it a frame
		}
		if p[i] == '[' || p[i] == '{' {
			d.dec = newGeminiArrayDecoder(d.opts...)
		} else {
			d.dec = newGeminiDecoder(d.opts...)
		}
		p = p[i:]
	}
	d.dec.Decode(p, emit)
}

func (d *geminiAutoDecoder) Flush(emit func(Frame)) {
	if d.dec != nil {
		d.dec.Flush(emit)
	}
}

func (d *geminiAutoDecoder) Err() error {
	if d.dec != nil {
		return d.dec.Err()
	}
	return nil
}
