package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/llmmetricstest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// How these tests stay deterministic: every test has its own
// servers, its own upstream http.Transport and its own client
// (srv.Client()), never http.DefaultTransport or http.DefaultClient;
// servers are closed by t.Cleanup in reverse order of creation (gateway,
// then its transport, then the upstream); time is a fake clock, not
// sleeps; and the proxy never reads a request body the server has closed
// (see ServeHTTP and TestGatewayStreamsWhileTheTransportStillReadsTheRequestBody).

// events is what the scripted upstream sends, one SSE event per entry.
var events = []string{
	`data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}` + "\n\n",
	`data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hello"}}]}` + "\n\n",
	`data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":" world"}}]}` + "\n\n",
	`data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n",
	`data: {"id":"c1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}` + "\n\n",
	"data: [DONE]\n\n",
}

// scripted is an upstream that reads the whole request, then writes events
// one by one, flushing each. Before each event after the first it waits
// for release (when set); before the second (the first token) it moves
// clock forward by silence (when set), standing for the model's prefill.
// When early is set it answers first: it sends the first event before
// reading the request (in full duplex), and reports how many body bytes it
// got on received.
type scripted struct {
	release  chan struct{}
	clock    *llmmetricstest.Clock
	silence  time.Duration
	early    bool
	received chan<- int64 // buffered (1); used when early
	events   []string     // what to send; nil: events
}

func (s scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.early {
		if err := http.NewResponseController(w).EnableFullDuplex(); err != nil {
			panic(err)
		}
	} else {
		// Like a model server, read the whole request before answering.
		_, _ = io.Copy(io.Discard, r.Body)
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	evs := s.events
	if evs == nil {
		evs = events
	}
	for i, e := range evs {
		if i == 1 && s.early {
			n, _ := io.Copy(io.Discard, r.Body)
			s.received <- n
		}
		if i == 1 && s.clock != nil {
			s.clock.Advance(s.silence)
		}
		if i > 0 && s.release != nil {
			select {
			case <-s.release:
			case <-r.Context().Done():
				return
			}
		}
		_, _ = io.WriteString(w, e)
		w.(http.Flusher).Flush()
	}
}

// gatewayConfig is what a test may change in newGateway's gateway: the
// tracker's options, the proxy (whose Transport is tr, the gateway's own
// Transport to the upstream) and the handler its server runs (the Gateway
// itself when wrap is nil).
type gatewayConfig struct {
	tracker []llmmetrics.Option
	proxy   func(gw *Gateway, tr *http.Transport)
	wrap    func(http.Handler) http.Handler
}

// newGateway starts upstream and a gateway in front of it, each on its own
// httptest server, with a Transport of its own to the upstream. Cleanup
// closes them in reverse order: the gateway's server (waiting for its
// handlers), the transport's idle connections, then the upstream. done
// receives once each request has ended (the Gateway's ServeHTTP returned).
func newGateway(t *testing.T, upstream http.Handler, cfg gatewayConfig) (*httptest.Server, *llmmetricstest.Collector, chan struct{}) {
	t.Helper()
	up := httptest.NewServer(upstream)
	t.Cleanup(up.Close)
	return newGatewayTo(t, up.URL, cfg)
}

// newGatewayTo is newGateway for an upstream already running at base.
func newGatewayTo(t *testing.T, base string, cfg gatewayConfig) (*httptest.Server, *llmmetricstest.Collector, chan struct{}) {
	t.Helper()
	u, err := url.Parse(base)
	require.NoError(t, err)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	mp, col := llmmetricstest.NewMeterProvider()
	tracker, err := llmmetrics.NewTracker(append([]llmmetrics.Option{llmmetrics.WithMeterProvider(mp)}, cfg.tracker...)...)
	require.NoError(t, err)
	gw := NewGateway(u, tracker, llmmetrics.WithModels("m-test", llmmetricstest.DefaultModel))
	gw.proxy.Transport = tr
	if cfg.proxy != nil {
		cfg.proxy(gw, tr)
	}
	done := make(chan struct{}, 16)
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() { done <- struct{}{} }()
		gw.ServeHTTP(w, r)
	})
	if cfg.wrap != nil {
		h = cfg.wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, col, done
}

// wait waits for one request to end (the timeout only turns a hang into a
// failure).
func wait(t *testing.T, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the request did not end")
	}
}

// outcomes returns the requests counted per outcome.
func outcomes(t *testing.T, col *llmmetricstest.Collector) map[string]float64 {
	t.Helper()
	return col.Collect(t).SumBy(llmmetrics.ServerMetricNames().Requests, llmmetrics.OutcomeKey)
}

// maxPeek is how much of the long request body the upstream transport
// reads before its reads are held (NewHandler itself reads nothing ahead).
const maxPeek = 4 << 20

const chatBody = `{"model":"m-test","stream":true,"messages":[{"role":"user","content":"hi"}]}`

// post sends body (chatBody when empty) to the gateway with the gateway
// server's own client.
func post(t *testing.T, ctx context.Context, srv *httptest.Server, body string) *http.Response {
	t.Helper()
	if body == "" {
		body = chatBody
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(body))
	require.NoError(t, err)
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	return resp
}

func TestGatewayForwardsBytesUnchangedAndMeasures(t *testing.T) {
	clock := llmmetricstest.NewClock(time.Time{})
	srv, col, done := newGateway(t, scripted{clock: clock, silence: 40 * time.Millisecond}, gatewayConfig{
		tracker: []llmmetrics.Option{llmmetrics.WithClock(clock.Now)},
	})
	resp := post(t, context.Background(), srv, "")
	got, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, strings.Join(events, ""), string(got), "bytes identical")

	wait(t, done)

	m := col.Collect(t)
	names := llmmetrics.ServerMetricNames()
	assert.Equal(t, float64(1), m.Value(names.Requests, llmmetrics.OutcomeKey.String("ok"), semconv.GenAIRequestModel("m-test")))
	assert.Equal(t, uint64(1), m.Count(names.TTFT))
	assert.InDelta(t, 0.040, m.Sum(names.TTFT), 1e-9, "TTFT is the upstream's silence")
	assert.Equal(t, uint64(1), m.Count(names.ITL), "two token chunks (the role chunk carries none): one gap")
	assert.Equal(t, float64(2), m.Value(names.Tokens, semconv.GenAITokenTypeOutput))
	assert.Equal(t, float64(9), m.Value(names.Tokens, semconv.GenAITokenTypeInput))
}

func TestGatewayFlushesEachEvent(t *testing.T) {
	release := make(chan struct{})
	srv, col, done := newGateway(t, scripted{release: release}, gatewayConfig{})
	resp := post(t, context.Background(), srv, "")
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for i := range events {
		// Each event must reach the client while the upstream still waits
		// to send the next one: nothing is held back in a buffer. (The
		// timeout only turns a hang into a failure.)
		got := make(chan string, 1)
		go func() {
			line, _ := br.ReadString('\n')
			blank, _ := br.ReadString('\n')
			got <- line + blank
		}()
		select {
		case e := <-got:
			assert.Equal(t, events[i], e)
		case <-time.After(10 * time.Second):
			t.Fatalf("event %d did not arrive before the upstream sent the next one", i)
		}
		if i < len(events)-1 {
			release <- struct{}{}
		}
	}
	_, err := io.Copy(io.Discard, br)
	require.NoError(t, err)
	wait(t, done)
	assert.Equal(t, map[string]float64{"ok": 1}, outcomes(t, col))
}

// TestGatewayClientTTFTFarBelowE2EL measures a slow stream on the client's
// side, with the library's client transport on a fake clock: the upstream
// sends one event per release and the clock moves 1s between events (the
// role chunk, 10 tokens, [DONE]), so a client that gets each event as the
// upstream sends it measures TTFT 1s and E2EL 10s (start to last token).
// Any buffering in the gateway would hold the first token until later
// events (TTFT near E2EL) or hang the test.
func TestGatewayClientTTFTFarBelowE2EL(t *testing.T) {
	slow := []string{events[0]}
	for i := range 10 {
		slow = append(slow, `data: {"choices":[{"index":0,"delta":{"content":"t`+strconv.Itoa(i)+`"}}]}`+"\n\n")
	}
	slow = append(slow, "data: [DONE]\n\n")
	clock := llmmetricstest.NewClock(time.Time{})
	release := make(chan struct{})
	srv, col, done := newGateway(t, scripted{release: release, events: slow}, gatewayConfig{
		tracker: []llmmetrics.Option{llmmetrics.WithClock(clock.Now)},
	})
	cmp, ccol := llmmetricstest.NewMeterProvider()
	client, err := llmmetrics.NewTracker(llmmetrics.WithMeterProvider(cmp), llmmetrics.WithClock(clock.Now))
	require.NoError(t, err)
	hc := &http.Client{Transport: llmmetrics.NewTransport(client, srv.Client().Transport)}
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(chatBody))
	require.NoError(t, err)
	resp, err := hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for i := range slow {
		line, err := br.ReadString('\n')
		require.NoError(t, err)
		blank, err := br.ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, slow[i], line+blank, "event %d, read before the upstream may send the next", i)
		if i < len(slow)-1 {
			clock.Advance(time.Second)
			release <- struct{}{}
		}
	}
	_, err = br.ReadByte()
	require.ErrorIs(t, err, io.EOF) // the client's request ends at EOF
	wait(t, done)

	cm := ccol.Collect(t)
	cn := llmmetrics.ClientMetricNames()
	require.Equal(t, uint64(1), cm.Count(cn.TTFT))
	ttft, e2el := cm.Sum(cn.TTFT), cm.Sum(cn.E2EL)
	assert.InDelta(t, 1.0, ttft, 1e-9, "client TTFT: the first token arrived when the upstream sent it")
	assert.InDelta(t, 10.0, e2el, 1e-9)
	assert.Less(t, ttft, e2el/5, "client TTFT far below E2EL")

	sm := col.Collect(t)
	sn := llmmetrics.ServerMetricNames()
	assert.InDelta(t, 1.0, sm.Sum(sn.TTFT), 1e-9, "the gateway timed it at the same flush")
	assert.InDelta(t, 10.0, sm.Sum(sn.E2EL), 1e-9, "start to the last token")
}

func TestGatewayOutcomes(t *testing.T) {
	t.Run("upstream error status is an Error, passed through", func(t *testing.T) {
		srv, col, done := newGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusServiceUnavailable)
		}), gatewayConfig{})
		resp := post(t, context.Background(), srv, "")
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
		assert.Contains(t, string(body), "overloaded")
		wait(t, done)
		m := col.Collect(t)
		assert.Equal(t, float64(1), m.Value(llmmetrics.ServerMetricNames().Requests, llmmetrics.OutcomeKey.String("error"), semconv.ErrorTypeKey.String("503")), "%s", m)
	})
	t.Run("a client that goes away is Canceled", func(t *testing.T) {
		release := make(chan struct{})
		srv, col, done := newGateway(t, scripted{release: release}, gatewayConfig{})
		ctx, cancel := context.WithCancel(context.Background())
		resp := post(t, ctx, srv, "")
		br := bufio.NewReader(resp.Body)
		_, err := br.ReadString('\n')
		require.NoError(t, err)
		cancel()
		resp.Body.Close()
		wait(t, done)
		assert.Equal(t, map[string]float64{"canceled": 1}, outcomes(t, col))
	})
	t.Run("unreachable upstream is an Error with 502", func(t *testing.T) {
		mp, col := llmmetricstest.NewMeterProvider()
		tracker, err := llmmetrics.NewTracker(llmmetrics.WithMeterProvider(mp))
		require.NoError(t, err)
		gw := NewGateway(&url.URL{Scheme: "http", Host: "upstream.invalid"}, tracker)
		// Refused without touching the network (no port is assumed free).
		gw.proxy.Transport = &http.Transport{DialContext: func(context.Context, string, string) (net.Conn, error) {
			return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
		}}
		w := httptest.NewRecorder()
		gw.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(chatBody)))
		assert.Equal(t, http.StatusBadGateway, w.Code)
		m := col.Collect(t)
		assert.Equal(t, float64(1), m.Value(llmmetrics.ServerMetricNames().Requests, llmmetrics.OutcomeKey.String("error"), semconv.ErrorTypeKey.String("502")), "%s", m)
	})
}

func TestGatewayAgainstFakeServer(t *testing.T) {
	fake := llmmetricstest.NewServer(llmmetricstest.ServerConfig{BaseTPOT: 2 * time.Millisecond, OutputMin: 8, OutputMax: 8})
	t.Cleanup(fake.Close)
	srv, col, done := newGatewayTo(t, fake.URL, gatewayConfig{})

	body := `{"model":"` + fake.Config().Model + `","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"one two three"}]}`
	resp := post(t, context.Background(), srv, body)
	_, err := io.Copy(io.Discard, resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	wait(t, done)
	m := col.Collect(t)
	names := llmmetrics.ServerMetricNames()
	assert.Equal(t, map[string]float64{"ok": 1}, m.SumBy(names.Requests, llmmetrics.OutcomeKey))
	assert.Equal(t, float64(8), m.Value(names.Tokens, semconv.GenAITokenTypeOutput))
	assert.Equal(t, uint64(7), m.Count(names.ITL), "8 token chunks")
	assert.Equal(t, float64(fake.Stats().PromptTokens), m.Value(names.Tokens, semconv.GenAITokenTypeInput))
}

// holdRead wraps the outbound request body as the upstream transport reads
// it: the first pass bytes go through at once, then the next Read waits for
// hold. The first error any Read gets from the inbound body (io.EOF when
// all is well) is sent on errs.
type holdRead struct {
	io.ReadCloser
	pass int64
	hold <-chan struct{}
	errs chan<- error // buffered (1)
}

func (b *holdRead) Read(p []byte) (n int, err error) {
	if b.pass > 0 {
		p = p[:min(int64(len(p)), b.pass)]
	} else {
		<-b.hold
	}
	n, err = b.ReadCloser.Read(p)
	b.pass -= int64(n)
	if err != nil {
		select {
		case b.errs <- err:
		default:
		}
	}
	return n, err
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestGatewayStreamsWhileTheTransportStillReadsTheRequestBody pins the
// interleaving behind an "unexpected EOF" through a proxy (golang/go#40747): the
// gateway's response to its client starts while the upstream transport is
// still reading the request body. After writing the declared Content-Length
// the transport always reads once more, to check the body is not longer
// (net/http transferWriter.writeBody); the upstream may already have
// answered by then. net/http's HTTP/1 server drains and closes an unread
// request body when a handler starts its response ((*chunkWriter)
// .writeHeader) unless full duplex is on; the transport's next read then
// fails with "http: invalid Read on closed Body", its writeLoop closes the
// upstream connection, and the response being streamed is cut
// ("ReverseProxy read error during body copy: ... use of closed network
// connection"; golang/go#40747). Here the transport's read is held until
// the client has the response header, which makes the race certain.
func TestGatewayStreamsWhileTheTransportStillReadsTheRequestBody(t *testing.T) {
	// hideDuplex stands for middleware whose ResponseWriter has no Unwrap:
	// EnableFullDuplex is then not supported.
	hideDuplex := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(struct {
				http.ResponseWriter
				http.Flusher
			}{w, w.(http.Flusher)}, r)
		})
	}
	long := `{"model":"m-test","pad":"` + strings.Repeat("x", maxPeek) + `"}`
	for _, tc := range []struct {
		name  string
		body  string
		early bool // the upstream answers before reading the body
		pass  int64
		wrap  func(http.Handler) http.Handler
	}{
		// Read whole by the transport: its last read, after the declared
		// length, is answered by NewHandler's body, not the inbound one.
		{name: "body read whole", body: chatBody, pass: int64(len(chatBody))},
		{name: "body read whole, without full duplex", body: chatBody, pass: int64(len(chatBody)), wrap: hideDuplex},
		// Past maxPeek the rest still comes from the client while the
		// upstream answers: full duplex keeps the inbound body open.
		{name: "body longer than the peek, upstream answers first", body: long, early: true, pass: maxPeek},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			received := make(chan int64, 1)
			hold := make(chan struct{})
			errs := make(chan error, 1)
			up := scripted{release: release, early: tc.early, received: received}
			srv, col, done := newGateway(t, up, gatewayConfig{proxy: func(gw *Gateway, tr *http.Transport) {
				gw.proxy.Transport = roundTripFunc(func(r *http.Request) (*http.Response, error) {
					r.Body = &holdRead{ReadCloser: r.Body, pass: tc.pass, hold: hold, errs: errs}
					return tr.RoundTrip(r)
				})
			}, wrap: tc.wrap})
			resp := post(t, context.Background(), srv, tc.body)
			defer resp.Body.Close()
			// The client has the response header: let the transport go on.
			close(hold)
			assert.Equal(t, io.EOF, <-errs, "how the transport's reads of the request body ended")
			if tc.early {
				assert.Equal(t, int64(len(tc.body)), <-received, "request bytes the upstream got")
			}
			close(release)
			got, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assert.Equal(t, strings.Join(events, ""), string(got))
			wait(t, done)
			assert.Equal(t, map[string]float64{"ok": 1}, outcomes(t, col))
		})
	}
}
