package llmmetrics

// The OpenAI decoder's counts: the usage objects of chat completions,
// completions and Responses, and the server's own account of a request
// (Groq's usage times, llama.cpp's timings).

import (
	"time"

	"github.com/llmmetrics/llmmetrics/internal/jsonscan"
)

// server reads the server's own account of the request: Groq's usage times
// (prompt_time, completion_time, in seconds: groq-python CompletionUsage)
// and llama.cpp's timings. From the timings it also takes the cached
// input tokens, when the usage does not say them itself
// (prompt_tokens_details.cached_tokens keeps precedence): cache_n where
// sent, else the prompt tokens the engine did not process, prompt_tokens −
// prompt_n. llama.cpp's server sets a slot's n_past to the prefix the new
// prompt shares with the slot's cache (common_part of cache_tokens and the
// prompt) and processes the prompt from there, counting
// n_prompt_tokens_processed (prompt_n): every prompt token it did not
// process was in its cache. The timings may come on another chunk than
// the usage (one per chunk with timings_per_token): the last ones seen
// apply, and a chunk of timings after the usage repeats that usage with the
// cached count.
func (o *openAIInterp) server(f *openAIFacts, u *jsonscan.Ints, fr *Frame) {
	if u.Has[usPromptTime] {
		fr.ServerPrefill = time.Duration(u.Val[usPromptTime])
	}
	if u.Has[usCompletionTime] {
		fr.ServerDecode = time.Duration(u.Val[usCompletionTime])
	}
	t := &f.timings
	timed := t.Has[tmPromptN] || t.Has[tmCacheN] || t.Has[tmPromptMS] || t.Has[tmPredictedMS]
	if timed {
		o.timings = *t
		if t.Has[tmPromptMS] {
			fr.ServerPrefill = time.Duration(t.Val[tmPromptMS])
		}
		if t.Has[tmPredictedMS] {
			fr.ServerDecode = time.Duration(t.Val[tmPredictedMS])
		}
	}
	if fr.HasUsage {
		o.usage, o.usageCached = usage{has: true, in: fr.InputTokens, out: fr.OutputTokens,
			reasoning: fr.ReasoningTokens, cached: fr.CachedInputTokens}, u.Has[usCached] || u.Has[usCacheHit]
	}
	if !o.usage.has || o.usageCached {
		return
	}
	cached, ok := timingsCached(&o.timings, o.usage.in)
	switch {
	case !ok:
	case fr.HasUsage:
		fr.CachedInputTokens = cached
	case timed:
		o.usage.set(fr)
		fr.CachedInputTokens = cached
	}
}

// timingsCached returns the cached input tokens llama.cpp's timings t tell
// of a prompt of in tokens: cache_n, else in − prompt_n.
func timingsCached(t *jsonscan.Ints, in int) (int, bool) {
	switch {
	case t.Has[tmCacheN] && t.Val[tmCacheN] <= in:
		return t.Val[tmCacheN], true
	case !t.Has[tmCacheN] && t.Has[tmPromptN] && t.Val[tmPromptN] <= in:
		return in - t.Val[tmPromptN], true
	}
	return 0, false
}

// The top-level counts of an OpenAI usage object, by index (oaiChatUsage,
// oaiRespUsage): input, output, total, and DeepSeek's cache hits; the
// reasoning and cached counts of the details objects are at usReasoning and
// usCached.
const (
	usIn = iota
	usOut
	usTotal
	usCacheHit
	usPromptTime     // Groq's prompt_time, in ns
	usCompletionTime // Groq's completion_time, in ns
)

// The usage objects: chat completions' top-level "usage" (also Groq's
// x_groq.usage) and the Responses API's "response.usage". The cached input
// count is prompt_tokens_details.cached_tokens (OpenAI chat completions,
// openai-go CompletionUsagePromptTokensDetails; also xAI, OpenRouter, vLLM
// with --enable-prompt-tokens-details), DeepSeek's prompt_cache_hit_tokens
// (api-docs.deepseek.com/api/create-chat-completion: both part of
// prompt_tokens), and the Responses API's input_tokens_details.cached_tokens
// (openai-go ResponseUsageInputTokensDetails).
var (
	oaiChatUsage = shape(
		[]usageCount{count("prompt_tokens", usIn), count("completion_tokens", usOut), count("total_tokens", usTotal),
			count("prompt_cache_hit_tokens", usCacheHit),
			timeIn("prompt_time", usPromptTime, time.Second), timeIn("completion_time", usCompletionTime, time.Second)},
		nest("completion_tokens_details", count("reasoning_tokens", usReasoning)),
		nest("prompt_tokens_details", count("cached_tokens", usCached)),
	)
	oaiRespUsage = shape(
		[]usageCount{count("input_tokens", usIn), count("output_tokens", usOut), count("total_tokens", usTotal)},
		nest("output_tokens_details", count("reasoning_tokens", usReasoning)),
		nest("input_tokens_details", count("cached_tokens", usCached)),
	)
)

// The counts and times of llama.cpp's "timings" object, by index in
// llamaTimings.
const (
	tmPromptN = iota
	tmCacheN
	tmPromptMS
	tmPredictedMS
)

// llamaTimings is llama.cpp's server's "timings" object (tools/server:
// result_timings::to_json): prompt_n, the prompt tokens the engine
// processed (slot.n_prompt_tokens_processed), cache_n, those it reused from
// the slot's cache (builds since mid-2025), and the milliseconds it spent
// on each phase.
var llamaTimings = shape([]usageCount{count("prompt_n", tmPromptN), count("cache_n", tmCacheN),
	timeIn("prompt_ms", tmPromptMS, time.Millisecond), timeIn("predicted_ms", tmPredictedMS, time.Millisecond)})

// usage is what a usage object says, in Frame's terms.
type usage struct {
	has                        bool
	in, out, reasoning, cached int
}

// set puts u into fr's usage fields.
func (u usage) set(fr *Frame) {
	fr.HasUsage, fr.InputTokens, fr.OutputTokens = u.has, u.in, u.out
	fr.ReasoningTokens, fr.CachedInputTokens = u.reasoning, u.cached
}

// respUsage reads a Responses usage object: whether it has an input or
// output count, and the counts (0 when absent). output_tokens includes the
// reasoning tokens (a reasoning count above it cannot be inside it, and is
// added), input_tokens the cached ones.
func respUsage(u *jsonscan.Ints) usage {
	r := baseUsage(u)
	if r.reasoning > r.out {
		r.out = satAdd(r.out, r.reasoning)
	}
	return r
}

// baseUsage reads the counts of an OpenAI usage object as they are. A
// cached count (either name: DeepSeek sends both) above the input count is
// not believed.
func baseUsage(u *jsonscan.Ints) usage {
	r := usage{has: u.Has[usIn] || u.Has[usOut], in: u.Get(usIn), out: u.Get(usOut), reasoning: u.Get(usReasoning)}
	if c := max(u.Get(usCached), u.Get(usCacheHit)); c <= r.in {
		r.cached = c
	}
	return r
}

// chatUsage reads a chat completions usage object like respUsage. Most
// providers count reasoning inside completion_tokens; xAI counts it beside
// (total_tokens = prompt + completion + reasoning: UKGovernmentBEIS/inspect_ai#5528,
// a recorded grok-3-mini usage 10 + 1328 + 307 = 1645), so the
// reasoning count is added to the output when the total says so, or when
// it exceeds the completion count, which then cannot hold it (a gateway
// relaying a reasoning model: completion_tokens 35, reasoning_tokens 223).
func chatUsage(u *jsonscan.Ints) usage {
	r := baseUsage(u)
	if reasoningBeside(r.in, r.out, r.reasoning, u.Has[usTotal], u.Get(usTotal)) {
		r.out = satAdd(r.out, r.reasoning)
	}
	return r
}

// reasoningBeside reports whether a usage's reasoning count is beside its
// output count rather than inside it: the total says so, or the reasoning
// count exceeds the output count.
func reasoningBeside(in, out, reasoning int, hasTotal bool, total int) bool {
	return reasoning > out || reasoning > 0 && hasTotal && total == satAdd(satAdd(in, out), reasoning)
}
