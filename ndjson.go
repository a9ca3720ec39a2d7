package llmmetrics

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/llmmetrics/llmmetrics/internal/jsonscan"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// This file holds the framing of newline-delimited JSON (one JSON text a
// line) and the protocol that uses it: Ollama's native API.

// NewNDJSONDecoder returns a Decoder for a newline-delimited JSON stream in
// a protocol that is not built in: interpret is called once per non-blank
// line, in order, without its LF or CRLF (valid only during the call), as
// for NewSSEDecoder. A final line without its LF is interpreted at Flush.
func NewNDJSONDecoder(interpret func(line []byte) (Frame, error), opts ...DecoderOption) Decoder {
	if interpret == nil {
		interpret = func([]byte) (Frame, error) { return Frame{}, nil }
	}
	return newNDJSON("ndjson", lineFunc(interpret), opts)
}

// lineFunc is a caller's interpret function as an interpreter.
type lineFunc func(line []byte) (Frame, error)

func (f lineFunc) interpret(_, line []byte) (Frame, error) { return f(line) }
func (lineFunc) release()                                  {}

func newNDJSON(name string, in interpreter, opts []DecoderOption) *ndjsonDecoder {
	c := newDecoderConfig(opts)
	return &ndjsonDecoder{in: in, max: c.maxFrame, name: name}
}

// ndjsonDecoder splits a stream into lines and hands each non-blank one to
// an interpreter as an event's data.
type ndjsonDecoder struct {
	in       interpreter
	max      int
	name     string // for error messages: "ollama", "ndjson"
	problems        // Decoder.Err

	line    []byte // a line not yet terminated, carried between Decode calls
	stopped bool   // a line was too large, or Flush was called
}

// Decode implements Decoder.
func (d *ndjsonDecoder) Decode(p []byte, emit func(Frame)) {
	for len(p) > 0 && !d.stopped {
		eol := bytes.IndexByte(p, '\n')
		if eol < 0 {
			if len(d.line)+len(p) > d.max {
				d.tooLarge()
				return
			}
			d.line = append(d.line, p...)
			return
		}
		line := p[:eol]
		if len(d.line)+len(line) > d.max {
			d.tooLarge()
			return
		}
		if len(d.line) > 0 {
			d.line = append(d.line, line...)
			line = d.line
		}
		p = p[eol+1:]
		d.process(line, emit)
		d.line = d.line[:0]
	}
}

// Flush implements Decoder: it interprets a final line that lacks its LF.
// Later Decode and Flush calls do nothing.
func (d *ndjsonDecoder) Flush(emit func(Frame)) {
	if d.stopped {
		return
	}
	d.stopped = true
	if len(d.line) > 0 {
		d.process(d.line, emit)
		d.line = d.line[:0]
	}
}

func (d *ndjsonDecoder) process(line []byte, emit func(Frame)) {
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	if blank(line) {
		return
	}
	f, err := d.in.interpret(nil, line)
	if err != nil {
		if !errors.Is(err, ErrMalformedFrame) {
			err = fmt.Errorf("%w: %s line: %w", ErrMalformedFrame, d.name, err)
		}
		d.report(err)
	}
	emit(f)
}

// blank reports whether line holds only spaces and tabs.
func blank(line []byte) bool {
	for _, c := range line {
		if c != ' ' && c != '\t' {
			return false
		}
	}
	return true
}

func (d *ndjsonDecoder) tooLarge() {
	d.stopped = true
	d.line = nil
	d.in.release()
	d.report(fmt.Errorf("%w: %s line larger than %d bytes; decoding of this stream stopped", errFrameTooLarge, d.name, d.max))
}

// ollamaSpec is ProtocolOllama's row of the protocol table. Its provider
// name is not one of the well-known values of semconv v1.41.0, which
// allows others.
var ollamaSpec = protocolSpec{
	name:     "ollama",
	title:    "Ollama",
	decoder:  func(opts []DecoderOption) Decoder { return newOllamaDecoder(opts...) },
	provider: semconv.GenAIProviderNameKey.String("ollama"),
	paths: []pathRule{
		{suffix: "/api/chat", op: opChat},
		{suffix: "/api/generate", op: opTextCompletion},
		{suffix: "/api/embed", op: opEmbeddings},
		{suffix: "/api/embeddings", op: opEmbeddings},
	},
	ndjson:  true,
	streams: streamYes,
}

// newOllamaDecoder returns a Decoder for one Ollama native stream:
// /api/chat and /api/generate answer application/x-ndjson, one JSON object a
// line (ollama/ollama api/types.go ChatResponse and GenerateResponse,
// server/routes.go streamResponse):
//
//   - a line whose message.content (chat) or response (generate) is a
//     non-empty string, or whose message.tool_calls is a non-empty array,
//     carries 1 answer token (a lower bound: Ollama sends a line per
//     generated token or so, and counts them at the end);
//   - a line whose message.thinking (chat) or thinking (generate) is a
//     non-empty string carries 1 reasoning token (Reasoning set, unless the
//     line also carries answer tokens);
//   - the line with "done": true is Done and HasUsage: InputTokens =
//     prompt_eval_count, OutputTokens = eval_count, which counts every
//     generated token, thinking included (Ollama does not say how many were
//     thinking: ReasoningTokens is 0). Ollama leaves a count of 0 out, so a
//     missing count is 0;
//   - an error line {"error": "…"} (what the server writes when generation
//     fails after lines were sent) is Err, a *StreamError whose Message is
//     the text.
//
// The final line also reports the server's own durations in nanoseconds:
// prompt_eval_duration is ServerPrefill and eval_duration ServerDecode
// (Frame), durations on the server's clock that the Record keeps apart
// from the client's times; load_duration (loading the model) and
// total_duration are not read.
//
// An error line carries no tokens. A line that is not a JSON object is a
// malformed frame (ErrMalformedFrame, see Decoder.Err) and carries nothing.
// Decoding allocates nothing per line once the decoder's buffers have grown
// to the largest line. The options are WithMaxFrameBytes.
func newOllamaDecoder(opts ...DecoderOption) Decoder {
	return newNDJSON("ollama", &ollamaInterp{}, opts)
}

// ollamaInterp walks every line in full, without a jsonscan.Cache: each
// line starts with a new created_at timestamp, so the cache would never
// answer one (the bytes before the text always differ;
// TestOllamaScanCacheWouldNotHit).
type ollamaInterp struct {
	j    jsonscan.Scanner
	f    ollamaFacts
	info answerInfo
}

func (o *ollamaInterp) interpret(_, line []byte) (Frame, error) {
	if !jsonscan.Walk(&o.j, line, &o.f, walkOllama) {
		const keep = 64
		return Frame{}, fmt.Errorf("%w: ollama line is not a JSON object (%d bytes: %q)", ErrMalformedFrame, len(line), line[:min(len(line), keep)])
	}
	fr := o.f.frame(line)
	// Every line names the model; the last one's done_reason ends the
	// answer (Ollama gives no id). See answerinfo.go.
	o.info.note(&fr, line, o.f.model, strSpan{})
	o.info.finishOne(&fr, line, o.f.doneReason)
	return fr, nil
}

func (o *ollamaInterp) release() {}

// ollamaFacts is what one line's JSON says. Where a member appears twice,
// the last one counts (as with encoding/json into a map).
type ollamaFacts struct {
	content, thinking, toolCalls bool // message.content, message.thinking, message.tool_calls
	response, genThinking        bool // response, thinking (generate)
	done                         bool // "done": true
	err                          bool // top-level "error" is present and not null
	promptEval, eval             int  // prompt_eval_count, eval_count (0 when absent)
	promptEvalNS, evalNS         int  // prompt_eval_duration, eval_duration (0 when absent)
	model, doneReason            strSpan
}

// frame turns the facts of one line into its Frame.
func (f *ollamaFacts) frame(line []byte) Frame {
	answer := f.content || f.toolCalls || f.response
	reasoning := f.thinking || f.genThinking
	fr := Frame{Done: f.done}
	if answer || reasoning {
		fr.Tokens, fr.Reasoning = 1, !answer
	}
	if f.done {
		fr.HasUsage, fr.InputTokens, fr.OutputTokens = true, f.promptEval, f.eval
		fr.ServerPrefill, fr.ServerDecode = time.Duration(f.promptEvalNS), time.Duration(f.evalNS)
	}
	if f.err {
		// Tokens beside the error still arrived: they count, as in every
		// decoder.
		fr.Err = topLevelError(line)
	}
	return fr
}

// walkOllama reads the top-level object of a chat or generate line at i.
// It keeps jsonscan's member loop written out (not Scanner.Members): it
// runs on every line, with no scan cache.
func walkOllama(j *jsonscan.Scanner, i int, f *ollamaFacts) (int, bool) {
	i, more, ok := j.OpenObject(i, 0)
	for ok && more {
		var k []byte
		if k, i, ok = j.Key(i); !ok {
			break
		}
		switch string(k) {
		case "message":
			i, ok = walkOllamaMessage(j, i, 1, f)
		case "response":
			i, f.response, ok = j.NonEmptyString(i, 1)
		case "thinking":
			i, f.genThinking, ok = j.NonEmptyString(i, 1)
		case "done":
			i, f.done, ok = j.True(i, 1)
		case "model":
			i, f.model, ok = readStr(j, i, 1)
		case "done_reason":
			i, f.doneReason, ok = readStr(j, i, 1)
		case "prompt_eval_count":
			i, f.promptEval, _, ok = j.Int(i, 1)
		case "eval_count":
			i, f.eval, _, ok = j.Int(i, 1)
		case "prompt_eval_duration":
			i, f.promptEvalNS, _, ok = j.Int(i, 1)
		case "eval_duration":
			i, f.evalNS, _, ok = j.Int(i, 1)
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

// walkOllamaMessage reads the "message" value at i.
func walkOllamaMessage(j *jsonscan.Scanner, i, depth int, f *ollamaFacts) (int, bool) {
	f.content, f.thinking, f.toolCalls = false, false, false
	if j.At(i) != '{' {
		return j.Skip(i, depth)
	}
	i, more, ok := j.OpenObject(i, depth)
	for ok && more {
		var k []byte
		if k, i, ok = j.Key(i); !ok {
			break
		}
		switch string(k) {
		case "content":
			i, f.content, ok = j.NonEmptyString(i, depth+1)
		case "thinking":
			i, f.thinking, ok = j.NonEmptyString(i, depth+1)
		case "tool_calls":
			i, f.toolCalls, ok = j.NonEmptyArray(i, depth+1)
		default:
			i, ok = j.Skip(i, depth+1)
		}
		if ok {
			i, more, ok = j.NextMember(i)
		}
	}
	return i, ok
}
