package llmmetrics

import (
	"context"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// arrivedBody returns one piece per Read and reports, as its ArrivalTime,
// the arrival given for the piece last read (zero: unknown).
type arrivedBody struct {
	pieces   []string
	arrivals []time.Time
	last     time.Time
	calls    int
}

func (b *arrivedBody) Read(p []byte) (int, error) {
	if len(b.pieces) == 0 {
		return 0, io.EOF
	}
	time.Sleep(10 * time.Millisecond) // read 10 ms after the previous Read
	n := copy(p, b.pieces[0])
	b.pieces, b.last = b.pieces[1:], b.arrivals[0]
	b.arrivals = b.arrivals[1:]
	return n, nil
}

func (b *arrivedBody) ArrivalTime() time.Time { b.calls++; return b.last }

func TestReaderTimesChunksByArrivalTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, _ := newTestTracker(t)
		start := time.Now()
		body := &arrivedBody{
			pieces: []string{"t 1\n", "role\n", "t 2\nt 1\n", "t 1\n", "d\n"},
			arrivals: []time.Time{
				start.Add(3 * time.Millisecond),  // read at 10 ms
				start.Add(15 * time.Millisecond), // carries no tokens: not asked
				start.Add(21 * time.Millisecond), // two frames, one arrival; read at 30 ms
				{},                               // unknown: the clock, 40 ms
				start.Add(45 * time.Millisecond),
			},
		}
		req := tr.Start(context.Background())
		_, err := io.ReadAll(NewReader(req, body, &lineDecoder{}))
		require.NoError(t, err)
		rec := req.End(nil)
		assert.Equal(t, start.Add(3*time.Millisecond), rec.FirstToken, "first chunk: its arrival, not its read at 10 ms")
		assert.Equal(t, start.Add(40*time.Millisecond), rec.LastToken, "a zero arrival falls back to the clock")
		assert.Equal(t, []time.Duration{18 * time.Millisecond, 0, 19 * time.Millisecond}, rec.ITL,
			"21-3 ms; the second frame of the same Read: 0; 40-21 ms")
		assert.Equal(t, 4, body.calls, "asked once per frame that carries tokens")
	})
}
