package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHTML: -html writes the run's page beside the usual output: the
// counts and latency tables of the fixture's Summary, its CDFs and the
// command line.
func TestHTML(t *testing.T) {
	page := filepath.Join(t.TempDir(), "report.html")
	code, out, _ := runReport(t, "-html", page, "testdata/records.jsonl")
	require.Equal(t, exitOK, code)
	assert.Contains(t, out, "requests", "the text output is unchanged")
	b, err := os.ReadFile(page)
	require.NoError(t, err)
	html := string(b)
	// The fixture's TTFTs are 100, 200, … ms; its ITL has 5 gaps, the largest 100 ms.
	assert.Contains(t, html, "<td>ITL</td><td>5</td>")
	assert.Contains(t, html, "TTFT: cumulative distribution")
	assert.Contains(t, html, "ITL: cumulative distribution")
	assert.Contains(t, html, "llmmetrics report -html "+page+" testdata/records.jsonl")
	assert.Equal(t, 2, strings.Count(html, "<svg"))
}

func TestHTMLUnwritable(t *testing.T) {
	code, _, errs := runReport(t, "-html", filepath.Join(t.TempDir(), "no", "such", "dir.html"), "testdata/records.jsonl")
	assert.Equal(t, exitBad, code)
	assert.Contains(t, errs, "dir.html")
}
