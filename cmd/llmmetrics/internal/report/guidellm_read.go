package report

import (
	"fmt"
	"slices"
	"time"

	"github.com/llmmetrics/llmmetrics"
)

// glTotals are a benchmark's own counts of its requests (request_totals).
type glTotals struct {
	Successful *float64 `json:"successful" yaml:"successful"`
	Incomplete *float64 `json:"incomplete" yaml:"incomplete"`
	Errored    *float64 `json:"errored" yaml:"errored"`
}

// glBench is one benchmark being read: its load once known, and its
// records until then (a file whose keys put the requests first).
type glBench struct {
	fr    *fileRun
	f     *glFacts
	name  string // "benchmark 2" (v0.1: "benchmark 1.2")
	load  *Load
	mode  string // v0.1
	rate  *float64
	held  []llmmetrics.Record
	lists map[glList]int
	// totals are the file's own counts; v01Errors the error types of the
	// v0.1 errors, which have no times.
	totals    *glTotals
	v01Errors []string
	earliest  time.Time
}

func newGLBench(fr *fileRun, f *glFacts, name string) *glBench {
	return &glBench{fr: fr, f: f, name: name, lists: map[glList]int{}}
}

func (b *glBench) setStrategy(s *glStrategy) error {
	if s == nil {
		return nil
	}
	l, err := s.load()
	if err != nil {
		return err
	}
	b.load = &l
	return nil
}

// add reads one saved request of list l; where names its position.
func (b *glBench) add(q *glRequest, l glList, where func(string, ...any) error) error {
	b.lists[l]++
	if l == glErrors {
		et := ""
		if q.Message != nil {
			et = glErrorType(q.Message, nil)
		}
		b.v01Errors = append(b.v01Errors, et)
		return nil
	}
	switch {
	case l == glResults:
		b.f.noTTFO = true
	case q.Info == nil:
		b.f.noITL, b.f.noTTFO = true, true
	}
	rec, cached, err := glRecord(q, l, b.f)
	if err != nil {
		return where("%v", err)
	}
	if cached {
		b.fr.says |= saysCached
	}
	if why := badCount(&rec); why != "" {
		return where("%s", why)
	}
	if why := outOfOrder(&rec); why != "" {
		return where("record times out of order: %s", why)
	}
	if b.earliest.IsZero() || rec.Start.Before(b.earliest) {
		b.earliest = rec.Start
	}
	if b.load == nil && b.mode != "" {
		if err := b.setV01(); err != nil {
			return where("%v", err)
		}
	}
	if b.load == nil {
		rec.ITL = slices.Clone(rec.ITL)
		b.held = append(b.held, rec)
		return nil
	}
	if err := b.fr.setLevel(*b.load); err != nil {
		return where("%v", err)
	}
	return b.fr.emit(where, rec)
}

func (b *glBench) setV01() error {
	l, err := glV01Load(b.mode, b.rate)
	if err == nil {
		b.load = &l
	}
	return err
}

// end emits what was held and says where the file's own counts and its
// lists disagree.
func (b *glBench) end(where func(string, ...any) error) error {
	if b.load == nil && b.mode != "" {
		if err := b.setV01(); err != nil {
			return where("%s: %v", b.name, err)
		}
	}
	if b.load == nil {
		return where("%s: no strategy (config.strategy, args.strategy, or v0.1's mode): not a GuideLLM version report reads", b.name)
	}
	if err := b.fr.setLevel(*b.load); err != nil {
		return where("%v", err)
	}
	for _, rec := range b.held {
		if err := b.fr.emit(where, rec); err != nil {
			return err
		}
	}
	if len(b.v01Errors) > 0 {
		b.f.v01Errors = true
		at := b.earliest
		if at.IsZero() {
			at = time.Unix(0, 0).UTC()
			b.fr.lv.noDuration, b.fr.lv.noStarts = true, true
		}
		for _, et := range b.v01Errors {
			rec := llmmetrics.Record{Start: at, End: at, Outcome: llmmetrics.OutcomeError, ErrorType: et}
			if err := b.fr.emit(where, rec); err != nil {
				return err
			}
		}
	}
	if b.totals != nil {
		saved := [3]int{b.lists[glSuccessful], b.lists[glIncomplete], b.lists[glErrored]}
		var said [3]int
		for i, p := range []*float64{b.totals.Successful, b.totals.Incomplete, b.totals.Errored} {
			if p != nil {
				said[i] = int(*p)
			}
		}
		if said != saved {
			b.fr.note(fmt.Sprintf("%s: %s (%s): its request_totals say %d successful, %d incomplete, %d errored; its lists hold %d, %d, %d (GuideLLM saved a sample, or the file was cut): the figures here are of the requests saved",
				b.fr.src.name, b.name, b.load, said[0], said[1], said[2], saved[0], saved[1], saved[2]))
		}
	}
	return nil
}

// glListOf names the list of a "requests" member.
func glListOf(key string) (glList, bool) {
	switch l := glList(key); l {
	case glSuccessful, glIncomplete, glErrored:
		return l, true
	}
	return "", false
}

func decodeGuideLLM(fr *fileRun) error {
	h, err := fr.src.head()
	if err != nil {
		return err
	}
	var f glFacts
	n := 0
	if len(h) > 0 && isYAMLReport(h) {
		n, err = decodeGuideLLMYAML(fr, &f)
	} else {
		n, err = decodeGuideLLMJSON(fr, &f)
	}
	if err != nil {
		return err
	}
	if n == 0 {
		return fr.src.errorf(1, `no "benchmarks": not a GuideLLM report`)
	}
	name := fr.src.name
	if f.noITL {
		fr.cannot("itl", "GuideLLM (v0.2 and later) saves no per-gap times")
		fr.note(name + ": no ITL: GuideLLM (v0.2 and later) saves per request only its first and last token times and its iteration count; TPOT is (last − first)/(N − 1)")
	}
	if f.noTTFO {
		fr.cannot("ttfo", "GuideLLM saves the first answer token from v0.7 only")
		fr.note(name + ": no TTFO: GuideLLM saves the first answer token (first_output_token_iteration) from v0.7 only")
	}
	if f.lowerBound {
		fr.note(name + ": requests without output token counts (no usage from the server): N is GuideLLM's token_iterations, one per content event, a lower bound")
	}
	if f.v01Errors {
		fr.note(name + ": GuideLLM v0.1 saves no times for a failed request: each counts as failed, placed at its benchmark's first start with no duration")
	}
	return nil
}

func decodeGuideLLMJSON(fr *fileRun, f *glFacts) (int, error) {
	d := newJdec(fr.src)
	n := 0
	where := func(format string, args ...any) error { return d.errorf(format, args...) }
	err := d.object("GuideLLM report", func(key string) error {
		if key != "benchmarks" {
			return d.skip()
		}
		return d.array(key, func(i int) error {
			n++
			return glBenchJSON(fr, d, f, fmt.Sprintf("benchmark %d", i), where)
		})
	})
	if err == nil && d.More() {
		err = d.errorf("more than one JSON document: not a GuideLLM report")
	}
	return n, err
}

// glBenchJSON walks one benchmark (v0.1: one report of benchmarks).
func glBenchJSON(fr *fileRun, d *jdec, f *glFacts, name string, where func(string, ...any) error) error {
	b := newGLBench(fr, f, name)
	nested := false
	err := d.object(name, func(key string) error {
		switch key {
		case "benchmarks": // v0.1: a TextGenerationBenchmarkReport
			nested = true
			return d.array(key, func(i int) error {
				return glBenchJSON(fr, d, f, fmt.Sprintf("%s.%d", name, i), where)
			})
		case "mode":
			return d.value(name+": mode", &b.mode)
		case "rate":
			return d.value(name+": rate", &b.rate)
		case "args", "config":
			var c struct {
				Strategy *glStrategy `json:"strategy"`
			}
			if err := d.value(name+": "+key, &c); err != nil {
				return err
			}
			if err := b.setStrategy(c.Strategy); err != nil {
				return where("%s: %s.strategy: %v", name, key, err)
			}
			return nil
		case "request_totals":
			return d.value(name+": request_totals", &b.totals)
		case "metrics":
			return d.object(name+": metrics", func(key string) error {
				if key != "request_totals" {
					return d.skip()
				}
				return d.value(name+": metrics.request_totals", &b.totals)
			})
		case "requests":
			return d.object(name+": requests", func(key string) error {
				l, ok := glListOf(key)
				if !ok {
					return d.skip()
				}
				return glListJSON(b, d, l, name+": requests."+key)
			})
		case "results":
			return glListJSON(b, d, glResults, name+": results")
		case "errors":
			return glListJSON(b, d, glErrors, name+": errors")
		}
		return d.skip()
	})
	if err != nil || nested {
		return err
	}
	return b.end(where)
}

func glListJSON(b *glBench, d *jdec, l glList, what string) error {
	return d.array(what, func(i int) error {
		var q glRequest
		if err := d.value(fmt.Sprintf("%s[%d]", what, i), &q); err != nil {
			return err
		}
		return b.add(&q, l, func(format string, args ...any) error {
			return d.errorf("%s[%d]: "+format, append([]any{what, i}, args...)...)
		})
	})
}
