package llmmetrics

// The OpenAI decoder's content parts: typed content arrays, thinking
// parts and reasoning details, read for whether they carry an answer or
// reasoning.

import (
	"github.com/llmmetrics/llmmetrics/internal/jsonscan"
)

// partKind classifies the "type" of a typed content part.
type partKind uint8

const (
	partUntyped  partKind = iota // no "type", or not a string
	partText                     // "text"
	partThinking                 // "thinking"
	partOther                    // image_url, document_url, reference, file, audio, …
)

func classifyPart(t []byte) partKind {
	switch string(t) {
	case "text":
		return partText
	case "thinking":
		return partThinking
	}
	return partOther
}

// walkContentParts reads a content array of typed parts at i (Mistral's
// DeltaMessageContent = str | List[ContentChunk], mistralai/client-python
// v2.5.1 docs/models/deltamessagecontent.md): does a part carry answer text,
// reasoning text?
func walkContentParts(j *jsonscan.Scanner, i, depth int) (next int, answer, reasoning, ok bool) {
	i, more, ok := j.OpenArray(i, depth)
	for ok && more {
		if j.At(i) == '{' {
			var a, r bool
			i, a, r, ok = walkContentPart(j, i, depth+1, false)
			answer, reasoning = answer || a, reasoning || r
		} else {
			i, ok = j.Skip(i, depth+1)
		}
		if ok {
			i, more, ok = j.NextElement(i)
		}
	}
	return i, answer, reasoning, ok
}

// walkContentPart reads one typed part at i: a TextChunk {"type": "text",
// "text"} carries answer text when text is non-empty; a ThinkChunk {"type":
// "thinking", "thinking": [TextChunk | ReferenceChunk | ToolReferenceChunk,
// …]} carries reasoning when one of its inner text parts does
// (docs/models/thinkchunk.md, textchunk.md: "type" is optional, so an untyped
// part is read by its members). Inside a ThinkChunk (inner), "thinking" is
// not read: the inner parts are TextChunks and references.
func walkContentPart(j *jsonscan.Scanner, i, depth int, inner bool) (next int, answer, reasoning, ok bool) {
	typ := partUntyped
	var text, thinking bool
	next, ok = j.Members(i, depth, func(k []byte, i int) (next int, ok bool) {
		switch {
		case string(k) == "type":
			var t []byte
			var isStr bool
			next, t, isStr, ok = j.StringValue(i, depth+1)
			typ = partUntyped
			if isStr {
				typ = classifyPart(t)
			}
			return next, ok
		case string(k) == "text":
			next, text, ok = j.NonEmptyString(i, depth+1)
			return next, ok
		case string(k) == "thinking" && !inner:
			thinking = false
			if j.At(i) == '[' {
				next, thinking, ok = walkThinkingParts(j, i, depth+1)
				return next, ok
			}
		}
		return j.Skip(i, depth+1)
	})
	answer = text && (typ == partText || typ == partUntyped)
	reasoning = thinking && (typ == partThinking || typ == partUntyped)
	return next, answer, reasoning, ok
}

// walkThinkingParts reads a ThinkChunk's "thinking" array at i: does one of
// its inner parts carry text?
func walkThinkingParts(j *jsonscan.Scanner, i, depth int) (next int, carries, ok bool) {
	i, more, ok := j.OpenArray(i, depth)
	for ok && more {
		if j.At(i) == '{' {
			var text bool
			i, text, _, ok = walkContentPart(j, i, depth+1, true)
			carries = carries || text
		} else {
			i, ok = j.Skip(i, depth+1)
		}
		if ok {
			i, more, ok = j.NextElement(i)
		}
	}
	return i, carries, ok
}

// detailKind classifies the "type" of an OpenRouter reasoning detail.
type detailKind uint8

const (
	detailOther   detailKind = iota // reasoning.encrypted, an unknown or missing type
	detailText                      // "reasoning.text"
	detailSummary                   // "reasoning.summary"
)

// walkReasoningDetails reads OpenRouter's delta.reasoning_details array at
// i: does one of its details carry visible reasoning text? A
// {"type": "reasoning.text", "text"} detail with a non-empty text does, as
// a {"type": "reasoning.summary", "summary"} with a non-empty summary; a
// {"type": "reasoning.encrypted", "data"} detail does not (opaque data, like
// Anthropic's signature_delta and Gemini's bare thoughtSignature), nor a
// reasoning.text that holds only its "signature" (OpenRouter's reasoning
// tokens guide, https://openrouter.ai/docs/guides/best-practices/reasoning-tokens;
// the schemas of @openrouter/ai-sdk-provider src/schemas/reasoning-details.ts).
func walkReasoningDetails(j *jsonscan.Scanner, i, depth int) (next int, carries, ok bool) {
	i, more, ok := j.OpenArray(i, depth)
	for ok && more {
		if j.At(i) == '{' {
			var c bool
			i, c, ok = walkReasoningDetail(j, i, depth+1)
			carries = carries || c
		} else {
			i, ok = j.Skip(i, depth+1)
		}
		if ok {
			i, more, ok = j.NextElement(i)
		}
	}
	return i, carries, ok
}

// walkReasoningDetail reads one reasoning detail object at i.
func walkReasoningDetail(j *jsonscan.Scanner, i, depth int) (next int, carries, ok bool) {
	kind := detailOther
	var text, summary bool
	next, ok = j.Members(i, depth, func(k []byte, i int) (next int, ok bool) {
		switch string(k) {
		case "type":
			var t []byte
			var isStr bool
			next, t, isStr, ok = j.StringValue(i, depth+1)
			kind = detailOther
			switch {
			case !isStr:
			case string(t) == "reasoning.text":
				kind = detailText
			case string(t) == "reasoning.summary":
				kind = detailSummary
			}
			return next, ok
		case "text":
			next, text, ok = j.NonEmptyString(i, depth+1)
			return next, ok
		case "summary":
			next, summary, ok = j.NonEmptyString(i, depth+1)
			return next, ok
		}
		return j.Skip(i, depth+1)
	})
	return next, kind == detailText && text || kind == detailSummary && summary, ok
}
