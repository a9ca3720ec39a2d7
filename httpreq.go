package llmmetrics

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/llmmetrics/llmmetrics/internal/jsonstream"
)

// This file reads what the HTTP integrations need from a request: its
// attributes, the members of its JSON body that WithIncludeUsage rewrites,
// and those its span tells (gen_ai.request.stream and max_tokens).

// maxRequestBytes bounds how much of a request body is read ahead of
// sending it (to find "model" or to add stream_options); a larger body is
// sent unchanged.
const maxRequestBytes = 4 << 20

// maxModelBytes bounds a model name; a longer one becomes "_OTHER".
const maxModelBytes = 256

// otherModel is the gen_ai.request.model of a name outside the allowlist
// (WithModels), too long, or not UTF-8.
const otherModel = "_OTHER"

// Members of a request body, by index in requestSchema.
const (
	rModel = iota
	rStream
	rStreamOptions
	rIncludeUsage
	rMaxCompletionTokens
	rMaxTokens
	rMaxOutputTokens
	rGenerationConfig
	rGenerationMaxOutputTokens
	rGenerationConfigSnake
	rGenerationMaxOutputTokensSnake
	rOptions
	rNumPredict
)

// maxTokensMembers are the members that bound the answer's length, by API,
// in the order that decides when a body has several: OpenAI chat's
// max_completion_tokens (which replaces its max_tokens, as vLLM reads
// them), max_tokens (OpenAI completions and chat, Anthropic), the
// Responses API's max_output_tokens, Gemini's generationConfig (in either
// of the spellings protobuf's JSON accepts) and Ollama's options.num_predict.
var maxTokensMembers = [...]int{
	rMaxCompletionTokens, rMaxTokens, rMaxOutputTokens,
	rGenerationMaxOutputTokens, rGenerationMaxOutputTokensSnake, rNumPredict,
}

var requestSchema = jsonstream.NewSchema(
	jsonstream.Field{Path: "model", MaxString: maxModelBytes},
	jsonstream.Field{Path: "stream"},
	jsonstream.Field{Path: "stream_options"},
	jsonstream.Field{Path: "stream_options.include_usage"},
	jsonstream.Field{Path: "max_completion_tokens"},
	jsonstream.Field{Path: "max_tokens"},
	jsonstream.Field{Path: "max_output_tokens"},
	jsonstream.Field{Path: "generationConfig"},
	jsonstream.Field{Path: "generationConfig.maxOutputTokens"},
	jsonstream.Field{Path: "generation_config"},
	jsonstream.Field{Path: "generation_config.max_output_tokens"},
	jsonstream.Field{Path: "options"},
	jsonstream.Field{Path: "options.num_predict"},
)

// requestFacts appends to kvs gen_ai.request.stream and
// gen_ai.request.max_tokens where the request tells them: s has scanned its
// JSON body (nil: none was). Whether it streams is the body's "stream"
// member, else, once the whole body was scanned without one, the API's
// default for a generation (Ollama streams unless told not to; OpenAI and
// Anthropic do not); for Gemini it is the path. The length bound is the
// first of maxTokensMembers that holds an integer ≥ 0 (Ollama's -1,
// "no bound", is none).
func requestFacts(s *jsonstream.Scanner, ep endpoint, kvs []attribute.KeyValue) []attribute.KeyValue {
	generates := ep.generates()
	if ep.stream != streamUnknown && generates {
		kvs = append(kvs, semconv.GenAIRequestStream(ep.stream == streamYes))
	}
	if s == nil {
		return kvs
	}
	var byDefault streamMode
	if p := ep.proto.spec(); p != nil {
		byDefault = p.streams
	}
	switch v := &s.Values[rStream]; {
	case ep.stream != streamUnknown && generates:
	case v.Complete && (v.Kind == jsonstream.KindTrue || v.Kind == jsonstream.KindFalse):
		kvs = append(kvs, semconv.GenAIRequestStream(v.Kind == jsonstream.KindTrue))
	case v.Kind == jsonstream.KindNone && s.Done() && s.Err() == nil && generates && byDefault != streamUnknown:
		kvs = append(kvs, semconv.GenAIRequestStream(byDefault == streamYes))
	}
	for _, i := range maxTokensMembers {
		if v := &s.Values[i]; v.Complete && v.IntOK {
			return append(kvs, semconv.GenAIRequestMaxTokens(v.Int))
		}
	}
	return kvs
}

var requestScanners = sync.Pool{New: func() any { return jsonstream.NewScanner(requestSchema) }}

// httpCore is what NewTransport, Middleware and NewHandler share: the
// Tracker, the options, and which automatic attributes the Tracker already
// has (those are never overridden per request).
type httpCore struct {
	t                        *Tracker
	cfg                      httpConfig
	hasOp, hasProv, hasModel bool
}

// wantModel reports whether the model is read from the request body: not
// when the Tracker's attributes name it, nor when the path does
// (protocolSpec.pathIsModel: Gemini).
func (c *httpCore) wantModel(ep endpoint) bool {
	return !c.hasModel && !ep.modelInPath
}

func newHTTPCore(t *Tracker, cfg httpConfig) *httpCore {
	c := &httpCore{t: t, cfg: cfg}
	if t != nil {
		for _, kv := range t.base[sideServer].attrs {
			switch kv.Key {
			case semconv.GenAIOperationNameKey:
				c.hasOp = true
			case semconv.GenAIProviderNameKey:
				c.hasProv = true
			case semconv.GenAIRequestModelKey:
				c.hasModel = true
			}
		}
	}
	return c
}

// endpointOf classifies the request's path, with WithProtocol applied.
func (c *httpCore) endpointOf(req *http.Request) endpoint {
	ep := classifyPath(req.URL.Path)
	if c.cfg.hasProtocol {
		ep.proto = c.cfg.protocol
	}
	return ep
}

// attrs returns the per-request attributes: gen_ai.operation.name,
// gen_ai.provider.name and gen_ai.request.model where known and not set on
// the Tracker, then those of WithRequestAttributes.
func (c *httpCore) attrs(req *http.Request, ep endpoint, model string) []attribute.KeyValue {
	var user []attribute.KeyValue
	if c.cfg.reqAttrs != nil {
		user = c.cfg.reqAttrs(req)
	}
	kvs := make([]attribute.KeyValue, 0, 3+len(user))
	if ep.op.Valid() && !c.hasOp {
		kvs = append(kvs, ep.op)
	}
	host := req.URL.Host
	if host == "" {
		host = req.Host
	}
	if p := providerOf(host, ep.proto); p.Valid() && !c.hasProv {
		kvs = append(kvs, p)
	}
	if model != "" && !c.hasModel {
		kvs = append(kvs, semconv.GenAIRequestModel(model))
	}
	return append(kvs, user...)
}

// spanStart is the span name a request starts with, before its model is
// known (begin names it again): its operation, the Tracker's or the path's.
func (c *httpCore) spanStart(role side, ep endpoint) string {
	if c.hasOp || !ep.op.Valid() {
		return c.t.base[role].name
	}
	return spanName(ep.op.Value.AsString(), "")
}

// begin starts the measured request in role with ctx and its span, once
// its attributes are known: the span takes their name (and their values
// at End). kvs are the span's other attributes known by now.
func (c *httpCore) begin(ctx context.Context, span trace.Span, role side, start time.Time, attrs, kvs []attribute.KeyValue) *Request {
	set := c.t.setOf(role, attrs)
	if span != nil {
		span.SetName(set.name)
	}
	return c.t.newRequest(ctx, role, start, set, span, kvs)
}

// spanAttrCap is the room a request's span attributes get at once: those
// of the wrappers (server.*, gen_ai.request.stream and max_tokens) and of
// End (endSpan), beside the request's own, so that they take one
// allocation.
const spanAttrCap = 24

// modelName applies the allowlist and the bounds to a model name read from
// a request ("" stays "").
func modelName[T string | []byte](c *httpCore, m T, truncated bool) string {
	switch {
	case len(m) == 0:
		return ""
	case truncated || len(m) > maxModelBytes || !utf8.Valid([]byte(m)):
		return otherModel
	case c.cfg.models != nil:
		if name, ok := c.cfg.models[string(m)]; ok {
			return name
		}
		return otherModel
	}
	return string(m)
}

// prepare reads what is needed from req's JSON body — "model", unless the
// path names it (Gemini), with WithIncludeUsage whether to add
// stream_options, and for a span that records (kvs not nil) all of it, for
// requestFacts — and returns the request to send with ctx (req itself
// when its body was not read and ctx is its own, else a shallow copy whose
// Body replays what was read), the model name, whether it added
// stream_options.include_usage (the caller did not ask for the usage
// chunk: see usageFilter), and kvs with requestFacts appended. req is
// never modified; its Body is read, and closed when the copy's Body is.
func (c *httpCore) prepare(ctx context.Context, req *http.Request, ep endpoint, kvs []attribute.KeyValue) (out *http.Request, model string, addedUsage bool, _ []attribute.KeyValue) {
	facts := kvs != nil
	wantModel := c.wantModel(ep)
	inject := c.cfg.includeUsage && ep.streamOptions
	if !(wantModel || inject || facts) || !hasJSONBody(req) {
		if facts {
			kvs = requestFacts(nil, ep, kvs)
		}
		if out = req; ctx != req.Context() {
			out = req.WithContext(ctx)
		}
		return out, modelName(c, ep.pathModel, false), false, kvs
	}
	s := requestScanners.Get().(*jsonstream.Scanner)
	defer requestScanners.Put(s)
	s.Reset()
	enough := modelKnown
	switch {
	case inject:
		enough = nil // to the end of the body
	case facts:
		enough = func(s *jsonstream.Scanner) bool { return modelKnown(s) && factsKnown(s, ep) }
	}
	buf, err := readAhead(req.Body, req.ContentLength, s, enough)
	if facts {
		kvs = requestFacts(s, ep, kvs)
	}

	model = modelName(c, ep.pathModel, false)
	if v := &s.Values[rModel]; v.Kind == jsonstream.KindString && (v.Complete || v.Truncated) {
		// A name cut by the read-ahead bound (a body over maxRequestBytes
		// whose "model" is still going) is longer than maxModelBytes.
		model = modelName(c, v.Str, v.Truncated)
	}
	out = req.WithContext(ctx)
	if inject && err == io.EOF && s.Done() && s.Values[rStream].Kind == jsonstream.KindTrue {
		if body, ok := withIncludeUsage(buf, s); ok {
			_ = req.Body.Close() // read to its end; the copy has a new body
			out.Body = io.NopCloser(bytes.NewReader(body))
			out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
			out.ContentLength = int64(len(body))
			if req.Header.Get("Content-Length") != "" {
				out.Header = req.Header.Clone()
				out.Header.Set("Content-Length", strconv.Itoa(len(body)))
			}
			return out, model, true, kvs
		}
	}
	if err == io.EOF || err == nil && req.ContentLength > 0 && int64(len(buf)) == req.ContentLength {
		// The whole body was read: send it from memory, which net/http
		// writes with the headers (a body of unknown type gets its own
		// write after the headers, and costs the server a round of reads).
		_ = req.Body.Close()
		out.Body = io.NopCloser(bytes.NewReader(buf))
		if out.GetBody == nil { // it can be replayed now (redirects, retries on a stale connection)
			out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf)), nil }
		}
		return out, model, false, kvs
	}
	rb := &replayBody{head: buf, rest: req.Body, c: req.Body}
	if err != nil {
		rb.rest = errReader{err} // the transport sees the same read error
	}
	out.Body = rb
	return out, model, false, kvs
}

// hasJSONBody reports whether req has an uncompressed body that may be
// JSON (Content-Type application/json, or none).
func hasJSONBody(req *http.Request) bool {
	// The header map is read directly: its keys are canonical.
	if req.Body == nil || req.Body == http.NoBody || len(req.Header["Content-Encoding"]) > 0 {
		return false
	}
	ct := req.Header["Content-Type"]
	return len(ct) == 0 || mediaTypeOf(ct[0]) == mediaJSON
}

// generates reports whether a request to ep generates an answer (an
// operation other than embeddings), so that streaming means something.
func (ep endpoint) generates() bool { return ep.op.Valid() && ep.op != opEmbeddings }

// modelKnown reports whether s has read the whole "model" member.
func modelKnown(s *jsonstream.Scanner) bool { return s.Values[rModel].Complete }

// factsKnown reports whether s has read all that requestFacts can tell:
// "stream" (unless the path tells it) and a length bound. Without either,
// only the end of the body tells.
func factsKnown(s *jsonstream.Scanner, ep endpoint) bool {
	if !s.Values[rStream].Complete && ep.stream == streamUnknown && ep.generates() {
		return false
	}
	for _, i := range maxTokensMembers {
		if s.Values[i].Complete {
			return true
		}
	}
	return false
}

// readAhead reads body into a new buffer, feeding s, until the end of the
// body, or until s has stopped or has enough (nil: never), or
// maxRequestBytes. It returns what it read and the read error (io.EOF at
// the end of the body); a nil error means the body goes on.
func readAhead(body io.Reader, size int64, s *jsonstream.Scanner, enough func(*jsonstream.Scanner) bool) ([]byte, error) {
	n := 4 << 10
	if size > 0 {
		n = int(min(size+1, maxRequestBytes+1)) // +1: room to see EOF without growing
	}
	buf := make([]byte, 0, n)
	for {
		if len(buf) == cap(buf) {
			if len(buf) > maxRequestBytes {
				return buf, nil
			}
			next := make([]byte, len(buf), min(2*cap(buf), maxRequestBytes+1))
			copy(next, buf)
			buf = next
		}
		k, err := body.Read(buf[len(buf):cap(buf)])
		if k > 0 {
			s.Feed(buf[len(buf) : len(buf)+k])
			buf = buf[:len(buf)+k]
		}
		if err != nil {
			return buf, err
		}
		if s.Err() != nil || enough != nil && (s.Done() || enough(s)) {
			return buf, nil
		}
	}
}

// withIncludeUsage returns body with stream_options.include_usage set to
// true, and whether it changed it; s has scanned all of body.
func withIncludeUsage(body []byte, s *jsonstream.Scanner) ([]byte, bool) {
	if s.Err() != nil || s.Root.Kind != jsonstream.KindObject {
		return body, false
	}
	so := &s.Values[rStreamOptions]
	switch so.Kind {
	case jsonstream.KindNone: // add the member before the closing brace
		ins := `,"stream_options":{"include_usage":true}`
		if s.Root.Empty {
			ins = ins[1:]
		}
		at := int(s.Root.End - 1)
		return splice(body, at, at, ins), true
	case jsonstream.KindObject: // merge into it
		if s.Values[rIncludeUsage].Kind != jsonstream.KindNone {
			return body, false // the caller said what they want
		}
		ins := `"include_usage":true`
		if !so.Empty {
			ins += ","
		}
		at := int(so.Start + 1)
		return splice(body, at, at, ins), true
	case jsonstream.KindNull: // "stream_options": null means none
		return splice(body, int(so.Start), int(so.End), `{"include_usage":true}`), true
	}
	return body, false
}

// splice returns a new slice: b with b[from:to] replaced by ins.
func splice(b []byte, from, to int, ins string) []byte {
	out := make([]byte, 0, len(b)-(to-from)+len(ins))
	out = append(out, b[:from]...)
	out = append(out, ins...)
	return append(out, b[to:]...)
}

// replayBody is a request body that was partly read ahead: it returns the
// bytes read (head), then the rest of the original body; Close closes the
// original.
type replayBody struct {
	head []byte
	rest io.Reader // nil when the original body was read to its end
	c    io.Closer
}

func (b *replayBody) Read(p []byte) (int, error) {
	if len(b.head) > 0 {
		n := copy(p, b.head)
		b.head = b.head[n:]
		return n, nil
	}
	if b.rest == nil {
		return 0, io.EOF
	}
	return b.rest.Read(p)
}

func (b *replayBody) Close() error { return b.c.Close() }
