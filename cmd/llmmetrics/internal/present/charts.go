package present

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Chart is one inline SVG chart of a page.
type Chart struct {
	SVG     template.HTML
	Caption string
}

// runColors are the runs' colours: BASE blue, NEW orange.
var runColors = []color.Color{
	color.RGBA{R: 31, G: 119, B: 180, A: 255},
	color.RGBA{R: 255, G: 127, B: 14, A: 255},
	color.RGBA{R: 44, G: 160, B: 44, A: 255},
}

// cdfPoints is how many points a CDF line keeps (quantiles of the sample).
const cdfPoints = 400

// line is one series of a chart.
type line struct {
	name   string
	xys    plotter.XYs
	color  color.Color
	dashed bool
	points bool
}

// chartSpec is one chart before drawing.
type chartSpec struct {
	title, xLabel, yLabel, caption string
	logX                           bool
	xMin                           float64 // the x axis' left end (0: from the data)
	yMax                           float64
	lines                          []line
	ticks                          []float64 // x ticks (the loads)
}

// drawCharts draws the CDFs of TTFT and ITL and, for runs with load
// levels, throughput, p99 TTFT, KV cache and queue against load.
func drawCharts(runs []Run) ([]Chart, error) {
	var specs []chartSpec
	for _, m := range []struct {
		name string
		get  func(Run) []time.Duration
	}{{"TTFT", func(r Run) []time.Duration { return r.TTFT }}, {"ITL", func(r Run) []time.Duration { return r.ITL }}} {
		s := chartSpec{title: m.name + ": cumulative distribution", xLabel: m.name + " (ms, log scale)", yLabel: "share of values ≤ x",
			caption: "Distribution of " + m.name + ": the share of values at or below each time; the tail is the top right.", logX: true, yMax: 1}
		for i, r := range runs {
			if xys := cdf(m.get(r)); len(xys) > 0 {
				s.lines = append(s.lines, line{name: r.Name, xys: xys, color: runColors[i%len(runColors)]})
				// The axis starts at the lowest run's 0.5th percentile: a
				// few near-zero values (chunks read together) would
				// otherwise stretch a log axis over decades of nothing.
				lo := xys[len(xys)/200].X
				if s.xMin == 0 || lo < s.xMin {
					s.xMin = lo
				}
			}
		}
		if len(s.lines) > 0 {
			specs = append(specs, s)
		}
	}
	specs = append(specs, loadCharts(runs)...)
	specs = append(specs, contextCharts(runs)...)
	var out []Chart
	for _, s := range specs {
		svg, err := draw1(s)
		if err != nil {
			return nil, fmt.Errorf("chart %q: %w", s.title, err)
		}
		out = append(out, Chart{SVG: svg, Caption: s.caption})
	}
	return out, nil
}

// cdf returns the empirical CDF of ds (ms) at up to cdfPoints quantiles.
func cdf(ds []time.Duration) plotter.XYs {
	if len(ds) == 0 {
		return nil
	}
	xs := make([]float64, len(ds))
	for i, d := range ds {
		xs[i] = max(float64(d)/float64(time.Millisecond), 1e-3) // log axis: no 0
	}
	slices.Sort(xs)
	n := len(xs)
	k := min(n, cdfPoints)
	xys := make(plotter.XYs, 0, k)
	for j := range k {
		i := j * (n - 1) / max(k-1, 1)
		xys = append(xys, plotter.XY{X: xs[i], Y: float64(i+1) / float64(n)})
	}
	return xys
}

// loadCharts are the charts against load of the runs that have levels.
func loadCharts(runs []Run) []chartSpec {
	unit := ""
	var ticks []float64
	for _, r := range runs {
		for _, l := range r.Levels {
			if !slices.Contains(ticks, l.Load) {
				ticks = append(ticks, l.Load)
			}
		}
		if unit == "" {
			unit = r.LoadUnit
		}
	}
	if len(ticks) == 0 {
		return nil
	}
	slices.Sort(ticks)
	x := "load (" + unit + ", log scale)"
	if unit == "" {
		x = "load (log scale)"
	}
	tp := chartSpec{title: "Output throughput against load", xLabel: x, yLabel: "output tokens/s", logX: true, ticks: ticks,
		caption: "Output tokens per second at each load level."}
	p99 := chartSpec{title: "p99 TTFT against load", xLabel: x, yLabel: "p99 TTFT (ms)", logX: true, ticks: ticks,
		caption: "The 99th percentile of time to first token at each load level."}
	kv := chartSpec{title: "Server KV cache against load", xLabel: x, yLabel: "KV cache in use (%)", logX: true, ticks: ticks, yMax: 100,
		caption: "The model server's KV-cache use (mean over the level), from its /metrics."}
	queue := chartSpec{title: "Server queue against load", xLabel: x, yLabel: "requests", logX: true, ticks: ticks,
		caption: "Requests the model server was running (dashed) and holding waiting (solid), mean over the level."}
	for i, r := range runs {
		c := runColors[i%len(runColors)]
		var a, b, k, w, run plotter.XYs
		for _, l := range r.Levels {
			a = append(a, plotter.XY{X: l.Load, Y: l.Summary.OutputThroughput})
			if v, ok := l.Summary.TTFT.Percentile(99); ok {
				b = append(b, plotter.XY{X: l.Load, Y: float64(v) / float64(time.Millisecond)})
			}
			add := func(xys *plotter.XYs, v *float64, scale float64) {
				if v != nil {
					*xys = append(*xys, plotter.XY{X: l.Load, Y: *v * scale})
				}
			}
			if s := l.Server; s != nil {
				add(&k, s.KVCacheUsage, 100)
				add(&w, s.RequestsWaiting, 1)
				add(&run, s.RequestsRunning, 1)
			}
		}
		tp.lines = appendLine(tp.lines, line{name: r.Name, xys: a, color: c, points: true})
		p99.lines = appendLine(p99.lines, line{name: r.Name, xys: b, color: c, points: true})
		kv.lines = appendLine(kv.lines, line{name: r.Name, xys: k, color: c, points: true})
		queue.lines = appendLine(queue.lines, line{name: r.Name + " waiting", xys: w, color: c, points: true})
		queue.lines = appendLine(queue.lines, line{name: r.Name + " running", xys: run, color: c, points: true, dashed: true})
	}
	var out []chartSpec
	for _, s := range []chartSpec{tp, p99, kv, queue} {
		if len(s.lines) > 0 {
			out = append(out, s)
		}
	}
	return out
}

func appendLine(ls []line, l line) []line {
	if len(l.xys) == 0 {
		return ls
	}
	return append(ls, l)
}

// draw1 draws one chart as an SVG element for inlining.
func draw1(s chartSpec) (template.HTML, error) {
	p := plot.New()
	p.Title.Text = s.title
	p.X.Label.Text, p.Y.Label.Text = s.xLabel, s.yLabel
	top := 0.0
	for _, l := range s.lines {
		ln, err := plotter.NewLine(l.xys)
		if err != nil {
			return "", err
		}
		ln.Color, ln.Width = l.color, vg.Points(2)
		if l.dashed {
			ln.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		p.Add(ln)
		p.Legend.Add(l.name, ln)
		if l.points {
			pts, err := plotter.NewScatter(l.xys)
			if err != nil {
				return "", err
			}
			pts.Color, pts.Shape = l.color, draw.CircleGlyph{}
			p.Add(pts)
		}
		for _, xy := range l.xys {
			top = max(top, xy.Y)
		}
	}
	p.Add(plotter.NewGrid())
	p.Legend.Top, p.Legend.Left = true, true
	if s.logX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
		p.X.Min, p.X.Max = logRange(s.lines)
	}
	if len(s.ticks) > 0 {
		ticks := make(plot.ConstantTicks, 0, len(s.ticks))
		for _, t := range s.ticks {
			ticks = append(ticks, plot.Tick{Value: t, Label: strconv.FormatFloat(t, 'g', -1, 64)})
		}
		p.X.Tick.Marker = ticks
	}
	if s.xMin > 0 {
		p.X.Min = s.xMin
	}
	p.Y.Min = 0
	p.Y.Max = 1.3 * top // headroom for the legend
	if s.yMax > 0 {
		p.Y.Max = s.yMax * 1.3
		if s.yMax == 1 { // a share: the legend sits in the empty lower right
			p.Y.Max = 1
			p.Legend.Top, p.Legend.Left = false, false
			p.Legend.YOffs = vg.Points(10)
		}
	}
	if p.Y.Max == 0 {
		p.Y.Max = 1
	}
	w, err := p.WriterTo(7*vg.Inch, 4*vg.Inch, "svg")
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		return "", err
	}
	svg := buf.String()
	if i := strings.Index(svg, "<svg"); i > 0 {
		svg = svg[i:] // drop the XML declaration and comment: the SVG is inlined in HTML
	}
	return template.HTML(svg), nil // our own drawing, not user text: gonum escapes the labels
}

// logRange is the x range of a log axis over lines: their smallest and
// largest x, widened by a factor of 2 each way when they are one value (a
// single load level, or a run whose every sample is equal), because gonum
// widens a one-value axis down to 0, which a log scale cannot draw. The
// points' x are positive (cdf clamps at 1 µs, loads are positive).
func logRange(ls []line) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, l := range ls {
		for _, xy := range l.xys {
			if xy.X > 0 {
				lo, hi = min(lo, xy.X), max(hi, xy.X)
			}
		}
	}
	if math.IsInf(lo, 1) {
		return 1, 10
	}
	if lo == hi {
		return lo / 2, hi * 2
	}
	return lo, hi
}
