package present

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/saturation"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func ptr(v float64) *float64 { return &v }

// testPage is a comparison page with every part filled.
func testPage() Page {
	run := func(name string, scale float64) Run {
		r := Run{Name: name, LoadUnit: "concurrent requests", Workload: [][2]string{{"model", "fake"}, {"max-tokens", "32"}}}
		for i := range 300 {
			r.TTFT = append(r.TTFT, time.Duration(scale*float64(20+i%50))*time.Millisecond)
			r.ITL = append(r.ITL, time.Duration(scale*float64(2000+i%700))*time.Microsecond)
		}
		for _, load := range []float64{1, 2, 4, 8} {
			sum := llmmetrics.Summary{OutputThroughput: 100 * load / scale}
			sum.TTFT = llmmetrics.Distribution{Count: 10, Percentiles: []llmmetrics.PercentileValue{{P: 99, Value: time.Duration(scale*10*load) * time.Millisecond}}}
			r.Levels = append(r.Levels, Level{Load: load, Summary: sum,
				Server: &saturation.Server{KVCacheUsage: ptr(0.1 * load), RequestsWaiting: ptr(load / 2), RequestsRunning: ptr(load)}})
		}
		return r
	}
	return Page{
		Title:    "llmmetrics compare: base → new",
		Command:  "llmmetrics compare -fail-on 'p99 ttft' base new",
		Verdict:  &Verdict{Headline: "FAIL: regressed: p99 ttft", Bad: true, Reasons: []string{"regression: p99 ttft +12.0% [+7.0%, +18.0%]"}},
		Warnings: []string{"different models"},
		Tables: []Table{{Caption: "concurrency 4", Header: []string{"metric", "BASE", "NEW", "verdict"},
			Rows: []Row{{Cells: []string{"p99 ttft", "100", "112", "regression"}, Class: "regression"}, {Cells: []string{"p50 ttft", "50", "50.1", "no change"}}}}},
		Methods: []string{"bootstrap over requests"},
		Runs:    []Run{run("BASE: <script>alert(1)</script>", 1), run("NEW: new", 1.15)},
	}
}

func TestWrite(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, testPage()))
	html := buf.String()
	assert.Contains(t, html, `<tr class="regression"><td>p99 ttft</td><td>100</td><td>112</td><td>regression</td></tr>`)
	assert.Contains(t, html, "FAIL: regressed: p99 ttft")
	assert.Contains(t, html, "Warning: different models")
	assert.Contains(t, html, "llmmetrics compare -fail-on &#39;p99 ttft&#39; base new")
	assert.Contains(t, html, "<code>32</code>", "the workload")
	for _, title := range []string{"TTFT: cumulative distribution", "ITL: cumulative distribution", "Output throughput against load",
		"p99 TTFT against load", "Server KV cache against load", "Server queue against load"} {
		assert.Contains(t, html, title)
	}
	assert.Equal(t, 6, strings.Count(html, "<svg"), "one inline SVG per chart")
	// Self-contained: nothing to fetch, no script; user text escaped.
	assert.NotContains(t, html, "<script")
	assert.NotRegexp(t, regexp.MustCompile(`(src|href)\s*=`), html)
	assert.NotContains(t, html, "<?xml")
	assert.Contains(t, html, "&lt;script&gt;alert(1)&lt;/script&gt;")
}

// TestWriteOneRun: a page of one run read from a file has only the CDFs
// (no levels, no server).
func TestWriteOneRun(t *testing.T) {
	p := testPage()
	p.Verdict, p.Warnings = nil, nil
	p.Runs = p.Runs[1:]
	p.Runs[0].Levels = nil
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, p))
	assert.Equal(t, 2, strings.Count(buf.String(), "<svg"))
	assert.NotContains(t, buf.String(), `class="verdict`)
}

// TestCDF: 5 values give 5 points, the share of values at or below each.
func TestCDF(t *testing.T) {
	xys := cdf([]time.Duration{3 * time.Millisecond, time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond, 4 * time.Millisecond})
	require.Len(t, xys, 5)
	for i, xy := range xys {
		assert.InDelta(t, float64(i+1), xy.X, 1e-9)
		assert.InDelta(t, float64(i+1)/5, xy.Y, 1e-9)
	}
	assert.Len(t, cdf(make([]time.Duration, 10000)), cdfPoints, "a large sample is thinned")
}

// TestChromiumRenders loads a page in headless Chromium (Debian's
// chromium package; the CI installs it) and checks that it renders: a
// screenshot of the full width with more than a few colours, and no
// console message (Chromium logs them as "CONSOLE" lines with
// --enable-logging=stderr). LLMMETRICS_SCREENSHOT=FILE keeps the
// screenshot (docs/report.png is made so).
func TestChromiumRenders(t *testing.T) {
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium not installed (Debian: apt-get install chromium): the page is not checked in a browser")
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	require.NoError(t, WriteFile(page, testPage()))
	shot := filepath.Join(dir, "report.png")
	if keep := os.Getenv("LLMMETRICS_SCREENSHOT"); keep != "" {
		shot, err = filepath.Abs(keep)
		require.NoError(t, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir="+filepath.Join(dir, "profile"),
		"--enable-logging=stderr", "--v=0", "--hide-scrollbars", "--window-size=1200,2000", "--screenshot="+shot, "file://"+page)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Run(), stderr.String())
	for _, l := range strings.Split(stderr.String(), "\n") {
		assert.NotContains(t, l, "CONSOLE", "a console message")
	}
	f, err := os.Open(shot)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	b := img.Bounds()
	assert.Equal(t, 1200, b.Dx())
	assert.Equal(t, 2000, b.Dy())
	colours := map[[3]uint32]bool{}
	for y := b.Min.Y; y < b.Max.Y; y += 7 {
		for x := b.Min.X; x < b.Max.X; x += 7 {
			r, g, bl, _ := img.At(x, y).RGBA()
			colours[[3]uint32{r >> 8, g >> 8, bl >> 8}] = true
		}
	}
	assert.Greater(t, len(colours), 50, "the screenshot shows text, tables and charts, not a blank page")
}
