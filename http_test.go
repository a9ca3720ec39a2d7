package llmmetrics

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

func TestDetectProtocol(t *testing.T) {
	const (
		sse    = "text/event-stream"
		js     = "application/json"
		ndjson = "application/x-ndjson"
	)
	tests := []struct {
		path, ct string
		want     Protocol
	}{
		{"/v1/chat/completions", sse, ProtocolOpenAI},
		{"/v1/completions", "text/event-stream; charset=utf-8", ProtocolOpenAI},
		{"/v1/responses", "Text/Event-Stream", ProtocolOpenAI},
		{"/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21", sse, ProtocolOpenAI},
		{"/api/v1/chat/completions", sse, ProtocolOpenAI},    // OpenRouter
		{"/openai/v1/chat/completions", sse, ProtocolOpenAI}, // Groq
		{"/v1/chat/completions/", sse, ProtocolOpenAI},
		{"/v1/messages", sse, ProtocolAnthropic},
		{"/v1beta/models/gemini-2.5-flash:streamGenerateContent", sse, ProtocolGemini},
		{"/v1beta/models/gemini-2.5-flash:streamGenerateContent", js, ProtocolGemini}, // no alt=sse: a JSON array
		{"/v1beta/models/gemini-2.5-flash:generateContent", js, ProtocolJSON},
		{"/api/chat", ndjson, ProtocolOllama},
		{"/api/generate", "", ProtocolOllama},
		{"/api/chat", js, ProtocolJSON}, // "stream": false
		{"/v1/chat/completions", js, ProtocolJSON},
		{"/v1/chat/completions", "application/json; charset=utf-8", ProtocolJSON},
		{"/v1/messages", js, ProtocolJSON},
		{"/v1/embeddings", js, ProtocolJSON},
		{"/v1/chat/completions", "", ProtocolOpenAI},
		{"/v1/chat/completions", "text/plain", ProtocolOpenAI},
		{"/generate", sse, ProtocolUnknown},
		{"/api/chat", sse, ProtocolUnknown}, // Ollama does not speak SSE: sniffed
		{"/generate", js, ProtocolJSON},
		{"/generate", ndjson, ProtocolOllama},
		{"/generate", "", ProtocolUnknown},
		{"/v1/messages/count_tokens", js, ProtocolJSON},
		{"/v1/messages/batches", sse, ProtocolUnknown},
	}
	for _, tc := range tests {
		t.Run(tc.path+" "+tc.ct, func(t *testing.T) {
			assert.Equal(t, tc.want, detectProtocol(tc.path, tc.ct))
		})
	}
}

func TestClassifyPath(t *testing.T) {
	tests := []struct {
		path  string
		op    attribute.KeyValue
		model string
	}{
		{"/v1/chat/completions", semconv.GenAIOperationNameChat, ""},
		{"/v1/completions", semconv.GenAIOperationNameTextCompletion, ""},
		{"/v1/responses", semconv.GenAIOperationNameChat, ""},
		{"/v1/embeddings", semconv.GenAIOperationNameEmbeddings, ""},
		{"/v1/messages", semconv.GenAIOperationNameChat, ""},
		{"/openai/deployments/my-4o/chat/completions", semconv.GenAIOperationNameChat, "my-4o"},
		{"/v1beta/models/gemini-2.5-pro:generateContent", semconv.GenAIOperationNameGenerateContent, "gemini-2.5-pro"},
		{"/v1/projects/p/locations/us-central1/publishers/google/models/gemini-2.0-flash:streamGenerateContent",
			semconv.GenAIOperationNameGenerateContent, "gemini-2.0-flash"},
		{"/v1beta/models/text-embedding-004:embedContent", semconv.GenAIOperationNameEmbeddings, "text-embedding-004"},
		{"/api/chat", semconv.GenAIOperationNameChat, ""},
		{"/api/generate", semconv.GenAIOperationNameTextCompletion, ""},
		{"/api/embed", semconv.GenAIOperationNameEmbeddings, ""},
		{"/api/embeddings", semconv.GenAIOperationNameEmbeddings, ""},
		{"/v1/models", attribute.KeyValue{}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			ep := classifyPath(tc.path)
			assert.Equal(t, tc.op, ep.op)
			assert.Equal(t, tc.model, ep.pathModel)
		})
	}
	assert.Equal(t, ProtocolOllama, classifyPath("/api/embeddings").proto, "Ollama's, not OpenAI's /embeddings")
	assert.True(t, classifyPath("/v1/chat/completions").streamOptions)
	assert.False(t, classifyPath("/v1/responses").streamOptions)
}

func TestProviderOf(t *testing.T) {
	tests := []struct {
		host  string
		proto Protocol
		want  string // "" for none
	}{
		{"api.openai.com", ProtocolOpenAI, "openai"},
		{"API.OpenAI.com:443", ProtocolOpenAI, "openai"},
		{"my-res.openai.azure.com", ProtocolOpenAI, "azure.ai.openai"},
		{"my-res.services.ai.azure.com", ProtocolOpenAI, "azure.ai.inference"},
		{"api.anthropic.com", ProtocolAnthropic, "anthropic"},
		{"generativelanguage.googleapis.com", ProtocolGemini, "gcp.gemini"},
		{"us-central1-aiplatform.googleapis.com", ProtocolGemini, "gcp.vertex_ai"},
		{"api.groq.com", ProtocolOpenAI, "groq"},
		{"api.deepseek.com", ProtocolOpenAI, "deepseek"},
		{"api.mistral.ai", ProtocolOpenAI, "mistral_ai"},
		{"api.x.ai", ProtocolOpenAI, "x_ai"},
		{"bedrock-runtime.us-east-1.amazonaws.com", ProtocolUnknown, "aws.bedrock"},
		{"127.0.0.1:8000", ProtocolOpenAI, "openai"},
		{"[::1]:11434", ProtocolOllama, "ollama"},
		{"[::1]", ProtocolAnthropic, "anthropic"},
		{"localhost", ProtocolUnknown, ""},
	}
	for _, tc := range tests {
		t.Run(tc.host, func(t *testing.T) {
			kv := providerOf(tc.host, tc.proto)
			if tc.want == "" {
				assert.False(t, kv.Valid())
				return
			}
			assert.Equal(t, semconv.GenAIProviderNameKey.String(tc.want), kv)
		})
	}
}

func TestProtocolNewDecoder(t *testing.T) {
	assert.IsType(t, &sseDecoder{}, ProtocolOpenAI.NewDecoder())
	assert.IsType(t, &sseDecoder{}, ProtocolAnthropic.NewDecoder())
	assert.IsType(t, &usageDecoder{}, ProtocolJSON.NewDecoder())
	assert.IsType(t, &sniffDecoder{}, ProtocolUnknown.NewDecoder())
	assert.Nil(t, Protocol(200).NewDecoder())
	assert.Equal(t, "openai", ProtocolOpenAI.String())
	assert.Equal(t, "Protocol(200)", Protocol(200).String())
}

func TestSniffDecoder(t *testing.T) {
	tests := []struct {
		name string
		data string
		want func() Decoder // the decoder the sniff must agree with; nil: no frames
	}{
		{"openai chat", testdataFile(t, "sse", "openai_chat.sse"), openAI},
		{"openai responses", testdataFile(t, "sse", "openai_responses.sse"), openAI},
		{"vllm", testdataFile(t, "sse", "vllm_continuous_usage.sse"), openAI},
		{"anthropic", testdataFile(t, "sse", "anthropic_thinking_tools.sse"), anthropic},
		{"keep-alives first", ": ping\n\n: ping\n\n" + testdataFile(t, "sse", "openai_chat.sse"), openAI},
		{"error event first, then openai", "data: {\"error\":{\"message\":\"x\"}}\n\n" + testdataFile(t, "sse", "openai_chat.sse"), openAI},
		{"json answer", "\n " + testdataFile(t, "json", "openai_chat_completion.json"), func() Decoder { return newUsageDecoder() }},
		{"gemini", testdataFile(t, "gemini", "stream_thinking.sse"), func() Decoder { return newGeminiDecoder() }},
		{"nothing known", strings.Repeat("data: {\"x\":1}\n\n", 20), nil},
		{"not SSE", "hello world\n", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_ = otelErrors(t) // the "error event" case reports nothing it should not; silence otel's default logger
			data := []byte(tc.data)
			var want []frameView
			if tc.want != nil {
				want = decodePieces(tc.want(), data)
				require.NotEmpty(t, want)
			}
			assert.Equal(t, want, decodePieces(ProtocolUnknown.NewDecoder(), data))
			for cut := 0; cut <= len(data); cut += 1 + len(data)/200 {
				require.Equal(t, want, decodePieces(ProtocolUnknown.NewDecoder(), data[:cut], data[cut:]), "split at %d", cut)
			}
		})
	}
}

func TestSniffDecoderGivesUpOnLargeUndecidedBodies(t *testing.T) {
	d := newSniffDecoder(nil)
	big := []byte("data: {\"x\":\"" + strings.Repeat("y", maxSniffBytes) + "\"}\n\n")
	var frames []Frame
	d.Decode(big, func(f Frame) { frames = append(frames, f) })
	d.Decode([]byte(testdataFile(t, "sse", "openai_chat.sse")), func(f Frame) { frames = append(frames, f) })
	d.Flush(func(f Frame) { frames = append(frames, f) })
	assert.Empty(t, frames)
	assert.Nil(t, d.buf, "memory is released")
}

func TestIncludeUsageRewrite(t *testing.T) {
	const add = `"stream_options":{"include_usage":true}`
	tests := []struct {
		name, path, body, want string // want "" for: sent unchanged
	}{
		{"absent", "/v1/chat/completions", `{"model":"m","stream":true}`, `{"model":"m","stream":true,` + add + `}`},
		{"completions", "/v1/completions", `{"prompt":"x","stream":true}`, `{"prompt":"x","stream":true,` + add + `}`},
		{"pretty-printed", "/v1/chat/completions", "{\n  \"stream\": true\n}\n", "{\n  \"stream\": true\n," + add + "}\n"},
		{"merged into an object", "/v1/chat/completions", `{"stream":true,"stream_options":{"continuous_usage_stats":true}}`,
			`{"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`},
		{"merged into an empty object", "/v1/chat/completions", `{"stream_options": { },"stream":true}`,
			`{"stream_options": {"include_usage":true },"stream":true}`},
		{"null replaced", "/v1/chat/completions", `{"stream":true,"stream_options":null}`, `{"stream":true,"stream_options":{"include_usage":true}}`},
		{"the last of two stream_options", "/v1/chat/completions", `{"stream_options":{"include_usage":false},"stream":true,"stream_options":{}}`,
			`{"stream_options":{"include_usage":false},"stream":true,"stream_options":{"include_usage":true}}`},
		{"explicit false kept", "/v1/chat/completions", `{"stream":true,"stream_options":{"include_usage":false}}`, ""},
		{"explicit true kept", "/v1/chat/completions", `{"stream":true,"stream_options":{"include_usage":true}}`, ""},
		{"not streaming", "/v1/chat/completions", `{"model":"m","stream":false}`, ""},
		{"stream absent", "/v1/chat/completions", `{"model":"m"}`, ""},
		{"stream as a string", "/v1/chat/completions", `{"stream":"true"}`, ""},
		{"responses API", "/v1/responses", `{"stream":true}`, ""},
		{"anthropic", "/v1/messages", `{"stream":true}`, ""},
		{"stream_options not an object", "/v1/chat/completions", `{"stream":true,"stream_options":[]}`, ""},
		{"not JSON", "/v1/chat/completions", `{"stream":true`, ""},
		{"trailing garbage", "/v1/chat/completions", `{"stream":true} x`, `{"stream":true,` + add + `} x`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr, _ := httpTracker(t)
			base := &recordingBase{}
			req := post(t, context.Background(), "http://llm"+tc.path, tc.body)
			resp, err := NewTransport(tr, base, WithIncludeUsage()).RoundTrip(req)
			require.NoError(t, err)
			_ = resp.Body.Close()
			want := tc.want
			if want == "" {
				want = tc.body
			} else {
				assert.True(t, json.Valid([]byte(strings.TrimSuffix(want, " x"))), "the rewritten body is JSON")
				sent := base.reqs[0]
				assert.Equal(t, int64(len(want)), sent.ContentLength)
				rc, err := sent.GetBody()
				require.NoError(t, err)
				again, _ := io.ReadAll(rc)
				assert.Equal(t, want, string(again), "GetBody replays the new body")
			}
			assert.Equal(t, want, base.bodies[0])
		})
	}
}

func TestIncludeUsageBodyTooLarge(t *testing.T) {
	tr, _ := httpTracker(t)
	base := &recordingBase{}
	body := `{"stream":true,"messages":[{"content":"` + strings.Repeat("x", maxRequestBytes) + `"}],"model":"m"}`
	req := post(t, context.Background(), "http://llm/v1/chat/completions", body)
	req.GetBody = nil
	resp, err := NewTransport(tr, base, WithIncludeUsage()).RoundTrip(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, len(body), len(base.bodies[0]))
	assert.True(t, base.bodies[0] == body, "a body over the limit is sent unchanged")
	assert.Equal(t, int64(len(body)), base.reqs[0].ContentLength)
}

func TestRequestBodyReadErrorIsReplayed(t *testing.T) {
	tr, _ := httpTracker(t)
	boom := io.ErrClosedPipe
	body := io.MultiReader(strings.NewReader(`{"messages":[`), errReader{boom})
	req, err := http.NewRequest(http.MethodPost, "http://llm/v1/chat/completions", body)
	require.NoError(t, err)
	var sentErr error
	var sent []byte
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		sent, sentErr = io.ReadAll(r.Body)
		return nil, sentErr
	})
	_, err = NewTransport(tr, base).RoundTrip(req)
	assert.ErrorIs(t, err, boom)
	assert.Equal(t, `{"messages":[`, string(sent), "the bytes read ahead, then the same error")
	recs := ended(tr)
	require.Len(t, recs, 1)
	assert.Equal(t, OutcomeError, recs[0].Outcome)
}

func TestHTTPStatusError(t *testing.T) {
	err := &HTTPStatusError{StatusCode: 429}
	assert.Equal(t, "llmmetrics: HTTP status 429 Too Many Requests", err.Error())
	assert.Equal(t, semconv.ErrorTypeKey.String("429"), semconv.ErrorType(err))
}

func TestRequestBodyReplayedAfterTheModel(t *testing.T) {
	// A body of unknown length is read only up to "model"; the rest
	// follows from the original body, which the copy's Close closes.
	tr, reader := httpTracker(t)
	head, rest := `{"model":"m1",`, `"messages":[{"role":"user","content":"hi"}],"stream":true}`
	closed := false
	body := struct {
		io.Reader
		io.Closer
	}{io.MultiReader(strings.NewReader(head), strings.NewReader(rest)), closerFunc(func() error { closed = true; return nil })}
	req, err := http.NewRequest(http.MethodPost, "http://llm/v1/chat/completions", body)
	require.NoError(t, err)
	require.Zero(t, req.ContentLength, "unknown length")
	base := &recordingBase{}
	resp, err := NewTransport(tr, base).RoundTrip(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	assert.Equal(t, head+rest, base.bodies[0])
	assert.True(t, closed)
	assert.Equal(t, map[string]int64{"gen_ai.operation.name=chat gen_ai.provider.name=openai gen_ai.request.model=m1 llmmetrics.outcome=ok llmmetrics.role=client": 1},
		requestSets(t, reader))
}

func TestRequestBodyReadToItsEndGetsAGetBody(t *testing.T) {
	// A body of known length but no GetBody, read to its end to find the
	// model: the copy sent can replay it.
	tr, _ := httpTracker(t)
	body := `{"messages":[],"model":"m2"}`
	req, err := http.NewRequest(http.MethodPost, "http://llm/v1/chat/completions", io.MultiReader(strings.NewReader(body)))
	require.NoError(t, err)
	req.ContentLength = int64(len(body))
	require.Nil(t, req.GetBody)
	base := &recordingBase{}
	resp, err := NewTransport(tr, base).RoundTrip(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, body, base.bodies[0])
	assert.Nil(t, req.GetBody, "the caller's request is unchanged")
	require.NotNil(t, base.reqs[0].GetBody)
	rc, err := base.reqs[0].GetBody()
	require.NoError(t, err)
	again, _ := io.ReadAll(rc)
	assert.Equal(t, body, string(again))
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// FuzzSniffDecoder checks that the sniffing decoder never panics and gives
// the same frames however the body is cut.
func FuzzSniffDecoder(f *testing.F) {
	for _, name := range []string{"openai_chat.sse", "anthropic_thinking_tools.sse", "openai_responses.sse"} {
		b, err := os.ReadFile(filepath.Join("testdata", "sse", name))
		if err == nil {
			f.Add(b, uint16(100))
		}
	}
	f.Add([]byte(`{"usage":{"prompt_tokens":1}}`), uint16(3))
	f.Add([]byte("data: {\"candidates\":[]}\n\n"), uint16(9))
	quietOtel(f)
	f.Fuzz(func(t *testing.T, data []byte, cut uint16) {
		whole := decodePieces(ProtocolUnknown.NewDecoder(), data)
		c := int(cut) % (len(data) + 1)
		require.Equal(t, whole, decodePieces(ProtocolUnknown.NewDecoder(), data[:c], data[c:]), "split at %d", c)
	})
}
