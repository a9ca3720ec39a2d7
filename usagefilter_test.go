package llmmetrics

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// withoutUsageChunks is the reference for usageFilter: the stream split
// into events at empty lines, less the events whose data is a JSON object
// with "choices": [] and a "usage" object.
func withoutUsageChunks(t *testing.T, stream string) string {
	t.Helper()
	var out strings.Builder
	var events []string // each ends with its empty line (the last may lack it)
	ev := ""
	for _, line := range strings.SplitAfter(stream, "\n") {
		ev += line
		if strings.Trim(line, "\r\n") == "" {
			events, ev = append(events, ev), ""
		}
	}
	events = append(events, ev)
	for _, ev := range events {
		var data []string
		for _, line := range strings.Split(strings.ReplaceAll(ev, "\r", ""), "\n") {
			if d, ok := strings.CutPrefix(line, "data:"); ok {
				data = append(data, strings.TrimPrefix(d, " "))
			}
		}
		var chunk struct {
			Choices *[]json.RawMessage `json:"choices"`
			Usage   json.RawMessage    `json:"usage"`
		}
		if json.Unmarshal([]byte(strings.Join(data, "\n")), &chunk) == nil &&
			chunk.Choices != nil && len(*chunk.Choices) == 0 && bytes.HasPrefix(chunk.Usage, []byte("{")) {
			continue
		}
		out.WriteString(ev)
	}
	return out.String()
}

const usageChunk = `data: {"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":14,"completion_tokens":7,"total_tokens":21}}` + "\n\n"

// TestUsageFilter: the caller reads the stream less the usage-only chunk,
// byte for byte, however the stream is cut into Reads.
func TestUsageFilter(t *testing.T) {
	streams := map[string]string{
		"openai_chat.sse":                                          testdataFile(t, "sse", "openai_chat.sse"),
		"openai_completions.sse":                                   testdataFile(t, "sse", "openai_completions.sse"),
		"openai_chat_reasoning_usage.sse":                          testdataFile(t, "sse", "openai_chat_reasoning_usage.sse"),
		"azure_content_filter.sse (choices [] without usage kept)": testdataFile(t, "sse", "azure_content_filter.sse"),
		"vllm_continuous_usage.sse (usage on every chunk)":         testdataFile(t, "sse", "vllm_continuous_usage.sse"),
		"openai_keepalive_crlf.sse":                                testdataFile(t, "sse", "openai_keepalive_crlf.sse"),
		"usage chunk with CRLF lines":                              strings.ReplaceAll(sseChunk("a")+usageChunk+"data: [DONE]\n\n", "\n", "\r\n"),
		"usage chunk over two data lines":                          sseChunk("a") + "data: {\"choices\": [ ],\ndata: \"usage\":{\"completion_tokens\":1}}\n\n" + "data: [DONE]\n\n",
		"usage chunk last, without its empty line":                 sseChunk("a") + strings.TrimSuffix(usageChunk, "\n\n"),
		"usage chunk with event and id lines":                      sseChunk("a") + "id: 9\nevent: chunk\n" + usageChunk + ": ping\n\ndata: [DONE]\n\n",
		"usage null and choices []: kept":                          `data: {"choices":[],"usage":null}` + "\n\n",
		"choices not an array: kept":                               `data: {"choices":{},"usage":{}}` + "\n\n",
		"not JSON: kept":                                           "data: {\"choices\":[],\"usage\":{} oops\n\n",
		"empty lines only":                                         "\n\n\n" + usageChunk + "\n",
	}
	for name, stream := range streams {
		t.Run(name, func(t *testing.T) {
			want := withoutUsageChunks(t, stream)
			if strings.Contains(name, "usage chunk") || strings.HasPrefix(name, "openai_c") {
				require.Less(t, len(want), len(stream), "the reference drops the usage chunk")
			}
			got, err := io.ReadAll(newUsageFilter(io.NopCloser(iotest.OneByteReader(strings.NewReader(stream)))))
			require.NoError(t, err)
			assert.Equal(t, want, string(got), "one byte per Read")
			for cut := 1; cut < len(stream); cut++ {
				src := io.MultiReader(strings.NewReader(stream[:cut]), strings.NewReader(stream[cut:]))
				got, err := io.ReadAll(newUsageFilter(io.NopCloser(src)))
				require.NoError(t, err)
				require.Equal(t, want, string(got), "cut at %d", cut)
			}
		})
	}
}

// TestUsageFilterKeepsReadErrors: src's error reaches the caller after the
// bytes before it.
func TestUsageFilterKeepsReadErrors(t *testing.T) {
	cut := io.ErrUnexpectedEOF
	body := sseChunk("a") + `data: {"choices":[],"usa`
	got, err := io.ReadAll(newUsageFilter(io.NopCloser(io.MultiReader(strings.NewReader(body), iotest.ErrReader(cut)))))
	assert.ErrorIs(t, err, cut)
	assert.Equal(t, body, string(got), "an event cut before it is known is passed on")
}

// TestUsageFilterDoesNotAllocatePerEvent: after the first events, reading
// events through the filter allocates nothing.
func TestUsageFilterDoesNotAllocatePerEvent(t *testing.T) {
	ev := []byte(sseChunk("word") + usageChunk)
	f := newUsageFilter(io.NopCloser(&repeatReader{line: ev}))
	buf := make([]byte, 4<<10)
	for range 10 {
		_, _ = f.Read(buf)
	}
	allocs := testing.AllocsPerRun(1000, func() { _, _ = f.Read(buf) })
	assert.Zero(t, allocs)
}

// TestTransportHidesTheUsageChunkItAskedFor: with WithIncludeUsage, a
// caller who did not ask for the usage chunk reads the stream without it,
// while the request still gets the exact usage; a caller who asked for it
// reads it.
func TestTransportHidesTheUsageChunkItAskedFor(t *testing.T) {
	stream := testdataFile(t, "sse", "openai_chat.sse")
	for _, tc := range []struct {
		name, body string
		hidden     bool
	}{
		{"the library asked for it: hidden", chatBody, true},
		{"the caller asked for it: passed on", `{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, _ := httpTracker(t)
			client, url := newLLMClient(t, tr, answer(200, "text/event-stream", stream), WithIncludeUsage())
			resp, err := client.Do(post(t, t.Context(), url+"/v1/chat/completions", tc.body))
			require.NoError(t, err)
			got, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			if tc.hidden {
				assert.Equal(t, withoutUsageChunks(t, stream), string(got))
			} else {
				assert.Equal(t, stream, string(got))
			}
			recs := ended(tr)
			require.Len(t, recs, 1)
			assert.Equal(t, OutcomeOK, recs[0].Outcome)
			assert.Equal(t, 7, recs[0].OutputTokens, "the usage chunk's count")
			assert.Equal(t, 14, recs[0].InputTokens)
		})
	}
}
