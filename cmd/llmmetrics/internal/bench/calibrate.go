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
}

// Probe lengths, in characters: two prompts of the workload's filler text.
const probeShort, probeLong = 400, 4000

// probeTimeout bounds each calibration request other than the usage
// probes (which -timeout bounds): a server that does not serve /tokenize
// or /v1/models may hold the request instead of answering 404.
const probeTimeout = 5 * time.Second

// calibrate finds how the server counts prompt tokens: the fake server
// counts ⌈characters/4⌉; a real one is asked with its /tokenize endpoint
// (vLLM, llama.cpp) where it has one, then two probe requests' usage give
// the template overhead (and, without /tokenize, the characters per
// token).
func (b *bench) calibrate(ctx context.Context) calibration {
	if b.fake != nil {
		return calibration{text: workload.Text{CharsPerToken: 4}, how: "the fake server's ⌈characters/4⌉"}
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c := calibration{text: workload.Text{CharsPerToken: 4}}
	c.context = b.modelContext(ctx)
	words := workload.Text{CharsPerToken: 1}
	rng := rand.New(rand.NewPCG(0x70726f6265, 1)) // the probes' own text, not the workload's
	short, long := words.Words(rng, probeShort), words.Words(rng, probeLong)
	tokShort, tokLong, via := b.tokenize(ctx, short), b.tokenize(ctx, long), "/tokenize"
	usShort, usLong := b.probeUsage(ctx, short), b.probeUsage(ctx, long)
	if tokShort <= 0 || tokLong <= tokShort {
		// Both usages count the template once: their difference is the
		// text's alone.
		tokShort, tokLong, via = usShort, usLong, "usage of two probe requests"
	}
	if tokShort <= 0 || tokLong <= tokShort {
		c.how = "assumed 4 characters a token (no /tokenize and no usage from the server)"
		return c
	}
	c.text.CharsPerToken = float64(probeLong-probeShort) / float64(tokLong-tokShort)
	if usShort > 0 {
		c.overhead = max(0, usShort-int(math.Round(probeShort/c.text.CharsPerToken)))
	}
	c.how = fmt.Sprintf("calibrated from the server's %s: %.2f characters a token, %d tokens of template", via, c.text.CharsPerToken, c.overhead)
	return c
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
	var rec llmmetrics.Record
	r := workload.Request{Messages: []workload.Message{{Role: "user", Content: text}}, OutputTokens: 1}
	b.send(ctx, workload.Body(b.o.wl.api, b.model, r, false), &rec, keepNothing)
	if rec.Outcome != llmmetrics.OutcomeOK {
		return 0
	}
	return rec.InputTokens
}
