package servermetrics

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// The request-phase histograms: where a request's time goes inside the
// engine, as the engine measured it (vLLM's queue, prefill and decode
// times, SGLang's queue time). A histogram is observed when a request
// finishes, so its increase over a level — each bucket's, the count's and
// the sum's, read as counters between the level's first and last scrape,
// summed over engines — holds the requests that finished during the level
// (its warm-up included).
//
// A phase's mean is exact (the sum's increase over the count's). Its p99
// is estimated from the buckets as Prometheus' histogram_quantile does:
// the rank 0.99 × count falls in one bucket, and the estimate interpolates
// linearly between that bucket's bounds (the first bucket starting at 0),
// as if its requests were spread evenly in it; a rank in the +Inf bucket
// gives the highest finite bound, a lower bound of the p99. The bucket is
// kept with the estimate: vLLM's buckets (0.3, 0.5, 0.8, 1, 1.5, 2, 2.5,
// 5, 10 s, …) put every prefill under 300 ms in the first one, where the
// estimate says only "below 0.3 s".

// Phase is one request phase over a level, from a server's histogram.
type Phase struct {
	// Count is how many requests finished during the level.
	Count int
	// Mean is their mean time in the phase (exact).
	Mean time.Duration
	// P99 is the estimated 99th percentile; P99Low and P99High bound the
	// bucket it lies in. Open: the p99 lies in the +Inf bucket, P99 =
	// P99Low is the highest finite bound and P99High is 0.
	P99, P99Low, P99High time.Duration
	Open                 bool
}

// Phases are a level's request phases from the servers' histograms: nil
// where no endpoint exports the histogram or no request finished.
type Phases struct {
	// Engine names whose histograms were read: "vLLM" or "SGLang".
	Engine                 string
	Queue, Prefill, Decode *Phase
}

// histogramValues adds every histogram series of mf to vals as counter
// values: its buckets' cumulative counts, its count and its sum, keyed by
// name, label set and part.
func histogramValues(vals map[string]float64, name string, mf *dto.MetricFamily) {
	if mf.GetType() != dto.MetricType_HISTOGRAM {
		return
	}
	for _, m := range mf.GetMetric() {
		h := m.GetHistogram()
		if h == nil {
			continue
		}
		base := name + "\x00" + labelKey(m.GetLabel()) + "\x00"
		put := func(part string, v float64) {
			if !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 {
				vals[base+part] = v
			}
		}
		put("count", float64(h.GetSampleCount()))
		put("sum", h.GetSampleSum())
		for _, b := range h.GetBucket() {
			put("le="+strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64), float64(b.GetCumulativeCount()))
		}
	}
}

// Phases returns the level's request phases (see the package's rule).
func (a *Aggregator) Phases() Phases {
	var p Phases
	for _, ph := range []struct {
		f   figure
		dst **Phase
	}{{figQueueTime, &p.Queue}, {figPrefillTime, &p.Prefill}, {figDecodeTime, &p.Decode}} {
		var engine string
		*ph.dst, engine = a.phase(ph.f)
		if p.Engine == "" {
			p.Engine = engine
		}
	}
	return p
}

// histSeries is one histogram series' increases over the level.
type histSeries struct {
	count, sum float64
	buckets    []bucket // by upper bound
}

type bucket struct{ le, cum float64 }

// phase sums the series of histogram figure f over engines.
func (a *Aggregator) phase(f figure) (*Phase, string) {
	series := map[string]*histSeries{}
	engine := ""
	for key, t := range a.series[f] {
		cut := strings.LastIndexByte(key, '\x00')
		id, part := key[:cut], key[cut+1:]
		s := series[id]
		if s == nil {
			s = &histSeries{}
			series[id] = s
		}
		switch {
		case part == "count":
			s.count = t.increase
		case part == "sum":
			s.sum = t.increase
		case strings.HasPrefix(part, "le="):
			le, err := strconv.ParseFloat(part[3:], 64)
			if err == nil {
				s.buckets = append(s.buckets, bucket{le, t.increase})
			}
		}
		if name := key[strings.IndexByte(key, '|')+1:]; strings.HasPrefix(name, "sglang:") {
			engine = "SGLang"
		} else if engine == "" {
			engine = "vLLM"
		}
	}
	var count, sum float64
	var bounds []float64
	for _, s := range series {
		count += s.count
		sum += s.sum
		slices.SortFunc(s.buckets, func(x, y bucket) int { return cmpFloat(x.le, y.le) })
		for _, b := range s.buckets {
			bounds = append(bounds, b.le)
		}
	}
	if count < 1 {
		return nil, ""
	}
	slices.Sort(bounds)
	bounds = slices.Compact(bounds)
	// Each series' cumulative count at a bound is its count at its own
	// largest bound below or at it: engines with different buckets add up.
	cum := make([]float64, len(bounds))
	for _, s := range series {
		k := 0
		var last float64
		for i, le := range bounds {
			for k < len(s.buckets) && s.buckets[k].le <= le {
				last = max(last, s.buckets[k].cum) // cumulative: never falls
				k++
			}
			cum[i] += last
		}
	}
	p := &Phase{Count: int(math.Round(count)), Mean: seconds(sum / count)}
	if v, lo, hi, open, ok := quantile(0.99, bounds, cum); ok {
		p.P99, p.P99Low, p.Open = seconds(v), seconds(lo), open
		if !open {
			p.P99High = seconds(hi)
		}
	}
	return p, engine
}

func cmpFloat(x, y float64) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// quantile estimates the q-quantile (0–1) of a histogram given its upper
// bounds (sorted, the last +Inf) and cumulative counts, as Prometheus'
// histogram_quantile: rank q × total; linear interpolation inside the
// bucket that reaches the rank, from its lower bound (0 for the first)
// to its upper; the rank in the +Inf bucket gives the highest finite
// bound (open). ok is false without a +Inf bucket or without counts.
func quantile(q float64, bounds, cum []float64) (v, lo, hi float64, open, ok bool) {
	n := len(bounds)
	if n < 2 || !math.IsInf(bounds[n-1], 1) || cum[n-1] <= 0 {
		return 0, 0, 0, false, false
	}
	for i := 1; i < n; i++ {
		cum[i] = max(cum[i], cum[i-1])
	}
	rank := float64(q * cum[n-1])
	i, _ := slices.BinarySearchFunc(cum, rank, cmpFloat)
	if i >= n-1 {
		return bounds[n-2], bounds[n-2], 0, true, true
	}
	lo, hi = 0, bounds[i]
	prev := 0.0
	if i > 0 {
		lo, prev = bounds[i-1], cum[i-1]
	}
	if hi <= 0 || cum[i] == prev {
		return hi, lo, hi, false, true
	}
	return lo + float64((hi-lo)*((rank-prev)/(cum[i]-prev))), lo, hi, false, true
}

// seconds converts seconds to a Duration, rounded to the nanosecond.
func seconds(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }
