// Command gateway is a measuring reverse proxy in front of an
// OpenAI-compatible server. Without -upstream it starts the fake server of
// llmmetricstest as its upstream. Metrics go to standard output every
// -interval through the OpenTelemetry stdout exporter.
//
//	go run ./examples/gateway -listen 127.0.0.1:8080
//	curl -N localhost:8080/v1/chat/completions -d '{"model":"llmmetricstest-model","stream":true,"messages":[{"role":"user","content":"hi"}]}'
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/llmmetricstest"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to listen on")
	upstream := flag.String("upstream", "", "upstream base URL (default: an in-process fake server)")
	models := flag.String("models", llmmetricstest.DefaultModel, "comma-separated model names recorded as gen_ai.request.model (others: _OTHER)")
	interval := flag.Duration("interval", 30*time.Second, "how often metrics are printed")
	flag.Parse()

	if *upstream == "" {
		srv := llmmetricstest.NewServer(llmmetricstest.ServerConfig{})
		defer srv.Close()
		*upstream = srv.URL
	}
	up, err := url.Parse(*upstream)
	if err != nil {
		log.Fatal(err)
	}
	exp, err := stdoutmetric.New()
	if err != nil {
		log.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(*interval))))
	defer mp.Shutdown(context.Background())

	tracker, err := llmmetrics.NewTracker(llmmetrics.WithMeterProvider(mp))
	if err != nil {
		log.Fatal(err)
	}
	gw := NewGateway(up, tracker, llmmetrics.WithModels(strings.Split(*models, ",")...))
	srv := &http.Server{Addr: *listen, Handler: gw}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	go func() {
		<-ctx.Done()
		_ = srv.Shutdown(context.Background())
	}()
	fmt.Printf("gateway on http://%s -> %s\n", *listen, up)
	if err := srv.ListenAndServe(); err != http.ErrServerClosed {
		log.Fatal(err)
	}
}
