package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/cmd/llmmetrics/internal/workload"
)

// calibration is how prompts are sized so that the server counts the
// length asked.
type calibration struct {
	text     workload.Text
	overhead int    // tokens the server adds to each request (chat template)
	context  int    // the model's context length (0: unknown)
	how      string // said in the output and results.json
	// Tokens the template adds for a system message and for each earlier
	// exchange of a session, beyond their text (workload.Config).
	systemOverhead, turnOverhead int
	// Tokens the template adds for the tools offered and for each tool
	// call with its result, beyond their text (agents' tasks).
	toolsOverhead, toolCallOverhead int
	anchorUsage                     int // the usage of a request of the anchor word (0: not asked)
}

// Probe lengths, in characters: two prompts of the workload's filler text.
const probeShort, probeLong = 400, 4000

// probeTimeout bounds each calibration request other than the usage
// probes (which -timeout bounds): a server that does not serve /tokenize
// or /v1/models may hold the request instead of answering 404.
const probeTimeout = 5 * time.Second

// calibrate finds how the server counts prompt tokens: the fake server
// counts ⌈characters/4⌉. A real one counts with its /tokenize endpoint
// (vLLM, llama.cpp) where it has one, else with the usage of probe
// requests. When cfg's prompts are filler text, each filler word's count
// is learnt (countWords), so that prompts are built to the exact length;
// else, or when the per-word counts do not add up, one characters-per-
// token figure is (calibrateChars). When the prompts have system messages
// or earlier turns, what the template adds for them is learnt too
// (countTemplate).
func (b *bench) calibrate(ctx context.Context, cfg workload.Config) calibration {
	if b.fake != nil {
		return calibration{text: workload.Text{CharsPerToken: 4}, how: "the fake server's ⌈characters/4⌉"}
	}
	c := calibration{text: workload.Text{CharsPerToken: 4}}
	c.context = b.modelContext(ctx)
	tokenize := b.tokenize(ctx, workload.FillerWords()[0]) > 0
	system, turns := cfg.PrefixTokens > 0 || cfg.Dataset != "", cfg.Turns > 1 || cfg.Dataset != ""
	var why string
	turns = turns || cfg.Agent != nil
	if cfg.Dataset == "" || cfg.PrefixTokens > 0 {
		if why = b.countWords(ctx, &c, tokenize); why == "" {
			b.countTemplate(ctx, &c, system, turns)
			b.countToolTemplate(ctx, &c, cfg)
			return c
		}
	}
	ok := b.calibrateChars(ctx, &c, tokenize)
	if why != "" {
		c.how += fmt.Sprintf(" (per-word counts unusable: %s)", why)
	}
	if ok {
		b.countTemplate(ctx, &c, system, turns)
		b.countToolTemplate(ctx, &c, cfg)
	}
	return c
}

// countToolTemplate finds, for agents' tasks, what the template adds for
// the tools offered and for a tool call with its result beyond their text,
// from the usage of requests of an anchor word: with the tools, and with
// the tools after a call and its result.
func (b *bench) countToolTemplate(ctx context.Context, c *calibration, cfg workload.Config) {
	if cfg.Agent == nil {
		return
	}
	tools := cfg.Agent.Tools
	if tools == nil {
		tools = workload.AgentTools
	}
	anchor := workload.FillerWords()[0]
	one := c.anchorUsage
	if one == 0 {
		one = b.probeUsage(ctx, anchor)
	}
	user := workload.Message{Role: "user", Content: anchor}
	withTools := b.probeRequest(ctx, workload.Request{Messages: []workload.Message{user}, Tools: tools})
	if one <= 0 || withTools <= 0 {
		return
	}
	var texts []string
	for _, t := range tools {
		texts = append(texts, t.Name, t.Description, string(t.Parameters))
	}
	c.toolsOverhead = withTools - one - c.text.Count(texts...)
	call := workload.ToolCall{ID: "call_0", Name: tools[0].Name, Arguments: `{"input":"` + anchor + `"}`}
	withCall := b.probeRequest(ctx, workload.Request{Tools: tools, Messages: []workload.Message{user,
		{Role: "assistant", ToolCalls: []workload.ToolCall{call}},
		{Role: "tool", Content: anchor, ToolCallID: call.ID, ToolName: call.Name}}})
	if withCall <= 0 {
		c.how += fmt.Sprintf("; the tools add %d tokens of template", c.toolsOverhead)
		return
	}
	c.toolCallOverhead = withCall - withTools - c.turnOverhead - c.text.Count(call.Name, call.Arguments) - c.text.Count(anchor)
	c.how += fmt.Sprintf("; the tools add %d tokens of template, a tool call and its result %d", c.toolsOverhead, c.toolCallOverhead)
}

// countTemplate finds what the template adds for a system message (when
// system) and for each earlier exchange of a session (when turns), from
// the usage of requests of an anchor word: alone; after a system message
// of one and of two anchors (a template that drops the system message
// counts them the same: c.how says so); and after an exchange of anchors.
func (b *bench) countTemplate(ctx context.Context, c *calibration, system, turns bool) {
	if !system && !turns {
		return
	}
	anchor := workload.FillerWords()[0]
	ta := c.text.Count(anchor)
	one := c.anchorUsage
	if one == 0 {
		one = b.probeUsage(ctx, anchor)
	}
	if one <= 0 {
		return
	}
	if system {
		s1 := b.probeMessages(ctx, anchor, anchor)
		s2 := b.probeMessages(ctx, anchor+" "+anchor, anchor)
		switch {
		case s1 <= 0 || s2 <= 0:
		case s1 == s2:
			c.how += "; the chat template drops the system message (a shared prefix is sent, not counted)"
		default:
			c.systemOverhead = s1 - one - ta
			c.how += fmt.Sprintf("; a system message adds %d tokens of template", c.systemOverhead)
		}
	}
	if turns {
		if n := b.probeMessages(ctx, "", anchor, anchor, anchor); n > 0 {
			c.turnOverhead = n - one - 2*ta
			c.how += fmt.Sprintf("; each earlier exchange adds %d tokens of template", c.turnOverhead)
		}
	}
}

// calibrateChars finds one characters-per-token figure and the template
// overhead from two probe texts (with /tokenize when tokenize) and
// reports whether the server counts tokens at all.
func (b *bench) calibrateChars(ctx context.Context, c *calibration, tokenize bool) bool {
	words := workload.Text{CharsPerToken: 1}
	rng := rand.New(rand.NewPCG(0x70726f6265, 1)) // the probes' own text, not the workload's
	short, long := words.Words(rng, probeShort), words.Words(rng, probeLong)
	tokShort, tokLong, via := 0, 0, "usage of two probe requests"
	if tokenize {
		tokShort, tokLong, via = b.tokenize(ctx, short), b.tokenize(ctx, long), "/tokenize"
	}
	usShort := b.probeUsage(ctx, short)
	if !tokenize || tokShort <= 0 || tokLong <= tokShort {
		// Both usages count the template once: their difference is the
		// text's alone.
		tokShort, tokLong, via = usShort, b.probeUsage(ctx, long), "usage of two probe requests"
	}
	if tokShort <= 0 || tokLong <= tokShort {
		c.how = "assumed 4 characters a token (no /tokenize and no usage from the server)"
		return false
	}
	c.text = workload.Text{CharsPerToken: float64(probeLong-probeShort) / float64(tokLong-tokShort)}
	if usShort > 0 {
		c.overhead = max(0, usShort-int(math.Round(probeShort/c.text.CharsPerToken)))
	}
	c.how = fmt.Sprintf("calibrated from the server's %s: %.2f characters a token, %d tokens of template", via, c.text.CharsPerToken, c.overhead)
	return true
}

// checkTokens is the length of the prompt that checks the per-word counts.
const checkTokens = 300

// probeWorkers is how many word probes are in flight at once.
const probeWorkers = 4

// countWords learns what the server counts for each filler word after a
// space: the count of an anchor word alone and of the anchor followed by
// each word (from /tokenize when tokenize, else from a probe request's
// usage); their difference is the word's count. The anchor's request gives
// the template's overhead, the counts the characters per token of other
// text. A prompt of checkTokens filler tokens must then be counted as
// predicted (within ±2 % or ±2 tokens). It returns why the counts cannot
// be used ("" when they are: c then has them).
func (b *bench) countWords(ctx context.Context, c *calibration, tokenize bool) string {
	count, via := b.probeUsage, "usage of probe requests (max tokens 1)"
	if tokenize {
		count, via = b.tokenize, "/tokenize"
	}
	words := workload.FillerWords()
	anchor := words[0]
	// The anchor alone and twice first: a server whose count does not
	// grow with the text gets no more probes.
	base := count(ctx, anchor)
	if base <= 0 {
		return "the server did not count the anchor word"
	}
	counts := make([]int, len(words))
	if counts[0] = count(ctx, anchor+" "+anchor); counts[0] <= base {
		return "the server's count does not grow with the prompt"
	}
	usage, probes := base, len(words)
	if tokenize {
		probes++ // the anchor's request, for the template
	}
	parallel(probes-1, probeWorkers, func(i int) {
		if i+1 < len(words) {
			counts[i+1] = count(ctx, anchor+" "+words[i+1])
		} else {
			usage = b.probeUsage(ctx, anchor)
		}
	})
	if usage <= 0 {
		return "the server's usage did not count the anchor word"
	}
	chars, tokens := 0, 0
	for i, w := range words {
		counts[i] -= base // a failed probe's count goes negative: CountedText says so
		chars, tokens = chars+len(w)+1, tokens+counts[i]
	}
	text, err := workload.CountedText(float64(chars)/float64(max(tokens, 1)), counts)
	if err != nil {
		return err.Error()
	}
	overhead := usage - counts[0] // the anchor counts as after a space
	check := text.Words(rand.New(rand.NewPCG(0x636865636b, 1)), checkTokens)
	want, got := text.Count(check)+overhead, b.probeUsage(ctx, check)
	if !withinBound(want, got) {
		return fmt.Sprintf("a check prompt of %d tokens counted %d", want, got)
	}
	c.text, c.overhead, c.anchorUsage = text, max(0, overhead), usage
	c.how = fmt.Sprintf("calibrated per filler word from the server's %s: %d words, %d tokens of template; a check prompt of %d tokens counted %d (other text: %.2f characters a token)",
		via, len(words), c.overhead, want, got, text.CharsPerToken)
	return ""
}

// parallel calls f(0) … f(n−1) on up to workers goroutines and returns
// when all are done.
func parallel(n, workers int, f func(i int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// rootURL is the server's root: the -url without its API version.
func (b *bench) rootURL() string {
	u := trimSlash(b.o.url)
	for _, v := range []string{"/v1beta", "/v1"} {
		u = strings.TrimSuffix(u, v)
	}
	return u
}

// modelContext reads the model's context length from /v1/models
// (vLLM's max_model_len), 0 when the server does not say.
func (b *bench) modelContext(ctx context.Context) int {
	var list struct {
		Data []struct {
			ID          string `json:"id"`
			MaxModelLen int    `json:"max_model_len"`
		} `json:"data"`
	}
	if !b.getJSON(ctx, http.MethodGet, b.rootURL()+"/v1/models", nil, &list) {
		return 0
	}
	for _, m := range list.Data {
		if m.ID == b.model {
			return m.MaxModelLen
		}
	}
	return 0
}

// tokenize returns the server's token count of text from /tokenize: vLLM
// takes {"model", "prompt"} and answers "count"; llama.cpp takes
// {"content"} and answers "tokens". 0: no such endpoint.
func (b *bench) tokenize(ctx context.Context, text string) int {
	var out struct {
		Count  int               `json:"count"`
		Tokens []json.RawMessage `json:"tokens"`
	}
	body, _ := json.Marshal(map[string]any{"model": b.model, "prompt": text, "content": text, "add_special_tokens": false})
	if !b.getJSON(ctx, http.MethodPost, b.rootURL()+"/tokenize", body, &out) {
		return 0
	}
	if out.Count > 0 {
		return out.Count
	}
	return len(out.Tokens)
}

// getJSON requests url (not measured) and decodes a 200 answer into v.
func (b *bench) getJSON(ctx context.Context, method, url string, body []byte, v any) bool {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return false
	}
	req.Header.Set("Content-Type", "application/json")
	if b.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+b.apiKey)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return false
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(v) == nil
}

// probeUsage sends text as one request of the -api asking for one output
// token, and returns the input tokens its usage reports (0: none).
func (b *bench) probeUsage(ctx context.Context, text string) int {
	return b.probeMessages(ctx, "", text)
}

// probeMessages is probeUsage of a request of a system prompt ("": none)
// and messages of the user and the assistant in turn.
func (b *bench) probeMessages(ctx context.Context, system string, texts ...string) int {
	r := workload.Request{System: system}
	for i, t := range texts {
		r.Messages = append(r.Messages, workload.Message{Role: []string{"user", "assistant"}[i%2], Content: t})
	}
	return b.probeRequest(ctx, r)
}

// probeRequest sends r asking for one output token and returns the input
// tokens its usage reports (0: none).
func (b *bench) probeRequest(ctx context.Context, r workload.Request) int {
	var rec llmmetrics.Record
	r.OutputTokens = 1
	b.send(ctx, workload.Body(b.o.wl.api, b.model, r, false), &rec, keepNothing)
	if rec.Outcome != llmmetrics.OutcomeOK {
		return 0
	}
	return rec.InputTokens
}
