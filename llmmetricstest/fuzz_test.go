package llmmetricstest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// fuzzPaths are every endpoint of the server.
var fuzzPaths = []string{
	"/v1/chat/completions", "/v1/completions", "/v1/responses", "/v1/messages",
	"/v1beta/models/" + DefaultModel + ":streamGenerateContent?alt=sse",
	"/v1beta/models/" + DefaultModel + ":streamGenerateContent",
	"/v1beta/models/" + DefaultModel + ":generateContent",
	"/api/chat", "/api/generate",
}

// FuzzServe posts arbitrary bodies to every endpoint: the server never
// panics, answers 200, 400 or 404, and a 200 answer is well formed: SSE
// events whose data is JSON (or [DONE], last), NDJSON lines ending with
// "done": true, or one JSON value (a Gemini stream without alt=sse is a
// JSON array).
func FuzzServe(f *testing.F) {
	for _, seed := range []string{
		chatBody(8, true, true, ""),
		chatBody(8, false, false, `,"max_completion_tokens":2`),
		`{"prompt":[[1,2],[3]],"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`,
		`{"messages":[{"content":[{"type":"text","text":5}]}],"max_tokens":-3}`,
		`{"input":[{"role":"user","content":[{"type":"input_text","text":"hi"}]}],"stream":true,"max_output_tokens":2}`,
		`{"system":[{"type":"text","text":"be brief"}],"messages":[{"role":"user","content":"hi"}],"max_tokens":3,"stream":true}`,
		`{"contents":[{"parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":2}}`,
		`{"messages":[{"role":"user","content":"hi"}],"options":{"num_predict":-1}}`,
		`{"prompt":"hi","stream":false,"options":{"num_predict":2}}`,
		`{"model":"other"}`,
		`{"prompt":{"a":[null,true]}}`,
		`[]`,
		``,
	} {
		f.Add(seed)
	}
	// Speedup makes every step last a microsecond: the fuzz runs on real time.
	s := NewServer(ServerConfig{Speedup: 1e6, OutputMin: 1, OutputMax: 4})
	f.Cleanup(s.Close)
	f.Fuzz(func(t *testing.T, body string) {
		for _, path := range fuzzPaths {
			w := httptest.NewRecorder()
			s.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
			switch w.Code {
			case http.StatusOK:
				checkWellFormed(t, path, w.Header().Get("Content-Type"), w.Body.String())
			case http.StatusBadRequest, http.StatusNotFound:
				if !json.Valid(w.Body.Bytes()) {
					t.Fatalf("%s: invalid JSON error %q", path, w.Body.String())
				}
			default:
				t.Fatalf("%s: status %d for %q", path, w.Code, body)
			}
		}
	})
}

func checkWellFormed(t *testing.T, path, contentType, body string) {
	t.Helper()
	switch contentType {
	case "text/event-stream":
		if !strings.HasSuffix(body, "\n\n") {
			t.Fatalf("%s: unterminated event stream %q", path, body)
		}
		events := strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n")
		for i, ev := range events {
			_, data, ok := strings.Cut(ev, "data: ")
			switch {
			case !ok:
				t.Fatalf("%s: event without data %q", path, ev)
			case data == "[DONE]":
				if i != len(events)-1 {
					t.Fatalf("%s: [DONE] before the end: %q", path, body)
				}
			case !json.Valid([]byte(data)):
				t.Fatalf("%s: invalid JSON data %q", path, data)
			}
		}
	case "application/x-ndjson":
		lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
		for _, l := range lines {
			if !json.Valid([]byte(l)) {
				t.Fatalf("%s: invalid JSON line %q", path, l)
			}
		}
		if !strings.Contains(lines[len(lines)-1], `"done":true`) {
			t.Fatalf("%s: the last line is not done: %q", path, body)
		}
	default:
		if !json.Valid([]byte(body)) {
			t.Fatalf("%s: invalid JSON answer %q", path, body)
		}
	}
}

// FuzzCountText: any JSON values count at least one token.
func FuzzCountText(f *testing.F) {
	f.Add(`[{"content":"abc"}]`, `"x"`)
	f.Add(`[[1,2],"ab",{"text":"x"}]`, `{"parts":[{"text":"y"}]}`)
	f.Fuzz(func(t *testing.T, a, b string) {
		if n := countText(json.RawMessage(a), json.RawMessage(b)); n < 1 {
			t.Fatalf("countText(%q, %q) = %d", a, b, n)
		}
	})
}
