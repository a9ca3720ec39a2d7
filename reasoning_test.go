package llmmetrics

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
)

// TestTTFO: the first answer chunk marks FirstOutput; reasoning chunks are
// token-carrying chunks for TTFT, ITL, TPOT and N but do not. Times in ms
// from Start, values by hand.
func TestTTFO(t *testing.T) {
	type chunk struct {
		ms        int
		tokens    int
		reasoning bool
	}
	tests := []struct {
		name   string
		chunks []chunk
		usage  int // reported output tokens (0: none)
		// want
		firstToken, firstOutput, lastToken int // ms; -1: none
		n, chunkCount                      int
		itl                                []time.Duration
		ttfo                               []float64 // the TTFO histogram's values, s
	}{
		{
			name: "reasoning then answer",
			// reasoning at 100, 140, 180; answer at 400, 420: TTFT 100 ms,
			// TTFO 400 ms, ITL [40, 40, 220, 20] ms, N = 30 (usage),
			// TPOT = (420 − 100) / 29.
			chunks:     []chunk{{100, 1, true}, {140, 1, true}, {180, 1, true}, {400, 1, false}, {420, 1, false}},
			usage:      30,
			firstToken: 100, firstOutput: 400, lastToken: 420,
			n: 30, chunkCount: 5,
			itl:  []time.Duration{40 * time.Millisecond, 40 * time.Millisecond, 220 * time.Millisecond, 20 * time.Millisecond},
			ttfo: []float64{0.4},
		},
		{
			name:       "answer only: TTFO == TTFT",
			chunks:     []chunk{{150, 2, false}, {200, 1, false}},
			firstToken: 150, firstOutput: 150, lastToken: 200,
			n: 3, chunkCount: 2,
			itl:  []time.Duration{50 * time.Millisecond},
			ttfo: []float64{0.15},
		},
		{
			name:       "reasoning only: no TTFO",
			chunks:     []chunk{{120, 1, true}, {130, 1, true}},
			firstToken: 120, firstOutput: -1, lastToken: 130,
			n: 2, chunkCount: 2,
			itl: []time.Duration{10 * time.Millisecond},
		},
		{
			name: "an answer between reasoning chunks: FirstOutput stays at the first answer",
			chunks: []chunk{{100, 1, true}, {200, 1, false}, {300, 1, true},
				{400, 1, false}},
			firstToken: 100, firstOutput: 200, lastToken: 400,
			n: 4, chunkCount: 4,
			itl:  []time.Duration{100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond},
			ttfo: []float64{0.2},
		},
		{
			name:       "an answer chunk out of order is taken at the previous chunk",
			chunks:     []chunk{{100, 1, true}, {90, 1, false}},
			firstToken: 100, firstOutput: 100, lastToken: 100,
			n: 2, chunkCount: 2,
			itl:  []time.Duration{0},
			ttfo: []float64{0.1},
		},
		{
			name:       "zero-token chunks mark nothing",
			chunks:     []chunk{{50, 0, false}, {60, 0, true}, {100, 1, true}},
			firstToken: 100, firstOutput: -1, lastToken: 100,
			n: 1, chunkCount: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, reader := newTestTracker(t)
			r := tr.StartAt(context.Background(), at(0))
			for _, c := range tt.chunks {
				if c.reasoning {
					r.ReasoningChunkAt(at(float64(c.ms)), c.tokens)
				} else {
					r.ChunkAt(at(float64(c.ms)), c.tokens)
				}
			}
			if tt.usage > 0 {
				r.SetUsage(7, tt.usage)
			}
			rec := r.EndAt(at(500), nil)
			assert.Equal(t, at(float64(tt.firstToken)), rec.FirstToken)
			assert.Equal(t, at(float64(tt.lastToken)), rec.LastToken)
			assert.Equal(t, tt.n, rec.OutputTokens, "N")
			assert.Equal(t, tt.chunkCount, rec.Chunks)
			assert.Equal(t, tt.itl, rec.ITL)
			ttft, _ := rec.TTFT()
			assert.Equal(t, time.Duration(tt.firstToken)*time.Millisecond, ttft)
			ttfo, ok := rec.TTFO()
			if tt.firstOutput < 0 {
				assert.False(t, ok)
				assert.True(t, rec.FirstOutput.IsZero())
			} else {
				assert.True(t, ok)
				assert.Equal(t, at(float64(tt.firstOutput)), rec.FirstOutput)
				assert.Equal(t, time.Duration(tt.firstOutput)*time.Millisecond, ttfo)
			}

			got := collect(t, reader)
			m, ok := got[metricTTFO]
			if len(tt.ttfo) == 0 {
				assert.False(t, ok, "no TTFO recorded")
				return
			}
			require.True(t, ok)
			m.Description = ""
			metricdatatest.AssertEqual(t, histogram(metricTTFO, "s", hist(set(RoleKey.String("server")), serverTTFTBuckets, tt.ttfo...)),
				m, metricdatatest.IgnoreTimestamp(), metricdatatest.IgnoreExemplars())
		})
	}
}

// The reasoning-then-answer case of TestTTFO, whose TPOT by hand is
// (420 − 100) ms / 29.
func TestTPOTCountsReasoning(t *testing.T) {
	tr, _ := newTestTracker(t)
	r := tr.StartAt(context.Background(), at(0))
	r.ReasoningChunkAt(at(100), 1)
	r.ChunkAt(at(420), 1)
	r.SetUsage(7, 30)
	rec := r.EndAt(at(500), nil)
	tpot, ok := rec.TPOT()
	require.True(t, ok)
	assert.Equal(t, (320*time.Millisecond+14)/29, tpot) // rounded to the nearest ns
}

// TestTTFOBuckets: the TTFO histogram, which both roles share by name, has
// the server TTFT buckets (the GenAI conventions' advice for a first token)
// whichever role records first.
func TestTTFOBuckets(t *testing.T) {
	for _, role := range []side{sideServer, sideClient} {
		t.Run(role.String(), func(t *testing.T) {
			tr, reader := newTestTracker(t)
			r := tr.startAs(context.Background(), role, at(0), nil)
			r.ChunkAt(at(30), 1)
			r.EndAt(at(40), nil)
			got := collect(t, reader)
			ttfo := got[role.metricNames().TTFO].Data.(metricdata.Histogram[float64]).DataPoints[0].Bounds
			assert.Equal(t, serverTTFTBuckets, ttfo)
			assert.Equal(t, metricTTFO, role.metricNames().TTFO)
		})
	}
}

// N is never below the token-carrying chunks: a usage below them is the
// server's fault, reported through otel.Handle (a Responses API
// response.incomplete with output_tokens 0 after 16 deltas).
func TestUsageBelowChunks(t *testing.T) {
	tests := []struct {
		name     string
		chunks   int
		usage    int // -1: no SetUsage
		n        int
		reported bool
	}{
		{"usage 0 after 16 chunks", 16, 0, 16, true},
		{"usage one below the chunks", 3, 2, 3, true},
		{"usage equal to the chunks", 3, 3, 3, false},
		{"usage above the chunks", 3, 40, 40, false},
		{"no usage: the chunk tokens", 3, -1, 3, false},
		{"no chunks, usage 0", 0, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := otelErrors(t)
			tr, _ := newTestTracker(t)
			r := tr.StartAt(context.Background(), at(0))
			for i := range tt.chunks {
				r.ChunkAt(at(float64(10*(i+1))), 1)
			}
			if tt.usage >= 0 {
				r.SetUsage(31, tt.usage)
			}
			rec := r.EndAt(at(500), nil)
			assert.Equal(t, tt.n, rec.OutputTokens)
			assert.Equal(t, rec, r.EndAt(at(600), nil), "a second End returns the same Record")
			reported := errs()
			if !tt.reported {
				assert.Empty(t, reported)
				return
			}
			require.Len(t, reported, 1, "reported once, at the first End")
			assert.ErrorIs(t, reported[0], errUsageBelowChunks)
			assert.Equal(t, fmt.Sprintf("llmmetrics: reported output tokens below the token-carrying chunks: usage says %d, %d chunks arrived; N is %d",
				tt.usage, tt.chunks, tt.chunks), reported[0].Error())
		})
	}
}

func TestSetReasoningTokens(t *testing.T) {
	errs := otelErrors(t)
	tr, _ := newTestTracker(t)
	r := tr.StartAt(context.Background(), at(0))
	r.SetReasoningTokens(10)
	r.SetReasoningTokens(192) // cumulative: the last one wins
	r.SetReasoningTokens(-1)  // ignored, reported
	r.SetUsage(20, 214)
	rec := r.EndAt(at(10), nil)
	r.SetReasoningTokens(5) // after End: ignored
	assert.Equal(t, 192, rec.ReasoningTokens)
	assert.Equal(t, 214, rec.OutputTokens, "reasoning stays inside N")
	assert.Equal(t, 192, r.End(nil).ReasoningTokens)
	reported := errs()
	require.Len(t, reported, 1)
	assert.ErrorIs(t, reported[0], errNegativeUsage)
}

// The Record's JSON gains first_output and reasoning_tokens, and only when
// they are set: an old Record encodes exactly as before.
func TestRecordJSONReasoningFields(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	old := Record{Start: start, FirstToken: start.Add(time.Second), LastToken: start.Add(2 * time.Second),
		End: start.Add(3 * time.Second), InputTokens: 1, OutputTokens: 2, Chunks: 2}
	b, err := json.Marshal(old)
	require.NoError(t, err)
	assert.Equal(t, `{"start":"2026-01-02T03:04:05Z","first_token":"2026-01-02T03:04:06Z","last_token":"2026-01-02T03:04:07Z","end":"2026-01-02T03:04:08Z","input_tokens":1,"output_tokens":2,"chunks":2,"outcome":"ok"}`, string(b))

	rec := old
	rec.FirstOutput = start.Add(1500 * time.Millisecond)
	rec.ReasoningTokens = 1
	b, err = json.Marshal(rec)
	require.NoError(t, err)
	assert.Equal(t, `{"start":"2026-01-02T03:04:05Z","first_token":"2026-01-02T03:04:06Z","first_output":"2026-01-02T03:04:06.5Z","last_token":"2026-01-02T03:04:07Z","end":"2026-01-02T03:04:08Z","input_tokens":1,"output_tokens":2,"reasoning_tokens":1,"chunks":2,"outcome":"ok"}`, string(b))
	var back Record
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, rec, back)
}

func TestReasoningChunkDoesNotAllocate(t *testing.T) {
	ctx := context.Background()
	tr, _ := newTestTracker(t, WithoutITL())
	r := tr.Start(ctx)
	r.ReasoningChunk(1)
	assert.Zero(t, testing.AllocsPerRun(1000, func() { r.ReasoningChunk(1) }))
	assert.Zero(t, testing.AllocsPerRun(1000, func() { r.Chunk(1) }), "answer chunks after reasoning")
	// The first answer chunk of a request (which records TTFO) costs
	// nothing either: a fresh request per run, compared with the same
	// request without it.
	withFirst := testing.AllocsPerRun(100, func() {
		r := tr.Start(ctx)
		r.ReasoningChunk(1)
		r.Chunk(1)
	})
	without := testing.AllocsPerRun(100, func() {
		r := tr.Start(ctx)
		r.ReasoningChunk(1)
		r.ReasoningChunk(1)
	})
	assert.Equal(t, without, withFirst)
}
