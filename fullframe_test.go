package llmmetrics

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tests of the Gemini and NDJSON decoders compare whole frames,
// Reasoning and ReasoningTokens included: fullView is frameView with them
// as its own fields (frameView's copies are left zero, so a literal sets
// them once).

// fullView is a Frame with its error as text, so frames compare with ==.
type fullView struct {
	frameView
	Reasoning       bool
	ReasoningTokens int
}

func fullViewOf(f Frame) fullView {
	v := view(f)
	v.Reasoning, v.ReasoningOut = false, 0 // in fullView's own fields
	return fullView{frameView: v, Reasoning: f.Reasoning, ReasoningTokens: f.ReasoningTokens}
}

// Builders for expected frames.
var (
	answerTok  = fullView{frameView: frameView{Tokens: 1}}
	thoughtTok = fullView{frameView: frameView{Tokens: 1}, Reasoning: true}
	doneFrame  = fullView{frameView: frameView{Done: true}}
)

// usage returns v with the usage in, out (reasoning of them).
func (v fullView) usage(in, out, reasoning int) fullView {
	v.HasUsage, v.In, v.Out, v.ReasoningTokens = true, in, out, reasoning
	return v
}

// input returns v telling the prompt's size alone (HasInput).
func (v fullView) input(in int) fullView {
	v.HasInput, v.In = true, in
	return v
}

// cached returns v with n cached input tokens.
func (v fullView) cached(n int) fullView {
	v.Cached = n
	return v
}

// answering returns v naming the model and id that answered.
func (v fullView) answering(model, id string) fullView {
	v.Model, v.ID = model, id
	return v
}

// finish returns v with the finish reasons (joined with ",").
func (v fullView) finish(reasons string) fullView {
	v.Finish = reasons
	return v
}

// countsOnly returns the views without who answered, why it ended and the
// server's times, for the tests of what frames count (answerinfo_test.go
// and servertime_test.go test those).
func countsOnly[V frameView | fullView](vs []V) []V {
	if vs == nil {
		return nil
	}
	out := make([]V, len(vs))
	for i, v := range vs {
		switch w := any(&v).(type) {
		case *frameView:
			w.Model, w.ID, w.Finish, w.Prefill, w.Decode = "", "", "", 0, 0
		case *fullView:
			w.Model, w.ID, w.Finish, w.Prefill, w.Decode = "", "", "", 0, 0
		}
		out[i] = v
	}
	return out
}

// server returns v with the server's prefill and decode times.
func (v fullView) server(prefill, decode time.Duration) fullView {
	v.Prefill, v.Decode = prefill, decode
	return v
}

// done returns v marked Done.
func (v fullView) done() fullView {
	v.Done = true
	return v
}

// decodeFull feeds pieces to d in order, then flushes, and returns the frames.
func decodeFull(d Decoder, pieces ...[]byte) []fullView {
	var out []fullView
	emit := func(f Frame) { out = append(out, fullViewOf(f)) }
	for _, p := range pieces {
		d.Decode(p, emit)
	}
	d.Flush(emit)
	return out
}

func readTestdata(t testing.TB, dir, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", dir, name))
	require.NoError(t, err)
	return b
}

// bytewise cuts data into 1-byte pieces.
func bytewise(data []byte) [][]byte {
	pieces := make([][]byte, len(data))
	for i := range data {
		pieces[i] = data[i : i+1]
	}
	return pieces
}

// checkFixture decodes a well-formed fixture whole, split in two at every
// byte and in 1-byte pieces: the frames must be want every time, and
// nothing is reported as a problem.
func checkFixture(t *testing.T, dec func() Decoder, data []byte, want []fullView) {
	t.Helper()
	errs := otelErrors(t)
	orig := bytes.Clone(data)

	d := dec()
	require.Equal(t, want, decodeFull(d, data))
	assert.Empty(t, errs(), "a well-formed fixture reports nothing through otel.Handle")
	assert.NoError(t, d.Err(), "a well-formed fixture has no decoding problem")

	for cut := 0; cut <= len(data); cut++ {
		if !assert.Equal(t, want, decodeFull(dec(), data[:cut], data[cut:]), "split at byte %d", cut) {
			break
		}
	}
	assert.Equal(t, want, decodeFull(dec(), bytewise(data)...), "1-byte pieces")
	assert.Equal(t, orig, data, "the decoder must not modify its input")
}

// checkSplitFull is checkSplitInvariant (decoder_fuzz_test.go) on whole
// frames, for the fuzz targets of the Gemini and NDJSON decoders.
func checkSplitFull(t *testing.T, dec func() Decoder, data, cuts []byte) []fullView {
	orig := bytes.Clone(data)
	whole := decodeFull(dec(), data)
	if got := decodeFull(dec(), splitAt(data, cuts)...); !equalFull(whole, got) {
		t.Fatalf("split %v: frames differ\nwhole: %+v\nsplit: %+v", cuts, whole, got)
	}
	if len(data) <= 512 { // larger inputs would make each run (and minimizing) slow
		if got := decodeFull(dec(), bytewise(data)...); !equalFull(whole, got) {
			t.Fatalf("1-byte pieces: frames differ\nwhole: %+v\nsplit: %+v", whole, got)
		}
	}
	if !bytes.Equal(orig, data) {
		t.Fatal("the decoder modified its input")
	}
	for _, f := range whole {
		if f.Tokens < 0 || f.In < 0 || f.Out < 0 || f.ReasoningTokens < 0 || f.ReasoningTokens > f.Out {
			t.Fatalf("bad count in %+v", f)
		}
		if f.Reasoning && f.Tokens == 0 {
			t.Fatalf("a reasoning frame without tokens: %+v", f)
		}
	}
	return whole
}

func equalFull(a, b []fullView) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
