package llmmetrics

import (
	"fmt"
	"time"
)

// Outcome says how a request ended.
//
// The zero value is OutcomeOK. Outcomes encode to JSON and text as "ok",
// "error" and "canceled".
type Outcome uint8

const (
	// OutcomeOK: the stream finished normally (EOF, [DONE], End(nil)).
	OutcomeOK Outcome = iota
	// OutcomeError: the stream failed (a transport error, an HTTP error, an
	// error object inside the stream).
	OutcomeError
	// OutcomeCanceled: the caller gave up (context.Canceled,
	// context.DeadlineExceeded, a Close before EOF).
	OutcomeCanceled
)

var outcomeNames = [...]string{OutcomeOK: "ok", OutcomeError: "error", OutcomeCanceled: "canceled"}

// String returns "ok", "error" or "canceled" (or "Outcome(N)" for an invalid value).
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// MarshalText encodes the outcome as "ok", "error" or "canceled".
func (o Outcome) MarshalText() ([]byte, error) {
	if int(o) >= len(outcomeNames) {
		return nil, fmt.Errorf("%w: no name for outcome %d", ErrInvalid, uint8(o))
	}
	return []byte(outcomeNames[o]), nil
}

// UnmarshalText decodes "ok", "error" or "canceled", in any case.
func (o *Outcome) UnmarshalText(b []byte) error {
	i, ok := parseName(b, outcomeNames[:])
	if !ok {
		return fmt.Errorf("%w: unknown outcome %q (want ok, error or canceled)", ErrInvalid, b)
	}
	*o = Outcome(i)
	return nil
}

// Record is the plain-value timeline of one request: what Request.End
// returns and the analysis functions (Summarize, SLO.Met, …) consume.
//
// A zero FirstToken means "no token arrived"; a LastToken that is zero or
// before FirstToken is taken as FirstToken. The methods never report a
// negative duration: times out of order give 0 (a Tracker's Records are in
// order). JSON names are stable and only ever added; times are RFC 3339
// with nanoseconds, durations integer nanoseconds.
type Record struct {
	// Start is when the request was sent (client) or received (server).
	Start time.Time `json:"start"`
	// FirstToken is the arrival of the first chunk that carries tokens,
	// reasoning or answer.
	FirstToken time.Time `json:"first_token,omitzero"`
	// FirstOutput is the arrival of the first chunk that carries answer
	// tokens (content, refusal, tool calls); without reasoning it equals
	// FirstToken.
	FirstOutput time.Time `json:"first_output,omitzero"`
	// LastToken is the arrival of the last chunk that carries tokens.
	LastToken time.Time `json:"last_token,omitzero"`
	// End is when the stream finished (EOF, error or cancel).
	End time.Time `json:"end"`
	// InputTokens is the whole prompt's length in tokens (0 when unknown);
	// CachedInputTokens and CacheWriteInputTokens are how many of them the
	// provider read from and wrote to its prompt cache (0 when not said).
	InputTokens           int `json:"input_tokens"`
	CachedInputTokens     int `json:"cached_input_tokens,omitempty"`
	CacheWriteInputTokens int `json:"cache_write_input_tokens,omitempty"`
	// OutputTokens is N, every output token, reasoning included: the
	// server's usage count when known, else the sum of the chunks' counts;
	// never below Chunks.
	OutputTokens int `json:"output_tokens"`
	// ReasoningTokens is how many of the OutputTokens the server reports as
	// reasoning ("thinking") tokens; 0 when it does not say.
	ReasoningTokens int `json:"reasoning_tokens,omitempty"`
	// Chunks is the number of token-carrying chunks (0 when unknown).
	Chunks int `json:"chunks"`
	// ITL holds the gaps between consecutive token-carrying chunks
	// (len = Chunks − 1), or nil when they were not kept (WithoutITL).
	ITL []time.Duration `json:"itl_ns,omitempty"`
	// MaxITL is the largest of those gaps, set even when ITL is not kept.
	MaxITL time.Duration `json:"max_itl_ns,omitempty"`
	// Outcome says how the request ended.
	Outcome Outcome `json:"outcome"`
	// ErrorType is why a request that did not end OK ended so, as in the
	// error.type attribute ("429", "timeout", "canceled",
	// "overloaded_error", …); "" when OK or not said.
	ErrorType string `json:"error_type,omitempty"`
	// ResponseModel is the model that answered, as the answer names it
	// (OpenAI "model", Anthropic message.model, Gemini modelVersion,
	// Ollama "model"; Request.SetResponse for the three fields): a gateway
	// may route a request for an alias to a dated snapshot. "" when the
	// answer does not say.
	ResponseModel string `json:"response_model,omitempty"`
	// ResponseID is the answer's id as the provider gives it ("chatcmpl-…",
	// "msg_…", Gemini's responseId); "" when not given.
	ResponseID string `json:"response_id,omitempty"`
	// FinishReasons says why the answer ended, one reason per choice that
	// ended, in the provider's own words and order ("stop", "length",
	// "tool_calls", "end_turn", "max_tokens", "MAX_TOKENS", …); nil when
	// the answer did not say (a stream cut before its end).
	FinishReasons []string `json:"finish_reasons,omitempty"`
	// ServerPrefill and ServerDecode are the times the server reports it
	// spent on the request's prompt and on generating its answer
	// (llama.cpp's timings.prompt_ms and predicted_ms, Ollama's
	// prompt_eval_duration and eval_duration, Groq's prompt_time and
	// completion_time): durations on the server's clock, never mixed with
	// the client's times. 0 when the server did not say.
	ServerPrefill time.Duration `json:"server_prefill_ns,omitempty"`
	ServerDecode  time.Duration `json:"server_decode_ns,omitempty"`
}

// Wait returns TTFT − ServerPrefill: the time before the server began the
// prompt (the network, its HTTP layer, its queue), as the client's TTFT and
// the server's own prefill time tell it. ok is false when either is
// unknown. A server whose prefill time exceeds the client's TTFT (clocks
// that disagree, a prefill counted from an earlier event) gives 0.
func (r Record) Wait() (d time.Duration, ok bool) {
	ttft, ok := r.TTFT()
	if !ok || r.ServerPrefill <= 0 {
		return 0, false
	}
	return nonNeg(ttft - r.ServerPrefill), true
}

// nonNeg returns d, or 0 when d is negative (times out of order).
func nonNeg(d time.Duration) time.Duration { return max(d, 0) }

// hasToken reports whether at least one token-carrying chunk arrived.
func (r Record) hasToken() bool { return !r.FirstToken.IsZero() }

// TTFT returns FirstToken − Start, the time to first token. ok is false when
// no token arrived.
func (r Record) TTFT() (d time.Duration, ok bool) {
	if !r.hasToken() {
		return 0, false
	}
	return nonNeg(r.FirstToken.Sub(r.Start)), true
}

// TTFO returns FirstOutput − Start, the time to first output token (as
// aiperf reports it): the wait for the answer, reasoning included. ok is
// false when no answer token arrived (FirstOutput is zero), for example a
// reasoning model cut before it answered. Without reasoning, TTFO = TTFT.
func (r Record) TTFO() (d time.Duration, ok bool) {
	if r.FirstOutput.IsZero() {
		return 0, false
	}
	return nonNeg(r.FirstOutput.Sub(r.Start)), true
}

// TPOT returns (LastToken − FirstToken) / (N − 1), the time per output token
// after the first, rounded to the nearest nanosecond. N is OutputTokens. ok
// is false when N ≤ 1 or no token arrived. A request whose N tokens came in
// one chunk has TPOT 0.
func (r Record) TPOT() (d time.Duration, ok bool) {
	n := r.OutputTokens
	if n <= 1 || !r.hasToken() {
		return 0, false
	}
	return divRound(r.decode(), n-1), true
}

// decode returns LastToken − FirstToken (0 when no token arrived).
func (r Record) decode() time.Duration {
	if !r.hasToken() {
		return 0
	}
	return r.lastToken().Sub(r.FirstToken)
}

// lastToken returns LastToken, or FirstToken when LastToken is unset or
// before it (a hand-built record may set FirstToken alone): the last token
// is never before the first.
func (r Record) lastToken() time.Time {
	if r.LastToken.Before(r.FirstToken) {
		return r.FirstToken
	}
	return r.LastToken
}

// divRound divides d by n (n > 0) rounding half away from zero; d ≥ 0.
func divRound(d time.Duration, n int) time.Duration {
	return (d + time.Duration(n/2)) / time.Duration(n)
}

// E2EL returns the end-to-end latency: LastToken − Start (time to the final
// token), or End − Start when no token arrived. ok is false only when the
// record has neither a token nor an End.
func (r Record) E2EL() (d time.Duration, ok bool) {
	switch {
	case r.hasToken():
		return nonNeg(r.lastToken().Sub(r.Start)), true
	case !r.End.IsZero():
		return nonNeg(r.End.Sub(r.Start)), true
	}
	return 0, false
}

// GenerationTime returns LastToken − FirstToken, the token generation time
// (E2EL = TTFT + GenerationTime for a request that produced tokens): 0 when
// every token came in one chunk. ok is false when no token arrived.
func (r Record) GenerationTime() (d time.Duration, ok bool) {
	if !r.hasToken() {
		return 0, false
	}
	return nonNeg(r.decode()), true
}

// maxITLGap returns the largest ITL gap (between consecutive
// token-carrying chunks): the maximum of the MaxITL field and every ITL
// entry, so a hand-built Record may set either. ok is false when the record
// has neither (fewer than two chunks, or gaps not kept).
func (r Record) maxITLGap() (d time.Duration, ok bool) {
	d, ok = r.MaxITL, r.MaxITL > 0
	for _, g := range r.ITL {
		d, ok = max(d, g), true
	}
	return nonNeg(d), ok
}
