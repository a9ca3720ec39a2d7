// Package bench is the "llmmetrics bench" subcommand: a load sweep measured
// through llmmetrics.NewTransport.
package bench

import (
	"context"
	"fmt"
	"io"
)

// Main runs "llmmetrics bench" with args (the flags after the subcommand)
// and returns the exit status.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "llmmetrics bench: not built yet")
	return 2
}
