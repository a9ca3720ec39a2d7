package bench

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"github.com/llmmetrics/llmmetrics/saturation"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

var (
	blue   = color.RGBA{R: 31, G: 119, B: 180, A: 255}
	green  = color.RGBA{R: 44, G: 160, B: 44, A: 255}
	orange = color.RGBA{R: 255, G: 127, B: 14, A: 255}
	red    = color.RGBA{R: 214, G: 39, B: 40, A: 255}
	purple = color.RGBA{R: 148, G: 103, B: 189, A: 255}
	grey   = color.RGBA{R: 120, G: 120, B: 120, A: 255}
)

// series is one line of a chart.
type series struct {
	name   string
	xys    plotter.XYs
	errs   []float64 // optional ± half-widths (error bars)
	color  color.Color
	dashed bool
}

// chart is one SVG: a few series against load.
type chart struct {
	file, title, yLabel string
	logY                bool
	yMax                float64 // fixed top of the y axis (0: from the data)
	series              []series
	limit               float64 // a horizontal dashed line (0: none), e.g. the SLO's TTFT limit
	limitLabel          string
}

// writeCharts draws throughput, p99 TTFT (and, when the server reported
// them, KV-cache use and queue depth) against load, one SVG each, with the
// saturation point marked, and returns the paths written.
func writeCharts(dir string, r Results) ([]string, error) {
	var all, good, p50, p99 series
	all = series{name: "output tok/s (mean of repeats, 95% interval)", color: blue}
	good = series{name: "good output tok/s (met the SLO)", color: green, dashed: true}
	p50 = series{name: "p50 TTFT", color: orange}
	p99 = series{name: "p99 TTFT", color: red}
	for _, l := range r.Levels {
		s := l.Summary
		m, h := saturation.MeanCI(l.RepeatThroughput)
		if len(l.RepeatThroughput) == 0 {
			m = s.OutputThroughput
		}
		all.xys = append(all.xys, plotter.XY{X: l.Load, Y: m})
		all.errs = append(all.errs, h)
		good.xys = append(good.xys, plotter.XY{X: l.Load, Y: s.Goodput.TokensPerSecond})
		if v, ok := s.TTFT.Percentile(50); ok {
			p50.xys = append(p50.xys, plotter.XY{X: l.Load, Y: max(v.Seconds()*1000, 0.01)})
		}
		if v, ok := s.TTFT.Percentile(99); ok {
			p99.xys = append(p99.xys, plotter.XY{X: l.Load, Y: max(v.Seconds()*1000, 0.01)})
		}
	}
	charts := []chart{
		{file: "throughput.svg", title: "Output throughput against load", yLabel: "output tokens/s", series: []series{all, good}},
		{file: "ttft.svg", title: "Time to first token against load", yLabel: "TTFT (ms, log scale)", logY: true, series: []series{p50, p99},
			limit: r.SLO.TTFT.Seconds() * 1000, limitLabel: "SLO: TTFT ≤ " + r.SLO.TTFT.String()},
	}
	charts = append(charts, serverCharts(r)...)
	var paths []string
	for _, c := range charts {
		if !c.hasPoints() {
			continue // nothing to draw: no chart from nothing
		}
		p := filepath.Join(dir, c.file)
		if err := drawChart(p, c, r); err != nil {
			return paths, fmt.Errorf("chart %s: %w", c.file, err)
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// hasPoints reports whether some series of c has a point.
func (c chart) hasPoints() bool {
	for _, s := range c.series {
		if len(s.xys) > 0 {
			return true
		}
	}
	return false
}

// logRange returns the range of a log axis over vs (values ≤ 0 and NaN
// skipped): from the smallest to the largest with a margin, and a factor
// of 2 either side of a single value (the chart library would widen a
// one-value axis by ±1, down to 0, where a log scale is undefined). ok is
// false when no value is > 0.
func logRange(vs []float64) (lo, hi float64, ok bool) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, v := range vs {
		if v > 0 && !math.IsInf(v, 0) {
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	if lo > hi {
		return 0, 0, false
	}
	if hi/lo < 1.01 {
		return lo / 2, hi * 2, true
	}
	return lo / 1.15, hi * 1.15, true
}

func drawChart(path string, c chart, r Results) error {
	p := plot.New()
	p.Title.Text = c.title
	p.Y.Label.Text = c.yLabel
	if r.Mode == ModeRate {
		p.X.Label.Text = "request rate (req/s, log scale)"
	} else {
		p.X.Label.Text = "concurrent requests (log scale)"
	}
	top := 0.0
	for _, s := range c.series {
		if len(s.xys) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(s.xys)
		if err != nil {
			return err
		}
		line.Color, points.Color = s.color, s.color
		line.Width = vg.Points(2)
		points.Shape = draw.CircleGlyph{}
		if s.dashed {
			line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		p.Add(line, points)
		p.Legend.Add(s.name, line, points)
		for i, xy := range s.xys {
			e := 0.0
			if i < len(s.errs) {
				e = s.errs[i]
			}
			top = max(top, xy.Y+e)
		}
		if len(s.errs) == len(s.xys) {
			bars, err := plotter.NewYErrorBars(errorBars{s.xys, s.errs})
			if err != nil {
				return err
			}
			bars.Color = s.color
			p.Add(bars)
		}
	}
	// The axes' ranges are set here, never left to the chart library's
	// widening (a log axis must stay above 0).
	var ys, loads []float64
	for _, s := range c.series {
		for _, xy := range s.xys {
			ys = append(ys, xy.Y)
		}
	}
	if c.logY {
		lo, hi, ok := logRange(append(ys, c.limit))
		if !ok {
			return fmt.Errorf("no value above 0 to draw on a log scale")
		}
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Y.Min, p.Y.Max = lo, hi
	} else {
		p.Y.Min = 0
		p.Y.Max = 1.3 * top // headroom for the legend and the label
		if c.yMax > 0 {
			p.Y.Max = c.yMax
		}
		if !(p.Y.Max > 0) || math.IsInf(p.Y.Max, 0) {
			p.Y.Max = max(1, c.yMax)
		}
	}
	ticks := make(plot.ConstantTicks, 0, len(r.Levels))
	for _, l := range r.Levels {
		loads = append(loads, l.Load)
		ticks = append(ticks, plot.Tick{Value: l.Load, Label: strconv.FormatFloat(l.Load, 'g', -1, 64)})
	}
	lo, hi, ok := logRange(loads)
	if !ok {
		return fmt.Errorf("no load above 0 to draw on a log scale")
	}
	p.X.Scale = plot.LogScale{}
	p.X.Min, p.X.Max = lo, hi
	p.X.Tick.Marker = ticks
	p.Add(plotter.NewGrid())
	p.Legend.Top, p.Legend.Left = true, true
	if c.limit > 0 {
		p.Add(&horizontalLine{Y: c.limit, Label: c.limitLabel})
	}
	if r.Saturation.Found {
		p.Add(&verticalLine{X: r.Saturation.Load, Label: fmt.Sprintf("saturation: %g", r.Saturation.Load)})
	}
	if r.MaxLoadUnderSLO != nil && *r.MaxLoadUnderSLO > 0 {
		p.Add(&verticalLine{X: *r.MaxLoadUnderSLO, Label: fmt.Sprintf("max under SLO: %g", *r.MaxLoadUnderSLO), Low: true})
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w, err := p.WriterTo(7*vg.Inch, 4*vg.Inch, chartFormat)
	if err == nil {
		_, err = w.WriteTo(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// errorBars adapts a series' points and half-widths to plotter.YErrorer.
type errorBars struct {
	xys  plotter.XYs
	errs []float64
}

func (e errorBars) Len() int                    { return len(e.xys) }
func (e errorBars) XY(i int) (float64, float64) { return e.xys[i].X, e.xys[i].Y }
func (e errorBars) YError(i int) (float64, float64) {
	return e.errs[i], e.errs[i]
}

// verticalLine is a plotter that draws a vertical dashed line across the
// data area with a label at its top (or lower, with Low).
type verticalLine struct {
	X     float64
	Label string
	Low   bool
}

// Plot implements plot.Plotter.
func (v *verticalLine) Plot(c draw.Canvas, p *plot.Plot) {
	x := p.X.Norm(v.X)
	if x < 0 || x > 1 {
		return
	}
	xc := c.X(x)
	style := draw.LineStyle{Color: grey, Width: vg.Points(1.5), Dashes: []vg.Length{vg.Points(4), vg.Points(4)}}
	c.StrokeLine2(style, xc, c.Min.Y, xc, c.Max.Y)
	ts := draw.TextStyle{Color: grey, Font: plot.DefaultFont, Handler: plot.DefaultTextHandler, XAlign: draw.XLeft, YAlign: draw.YTop}
	ts.Font.Size = vg.Points(10)
	y := c.Max.Y - vg.Points(4)
	if v.Low {
		y = c.Min.Y + vg.Points(16)
	}
	c.FillText(ts, vg.Point{X: xc + vg.Points(4), Y: y}, v.Label)
}

// horizontalLine is a plotter that draws a horizontal dashed line across
// the data area with a label at its left end.
type horizontalLine struct {
	Y     float64
	Label string
}

// Plot implements plot.Plotter.
func (h *horizontalLine) Plot(c draw.Canvas, p *plot.Plot) {
	y := p.Y.Norm(h.Y)
	if y < 0 || y > 1 {
		return
	}
	yc := c.Y(y)
	style := draw.LineStyle{Color: red, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(2), vg.Points(3)}}
	c.StrokeLine2(style, c.Min.X, yc, c.Max.X, yc)
	ts := draw.TextStyle{Color: red, Font: plot.DefaultFont, Handler: plot.DefaultTextHandler, XAlign: draw.XLeft, YAlign: draw.YBottom}
	ts.Font.Size = vg.Points(9)
	c.FillText(ts, vg.Point{X: c.Min.X + vg.Points(4), Y: yc + vg.Points(2)}, h.Label)
}

// serverCharts are the charts of server telemetry: KV-cache use and the
// queue against load, each drawn when some level reported it.
func serverCharts(r Results) []chart {
	kv := series{name: "KV cache in use (mean over the level)", color: purple}
	kvMax := series{name: "KV cache in use (largest scrape)", color: purple, dashed: true}
	wait := series{name: "requests waiting (mean)", color: red}
	waitMax := series{name: "requests waiting (largest scrape)", color: red, dashed: true}
	run := series{name: "requests running (mean)", color: blue}
	add := func(s *series, x float64, v *float64, scale float64) {
		if v != nil {
			s.xys = append(s.xys, plotter.XY{X: x, Y: *v * scale})
		}
	}
	for _, l := range r.Levels {
		if l.Server == nil {
			continue
		}
		add(&kv, l.Load, l.Server.KVCacheUsage, 100)
		add(&kvMax, l.Load, l.Server.KVCacheUsageMax, 100)
		add(&wait, l.Load, l.Server.RequestsWaiting, 1)
		add(&waitMax, l.Load, l.Server.RequestsWaitingMax, 1)
		add(&run, l.Load, l.Server.RequestsRunning, 1)
	}
	var out []chart
	if len(kv.xys) > 0 {
		out = append(out, chart{file: "kv_cache.svg", title: "Server KV cache against load", yLabel: "KV cache in use (%)",
			yMax: 100, series: []series{kv, kvMax}})
	}
	if len(wait.xys) > 0 || len(run.xys) > 0 {
		out = append(out, chart{file: "queue.svg", title: "Server queue against load", yLabel: "requests",
			series: []series{run, wait, waitMax}})
	}
	return out
}

var chartFormat = "svg"
