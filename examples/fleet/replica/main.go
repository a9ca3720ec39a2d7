// Command replica is one replica of a measured LLM service, as the fleet
// test (package fleet) runs it three times: the fake server of
// llmmetricstest, a gateway in front of it measured with
// llmmetrics.NewHandler (the server role), and clients that call the
// gateway through llmmetrics.NewTransport (the client role), all in this
// process, exporting metrics and traces over OTLP as a production service
// does.
//
// The exporters are configured by the standard OpenTelemetry environment
// (go.opentelemetry.io/contrib/exporters/autoexport):
// OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL (grpc or
// http/protobuf), OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE (cumulative or
// delta), OTEL_METRIC_EXPORT_INTERVAL, and the resource from
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (each replica needs its
// own service.instance.id). Histograms are base-2 exponential
// (otelsdk.ExponentialHistograms), which Prometheus stores as native
// histograms.
//
// It reads commands from standard input, one a line, and answers each on
// standard output once done:
//
//	send OK FAILED   send OK requests that succeed and FAILED that the
//	                 server refuses (404: a model it does not serve);
//	                 answers "sent OK FAILED"
//
// At the end of its input (or on SIGTERM) it stops, flushes its metrics and
// spans, writes every Record it measured to -records (JSON lines of
// fleet.Line) and exits: 0, or 1 when a request did not end as asked or
// the last export failed. Anything else it prints goes to standard error.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/examples/fleet"
	"github.com/llmmetrics/llmmetrics/llmmetricstest"
	"github.com/llmmetrics/llmmetrics/otelsdk"
	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "replica: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	records := flag.String("records", "", "file to write the Records to (JSON lines)")
	sloText := flag.String("slo", "", "the SLO both Trackers count llmmetrics.slo_met against (ParseSLO's form)")
	seed := flag.Uint64("seed", 1, "seed of the fake server")
	concurrency := flag.Int("concurrency", 2, "requests in flight at once")
	flag.Parse()
	if *records == "" {
		return errors.New("-records is required")
	}
	slo, err := llmmetrics.ParseSLO(*sloText)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()

	mp, tp, err := setUpOTel(ctx)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	var lines []fleet.Line
	onEnd := func(role string) llmmetrics.Option {
		return llmmetrics.WithOnEnd(func(ctx context.Context, r llmmetrics.Record) {
			l := fleet.Line{Role: role, Record: r}
			l.Record.ITL = nil // not needed, and long
			if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
				l.TraceID, l.SpanID, l.Sampled = sc.TraceID().String(), sc.SpanID().String(), sc.IsSampled()
			}
			if sc, ok := ctx.Value(requestSpanKey{}).(trace.SpanContext); ok {
				l.RequestSpanID = sc.SpanID().String()
			}
			mu.Lock()
			lines = append(lines, l)
			mu.Unlock()
		})
	}
	serverTracker, err := llmmetrics.NewTracker(llmmetrics.WithSLO(slo), llmmetrics.WithoutWindow(), onEnd("server"))
	if err != nil {
		return err
	}
	clientTracker, err := llmmetrics.NewTracker(llmmetrics.WithSLO(slo), llmmetrics.WithoutWindow(), onEnd("client"))
	if err != nil {
		return err
	}

	// A fake server whose latencies vary little relative to their size, so
	// that a base-2 exponential histogram of 160 buckets holds them at
	// scale 6 or finer (at most 5.66× between the smallest and the largest
	// value), even through a busy machine's stalls of a second: TTFT is a
	// 300 ms prefill plus the wait for the step in progress (at most
	// another prefill, at 2 requests in flight); E2EL adds 16 decode steps
	// of 2 ms and the prefills of the requests that arrive meanwhile.
	fake := llmmetricstest.NewServer(llmmetricstest.ServerConfig{Seed: *seed,
		PrefillBase: 300 * time.Millisecond, BaseTPOT: 2 * time.Millisecond, OutputMin: 16, OutputMax: 16})
	gw, err := startGateway(fake.URL, serverTracker)
	if err != nil {
		fake.Close()
		return err
	}
	base := &http.Transport{MaxConnsPerHost: *concurrency}
	c := &client{
		hc:       &http.Client{Transport: llmmetrics.NewTransport(clientTracker, base, llmmetrics.WithModels(llmmetricstest.DefaultModel))},
		url:      "http://" + gw.addr + "/v1/chat/completions",
		tracer:   otel.Tracer("github.com/llmmetrics/llmmetrics/examples/fleet/replica"),
		inFlight: *concurrency,
	}

	cmdErr := serve(ctx, c, os.Stdin, os.Stdout)

	base.CloseIdleConnections()
	gw.close()
	fake.Close()
	// Shutdown flushes: a replica that stops exports what it measured
	// last, so no request is lost to a restart.
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = errors.Join(cmdErr, mp.Shutdown(sctx), tp.Shutdown(sctx))
	mu.Lock()
	defer mu.Unlock()
	return errors.Join(err, writeLines(*records, lines))
}

// setUpOTel makes the global MeterProvider and TracerProvider (which the
// Trackers use by default) export as the environment says.
func setUpOTel(ctx context.Context) (*sdkmetric.MeterProvider, *sdktrace.TracerProvider, error) {
	res, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, nil, err
	}
	reader, err := autoexport.NewMetricReader(ctx)
	if err != nil {
		return nil, nil, err
	}
	spans, err := autoexport.NewSpanExporter(ctx)
	if err != nil {
		return nil, nil, err
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithResource(res), otelsdk.ExponentialHistograms())
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(spans), sdktrace.WithResource(res))
	otel.SetMeterProvider(mp)
	otel.SetTracerProvider(tp)
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { fmt.Fprintf(os.Stderr, "replica: otel: %v\n", err) }))
	return mp, tp, nil
}

// serve runs the commands of in until its end or ctx is done.
func serve(ctx context.Context, c *client, in io.Reader, out io.Writer) error {
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	}()
	for {
		var line string
		select {
		case <-ctx.Done():
			return nil
		case l, ok := <-lines:
			if !ok {
				return nil
			}
			line = l
		}
		var ok, failed int
		if _, err := fmt.Sscanf(line, "send %d %d", &ok, &failed); err != nil {
			return fmt.Errorf("command %q: want \"send OK FAILED\"", line)
		}
		if err := c.send(ctx, ok, failed); err != nil {
			return err
		}
		fmt.Fprintf(out, "sent %d %d\n", ok, failed)
	}
}

type client struct {
	hc       *http.Client
	url      string
	tracer   trace.Tracer
	inFlight int
}

// send sends ok requests for the served model and failed for fleet.Missing,
// interleaved, c.inFlight at a time, and reads every answer to its end. A
// request that does not end as asked (200 and a whole stream, or 404) is
// an error.
func (c *client) send(ctx context.Context, ok, failed int) error {
	models := make(chan string)
	go func() {
		defer close(models)
		total := ok + failed
		for i := range total {
			// Exactly failed of the total ask for fleet.Missing, spread evenly.
			m := llmmetricstest.DefaultModel
			if (i+1)*failed/total > i*failed/total {
				m = fleet.Missing
			}
			select {
			case models <- m:
			case <-ctx.Done():
				return
			}
		}
	}()
	errs := make(chan error, c.inFlight)
	for range c.inFlight {
		go func() {
			var err error
			for m := range models {
				if err == nil {
					err = c.one(ctx, m)
				}
			}
			errs <- err
		}()
	}
	var err error
	for range c.inFlight {
		err = errors.Join(err, <-errs)
	}
	if err == nil {
		err = ctx.Err()
	}
	return err
}

// one sends one streaming chat completion for model inside a span of its
// own, as an application would: the client Record ends with that span in
// its context.
func (c *client) one(ctx context.Context, model string) error {
	// Explicit times, from the wall clock as the Record's are: the SDK
	// would end the span at its start plus the monotonic time elapsed,
	// which is not comparable with the Record's times to the microsecond
	// (the wall clock can be adjusted in between).
	ctx, span := c.tracer.Start(ctx, fleet.RequestSpan, trace.WithSpanKind(trace.SpanKindInternal), trace.WithTimestamp(time.Now()))
	defer func() { span.End(trace.WithTimestamp(time.Now())) }()
	// The client Tracker's WithOnEnd finds the request span here, whatever
	// spans are made inside it.
	ctx = context.WithValue(ctx, requestSpanKey{}, span.SpanContext())
	msg := map[string]any{
		"model":          model,
		"messages":       []map[string]string{{"role": "user", "content": "Say something about fleets of replicas."}},
		"stream":         true,
		"stream_options": map[string]bool{"include_usage": true},
	}
	body, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	err = errors.Join(err, resp.Body.Close())
	want := http.StatusOK
	if model == fleet.Missing {
		want = http.StatusNotFound
	}
	if err == nil && resp.StatusCode != want {
		err = fmt.Errorf("model %q: HTTP %d, want %d", model, resp.StatusCode, want)
	}
	return err
}

// requestSpanKey is the context key of a client request's span context.
type requestSpanKey struct{}

// gateway is a reverse proxy to the fake server, measured by NewHandler.
type gateway struct {
	addr   string
	srv    *http.Server
	served chan struct{}
	tr     *http.Transport
}

func startGateway(upstream string, tracker *llmmetrics.Tracker) (*gateway, error) {
	up, err := url.Parse(upstream)
	if err != nil {
		return nil, err
	}
	tr := &http.Transport{}
	proxy := &httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.SetURL(up) },
		Transport: tr,
	}
	h := llmmetrics.NewHandler(tracker, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// See examples/gateway: the proxy's transport may still read the
		// request body while the answer is copied out (golang/go#40747).
		_ = http.NewResponseController(w).EnableFullDuplex()
		proxy.ServeHTTP(w, r)
	}), llmmetrics.WithModels(llmmetricstest.DefaultModel))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	g := &gateway{addr: ln.Addr().String(), srv: &http.Server{Handler: h}, served: make(chan struct{}), tr: tr}
	go func() {
		defer close(g.served)
		_ = g.srv.Serve(ln)
	}()
	return g, nil
}

func (g *gateway) close() {
	_ = g.srv.Close()
	<-g.served
	g.tr.CloseIdleConnections()
}

func writeLines(path string, lines []fleet.Line) error {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	for _, l := range lines {
		if err := enc.Encode(l); err != nil {
			return err
		}
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
