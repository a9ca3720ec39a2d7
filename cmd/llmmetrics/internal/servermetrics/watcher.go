package servermetrics

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/llmmetrics/llmmetrics/saturation"
)

// DefaultInterval is the scrape interval NewWatcher uses for a
// non-positive interval.
const DefaultInterval = time.Second

// maxBody bounds how much of one /metrics answer is read (a DCGM exporter
// on 8 GPUs serves ~100 KB).
const maxBody = 16 << 20

// Watcher scrapes a server's Prometheus endpoints during each load level:
// Begin at the level's start, End at its end. It scrapes every endpoint at
// Begin, every interval after, and once more at End, in one goroutine that
// has exited when End returns. A scrape that fails, an endpoint that serves
// none of the recognised names and a figure no endpoint reports are each
// told to warn once for the Watcher's life, and the run goes on.
//
// Begin and End alternate and are called from one goroutine; warn is called
// from the Watcher's goroutine and from End's caller, never at the same
// time.
type Watcher struct {
	urls     []string
	client   *http.Client
	interval time.Duration
	warn     func(string)

	mu     sync.Mutex // guards warned
	warned map[string]bool

	ctx    context.Context // Begin's
	cancel context.CancelFunc
	done   chan struct{}
	agg    *Aggregator
	phases Phases // the last level's (End)
}

// NewWatcher returns a Watcher of the endpoints urls (full URLs, e.g.
// http://host:8000/metrics) reached with client (nil: a client of its own
// with a 10 s timeout), scraping every interval (non-positive:
// DefaultInterval), telling problems to warn (nil: dropped).
func NewWatcher(urls []string, client *http.Client, interval time.Duration, warn func(string)) *Watcher {
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second, Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	if interval <= 0 {
		interval = DefaultInterval
	}
	if warn == nil {
		warn = func(string) {}
	}
	return &Watcher{urls: urls, client: client, interval: interval, warn: warn, warned: map[string]bool{}}
}

// Begin starts watching a level. ctx bounds the scrapes; when it is
// canceled the goroutine stops early and End skips its last scrape.
func (w *Watcher) Begin(ctx context.Context) {
	w.ctx = ctx
	ctx, w.cancel = context.WithCancel(ctx)
	w.agg = NewAggregator()
	w.done = make(chan struct{})
	agg, done := w.agg, w.done
	go func() {
		defer close(done)
		w.scrapeAll(ctx, agg)
		t := time.NewTicker(w.interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				w.scrapeAll(ctx, agg)
			}
		}
	}()
}

// End stops watching the level, scrapes once more (so counters cover the
// whole level) and returns the level's figures. It returns the zero Server
// when Begin was not called.
func (w *Watcher) End() saturation.Server {
	if w.done == nil {
		return saturation.Server{}
	}
	w.cancel()
	<-w.done
	w.done = nil
	if w.ctx.Err() == nil {
		ctx, cancel := context.WithTimeout(w.ctx, max(w.interval, 5*time.Second))
		w.scrapeAll(ctx, w.agg)
		cancel()
	}
	for _, f := range w.agg.missing() {
		switch {
		case f == figPrefixQueries, f == figPrefixHits, f == figPrefixRate:
			continue // told once below, as the hit rate
		case f.isHistogram():
			continue // most servers have none: absent, not a problem
		}
		w.once("figure "+figureNames[f], fmt.Sprintf("server metrics: no endpoint reports %s", figureNames[f]))
	}
	s := w.agg.Server()
	w.phases = w.agg.Phases()
	if s.PrefixCacheHitRate == nil {
		w.once("figure prefix", "server metrics: no endpoint reports the prefix-cache hit rate")
	}
	return s
}

// Phases returns the request phases of the level End last ended (zero
// before any).
func (w *Watcher) Phases() Phases { return w.phases }

// once calls warn with msg the first time key is seen.
func (w *Watcher) once(key, msg string) {
	w.mu.Lock()
	seen := w.warned[key]
	w.warned[key] = true
	w.mu.Unlock()
	if !seen {
		w.warn(msg)
	}
}

// scrapeAll scrapes every endpoint in turn into agg.
func (w *Watcher) scrapeAll(ctx context.Context, agg *Aggregator) {
	for i, u := range w.urls {
		s, err := w.scrape(ctx, u)
		if err != nil {
			if ctx.Err() == nil {
				w.once("scrape "+u, fmt.Sprintf("server metrics: %s: %v (reported once; the run goes on)", u, err))
			}
			continue
		}
		if len(s) == 0 {
			w.once("names "+u, fmt.Sprintf("server metrics: %s serves none of the vLLM, SGLang, TGI, llama.cpp or DCGM names", u))
		}
		agg.Add(i, s)
	}
}

func (w *Watcher) scrape(ctx context.Context, u string) (Scrape, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	// Ask for the text format: the parser reads nothing else.
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := w.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("HTTP %s", resp.Status)
	}
	return Parse(io.LimitReader(resp.Body, maxBody))
}
