package report

import (
	"bytes"

	"time"

	"github.com/llmmetrics/llmmetrics"
)

// vLLM's `vllm bench serve --save-result --save-detailed` JSON
// (vllm/benchmarks/serve.py, benchmark() and main(); the per-request values
// come from RequestFuncOutput in vllm/benchmarks/lib/endpoint_request_func.py).
// The per-request data are parallel arrays; times are floats in seconds of
// time.perf_counter, so a file's requests can be placed relative to each
// other but not on the wall clock. --append-result writes several documents
// to one file; each is read.
func init() {
	formats = append(formats, &format{
		name: "vllm",
		detect: func(h []byte) bool {
			return h[0] == '{' && (bytes.Contains(h, []byte(`"ttfts"`)) ||
				bytes.Contains(h, []byte(`"num_prompts"`)) && bytes.Contains(h, []byte(`"model_id"`)))
		},
		decode: decodeVLLM,
		notes:  []string{"no TTFO: the format does not tell reasoning from answer tokens"},
		clock:  clockRelative,
		ttft:   "vLLM's: the first SSE event with a non-empty choices list (its text may be empty), measured from the request's send",
	})
}

// vllmRun is the per-request columns of one vLLM document.
type vllmRun struct {
	duration   float64
	hasDur     bool
	inputLens  []int
	outputLens []int
	ttfts      []float64
	itls       [][]float64
	latencies  []float64
	startTimes []float64
	errors     []string
	has        map[string]bool
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
	docLine := d.InputOffset()
	v := vllmRun{has: map[string]bool{}}
	err := d.object("vLLM result", func(key string) error {
		v.has[key] = true
		switch key {
		case "duration":
			v.hasDur = true
			return d.value(key, &v.duration)
		case "input_lens":
			return d.array(key, func(int) error { var x int; err := d.value(key, &x); v.inputLens = append(v.inputLens, x); return err })
		case "output_lens":
			return d.array(key, func(int) error {
				var x int
				err := d.value(key, &x)
				v.outputLens = append(v.outputLens, x)
				return err
			})
		case "ttfts":
			return d.array(key, func(int) error { var x float64; err := d.value(key, &x); v.ttfts = append(v.ttfts, x); return err })
		case "latencies":
			return d.array(key, func(int) error {
				var x float64
				err := d.value(key, &x)
				v.latencies = append(v.latencies, x)
				return err
			})
		case "start_times":
			return d.array(key, func(int) error {
				var x float64
				err := d.value(key, &x)
				v.startTimes = append(v.startTimes, x)
				return err
			})
		case "itls":
			return d.array(key, func(int) error {
				var x []float64
				err := d.value(key, &x)
				v.itls = append(v.itls, x)
				return err
			})
		case "errors":
			return d.array(key, func(int) error {
				var x *string
				err := d.value(key, &x)
				s := ""
				if x != nil {
					s = *x
				}
				v.errors = append(v.errors, s)
				return err
			})
		}
		return d.skip() // generated_texts and the aggregates
	})
	if err != nil {
		return err
	}
	at := func(format string, args ...any) error { return fr.src.errorAt(docLine, format, args...) }
	for _, k := range []string{"ttfts", "itls", "latencies", "input_lens", "output_lens", "errors"} {
		if !v.has[k] {
			return at("vLLM result without %q: save it with --save-result --save-detailed", k)
		}
	}
	if !v.hasDur || !(v.duration > 0) {
		return at(`vLLM result without a positive "duration"`)
	}
	n := len(v.ttfts)
	for k, l := range map[string]int{"itls": len(v.itls), "latencies": len(v.latencies), "input_lens": len(v.inputLens), "output_lens": len(v.outputLens), "errors": len(v.errors)} {
		if l != n {
			return at("vLLM result: %q has %d entries, \"ttfts\" %d", k, l, n)
		}
	}
	if v.has["start_times"] && len(v.startTimes) != n {
		return at("vLLM result: \"start_times\" has %d entries, \"ttfts\" %d", len(v.startTimes), n)
	}
	if !v.has["start_times"] {
		fr.note(fr.src.name + `: no "start_times" (vLLM before they were saved): every request is placed at the run's start, so peak and mean concurrency are not meaningful`)
	}
	minStart := 0.0
	for i, s := range v.startTimes {
		if i == 0 || s < minStart {
			minStart = s
		}
	}
	dur, _ := seconds(v.duration)
	base := fr.run.relativeBase()
	for i := range n {
		var off time.Duration
		if v.startTimes != nil {
			var ok bool
			if off, ok = seconds(v.startTimes[i] - minStart); !ok {
				return at("request %d: bad start time %v", i, v.startTimes[i])
			}
		}
		rec := llmmetrics.Record{Start: base.Add(off), InputTokens: v.inputLens[i], Outcome: llmmetrics.OutcomeOK}
		rec.End = rec.Start
		ttft, ok1 := seconds(v.ttfts[i])
		lat, ok2 := seconds(v.latencies[i])
		if !ok1 || !ok2 {
			return at("request %d: bad ttft or latency", i)
		}
		// RequestFuncOutput.success is not saved: a request failed when it
		// has an error text or no latency (a success always has a first
		// chunk, so latency ≥ ttft > 0).
		if v.errors[i] != "" || lat <= 0 {
			rec.Outcome = llmmetrics.OutcomeError
		} else {
			rec.FirstToken = rec.Start.Add(ttft)
			rec.LastToken = rec.Start.Add(lat)
			rec.End = rec.LastToken
			rec.OutputTokens = v.outputLens[i]
			rec.Chunks = len(v.itls[i]) + 1
			rec.ITL = make([]time.Duration, len(v.itls[i]))
			for j, g := range v.itls[i] {
				if rec.ITL[j], ok1 = seconds(g); !ok1 {
					return at("request %d: bad itl", i)
				}
			}
		}
		reqAt := func(format string, args ...any) error { return at("request %d: "+format, append([]any{i}, args...)...) }
		if err := fr.emit(reqAt, rec); err != nil {
			return err
		}
	}
	fr.run.addRelative(dur)
	return nil
}
