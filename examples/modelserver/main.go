// Command modelserver is a toy OpenAI-compatible model server measured in
// the server role by llmmetrics.NewHandler, without a proxy: its handler
// streams the tokens of an iter.Seq as server-sent events and flushes each
// one, and NewHandler times each token at that flush. Metrics go to
// standard output every -interval through the OpenTelemetry stdout
// exporter.
//
//	go run ./examples/modelserver -listen 127.0.0.1:8081
//	curl -N localhost:8081/v1/chat/completions -d '{"model":"toy","stream":true,"messages":[{"role":"user","content":"hello there model"}]}'
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8081", "address to listen on")
	model := flag.String("model", "toy", "the model name served")
	perToken := flag.Duration("per-token", 50*time.Millisecond, "time between tokens")
	interval := flag.Duration("interval", 30*time.Second, "how often metrics are printed")
	flag.Parse()

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

	srv := &http.Server{Addr: *listen, Handler: NewModelServer(tracker, *model, Words(*perToken))}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	go func() {
		<-ctx.Done()
		_ = srv.Shutdown(context.Background())
	}()
	fmt.Printf("model server on http://%s serving %q\n", *listen, *model)
	if err := srv.ListenAndServe(); err != http.ErrServerClosed {
		log.Fatal(err)
	}
}
