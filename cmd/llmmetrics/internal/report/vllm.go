package report

import (
	"bytes"
	"time"
)

// vLLM's `vllm bench serve --save-result --save-detailed` JSON
// (vllm/benchmarks/serve.py, benchmark() and main(); before it,
// benchmarks/benchmark_serving.py; the per-request values come from
// RequestFuncOutput). The per-request data are parallel arrays; times are
// floats in seconds of time.perf_counter, so a file's requests can be
// placed relative to each other but not on the wall clock. --append-result
// writes several documents to one file; each is read. The versions read are
// listed in docs/report.md.
func init() {
	formats = append(formats, &format{
		name: "vllm",
		detect: func(h []byte) bool {
			return h[0] == '{' && (bytes.Contains(h, []byte(`"ttfts"`)) || bytes.Contains(h, []byte(`"input_lens"`)) ||
				bytes.Contains(h, []byte(`"num_prompts"`)) && bytes.Contains(h, []byte(`"model_id"`)))
		},
		decode: decodeVLLM,
		notes:  []string{"no TTFO: the format does not tell reasoning from answer tokens"},
		cannot: map[string]string{"ttfo": noTTFO},
		clock:  clockRelative,
		ttft:   "vLLM's: the first SSE event with a non-empty choices list (its text may be empty), measured from the request's send",
	})
}

// vllmDoc is the per-request columns of one vLLM document, held compactly
// (the columns come one after another, so all are held until the last is
// read): 40 bytes per request and 8 per inter-token gap. The gaps are
// held in blocks, each let go once its requests are summarized, so that
// the gaps are not held twice (here and in the Summarizer) at the end.
type vllmDoc struct {
	duration          float64
	in, out           []int32
	ttft, lat, starts []float64
	gaps              blocks         // every request's gaps, one after another
	gapEnd            []int          // request i's gaps end at gapEnd[i]
	nErrs             int            // entries of "errors"
	errTypes          map[int]string // the error_type of each request with an error text
	cached            []int32        // SGLang --cache-report: cached input tokens
	has               map[string]bool
}

// vllmColumns reads each per-request array vLLM writes; any other member
// (generated_texts, queue_times, the aggregates) is skipped.
var vllmColumns = map[string]func(d *jdec, v *vllmDoc, key string) error{
	"duration":    func(d *jdec, v *vllmDoc, key string) error { var err error; v.duration, err = d.float(key); return err },
	"input_lens":  func(d *jdec, v *vllmDoc, key string) error { return d.counts(key, &v.in) },
	"output_lens": func(d *jdec, v *vllmDoc, key string) error { return d.counts(key, &v.out) },
	"ttfts":       func(d *jdec, v *vllmDoc, key string) error { return d.floats(key, &v.ttft) },
	"latencies":   func(d *jdec, v *vllmDoc, key string) error { return d.floats(key, &v.lat) },
	"start_times": func(d *jdec, v *vllmDoc, key string) error { return d.floats(key, &v.starts) },
	"itls": func(d *jdec, v *vllmDoc, key string) error {
		var scratch []float64
		return d.array(key, func(i int) error {
			scratch = scratch[:0]
			if err := d.value(key, &scratch); err != nil {
				return err
			}
			for _, x := range scratch {
				g, ok := seconds(x)
				if !ok {
					return d.errorf("%s[%d]: gap %v s out of range", key, i, x)
				}
				v.gaps.add(g)
			}
			v.gapEnd = append(v.gapEnd, v.gaps.n)
			return nil
		})
	},
	"cached_tokens": func(d *jdec, v *vllmDoc, key string) error { return d.counts(key, &v.cached) },
	"errors": func(d *jdec, v *vllmDoc, key string) error {
		return d.array(key, func(i int) error {
			var s *string
			err := d.value(key, &s)
			if s != nil && *s != "" {
				v.errTypes[i] = vllmErrorType(*s)
			}
			v.nErrs++
			return err
		})
	},
}

func decodeVLLM(fr *fileRun) error {
	d := newJdec(fr.src)
	for doc := 0; ; doc++ {
		if doc > 0 && !d.More() {
			return nil
		}
		if doc > 0 {
			fr.note(fr.src.name + ": holds several vLLM results (--append-result); their durations add up")
		}
		if err := decodeVLLMDoc(fr, d); err != nil {
			return err
		}
	}
}

func decodeVLLMDoc(fr *fileRun, d *jdec) error {
	v := newVLLMDoc()
	if err := d.object("vLLM result", func(key string) error { return v.column(d, key) }); err != nil {
		return err
	}
	at := func(format string, args ...any) error { return d.errorf(format, args...) }
	lv, err := fr.level()
	if err != nil {
		return at("%v", err)
	}
	dur, err := v.check(fr, "vLLM result", at, func(key string) error {
		return at("vLLM result without %q: this version of vLLM is not one report reads (see docs/report.md), or the file was saved without --save-result --save-detailed", key)
	})
	if err != nil {
		return err
	}
	return v.emit(fr, lv, dur, at)
}

func newVLLMDoc() *vllmDoc {
	return &vllmDoc{has: map[string]bool{}, errTypes: map[int]string{}}
}

// column reads the member key of a result document into v: a per-request
// column, or skipped.
func (v *vllmDoc) column(d *jdec, key string) error {
	col, ok := vllmColumns[key]
	if !ok {
		return d.skip()
	}
	v.has[key] = true
	return col(d, v, key)
}

// emit adds the document's requests to lv, laid after its previous
// documents, and the document's duration to lv's.
func (v *vllmDoc) emit(fr *fileRun, lv *level, dur time.Duration, at func(string, ...any) error) error {
	base := lv.relativeBase()
	var scratch []time.Duration
	for i := range v.ttft {
		rec, err := v.record(i, base, &scratch)
		if err != nil {
			return at("request %d: %v", i, err)
		}
		reqAt := func(format string, args ...any) error { return at("request %d: "+format, append([]any{i}, args...)...) }
		if err := fr.emit(reqAt, rec); err != nil {
			return err
		}
	}
	lv.relDuration += dur
	return nil
}

// blockSize is the number of gaps in a block.
const blockSize = 1 << 14

// blocks is a list of gaps in fixed-size blocks, so that the front can be
// let go while the rest is still read.
type blocks struct {
	b     [][]time.Duration
	n     int // gaps added
	freed int // blocks let go
}

func (bs *blocks) add(g time.Duration) {
	if bs.n%blockSize == 0 {
		bs.b = append(bs.b, make([]time.Duration, 0, blockSize))
	}
	last := &bs.b[len(bs.b)-1]
	*last = append(*last, g)
	bs.n++
}

// slice returns gaps [lo, hi): within one block, the block's own storage;
// across blocks, a copy in *scratch.
func (bs *blocks) slice(lo, hi int, scratch *[]time.Duration) []time.Duration {
	if lo == hi {
		return nil
	}
	if lo/blockSize == (hi-1)/blockSize {
		return bs.b[lo/blockSize][lo%blockSize : (hi-1)%blockSize+1]
	}
	*scratch = (*scratch)[:0]
	for i := lo; i < hi; i++ {
		*scratch = append(*scratch, bs.b[i/blockSize][i%blockSize])
	}
	return *scratch
}

// release lets go of the blocks wholly before gap index lo.
func (bs *blocks) release(lo int) {
	for ; bs.freed < lo/blockSize; bs.freed++ {
		bs.b[bs.freed] = nil
	}
}
