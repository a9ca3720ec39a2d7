package llmmetrics

import (
	"encoding/json"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/llmmetrics/llmmetrics/internal/jsonscan"
)

// This file holds what the decoders share to report who answered and why
// an answer ended (Frame.ResponseModel, ResponseID, FinishReasons) without
// allocating per event: a walker notes where such a string lies in the
// event (strSpan), and the decoder's answerInfo turns it into a string only
// when it differs from what the stream told before.
//
// With a jsonscan.Cache, an event the cache answers has the prefix and tail
// of the last event walked in full, so the same model, id and finish
// reasons, which that event already reported: a decoder reads spans only
// after a full walk, the only time they point into the current event.

// strSpan is where a walker found a JSON string value: data[start:end], its
// quotes included; esc reports escapes in it. The zero strSpan is none.
type strSpan struct {
	start, end int32 // an event is far below 2 GiB (WithMaxFrameBytes)
	esc        bool
}

// readStr reads the value at i: a strSpan when it is a string; any other
// value is skipped and gives none.
func readStr(j *jsonscan.Scanner, i, depth int) (next int, s strSpan, ok bool) {
	if j.At(i) == '"' {
		end, esc, ok := j.Str(i)
		if end > math.MaxInt32 {
			return end, strSpan{}, ok
		}
		return end, strSpan{int32(i), int32(end), esc}, ok
	}
	next, ok = j.Skip(i, depth)
	return next, strSpan{}, ok
}

// set reports whether the span holds a non-empty string.
func (s strSpan) set() bool { return s.end-s.start > 2 }

// raw returns the string's bytes without their quotes, still escaped.
func (s strSpan) raw(data []byte) []byte { return data[s.start+1 : s.end-1] }

// plain reports whether the string's bytes are its text: no escapes and
// valid UTF-8.
func (s strSpan) plain(data []byte) bool { return !s.esc && utf8.Valid(s.raw(data)) }

// text returns the string (allocating): unescaped, each byte of invalid
// UTF-8 replaced by U+FFFD, as encoding/json reads it.
func (s strSpan) text(data []byte) string {
	if s.plain(data) {
		return string(s.raw(data))
	}
	var v string
	if json.Unmarshal(data[s.start:s.end], &v) != nil {
		return strings.ToValidUTF8(string(s.raw(data)), "\uFFFD")
	}
	return v
}

// is reports whether the span holds v, allocating only for a string with
// escapes or invalid UTF-8. v is valid UTF-8 (a text), so raw bytes equal
// to it are too.
func (s strSpan) is(data []byte, v string) bool {
	if !s.esc {
		if string(s.raw(data)) == v {
			return true
		}
		if utf8.Valid(s.raw(data)) {
			return false
		}
	}
	return s.text(data) == v
}

// maxFinishes bounds the finish reasons one event reports (one per choice
// or candidate that ends in it).
const maxFinishes = 8

// finishSpan is a finish reason found in an event: the choice (candidate)
// it ends and the reason.
type finishSpan struct {
	choice int32
	reason strSpan
}

// finishList holds the finish reasons of one event, in order.
type finishList struct {
	n    int32
	list [maxFinishes]finishSpan
}

// add notes a reason for choice; a reason past maxFinishes is dropped, and
// a choice index past 2³¹ is taken as -1 (no choice to end once).
func (l *finishList) add(choice int, reason strSpan) {
	if reason.set() && l.n < maxFinishes {
		if choice > math.MaxInt32 {
			choice = -1
		}
		l.list[l.n] = finishSpan{int32(choice), reason}
		l.n++
	}
}

// answerInfo is what a stream told so far of who answered and which
// choices ended; a decoder keeps one.
type answerInfo struct {
	model, id string
	ended     uint64   // choices 0–63 whose end was reported
	reasons   []string // the current frame's FinishReasons (reused)
}

// note puts on fr the model and id of an event when the stream tells them
// for the first time or tells different ones. The usual event repeats
// them: that costs two byte comparisons.
func (a *answerInfo) note(fr *Frame, data []byte, model, id strSpan) {
	if model.set() && (model.esc || string(model.raw(data)) != a.model) && !model.is(data, a.model) {
		a.model = model.text(data)
		fr.ResponseModel = a.model
	}
	if id.set() && (id.esc || string(id.raw(data)) != a.id) && !id.is(data, a.id) {
		a.id = id.text(data)
		fr.ResponseID = a.id
	}
}

// finish puts on fr the reasons of l for the choices whose end the stream
// has not reported yet (a choice ends once: a provider that repeats a
// finish reason reports it once).
func (a *answerInfo) finish(fr *Frame, data []byte, l *finishList) {
	if l.n == 0 {
		return
	}
	a.reasons = a.reasons[:0]
	for _, f := range l.list[:l.n] {
		if f.choice >= 0 && f.choice < 64 {
			bit := uint64(1) << f.choice
			if a.ended&bit != 0 {
				continue
			}
			a.ended |= bit
		}
		a.reasons = append(a.reasons, finishReason(f.reason, data))
	}
	if len(a.reasons) > 0 {
		fr.FinishReasons = a.reasons
	}
}

// finishOne puts on fr the finish reason of an answer with one choice
// (Anthropic, Ollama, Cohere), once per stream.
func (a *answerInfo) finishOne(fr *Frame, data []byte, reason strSpan) {
	if !reason.set() || a.ended&1 != 0 {
		return
	}
	a.ended |= 1
	a.reasons = append(a.reasons[:0], finishReason(reason, data))
	fr.FinishReasons = a.reasons
}

// finishReason returns the reason's text: one of the providers' documented
// values without allocating, any other allocated.
func finishReason(s strSpan, data []byte) string {
	if s.plain(data) {
		if r, ok := knownReason(s.raw(data)); ok {
			return r
		}
	}
	return s.text(data)
}

// knownReason returns the string of a documented finish reason: OpenAI's
// finish_reason (and vLLM's "abort"), the Responses API's status and
// incomplete_details.reason, Anthropic's stop_reason, Gemini's
// finishReason, Ollama's done_reason and Cohere's finish_reason.
func knownReason(b []byte) (string, bool) {
	switch string(b) {
	case "stop":
		return "stop", true
	case "length":
		return "length", true
	case "tool_calls":
		return "tool_calls", true
	case "content_filter":
		return "content_filter", true
	case "function_call":
		return "function_call", true
	case "abort":
		return "abort", true
	case "completed":
		return "completed", true
	case "incomplete":
		return "incomplete", true
	case "failed":
		return "failed", true
	case "cancelled":
		return "cancelled", true
	case "max_output_tokens":
		return "max_output_tokens", true
	case "end_turn":
		return "end_turn", true
	case "max_tokens":
		return "max_tokens", true
	case "stop_sequence":
		return "stop_sequence", true
	case "tool_use":
		return "tool_use", true
	case "pause_turn":
		return "pause_turn", true
	case "refusal":
		return "refusal", true
	case "model_context_window_exceeded":
		return "model_context_window_exceeded", true
	case "STOP":
		return "STOP", true
	case "MAX_TOKENS":
		return "MAX_TOKENS", true
	case "SAFETY":
		return "SAFETY", true
	case "RECITATION":
		return "RECITATION", true
	case "LANGUAGE":
		return "LANGUAGE", true
	case "OTHER":
		return "OTHER", true
	case "BLOCKLIST":
		return "BLOCKLIST", true
	case "PROHIBITED_CONTENT":
		return "PROHIBITED_CONTENT", true
	case "SPII":
		return "SPII", true
	case "MALFORMED_FUNCTION_CALL":
		return "MALFORMED_FUNCTION_CALL", true
	case "load":
		return "load", true
	case "unload":
		return "unload", true
	case "COMPLETE":
		return "COMPLETE", true
	case "STOP_SEQUENCE":
		return "STOP_SEQUENCE", true
	case "TOOL_CALL":
		return "TOOL_CALL", true
	case "ERROR":
		return "ERROR", true
	case "TIMEOUT":
		return "TIMEOUT", true
	}
	return "", false
}
