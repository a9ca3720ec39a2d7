// Command prometheus serves llmmetrics' OpenTelemetry metrics in the
// Prometheus format (/metrics, through the OpenTelemetry Prometheus
// exporter) while it streams a workload of chat completions from the fake
// server of llmmetricstest. Point a Prometheus at it and use rules.yml; with
// -exponential the latency histograms are native histograms
// (otelsdk.ExponentialHistograms), for rules_native.yml.
//
//	go run ./examples/prometheus -listen 127.0.0.1:9464 -requests 300
//	go run ./examples/prometheus -exponential
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/examples/internal/chat"
	"github.com/llmmetrics/llmmetrics/llmmetricstest"
	"github.com/llmmetrics/llmmetrics/otelsdk"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// exporter is an OpenTelemetry MeterProvider whose metrics are served in
// the Prometheus format by Handler.
type exporter struct {
	Provider *sdkmetric.MeterProvider
	Handler  http.Handler
}

// newExporter returns a MeterProvider with opts (otelsdk.ExponentialHistograms,
// say) whose metrics Handler serves.
//
// With ExponentialHistograms the OpenTelemetry Prometheus exporter turns
// each exponential histogram into a native histogram (its scale lowered to
// 8 at most), which only the protobuf exposition format can carry: promhttp
// offers it by default (expfmt.DefaultAcceptedFormats puts
// application/vnd.google.protobuf first) and Prometheus asks for it once
// native histograms are on. Clients that ask for text (curl, Prometheus
// without native histograms) get only the le="+Inf" bucket, _sum and _count
// of those histograms: counts and means, no percentiles.
func newExporter(opts ...sdkmetric.Option) (*exporter, error) {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, err
	}
	return &exporter{
		Provider: sdkmetric.NewMeterProvider(append([]sdkmetric.Option{sdkmetric.WithReader(exp)}, opts...)...),
		Handler:  promhttp.HandlerFor(reg, promhttp.HandlerOpts{}),
	}, nil
}

// workload is what run sends.
type workload struct {
	Requests, Concurrency int
	SLO                   llmmetrics.SLO
	Server                llmmetricstest.ServerConfig
	// NewServer starts the fake server (nil: llmmetricstest.NewServer;
	// tests pass NewInMemoryServer to run on testing/synctest's fake time).
	NewServer func(llmmetricstest.ServerConfig) *llmmetricstest.Server
}

// run streams w.Requests chat completions (w.Concurrency at a time) from a
// fake server through a client-role Tracker on mp, and returns the Records.
func run(ctx context.Context, mp *sdkmetric.MeterProvider, w workload) ([]llmmetrics.Record, error) {
	newServer := w.NewServer
	if newServer == nil {
		newServer = llmmetricstest.NewServer
	}
	srv := newServer(w.Server)
	defer srv.Close()
	tracker, err := llmmetrics.NewTracker(
		llmmetrics.WithMeterProvider(mp),

		llmmetrics.WithSLO(w.SLO),
		llmmetrics.WithAttributes(semconv.GenAIOperationNameChat, semconv.GenAIProviderNameOpenAI,
			semconv.GenAIRequestModel(srv.Config().Model)),
	)
	if err != nil {
		return nil, err
	}
	client := &chat.Client{HTTP: srv.Client(), BaseURL: srv.URL + "/v1", Model: srv.Config().Model, Tracker: tracker}
	records := make([]llmmetrics.Record, w.Requests)
	next := make(chan int)
	var wg sync.WaitGroup
	for range w.Concurrency {
		wg.Go(func() {
			for i := range next {
				records[i], _ = client.Stream(ctx, fmt.Sprintf("request %d: tell me about saturation", i), 0)
			}
		})
	}
	for i := range w.Requests {
		select {
		case next <- i:
		case <-ctx.Done():
		}
	}
	close(next)
	wg.Wait()
	return records, ctx.Err()
}

func main() {
	listen := flag.String("listen", "127.0.0.1:9464", "address to serve /metrics on")
	requests := flag.Int("requests", 300, "requests to send")
	concurrency := flag.Int("concurrency", 16, "requests in flight")
	slo := flag.String("slo", "ttft=200ms,tpot=50ms", "SLO each request is checked against")
	hold := flag.Bool("hold", true, "keep serving /metrics after the workload until interrupted")
	exponential := flag.Bool("exponential", false, "export native histograms (otelsdk.ExponentialHistograms); "+
		"Prometheus 2.x needs --enable-feature=native-histograms, 3.x scrape_native_histograms: true")
	flag.Parse()

	s, err := llmmetrics.ParseSLO(*slo)
	if err != nil {
		log.Fatal(err)
	}
	var opts []sdkmetric.Option
	if *exponential {
		opts = append(opts, otelsdk.ExponentialHistograms())
	}
	exp, err := newExporter(opts...)
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", exp.Handler)
	go func() {
		if err := http.Serve(ln, mux); err != nil && !errors.Is(err, net.ErrClosed) {
			log.Print(err)
		}
	}()
	fmt.Printf("serving http://%s/metrics\n", ln.Addr())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	start := time.Now()
	records, err := run(ctx, exp.Provider, workload{Requests: *requests, Concurrency: *concurrency, SLO: s})
	if err != nil {
		log.Fatal(err)
	}
	sum := llmmetrics.Summarize(records, llmmetrics.SummaryOptions{SLO: s})
	p99, _ := sum.TTFT.Percentile(99)
	fmt.Printf("%d requests in %v: p99 TTFT %v, SLO attainment %.1f%%\n",
		sum.Requests, time.Since(start).Round(time.Millisecond), p99.Round(time.Microsecond), 100*sum.Goodput.Attainment)
	if *hold {
		fmt.Println("Ctrl-C to stop")
		<-ctx.Done()
	}
}
