package llmmetrics_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/llmmetricstest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// soak sends n concurrent streaming requests through the reader wrapper to
// an in-memory fake server that injects failures, and returns the Records,
// the server's stats, what the Tracker emitted, and how many clients gave
// up on purpose.
func soak(t *testing.T, n int, cancelRate float64) ([]llmmetrics.Record, llmmetricstest.Stats, llmmetricstest.Metrics, int) {
	srv := llmmetricstest.NewInMemoryServer(llmmetricstest.ServerConfig{
		Seed: 42, OutputMin: 8, OutputMax: 40,
		FailureRate: 0.05, CutRate: 0.05, ErrorEventRate: 0.03,
		PauseRate: 0.05, PauseDuration: 2 * time.Second,
	})
	defer srv.Close()
	mp, col := llmmetricstest.NewMeterProvider()
	tr, err := llmmetrics.NewTracker(llmmetrics.WithMeterProvider(mp))
	require.NoError(t, err)
	client := srv.Client()

	rng := rand.New(rand.NewPCG(1, 2))
	deadlines := make([]time.Duration, n) // 0: the client waits for the end
	cancels := 0
	for i := range deadlines {
		if rng.Float64() < cancelRate {
			deadlines[i] = time.Duration(50+rng.IntN(2000)) * time.Millisecond
			cancels++
		}
	}
	records := make([]llmmetrics.Record, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ctx := context.Background()
			if d := deadlines[i]; d > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, d)
				defer cancel()
			}
			records[i] = stream(ctx, tr, client, srv.URL, srv.Config().Model, i)
		})
	}
	wg.Wait()
	return records, srv.Stats(), col.Collect(t), cancels
}

// stream sends one streaming chat completion and reads it to its end
// through the reader wrapper, the way a client of the library does.
func stream(ctx context.Context, tr *llmmetrics.Tracker, client *http.Client, url, model string, i int) llmmetrics.Record {
	body := fmt.Sprintf(`{"model":%q,"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"soak request %d"}]}`, model, i)
	req := tr.StartClient(ctx)
	httpReq, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/chat/completions", bytes.NewReader([]byte(body)))
	if err != nil {
		return req.End(err)
	}
	resp, err := client.Do(httpReq)
	if err != nil {
		return req.End(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return req.End(fmt.Errorf("HTTP %d", resp.StatusCode))
	}
	rc := llmmetrics.NewReader(req, resp.Body, llmmetrics.ProtocolOpenAI.NewDecoder())
	_, _ = io.Copy(io.Discard, rc)
	_ = rc.Close()
	return req.End(nil) // ended by the reader: returns its Record
}

// TestSoak runs 1,000 concurrent streams with injected 500s, cut streams,
// error events, pauses and clients that give up. Every request is
// accounted exactly once, by outcome; the token counters equal what the
// Records say and what the server sent; and no goroutine outlives the run
// (synctest fails the test if one is left blocked). Run under -race.
func TestSoak(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cancelRate float64
	}{
		{"failures injected", 0},
		{"failures injected and clients that give up", 0.1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const n = 1000
				records, st, m, cancels := soak(t, n, tc.cancelRate)

				byOutcome := map[string]int{}
				var in, out, chunks int
				for _, r := range records {
					byOutcome[r.Outcome.String()]++
					in += r.InputTokens
					out += r.OutputTokens
					chunks += r.Chunks
				}
				t.Logf("outcomes %v; server %+v", byOutcome, st)
				require.Equal(t, n, st.Requests, "the server saw every request")
				names := llmmetrics.ClientMetricNames()
				assert.Equal(t, float64(n), m.Value(names.Requests), "every request counted once")
				for _, o := range []llmmetrics.Outcome{llmmetrics.OutcomeOK, llmmetrics.OutcomeError, llmmetrics.OutcomeCanceled} {
					assert.Equal(t, float64(byOutcome[o.String()]), m.Value(names.Requests, llmmetrics.OutcomeKey.String(o.String())), "requests %s", o)
				}
				assert.Equal(t, float64(n), float64(m.Count(names.E2EL)), "one E2EL per request")
				assert.Zero(t, m.Value(names.Active), "nothing left in flight")
				assert.Equal(t, float64(out), m.Sum(names.Tokens, attrTokenType("output")), "output token counter")
				assert.Equal(t, float64(in), m.Sum(names.Tokens, attrTokenType("input")), "input token counter")

				// Server and client agree on how each request ended. Without
				// clients that give up the mapping is exact. With them, a request
				// whose client gave up can land in a neighbouring outcome on each
				// side: the server counts a stream OK just before writing its end
				// while the client's deadline may fire before it reads it (or
				// after, while the server still sees the context end), and a
				// deadline can coincide with an injected failure. OK+Canceled and
				// Error are conserved up to those k requests, k ≤ cancels.
				serverErrors := st.Failed + st.Cut + st.ErrorEvents
				if cancels == 0 {
					assert.Equal(t, st.OK, byOutcome["ok"])
					assert.Equal(t, serverErrors, byOutcome["error"], "500s, cut streams and error events are Errors")
					assert.Zero(t, byOutcome["canceled"])
					assert.Zero(t, st.Canceled)
				} else {
					k := serverErrors - byOutcome["error"]
					assert.GreaterOrEqual(t, k, 0, "the client sees no error the server did not inject")
					assert.LessOrEqual(t, k, cancels)
					assert.Equal(t, st.OK+st.Canceled+k, byOutcome["ok"]+byOutcome["canceled"], "OK and Canceled are conserved")
					assert.Positive(t, byOutcome["canceled"])
				}
				// The fake server sends one token per chunk and counts a token
				// just before writing it: a client that gives up can leave at
				// most one counted chunk unread.
				sent := st.CompletionTokens
				assert.GreaterOrEqual(t, sent, chunks)
				assert.LessOrEqual(t, sent-chunks, cancels, "at most one unread chunk per client that gave up")
				if cancels == 0 {
					assert.Equal(t, sent, chunks, "every token the server sent was measured")
				}
			})
		})
	}
}

func attrTokenType(v string) attribute.KeyValue { return semconv.GenAITokenTypeKey.String(v) }
