package bench

import (
	"context"
	"fmt"

	"github.com/llmmetrics/llmmetrics"
)

// preflight sends one request before the first level, as the levels send
// them, and returns an error saying what the server answered when it is
// not a token stream: nothing listening, a TLS failure, an HTTP error with
// the server's message, or an answer with no token. Nothing is measured or
// written before it passes. Once it passes, it asks how many requests the
// server runs at once (readSlots).
func (b *bench) preflight(ctx context.Context) error {
	var rec llmmetrics.Record
	s := b.send(ctx, b.preflightBody(), &rec, keepHead)
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case rec.Outcome != llmmetrics.OutcomeOK:
		return fmt.Errorf("the first request to %s failed: %s", b.url, s.msg)
	case rec.FirstToken.IsZero():
		return fmt.Errorf("the answer of %s is not an OpenAI-compatible stream: no token arrived (status OK, Content-Type %q, it begins %q)",
			b.url, s.contentType, excerpt(s.head))
	}
	b.readSlots(ctx)
	return nil
}
