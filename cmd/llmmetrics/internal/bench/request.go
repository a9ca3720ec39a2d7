package bench

import (
	"math/rand/v2"

	"github.com/llmmetrics/llmmetrics/cmd/llmmetrics/internal/workload"
)

// The levels' requests come from the workload (workload.go, session.go);
// the preflight's is built here, in the same API and shape.

// preflightBody returns the preflight's request: 16 tokens of the
// workload's filler text, asking for up to 16 tokens.
func (b *bench) preflightBody() []byte {
	text := workload.Text{CharsPerToken: 4}.Words(rand.New(rand.NewPCG(b.o.seed, 0x7072)), 16)
	r := workload.Request{Messages: []workload.Message{{Role: "user", Content: text}}, OutputTokens: 16}
	return workload.Body(b.o.wl.api, b.model, r, b.o.wl.ignoreEOS)
}
