// Command llmmetrics load-tests an LLM serving endpoint and gates CI on
// benchmark results, with the llmmetrics library as its metric core.
//
//	llmmetrics bench  [flags]          sweep load, find the saturation point and say why
//	llmmetrics report [flags] FILE...  summarize per-request results of any benchmark tool; a CI gate
//	llmmetrics compare [flags] BASE NEW did a change make it slower? each metric's change, beyond noise
//
// Install it with
//
//	go install github.com/llmmetrics/llmmetrics/cmd/llmmetrics@latest
//
// Exit status: 0 on success (every objective passed), 1 when an objective
// or the SLO failed (report) or a -fail-on metric regressed (compare) or
// the run could not be done (bench: the endpoint does not answer with a
// token stream, or every request of a repeat failed), 2 on bad flags or bad
// input, 130 when interrupted.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/llmmetrics/llmmetrics/cmd/llmmetrics/internal/bench"
	"github.com/llmmetrics/llmmetrics/cmd/llmmetrics/internal/compare"
	"github.com/llmmetrics/llmmetrics/cmd/llmmetrics/internal/report"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `usage:
  llmmetrics bench  [flags]          sweep load, find the saturation point and say why
  llmmetrics report [flags] FILE...  summarize benchmark results; a CI gate with -slo/-objective
  llmmetrics compare [flags] BASE NEW compare two runs, each change with a 95% interval; a CI gate with -fail-on
Run "llmmetrics <command> -h" for a command's flags.
`

// run is the whole program; main only wires it to the process. It returns
// the exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "bench":
		return bench.Main(ctx, args[1:], stdout, stderr)
	case "report":
		return report.Main(ctx, args[1:], stdin, stdout, stderr)
	case "compare":
		return compare.Main(ctx, args[1:], stdin, stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "llmmetrics: unknown command %q\n%s", args[0], usage)
	return 2
}
