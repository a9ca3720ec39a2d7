package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// SGLang's `bench_serving --output-file F --output-details` (sgl-project/
// sglang): each run appends one JSON line, its settings, its aggregates and
// the per-request columns input_lens, output_lens, ttfts, itls (seconds of
// time.perf_counter), generated_texts, errors, and with --cache-report
// cached_tokens. Two shapes: the columns beside the aggregates
// (python/sglang/bench_serving.py, and python/sglang/benchmark/serving.py
// after it), or under "details" (python/sglang/benchmark/metrics.py
// save_results at 6e48df33). No start times and no per-request latency are
// saved: the run's duration is the line's "duration", its requests are
// placed at its start, and a request's end is its last token. Each line is
// a run at its request_rate and max_concurrency: a level.
func init() {
	formats = append(formats, &format{
		name: "sglang",
		detect: func(h []byte) bool {
			l := firstLine(h)
			return h[0] == '{' && (bytes.Contains(l, []byte(`"sharegpt_output_len"`)) ||
				bytes.Contains(l, []byte(`"total_output_tokens_retokenized"`)) || bytes.Contains(l, []byte(`"mean_e2e_latency_ms"`)))
		},
		decode: decodeSGLang,
		notes: []string{
			"no TTFO: the format does not tell reasoning from answer tokens",
			"no start times: each run's requests are placed at its start, so the peak concurrency is not known; the mean (Σ E2EL / duration) is",
		},
		cannot: map[string]string{"ttfo": noTTFO},
		clock:  clockRelative,
		ttft:   "SGLang's: the first SSE event whose text (chat: delta.content) is not empty, measured from the request's send",
		defs: []string{
			"SGLang's own E2E latency and TPOT run to the stream's last event ([DONE] or usage) and its output_lens are the server's completion_tokens, else the requested length; here E2EL and TPOT end at the last token (ttft + Σ itls, its end not being saved), with the same N",
		},
	})
}

func decodeSGLang(fr *fileRun) error {
	d := newJdec(fr.src)
	for doc := 0; ; doc++ {
		if doc > 0 && !d.More() {
			return nil
		}
		if err := decodeSGLangLine(fr, d, doc); err != nil {
			return err
		}
	}
}

// decodeSGLangLine reads one run.
func decodeSGLangLine(fr *fileRun, d *jdec, doc int) error {
	v := newVLLMDoc()
	var rate, cap json.RawMessage
	details := false
	err := d.object("SGLang result", func(key string) error {
		switch key {
		case "request_rate":
			return d.value(key, &rate)
		case "max_concurrency":
			return d.value(key, &cap)
		case "details":
			details = true
			return d.object("details", func(key string) error { return v.column(d, key) })
		}
		return v.column(d, key)
	})
	if err != nil {
		return err
	}
	at := func(format string, args ...any) error {
		return d.errorf("run %d: "+format, append([]any{doc}, args...)...)
	}
	load, err := sglangLoad(rate, cap)
	if err != nil {
		return at("%v", err)
	}
	if err := fr.setLevel(load); err != nil {
		return at("%v", err)
	}
	fr.lv.noStarts = true
	if v.has["cached_tokens"] {
		fr.says |= saysCached
	}
	dur, err := v.check(fr, "SGLang result", at, func(key string) error {
		if !details && !v.has["ttfts"] && !v.has["input_lens"] {
			return at("an SGLang result without per-request details: saved without --output-details")
		}
		return at("SGLang result without %q: not a version of bench_serving report reads (see docs/report.md)", key)
	})
	if err != nil {
		return err
	}
	return v.emit(fr, fr.lv, dur, at)
}

// sglangLoad names a run's level: request_rate (a number; Infinity, sent
// all at once; or "trace") and max_concurrency (a cap, or null).
func sglangLoad(rateRaw, capRaw json.RawMessage) (Load, error) {
	var capN float64
	if s := strings.TrimSpace(string(capRaw)); s != "" && s != "null" {
		n, err := strconv.ParseFloat(s, 64)
		if err != nil || !(n > 0) || n > maxCount || n != math.Trunc(n) {
			return Load{}, fmt.Errorf("max_concurrency %s: want a positive whole number or null", s)
		}
		capN = n
	}
	s := strings.Trim(strings.TrimSpace(string(rateRaw)), `"`)
	var rate float64
	switch strings.ToLower(s) {
	case "", "null":
		return Load{}, fmt.Errorf(`no "request_rate": not an SGLang result`)
	case "trace":
		return Load{Mode: "trace"}, nil
	case "infinity", "inf":
		rate = math.Inf(1)
	default:
		r, err := strconv.ParseFloat(s, 64)
		if err != nil || !(r > 0) {
			return Load{}, fmt.Errorf("request_rate %s: want a positive number, Infinity or \"trace\"", s)
		}
		rate = r
	}
	switch {
	case math.IsInf(rate, 1) && capN > 0:
		return Load{Mode: "concurrency", Value: capN}, nil
	case math.IsInf(rate, 1):
		return Load{Mode: "burst"}, nil
	case capN > 0:
		return Load{Mode: "rate", Value: rate, Detail: fmt.Sprintf("Poisson arrivals, max concurrency %g", capN)}, nil
	}
	return Load{Mode: "rate", Value: rate, Detail: "Poisson arrivals"}, nil
}
