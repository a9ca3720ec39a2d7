package bench

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/cmd/llmmetrics/internal/workload"
	"github.com/stretchr/testify/require"
)

// BenchmarkRequest compares one short streamed request sent the way an
// open-loop level sends it (its session taken and its body built, sent
// through the measured client, its Record and timing kept, its line of
// records.jsonl written) with the same request sent by a plain
// net/http client (the baseline), against the same in-process server. The
// server is a few lines over raw TCP that answers every request with one
// content chunk, its end and its usage, so its own CPU per request is
// small beside the client's. Compare the sub-benchmarks' ratio, not
// absolute times; pin it to one core as the load generator runs:
//
//	taskset -c 0 go test -run '^$' -bench Request -benchtime 20000x ./internal/bench
func BenchmarkRequest(b *testing.B) {
	url := rawSSEServer(b)
	b.Run("baseline-net-http", func(b *testing.B) {
		hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16, DisableCompression: true}}
		defer hc.CloseIdleConnections()
		body := workload.Body("chat", "m", workload.Request{Messages: []workload.Message{{Role: "user", Content: strings.Repeat("word ", 13)}}, OutputTokens: 128}, false)
		buf := make([]byte, 32<<10)
		b.ReportAllocs()
		for b.Loop() {
			req, err := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", bytes.NewReader(body))
			require.NoError(b, err)
			req.Header.Set("Content-Type", "application/json")
			resp, err := hc.Do(req)
			require.NoError(b, err)
			_, err = io.CopyBuffer(io.Discard, resp.Body, buf)
			require.NoError(b, err)
			resp.Body.Close()
		}
	})
	b.Run("bench-open-loop", func(b *testing.B) {
		o, err := parseFlags([]string{"-url", url + "/v1", "-model", "m", "-input-tokens", "16", "-rates", "1000", "-out", b.TempDir()}, io.Discard)
		require.NoError(b, err)
		bn, err := newBench(o, env{stdout: io.Discard, stderr: io.Discard})
		require.NoError(b, err)
		defer bn.close()
		bn.wl, err = workload.Open(o.wl.config(o.seed))
		require.NoError(b, err)
		bn.records, err = os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		require.NoError(b, err)
		const batch = 1024 // requests per repeat: records.jsonl is written per repeat
		ctx := context.Background()
		var r *repeatRun
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			k := i % batch
			if k == 0 {
				r = newRepeatRun(bn, 0, batch)
			}
			t := r.take()
			require.NotNil(b, t)
			r.session(ctx, t, time.Now(), nil)
			if k == batch-1 {
				require.NoError(b, bn.writeRecords(1000, 0, r.result()))
			}
		}
		b.StopTimer()
		for i, rec := range r.records {
			if r.used[i] {
				require.Equal(b, 1, rec.OutputTokens, "the answer's one token was measured")
			}
		}
	})
}

// rawSSEServer serves, on 127.0.0.1, every HTTP/1.1 request it reads with
// one streamed chat completion chunk, its end and its usage (in two writes,
// as a server that flushes each event), and returns its base URL.
func rawSSEServer(b *testing.B) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	var wg sync.WaitGroup
	b.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	first := chunked(`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"tok "},"finish_reason":null}]}` + "\n\n")
	rest := chunked(`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}` + "\n\n" +
		`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":1,"total_tokens":11}}` + "\n\ndata: [DONE]\n\n")
	head := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n"
	first = append([]byte(head), first...)
	rest = append(rest, "0\r\n\r\n"...)
	var conns sync.WaitGroup
	wg.Go(func() {
		defer conns.Wait()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Go(func() { serveRaw(c, first, rest) })
		}
	})
	b.Cleanup(func() { conns.Wait() })
	return "http://" + ln.Addr().String()
}

// chunked is s as one chunk of HTTP/1.1 chunked transfer coding.
func chunked(s string) []byte {
	return []byte(strconv.FormatInt(int64(len(s)), 16) + "\r\n" + s + "\r\n")
}

// serveRaw answers each request read from c (its headers, then a body of
// its Content-Length) with first then rest, until c ends.
func serveRaw(c net.Conn, first, rest []byte) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		n := -1
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				return
			}
			if len(line) <= 2 {
				break
			}
			if k, v, ok := strings.Cut(string(line), ":"); ok && strings.EqualFold(k, "Content-Length") {
				n, _ = strconv.Atoi(strings.TrimSpace(v))
			}
		}
		if n < 0 {
			return // chunked request bodies are not expected here
		}
		if _, err := br.Discard(n); err != nil {
			return
		}
		if _, err := c.Write(first); err != nil {
			return
		}
		if _, err := c.Write(rest); err != nil {
			return
		}
	}
}

// newRepeatRun is runRepeat's repeat state for warm+n requests.
func newRepeatRun(b *bench, warm, n int) *repeatRun {
	total := warm + n
	return &repeatRun{b: b, warm: warm, records: make([]llmmetrics.Record, total), metas: make([]reqMeta, total),
		timings: make([]reqTiming, total), msgs: make([]string, total), used: make([]bool, total), flight: newInFlight(total)}
}

// result is what runRepeat returns of r's measured requests.
func (r *repeatRun) result() repeatResult {
	var rep repeatResult
	for i := r.warm; i < len(r.records); i++ {
		if r.used[i] {
			rep.records, rep.metas, rep.msgs = append(rep.records, r.records[i]), append(rep.metas, r.metas[i]), append(rep.msgs, r.msgs[i])
			rep.timings = append(rep.timings, r.timings[i])
		}
	}
	return rep
}
