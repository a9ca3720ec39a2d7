package llmmetrics

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

const (
	// ScopeName is the instrumentation scope name of the Meter a Tracker
	// creates its instruments with.
	ScopeName = "github.com/llmmetrics/llmmetrics"
	// version is the version of this library, reported as the
	// instrumentation scope version. No version is tagged yet: "-dev"
	// marks a build from the source tree, not a release.
	version = "0.1.0-dev"
)

// Defaults of the options.
const (
	// defaultWindowRequests is how many recently ended requests Snapshot
	// summarizes unless WithWindow says otherwise.
	defaultWindowRequests = 1000
	// defaultWindowAge is how old an ended request Snapshot still includes
	// unless WithWindow says otherwise.
	defaultWindowAge = 5 * time.Minute
	// defaultAttributeCacheSize is how many distinct per-request attribute
	// sets a Tracker keeps prebuilt (tests shrink it with
	// withAttributeCacheSize).
	defaultAttributeCacheSize = 256
)

// Option configures a Tracker. Options are applied in order; invalid values
// make NewTracker fail with an error wrapping ErrInvalid.
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// config holds every setting of a Tracker; newConfig sets the defaults.
type config struct {
	provider metric.MeterProvider
	tracers  trace.TracerProvider
	// tracersGlobal: tracers is the default global provider, which
	// delegates to the one otel.SetTracerProvider installs (and
	// otel.GetTracerProvider returns from then on).
	tracersGlobal bool
	events        bool // a span event per token-carrying chunk (WithChunkEvents)
	now           func() time.Time
	slo           SLO
	hasSLO        bool
	attrs         []attribute.KeyValue
	keepITL       bool
	windowN       int
	windowAge     time.Duration
	cacheSize     int
	errs          []error
	onEnd         func(context.Context, Record)
}

func newConfig(opts []Option) (config, error) {
	c := config{
		provider:  otel.GetMeterProvider(),
		tracers:   otel.GetTracerProvider(),
		now:       time.Now,
		keepITL:   true,
		windowN:   defaultWindowRequests,
		windowAge: defaultWindowAge,
		cacheSize: defaultAttributeCacheSize,
	}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	c.tracersGlobal = isDefaultGlobal(c.tracers)
	return c, errors.Join(c.errs...)
}

// WithMeterProvider sets the MeterProvider the Tracker creates its
// instruments with. Default: the global provider (otel.GetMeterProvider).
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(c *config) {
		if mp != nil {
			c.provider = mp
		}
	})
}

// WithTracerProvider sets the TracerProvider of the Tracker's spans, one per
// request, which carry counts and times, never text (docs/http.md).
// Default: the global provider (otel.GetTracerProvider).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(c *config) {
		if tp != nil {
			c.tracers = tp
		}
	})
}

// WithChunkEvents adds to each request's span an event per token-carrying
// chunk, at its arrival (the SDK keeps 128 by default). Default: off.
func WithChunkEvents() Option {
	return optionFunc(func(c *config) { c.events = true })
}

// WithClock sets the clock a Tracker reads in Start, Chunk and End.
// Default: time.Now.
func WithClock(now func() time.Time) Option {
	return optionFunc(func(c *config) {
		if now != nil {
			c.now = now
		}
	})
}

// WithSLO sets the SLO each ended request is checked against: the requests
// counter then carries llmmetrics.slo_met. Default: none.
func WithSLO(slo SLO) Option {
	return optionFunc(func(c *config) {
		if err := slo.Validate(); err != nil {
			c.errs = append(c.errs, err)
			return
		}
		c.slo, c.hasSLO = slo, true
	})
}

// WithAttributes adds attributes to every measurement of the Tracker, such
// as gen_ai.provider.name. Calls add up; a later value for a key wins.
func WithAttributes(attrs ...attribute.KeyValue) Option {
	return optionFunc(func(c *config) {
		c.attrs = append(c.attrs, attrs...)
	})
}

// WithoutITL makes Records leave out their list of inter-token gaps, so a
// Request holds no per-token memory; the ITL histogram and Record.MaxITL
// are still recorded, but Snapshot's ITL distribution is empty.
func WithoutITL() Option {
	return optionFunc(func(c *config) { c.keepITL = false })
}

// WithWindow bounds the recently ended requests that Snapshot summarizes:
// the last n (n > 0), none that ended more than age ago (0: no age bound).
// Default: the last 1,000 of the last 5 minutes.
func WithWindow(n int, age time.Duration) Option {
	return optionFunc(func(c *config) {
		if n <= 0 || age < 0 {
			c.errs = append(c.errs, fmt.Errorf("%w: window (%d requests, %v): want a positive request count and an age ≥ 0", ErrInvalid, n, age))
			return
		}
		c.windowN, c.windowAge = n, age
	})
}

// WithoutWindow turns Snapshot's window off: the Tracker keeps no ended
// request and Snapshot returns an empty Summary.
func WithoutWindow() Option {
	return optionFunc(func(c *config) { c.windowN, c.windowAge = 0, 0 })
}

// withAttributeCacheSize bounds how many distinct per-request attribute sets
// (the attributes given to Start) a Tracker keeps prebuilt. When the cache is
// full, a new set replaces an arbitrary cached one, so the cache follows a
// changing mix; a request whose set is not cached is measured correctly but
// builds its measurement options itself (a few microseconds). Memory stays
// bounded by n sets whatever the traffic. Values below 0 make NewTracker
// fail; 0 turns the cache off. Default: defaultAttributeCacheSize.
//
// The OpenTelemetry SDK has its own cardinality limit per instrument (2000
// attribute sets by default, sdkmetric.WithCardinalityLimit), beyond which it
// folds new sets into one series marked otel.metric.overflow=true: keep
// per-request attributes low-cardinality (model names, not request IDs).
func withAttributeCacheSize(n int) Option {
	return optionFunc(func(c *config) {
		if n < 0 {
			c.errs = append(c.errs, fmt.Errorf("%w: attribute cache size %d: want ≥ 0", ErrInvalid, n))
			return
		}
		c.cacheSize = n
	})
}

// WithOnEnd sets a function called with the Record of every request the
// Tracker ends, on the goroutine that ended it, with the request's context.
// f must be safe for concurrent use, must not block and must not modify
// the Record's ITL slice.
func WithOnEnd(f func(ctx context.Context, r Record)) Option {
	return optionFunc(func(c *config) {
		if f != nil {
			c.onEnd = f
		}
	})
}
