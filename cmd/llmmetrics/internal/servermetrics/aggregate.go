package servermetrics

import (
	"strconv"

	"github.com/llmmetrics/llmmetrics/saturation"
)

// Aggregator sums up the scrapes of one level by the package's rule. The
// zero value is not usable; call NewAggregator. Not safe for concurrent use.
type Aggregator struct {
	series     [numFigures]map[string]*track // key: endpoint index + label set
	waitingMax *float64
	kvMax      *float64
}

// track is one series over the level's scrapes.
type track struct {
	sum      float64 // gauges: sum of the values
	n        int
	last     float64 // counters: the previous value
	increase float64 // counters: the increase so far
}

// NewAggregator returns an empty Aggregator.
func NewAggregator() *Aggregator {
	a := &Aggregator{}
	for f := range numFigures {
		a.series[f] = map[string]*track{}
	}
	return a
}

// Add records one scrape of the endpoint numbered endpoint (its position
// in the Watcher's list: series of different endpoints are different
// engines). Scrapes whose figures were scraped together from several
// endpoints at one moment are added one endpoint at a time.
func (a *Aggregator) Add(endpoint int, s Scrape) {
	prefix := strconv.Itoa(endpoint) + "|"
	for f := range numFigures {
		vals, ok := s[f]
		if !ok {
			continue
		}
		for k, v := range vals {
			key := prefix + k
			t, ok := a.series[f][key]
			if !ok {
				t = &track{last: v}
				a.series[f][key] = t
			}
			if f.isCounter() {
				if t.n > 0 {
					if v >= t.last {
						t.increase += v - t.last
					} else {
						t.increase += v // reset: the count since restart
					}
				}
				t.last = v
			} else {
				t.sum += v
			}
			t.n++
		}
	}
	if vals, ok := s[figWaiting]; ok {
		// The maximum is taken per endpoint scrape: with several endpoints
		// scraped in one round the sums of a round are not added up, which
		// understates it at most by the other endpoints' queues.
		sum := 0.0
		for _, v := range vals {
			sum += v
		}
		a.waitingMax = maxp(a.waitingMax, sum)
	}
	for _, v := range s[figKV] {
		a.kvMax = maxp(a.kvMax, v)
	}
}

func maxp(p *float64, v float64) *float64 {
	if p == nil || v > *p {
		return &v
	}
	return p
}

// means returns the mean of each series of f.
func (a *Aggregator) means(f figure) []float64 {
	var out []float64
	for _, t := range a.series[f] {
		if t.n > 0 {
			out = append(out, t.sum/float64(t.n))
		}
	}
	return out
}

// Server returns the level's figures (nil where nothing was reported).
func (a *Aggregator) Server() saturation.Server {
	var s saturation.Server
	sum := func(xs []float64) *float64 {
		if len(xs) == 0 {
			return nil
		}
		t := 0.0
		for _, x := range xs {
			t += x
		}
		return &t
	}
	mean := func(xs []float64) *float64 {
		if p := sum(xs); p != nil {
			m := *p / float64(len(xs))
			return &m
		}
		return nil
	}
	largest := func(xs []float64) *float64 {
		var p *float64
		for _, x := range xs {
			p = maxp(p, x)
		}
		return p
	}
	increase := func(f figure) *float64 {
		if len(a.series[f]) == 0 {
			return nil
		}
		t := 0.0
		for _, tr := range a.series[f] {
			t += tr.increase
		}
		return &t
	}
	s.RequestsRunning = sum(a.means(figRunning))
	s.RequestsWaiting = sum(a.means(figWaiting))
	s.RequestsWaitingMax = a.waitingMax
	s.KVCacheUsage = largest(a.means(figKV))
	s.KVCacheUsageMax = a.kvMax
	s.Preemptions = increase(figPreemptions)
	q, h := increase(figPrefixQueries), increase(figPrefixHits)
	if q != nil && h != nil && *q > 0 {
		r := *h / *q
		s.PrefixCacheHitRate = &r
	} else {
		s.PrefixCacheHitRate = mean(a.means(figPrefixRate))
	}
	s.GPUUtilization = mean(a.means(figGPUUtil))
	s.PowerWatts = sum(a.means(figPower))
	return s
}

// SetOutputRate fills s.OutputTokensPerJoule from the level's output
// throughput (tokens/s) and s.PowerWatts; it leaves it nil without a
// positive power.
func SetOutputRate(s *saturation.Server, outputTokensPerSecond float64) {
	if s.PowerWatts == nil || *s.PowerWatts <= 0 {
		return
	}
	v := outputTokensPerSecond / *s.PowerWatts
	s.OutputTokensPerJoule = &v
}

// missing returns the figures no series was seen for.
func (a *Aggregator) missing() []figure {
	var out []figure
	for f := range numFigures {
		if len(a.series[f]) == 0 {
			out = append(out, f)
		}
	}
	return out
}
