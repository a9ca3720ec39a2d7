// Package report is the "llmmetrics report" subcommand: the summary of any
// benchmark tool's per-request results, and a CI gate.
package report

import (
	"context"
	"fmt"
	"io"
)

// Main runs "llmmetrics report" with args (the flags and files after the
// subcommand) and returns the exit status: 0 when every objective passes,
// 1 when one fails, 2 on bad input.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "llmmetrics report: not built yet")
	return 2
}
