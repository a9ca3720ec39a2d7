package llmmetrics_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"time"

	"github.com/llmmetrics/llmmetrics"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// A request measured with explicit times: the role chunk carries no token,
// the usage chunk gives the exact count.
func ExampleRequest() {
	tracker, err := llmmetrics.NewTracker(
		llmmetrics.WithMeterProvider(sdkmetric.NewMeterProvider()),
		llmmetrics.WithAttributes(semconv.GenAIProviderNameOpenAI, semconv.GenAIRequestModel("gpt-4o")),
	)
	if err != nil {
		panic(err)
	}
	t0 := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

	req := tracker.StartAt(context.Background(), t0)
	req.ChunkAt(ms(180), 0) // {"delta":{"role":"assistant"}}
	req.ChunkAt(ms(240), 1) // first content: TTFT 240 ms
	req.ChunkAt(ms(260), 1)
	req.ChunkAt(ms(330), 2) // a chunk with two tokens
	req.SetUsage(57, 4)     // the include_usage chunk
	rec := req.EndAt(ms(335), nil)

	ttft, _ := rec.TTFT()
	tpot, _ := rec.TPOT()
	e2el, _ := rec.E2EL()
	fmt.Println("outcome:", rec.Outcome)
	fmt.Println("TTFT:", ttft)
	fmt.Println("TPOT:", tpot, "= (330 ms - 240 ms) / (4 - 1)")
	fmt.Println("ITL:", rec.ITL)
	fmt.Println("E2EL:", e2el, "(to the last token)")
	// Output:
	// outcome: ok
	// TTFT: 240ms
	// TPOT: 30ms = (330 ms - 240 ms) / (4 - 1)
	// ITL: [20ms 70ms]
	// E2EL: 330ms (to the last token)
}

// A reasoning model thinks before it answers: TTFT is at the first
// reasoning chunk, TTFO at the first answer chunk, and N counts both.
func ExampleRequest_ReasoningChunk() {
	tracker, err := llmmetrics.NewTracker(llmmetrics.WithMeterProvider(sdkmetric.NewMeterProvider()))
	if err != nil {
		panic(err)
	}
	t0 := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

	req := tracker.StartAt(context.Background(), t0)
	req.ReasoningChunkAt(ms(200), 1) // {"delta":{"reasoning_content":"Okay"}}
	req.ReasoningChunkAt(ms(250), 1)
	req.ChunkAt(ms(900), 1) // {"delta":{"content":"4"}}
	req.SetUsage(12, 48)    // completion_tokens, reasoning included
	req.SetReasoningTokens(38)
	rec := req.EndAt(ms(950), nil)

	ttft, _ := rec.TTFT()
	ttfo, _ := rec.TTFO()
	fmt.Println("TTFT:", ttft)
	fmt.Println("TTFO:", ttfo)
	fmt.Println("N:", rec.OutputTokens, "of which reasoning:", rec.ReasoningTokens)
	// Output:
	// TTFT: 200ms
	// TTFO: 900ms
	// N: 48 of which reasoning: 38
}

// A request with a single output token has no TPOT; one with no token has
// no TTFT, and its E2EL runs to End.
func ExampleRecord_TPOT() {
	t0 := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	one := llmmetrics.Record{Start: t0, FirstToken: t0.Add(90 * time.Millisecond), LastToken: t0.Add(90 * time.Millisecond), OutputTokens: 1}
	none := llmmetrics.Record{Start: t0, End: t0.Add(2 * time.Second), Outcome: llmmetrics.OutcomeError}

	_, ok := one.TPOT()
	fmt.Println("one token has TPOT:", ok)
	_, ok = none.TTFT()
	e2el, _ := none.E2EL()
	fmt.Println("no token has TTFT:", ok, "E2EL:", e2el)
	// Output:
	// one token has TPOT: false
	// no token has TTFT: false E2EL: 2s
}

// An OpenAI-compatible streaming response read through NewReader: the
// caller gets the body's bytes unchanged while the request is measured.
func ExampleNewReader() {
	const stream = `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}

data: {"choices":[{"index":0,"delta":{"content":"Hello"}}]}

data: {"choices":[{"index":0,"delta":{"content":" world"}}]}

data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}

data: {"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}

data: [DONE]

`
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, stream)
	}))
	defer server.Close()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()

	tracker, err := llmmetrics.NewTracker(llmmetrics.WithMeterProvider(sdkmetric.NewMeterProvider()))
	if err != nil {
		panic(err)
	}
	req := tracker.Start(context.Background())
	resp, err := client.Get(server.URL)
	if err != nil {
		req.End(err)
		panic(err)
	}
	body := llmmetrics.NewReader(req, resp.Body, llmmetrics.ProtocolOpenAI.NewDecoder())
	got, err := io.ReadAll(body) // EOF ends the request
	body.Close()
	rec := req.End(err) // End is idempotent: the Record of the first End

	fmt.Println("bytes unchanged:", bytes.Equal(got, []byte(stream)))
	fmt.Println("outcome:", rec.Outcome)
	fmt.Println("chunks with tokens:", rec.Chunks)
	fmt.Println("tokens (from the usage chunk):", rec.InputTokens, "in,", rec.OutputTokens, "out")
	// Output:
	// bytes unchanged: true
	// outcome: ok
	// chunks with tokens: 2
	// tokens (from the usage chunk): 9 in, 2 out
}

// A decoder for a made-up SSE protocol, as bufio's ExampleScanner_custom is
// a split function for a made-up format: "token" events carry one token,
// "usage" events the counts ("input output"), "end" ends the stream. A
// usage event that does not hold two counts is malformed: interpret returns
// an error, and the decoder's Err reports it after the stream.
func ExampleNewSSEDecoder() {
	interpret := func(event, data []byte) (llmmetrics.Frame, error) {
		switch string(event) {
		case "token":
			return llmmetrics.Frame{Tokens: 1}, nil
		case "usage":
			in, out, ok := strings.Cut(string(data), " ")
			i, err1 := strconv.Atoi(in)
			o, err2 := strconv.Atoi(out)
			if !ok || errors.Join(err1, err2) != nil {
				return llmmetrics.Frame{}, fmt.Errorf("usage %q is not two counts", data)
			}
			return llmmetrics.Frame{HasUsage: true, InputTokens: i, OutputTokens: o}, nil
		case "end":
			return llmmetrics.Frame{Done: true}, nil
		}
		return llmmetrics.Frame{}, nil // other events carry nothing
	}
	stream := "event: token\ndata: Hel\n\nevent: token\ndata: lo\n\n: keep-alive\n\n" +
		"event: usage\ndata: 5 two\n\nevent: usage\ndata: 5 2\n\nevent: end\ndata:\n\n"

	dec := llmmetrics.NewSSEDecoder(interpret)
	emit := func(f llmmetrics.Frame) {
		fmt.Printf("tokens %d, usage %v (%d in, %d out), done %v\n", f.Tokens, f.HasUsage, f.InputTokens, f.OutputTokens, f.Done)
	}
	// The stream arrives in pieces that cut events anywhere.
	for p := []byte(stream); len(p) > 0; p = p[min(7, len(p)):] {
		dec.Decode(p[:min(7, len(p))], emit)
	}
	dec.Flush(emit)
	fmt.Println("err:", dec.Err())
	// Output:
	// tokens 1, usage false (0 in, 0 out), done false
	// tokens 1, usage false (0 in, 0 out), done false
	// tokens 0, usage false (0 in, 0 out), done false
	// tokens 0, usage true (5 in, 2 out), done false
	// tokens 0, usage false (0 in, 0 out), done true
	// err: llmmetrics: malformed frame: sse event: usage "5 two" is not two counts
}
