package llmmetricstest_test

import (
	"bufio"
	"context"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/llmmetrics/llmmetrics/llmmetricstest"
)

func ExampleClock() {
	clock := llmmetricstest.NewClock(time.Time{})
	var now func() time.Time = clock.Now // what a Tracker's WithClock takes
	start := now()
	clock.Advance(250 * time.Millisecond)
	fmt.Println(start.Format(time.RFC3339), now().Sub(start))
	// Output: 2025-01-01T00:00:00Z 250ms
}

func ExampleCollector() {
	mp, col := llmmetricstest.NewMeterProvider()
	meter := mp.Meter("example")
	ctx := context.Background()
	ttft, _ := meter.Float64Histogram("ttft", metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(0.1, 0.5))
	requests, _ := meter.Int64Counter("requests")
	for _, v := range []float64{0.05, 0.2, 0.3} {
		ttft.Record(ctx, v)
	}
	requests.Add(ctx, 2, metric.WithAttributes(attribute.String("outcome", "ok")))
	requests.Add(ctx, 1, metric.WithAttributes(attribute.String("outcome", "error")))

	m, _ := col.Read(ctx) // in a test: m := col.Collect(t)
	fmt.Println(m.Count("ttft"), m.Bounds("ttft"), m.Buckets("ttft"))
	fmt.Println(m.Value("requests"), m.Value("requests", attribute.String("outcome", "ok")))
	// Output:
	// 3 [0.1 0.5] [1 2 0]
	// 3 2
}

func ExampleServer() {
	s := llmmetricstest.NewServer(llmmetricstest.ServerConfig{
		BaseTPOT:  time.Millisecond, // fast, for the example
		OutputMin: 4, OutputMax: 4,
	})
	defer s.Close()
	body := `{"messages":[{"role":"user","content":"Hello"}],"stream":true,"stream_options":{"include_usage":true}}`
	resp, err := s.Client().Post(s.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	events := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			events++
			if data == "[DONE]" {
				fmt.Println("events:", events)
			}
		}
	}
	st := s.Stats()
	fmt.Println("ok:", st.OK, "prompt tokens:", st.PromptTokens, "completion tokens:", st.CompletionTokens)
	// Output:
	// events: 8
	// ok: 1 prompt tokens: 2 completion tokens: 4
}

// The same server speaks Anthropic, Gemini and Ollama too; Stats counts
// every protocol's tokens alike.
func ExampleServer_protocols() {
	s := llmmetricstest.NewServer(llmmetricstest.ServerConfig{BaseTPOT: time.Millisecond, OutputMin: 4, OutputMax: 4})
	defer s.Close()
	for _, r := range []struct{ api, path, body string }{
		{"anthropic", "/v1/messages", `{"max_tokens":100,"stream":true,"messages":[{"role":"user","content":"Hello"}]}`},
		{"gemini", "/v1beta/models/" + llmmetricstest.DefaultModel + ":streamGenerateContent?alt=sse", `{"contents":[{"parts":[{"text":"Hello"}]}]}`},
		{"ollama", "/api/generate", `{"prompt":"Hello","stream":false,"options":{"num_predict":3}}`},
	} {
		resp, err := s.Client().Post(s.URL+r.path, "application/json", strings.NewReader(r.body))
		if err != nil {
			fmt.Println(err)
			return
		}
		lines := 0
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if sc.Text() != "" {
				lines++
			}
		}
		resp.Body.Close()
		fmt.Println(r.api, resp.Header.Get("Content-Type"), lines, "lines")
	}
	st := s.Stats()
	fmt.Println("ok:", st.OK, "completion tokens:", st.CompletionTokens)
	// Output:
	// anthropic text/event-stream 20 lines
	// gemini text/event-stream 4 lines
	// ollama application/json; charset=utf-8 1 lines
	// ok: 3 completion tokens: 11
}
