package llmmetricstest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// This file is the protocol-independent half of a request: reading it,
// queueing it on the scheduler (server.go), waiting for its tokens,
// injecting faults and counting Stats. The wire formats live in one file
// per API (openai.go, anthropic.go, gemini.go, ollama.go); each implements
// protocol and encoder, so every API gets the same timing, faults and
// counts.

// call is what the server needs of one request, whatever its protocol.
type call struct {
	model  string // the model the request names ("": any)
	prompt int    // prompt tokens counted from the request's texts
	maxOut int    // output cap from the request (0: none)
	exact  bool   // ignore_eos: answer exactly maxOut tokens
	text   string // the prompt's texts, concatenated (for the prefix cache)
	stream bool
	tools  []toolDef  // the tools offered (tools.go)
	choice toolChoice // and the tool choice
}

// protocol is one API endpoint: it reads a request and makes the encoder
// of its answer.
type protocol interface {
	// parse reads the request. An error is answered 400, or with the
	// status of a *requestError.
	parse(r *http.Request, body []byte) (call, encoder, error)
	// writeError answers with status and msg in the protocol's error shape.
	writeError(w http.ResponseWriter, status int, msg string)
}

// encoder writes one request's answer in its API's wire format. Its
// methods run on the request's handler goroutine, in this order for a
// stream: streamHeader, begin (with the first token), token for each token
// (e.sent already counts it), then end for a complete answer or fail for
// an injected error event. A non-streaming answer is one call to whole.
type encoder interface {
	// streamHeader sets a stream's headers; flush reports whether they go
	// out at once (else with the first bytes of the body).
	streamHeader(h http.Header) (flush bool)
	begin(e *emitter)
	// token writes one token; last is true for the final token of a
	// complete answer.
	token(e *emitter, text string, last bool)
	end(e *emitter)
	fail(e *emitter, msg string)
	// whole writes the non-streaming answer, headers included.
	whole(e *emitter, text string)
}

// requestError is a rejected request's status and message.
type requestError struct {
	status int
	msg    string
}

func (e *requestError) Error() string { return e.msg }

// routes returns the server's handler: every API on the one scheduler.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	handle := func(pattern string, p protocol) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, p) })
	}
	handle("POST /v1/chat/completions", openAIProtocol{chat: true})
	handle("POST /v1/completions", openAIProtocol{})
	handle("POST /v1/responses", responsesProtocol{})
	handle("POST /v1/messages", anthropicProtocol{})
	handle("POST /v1beta/models/{call}", geminiProtocol{})
	handle("POST /v1/models/{call}", geminiProtocol{})
	handle("POST /api/chat", ollamaProtocol{chat: true})
	handle("POST /api/generate", ollamaProtocol{})
	mux.HandleFunc("GET /v1/models", s.models)
	mux.HandleFunc("GET /metrics", s.metrics) // metrics.go
	return mux
}

// models serves GET /v1/models.
func (s *Server) models(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": []any{
		map[string]any{"id": s.cfg.Model, "object": "model", "created": 0, "owned_by": "llmmetricstest"},
	}})
}

func (s *Server) count(f func(st *Stats)) {
	s.mu.Lock()
	f(&s.stats)
	s.mu.Unlock()
}

// serve handles one request of protocol p.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, p protocol) {
	start := time.Now()
	s.mu.Lock()
	if s.closed {
		s.stats.Requests++
		s.stats.BadRequests++
		s.mu.Unlock()
		p.writeError(w, http.StatusServiceUnavailable, errServerClosed.Error())
		return
	}
	s.stats.Requests++
	s.nextID++
	id := s.nextID
	s.handlers.Add(1)
	s.mu.Unlock()
	defer s.handlers.Done()

	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	var c call
	var enc encoder
	if err == nil {
		c, enc, err = p.parse(r, body)
	}
	if err != nil {
		s.count(func(st *Stats) { st.BadRequests++ })
		status, msg := http.StatusBadRequest, "llmmetricstest: invalid JSON body: "+err.Error()
		if re := (*requestError)(nil); errors.As(err, &re) {
			status, msg = re.status, re.msg
		}
		p.writeError(w, status, msg)
		return
	}
	if c.model != "" && c.model != s.cfg.Model {
		s.count(func(st *Stats) { st.BadRequests++ })
		p.writeError(w, http.StatusNotFound,
			fmt.Sprintf("llmmetricstest: the model %q does not exist (this server serves %q)", c.model, s.cfg.Model))
		return
	}

	tool := pickTool(c.tools, c.choice, id)
	j := &job{id: id, ready: make(chan struct{}), notify: make(chan struct{}, 1), maxOut: max(c.maxOut, 0), exact: c.exact, tool: tool != nil}
	if s.cfg.PrefixCacheBlocks > 0 {
		j.blocks = blockHashes(c.text)
	}
	if s.cfg.PromptTokens > 0 {
		j.prompt = s.cfg.PromptTokens
	} else {
		j.prompt = max(c.prompt, 1)
	}
	ctx := r.Context()
	defer j.canceled.Store(true) // leaves the batch whatever happens
	select {
	case s.arrive <- j:
	case <-ctx.Done():
		s.count(func(st *Stats) { st.Canceled++ })
		return
	case <-s.quit:
		panic(http.ErrAbortHandler) // see abortOnClose
	}
	<-j.ready // closed by the scheduler right after receiving j
	switch j.fail {
	case http.StatusInternalServerError:
		s.count(func(st *Stats) { st.Failed++ })
		p.writeError(w, j.fail, "llmmetricstest: injected failure")
		return
	case http.StatusTooManyRequests:
		s.count(func(st *Stats) { st.RateLimited++ })
		p.writeError(w, j.fail, "llmmetricstest: injected rate limit")
		return
	}
	s.count(func(st *Stats) {
		st.PromptTokens += j.prompt
		st.CachedPromptTokens += j.cached
		s.gauges.queries += j.prompt
		s.gauges.hits += j.cached
	})

	e := &emitter{s: s, w: w, j: j, p: p, enc: enc, id: id, start: start, created: time.Now()}
	if tool != nil && !j.noTool {
		e.tool = tool
		s.count(func(st *Stats) { st.ToolCalls++ })
	}
	if c.stream {
		e.stream(ctx)
	} else {
		e.whole(ctx)
	}
}

// emitter writes one request's answer: the token loop and the faults,
// common to every protocol; enc writes the bytes.
type emitter struct {
	s       *Server
	w       http.ResponseWriter
	j       *job
	p       protocol
	enc     encoder
	id      int
	start   time.Time // the request arrived
	created time.Time // the request left the scheduler's plan
	firstAt time.Time // the first token was ready (zero before)
	sent    int       // tokens written (or, for whole, answered)
	tool    *toolCall // the answer is this tool call (nil: text)
}

// abortOnClose: when the server closes, an unfinished request is aborted
// with panic(http.ErrAbortHandler), which net/http answers by dropping the
// connection. Returning would instead end the response cleanly (a chunked
// body closed normally, or an empty 200), which a client would take for a
// complete answer.

// wait blocks until the job has new tokens or finished; false when the
// client went away. It aborts the response when the server closes.
func (e *emitter) wait(ctx context.Context) bool {
	select {
	case <-e.j.notify:
		if e.firstAt.IsZero() && e.j.produced.Load() > 0 {
			e.firstAt = time.Now()
		}
		return true
	case <-ctx.Done():
		e.s.count(func(st *Stats) { st.Canceled++ })
		return false
	case <-e.s.quit:
		panic(http.ErrAbortHandler) // see abortOnClose
	}
}

// stream writes a streaming answer.
func (e *emitter) stream(ctx context.Context) {
	if e.enc.streamHeader(e.w.Header()) {
		e.w.WriteHeader(http.StatusOK)
		e.flush() // headers now, like vLLM; the first events come with the first token
	}
	j := e.j
	begun := false
	for {
		if !e.wait(ctx) {
			return
		}
		if !begun {
			e.enc.begin(e)
			begun = true
		}
		produced := int(j.produced.Load())
		for e.sent < produced {
			switch e.sent {
			case j.cutAt:
				e.s.count(func(st *Stats) { st.Cut++ })
				panic(http.ErrAbortHandler)
			case j.errAt:
				e.s.count(func(st *Stats) { st.ErrorEvents++ }) // before the client can see it
				e.enc.fail(e, "llmmetricstest: injected error event")
				return
			case j.pauseAt:
				t := time.NewTimer(time.Duration(float64(e.s.cfg.PauseDuration) / e.s.cfg.Speedup))
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
					e.s.count(func(st *Stats) { st.Canceled++ })
					return
				case <-e.s.quit:
					t.Stop()
					panic(http.ErrAbortHandler) // see abortOnClose
				}
			}
			text := tokenText(e.id, e.sent)
			e.s.count(func(st *Stats) { st.CompletionTokens++ }) // before the client can see it
			e.sent++
			e.enc.token(e, text, e.sent == j.target)
		}
		if j.finished.Load() && e.sent >= j.target {
			break
		}
	}
	e.s.count(func(st *Stats) { st.OK++ }) // before the end marker
	e.enc.end(e)
}

// whole writes a non-streaming answer once generation is done.
func (e *emitter) whole(ctx context.Context) {
	j := e.j
	for !j.finished.Load() {
		if !e.wait(ctx) {
			return
		}
	}
	switch {
	case j.cutAt >= 0:
		e.s.count(func(st *Stats) { st.Cut++ })
		panic(http.ErrAbortHandler)
	case j.errAt >= 0:
		e.s.count(func(st *Stats) { st.ErrorEvents++ }) // before the client can see it
		e.p.writeError(e.w, http.StatusInternalServerError, "llmmetricstest: injected error")
		return
	}
	e.sent = j.target
	e.s.count(func(st *Stats) { st.OK++; st.CompletionTokens += j.target })
	e.enc.whole(e, e.text())
}

// text returns the e.sent tokens answered so far.
func (e *emitter) text() string {
	var b strings.Builder
	for i := range e.sent {
		b.WriteString(tokenText(e.id, i))
	}
	return b.String()
}

// flush sends what was written.
func (e *emitter) flush() {
	if f, ok := e.w.(http.Flusher); ok {
		f.Flush()
	}
}

// write writes b and flushes it.
func (e *emitter) write(b []byte) {
	_, _ = e.w.Write(b)
	e.flush()
}

// sse writes one SSE event (with an event: line when event is set) and
// flushes it.
func (e *emitter) sse(event string, v any) {
	var b bytes.Buffer
	if event != "" {
		b.WriteString("event: " + event + "\n")
	}
	b.WriteString("data: ")
	b.Write(marshal(v))
	b.WriteString("\n\n")
	e.write(b.Bytes())
}

// answer writes v as a whole JSON answer (status 200).
func (e *emitter) answer(contentType string, v any) {
	writeJSON(e.w, http.StatusOK, contentType, v)
}

// marshal encodes v (our own types, which always encode).
func marshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return []byte(`{}`)
	}
	return b
}

// writeJSON answers status with v.
func writeJSON(w http.ResponseWriter, status int, contentType string, v any) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	_, _ = w.Write(append(marshal(v), '\n'))
}

// stopped reports whether the answer was cut by the request's output cap.
func (e *emitter) stopped() bool { return e.j.length }

// countText returns the prompt tokens of the given JSON values: ⌈chars/4⌉
// of their texts (a string, or the "text", "content" and "parts" of an
// object, recursively through arrays; tool definitions, calls and
// results as tools.go says) plus one per token ID (a number), at least 1.
// It covers OpenAI messages and content parts, Responses input items,
// Anthropic content blocks, Gemini contents and parts, and Ollama
// messages, with their tools.
func countText(values ...json.RawMessage) int {
	n, _ := promptText(false, values...)
	return n
}

// setPrompt sets c's prompt tokens (countText) and text from values.
func (c *call) setPrompt(values ...json.RawMessage) {
	c.prompt, c.text = promptText(true, values...)
}

// promptText returns countText of values and, with keep, their texts
// concatenated in order.
func promptText(keep bool, values ...json.RawMessage) (int, string) {
	var text strings.Builder
	chars, ids := 0, 0
	var walk, walkValues func(raw json.RawMessage, depth int)
	// walkValues counts every string inside raw (a tool's result object,
	// Gemini's functionResponse.response), its keys aside.
	walkValues = func(raw json.RawMessage, depth int) {
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 || depth > 32 {
			return
		}
		switch raw[0] {
		case '{':
			dec := json.NewDecoder(bytes.NewReader(raw))
			if _, err := dec.Token(); err != nil {
				return
			}
			for dec.More() {
				if _, err := dec.Token(); err != nil { // the key
					return
				}
				var v json.RawMessage
				if dec.Decode(&v) != nil {
					return
				}
				walkValues(v, depth+1)
			}
		case '[':
			var items []json.RawMessage
			if json.Unmarshal(raw, &items) == nil {
				for _, it := range items {
					walkValues(it, depth+1)
				}
			}
		case '"':
			walk(raw, depth)
		}
	}
	walk = func(raw json.RawMessage, depth int) {
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 || depth > 32 {
			return
		}
		switch raw[0] {
		case '"':
			var s string
			if json.Unmarshal(raw, &s) == nil {
				chars += len(s)
				if keep {
					text.WriteString(s)
				}
			}
		case '[':
			var items []json.RawMessage
			if json.Unmarshal(raw, &items) == nil {
				for _, it := range items {
					walk(it, depth+1)
				}
			}
		case '{':
			if texts, ok := toolText(raw); ok { // a tool definition or call (tools.go)
				for _, s := range texts {
					chars += len(s)
					if keep {
						text.WriteString(s)
					}
				}
				return
			}
			var part struct {
				Text, Content, Parts json.RawMessage
				// Tool calls and results (tools.go).
				Output               json.RawMessage `json:"output"`
				Response             json.RawMessage `json:"response"`
				ToolCalls            json.RawMessage `json:"tool_calls"`
				Function             json.RawMessage `json:"function"`
				FunctionCall         json.RawMessage `json:"functionCall"`
				FunctionResponse     json.RawMessage `json:"functionResponse"`
				FunctionDeclarations json.RawMessage `json:"functionDeclarations"`
			}
			if json.Unmarshal(raw, &part) == nil {
				walk(part.Text, depth+1)
				walk(part.Content, depth+1)
				walk(part.Parts, depth+1)
				walk(part.Output, depth+1)
				walkValues(part.Response, depth+1)
				for _, r := range []json.RawMessage{part.ToolCalls, part.Function, part.FunctionCall, part.FunctionResponse, part.FunctionDeclarations} {
					walk(r, depth+1)
				}
			}
		case 'n', 't', 'f': // null, true, false
		default: // a token ID
			ids++
		}
	}
	for _, v := range values {
		walk(v, 0)
	}
	return max(ids+(chars+3)/4, 1), text.String()
}

var words = []string{"The", "model", "streams", "one", "token", "at", "a", "time", "while", "the",
	"batch", "grows", "and", "every", "step", "takes", "a", "little", "longer", "so", "latency",
	"rises", "with", "load", "until", "the", "cache", "is", "full", "."}

// tokenText returns the text of token i of request id: one word each.
func tokenText(id, i int) string {
	w := words[(id*7+i)%len(words)]
	if i == 0 {
		return w
	}
	return " " + w
}

// obj is a JSON object that keeps its keys in order (a map would sort
// them): providers put "type" first, and so do we.
type obj []kv

type kv struct {
	k string
	v any
}

// MarshalJSON encodes o as a JSON object.
func (o obj) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, f := range o {
		if i > 0 {
			b = append(b, ',')
		}
		k, _ := json.Marshal(f.k)
		v, err := json.Marshal(f.v)
		if err != nil {
			return nil, err
		}
		b = append(append(append(b, k...), ':'), v...)
	}
	return append(b, '}'), nil
}
