package llmmetrics

import "github.com/llmmetrics/llmmetrics/internal/jsonscan"

// The production decoders always use their scan cache; these test-only
// decoders turn it off, or count its hits, so tests and benchmarks can
// compare (TestScanCache, FuzzOpenAIDecoder, BenchmarkOpenAIDecode).

// newOpenAITestDecoder returns an OpenAI decoder that walks every event in
// full when cache is false, and else counts the events its cache answered in
// *hits (when hits is not nil).
func newOpenAITestDecoder(cache bool, hits *int) *sseDecoder {
	o := &openAIInterp{}
	var scratch openAIFacts
	return newSSE("openai", interpretFunc(func(_, data []byte) (Frame, error) {
		f, hit := testWalk(&o.j, &o.cache, &scratch, data, walkOpenAI, cache, hits)
		fr, err := o.frame(f, data)
		if f != nil && !hit {
			o.answer(f, data, &fr)
		}
		return fr, err
	}), nil)
}

// newAnthropicTestDecoder is newOpenAITestDecoder for Anthropic.
func newAnthropicTestDecoder(cache bool, hits *int) *sseDecoder {
	a := &anthropicInterp{}
	var scratch anthropicFacts
	return newSSE("anthropic", interpretFunc(func(_, data []byte) (Frame, error) {
		f, hit := testWalk(&a.j, &a.cache, &scratch, data, walkAnthropic, cache, hits)
		fr, err := a.frame(f, data)
		if f != nil && !hit {
			a.answer(f, data, &fr)
		}
		return fr, err
	}), nil)
}

// testWalk walks data with the cache or without it, and reports whether
// the cache answered.
func testWalk[F any](j *jsonscan.Scanner, c *jsonscan.Cache[F], scratch *F, data []byte, walk jsonscan.Walker[F], cache bool, hits *int) (*F, bool) {
	if !cache {
		if jsonscan.Walk(j, data, scratch, walk) {
			return scratch, false
		}
		return nil, false
	}
	f, hit := c.Walk(j, data, walk)
	if hit && hits != nil {
		*hits++
	}
	return f, hit
}
