package report

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadRecords: the fixture's records come back in file order, each
// with its own ITL (not a decoder's scratch), and bad input names the file.
func TestReadRecords(t *testing.T) {
	rs, err := ReadRecords(context.Background(), []string{"testdata/records.jsonl"}, "auto", nil)
	require.NoError(t, err)
	lines := readLines(t, "testdata/records.jsonl")
	require.Len(t, rs.Records, len(lines))
	assert.Equal(t, []string{"records"}, rs.Formats)
	assert.Equal(t, time.Duration(0), rs.Duration, "the run spans its records")
	ttft, ok := rs.Records[0].TTFT()
	require.True(t, ok)
	assert.Equal(t, 100*time.Millisecond, ttft)
	assert.Equal(t, []time.Duration{100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond}, rs.Records[0].ITL)
	assert.Equal(t, []time.Duration{100 * time.Millisecond, 100 * time.Millisecond}, rs.Records[1].ITL)

	_, err = ReadRecords(context.Background(), []string{"testdata/records.jsonl"}, "nope", nil)
	assert.ErrorContains(t, err, `-format "nope": unknown format`)
	_, err = ReadRecords(context.Background(), []string{"testdata/no-such-file"}, "auto", nil)
	assert.ErrorContains(t, err, "testdata/no-such-file")
}
