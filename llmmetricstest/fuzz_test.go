package llmmetricstest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzServe posts arbitrary bodies to both endpoints: the server never
// panics, answers 200, 400 or 404, and a 200 stream ends with [DONE].
func FuzzServe(f *testing.F) {
	for _, seed := range []string{
		chatBody(8, true, true, ""),
		chatBody(8, false, false, `,"max_completion_tokens":2`),
		`{"prompt":[[1,2],[3]],"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`,
		`{"messages":[{"content":[{"type":"text","text":5}]}],"max_tokens":-3}`,
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
		for _, path := range []string{"/v1/chat/completions", "/v1/completions"} {
			w := httptest.NewRecorder()
			s.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
			switch w.Code {
			case http.StatusOK:
				if strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
					if !strings.HasSuffix(w.Body.String(), "data: [DONE]\n\n") {
						t.Fatalf("%s: stream does not end with [DONE]: %q", path, w.Body.String())
					}
				} else if !json.Valid(w.Body.Bytes()) {
					t.Fatalf("%s: invalid JSON answer %q", path, w.Body.String())
				}
			case http.StatusBadRequest, http.StatusNotFound:
			default:
				t.Fatalf("%s: status %d for %q", path, w.Code, body)
			}
		}
	})
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
