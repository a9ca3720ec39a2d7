package llmmetrics_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/llmmetrics/llmmetrics"
)

// A client measured by NewTransport: a streamed answer, a non-streaming
// answer and a rate-limited call to an OpenAI-compatible server.
func ExampleNewTransport() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case strings.Contains(string(body), `"stream":true`):
			w.Header().Set("Content-Type", "text/event-stream")
			for _, ev := range []string{
				`{"choices":[{"delta":{"content":"Hello"}}]}`,
				`{"choices":[{"delta":{"content":" world"}}]}`,
				`{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2}}`,
				`[DONE]`,
			} {
				fmt.Fprintf(w, "data: %s\n\n", ev)
			}
		case strings.Contains(string(body), `"model":"busy"`):
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error":{"message":"slow down","type":"requests"}}`)
		default:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"choices":[{"message":{"content":"Hi"}}],"usage":{"prompt_tokens":4,"completion_tokens":1}}`)
		}
	}))
	defer srv.Close()

	tracker, _ := llmmetrics.NewTracker()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: llmmetrics.NewTransport(tracker, base)}

	for _, body := range []string{
		`{"model":"m","stream":true,"messages":[]}`,
		`{"model":"m","messages":[]}`,
		`{"model":"busy","messages":[]}`,
	} {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost,
			srv.URL+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			panic(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}

	s := tracker.Snapshot()
	fmt.Println("requests:", s.Requests, "completed:", s.Completed, "failed:", s.Failed)
	fmt.Println("tokens in/out:", s.InputTokens, s.OutputTokens)
	fmt.Println("answers with a TTFT:", s.TTFT.Count) // only the stream
	// Output:
	// requests: 3 completed: 2 failed: 1
	// tokens in/out: 9 3
	// answers with a TTFT: 1
}
