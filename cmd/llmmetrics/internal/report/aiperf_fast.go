package report

import (
	"strconv"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/cmd/llmmetrics/internal/jsonscan"
)

// The fast path of the aiperf decoder: the library's zero-allocation JSON
// scanner reads the few members a record needs (encoding/json's Unmarshal
// into aiperfLine spent 26 µs per 1.2 kB record, slower than Python's
// json.loads). A line the fast path cannot read, or reads as anything but
// a plain record, is decoded again by the encoding/json path, which gives
// the detailed error messages; so both paths agree by construction.

// span is a value's bytes [a, b) in the line.
type span struct{ a, b int }

type aiMetric struct {
	val   span
	unit  []byte
	found bool
}

type aiFacts struct {
	start, end                  int
	hasStart, hasEnd            bool
	warmup, cancelled, hasError bool
	ttft, lat, isl, osl, reason aiMetric
	ttfo                        aiMetric
	http                        [len(httpPhases)]aiMetric // http_req_waiting, http_req_connecting
	sawTTFO                     bool                      // over the lines: a TTFO was read
	icl                         aiMetric                  // val spans the array
	gaps                        []time.Duration           // scratch, kept across lines
	// phases are the line's http_req_* durations read (hasPhase).
	phases   [len(httpPhases)]time.Duration
	hasPhase [len(httpPhases)]bool
}

func aiWalk(j *jsonscan.Scanner, i int, f *aiFacts) (int, bool) {
	return j.Members(i, 0, func(k []byte, i int) (int, bool) {
		switch string(k) {
		case "metadata":
			return aiMeta(j, i, f)
		case "metrics":
			return aiMetrics(j, i, f)
		case "error":
			f.hasError = j.At(i) != 'n'
		}
		return j.Skip(i, 1)
	})
}

func aiMeta(j *jsonscan.Scanner, i int, f *aiFacts) (int, bool) {
	if j.At(i) != '{' {
		return j.Skip(i, 1)
	}
	return j.Members(i, 1, func(k []byte, i int) (next int, ok bool) {
		switch string(k) {
		case "request_start_ns":
			next, f.start, f.hasStart, ok = j.Int(i, 2)
		case "request_end_ns":
			next, f.end, f.hasEnd, ok = j.Int(i, 2)
		case "benchmark_phase":
			var t []byte
			next, t, _, ok = j.StringValue(i, 2)
			f.warmup = string(t) == "warmup"
		case "was_cancelled":
			next, f.cancelled, ok = j.True(i, 2)
		default:
			next, ok = j.Skip(i, 2)
		}
		return next, ok
	})
}

func aiMetrics(j *jsonscan.Scanner, i int, f *aiFacts) (int, bool) {
	if j.At(i) != '{' {
		return j.Skip(i, 1)
	}
	return j.Members(i, 1, func(k []byte, i int) (int, bool) {
		var m *aiMetric
		switch string(k) {
		case "time_to_first_token", "ttft": // "ttft" before 2025-10-10
			m = &f.ttft
		case "time_to_first_output_token", "time_to_first_output":
			m = &f.ttfo
		case httpPhases[0].tag:
			m = &f.http[0]
		case httpPhases[1].tag:
			m = &f.http[1]
		case "request_latency":
			m = &f.lat
		case "input_sequence_length":
			m = &f.isl
		case "output_sequence_length":
			m = &f.osl
		case "reasoning_token_count":
			m = &f.reason
		case "inter_chunk_latency":
			m = &f.icl
		default:
			return j.Skip(i, 2)
		}
		*m = aiMetric{}
		if j.At(i) != '{' {
			return j.Skip(i, 2)
		}
		return j.Members(i, 2, func(k []byte, i int) (next int, ok bool) {
			switch string(k) {
			case "value":
				next, ok = j.Skip(i, 3)
				m.val, m.found = span{i, next}, ok
			case "unit":
				next, m.unit, _, ok = j.StringValue(i, 3)
			default:
				next, ok = j.Skip(i, 3)
			}
			return next, ok
		})
	})
}

// aiperfFast turns a line into a Record with the scanner. ok is false when
// the line needs the encoding/json path (invalid, unusual or an error to
// explain); skip is true for a warm-up record.
func aiperfFast(j *jsonscan.Scanner, line []byte, f *aiFacts) (rec llmmetrics.Record, skip, ok bool) {
	gaps, saw := f.gaps, f.sawTTFO
	walked := jsonscan.Walk(j, line, f, aiWalk) // zeroes *f
	f.gaps, f.sawTTFO = gaps, saw
	if !walked || !f.hasStart || !f.hasEnd {
		return rec, false, false
	}
	if f.warmup {
		return rec, true, true
	}
	rec = llmmetrics.Record{
		Start:   time.Unix(0, int64(f.start)).UTC(),
		End:     time.Unix(0, int64(f.end)).UTC(),
		Outcome: llmmetrics.OutcomeOK,
	}
	if f.cancelled || f.hasError || !f.ttft.found || !f.lat.found {
		return rec, false, false // the rarer records: the encoding/json path
	}
	var good bool
	if rec.InputTokens, good = aiCount(line, f.isl); !good {
		return rec, false, false
	}
	if rec.OutputTokens, good = aiCount(line, f.osl); !good {
		return rec, false, false
	}
	if rec.ReasoningTokens, good = aiCount(line, f.reason); !good {
		return rec, false, false
	}
	ttft, good1 := aiDuration(line, f.ttft.val, f.ttft.unit)
	lat, good2 := aiDuration(line, f.lat.val, f.lat.unit)
	if !good1 || !good2 {
		return rec, false, false
	}
	for k, m := range f.http {
		if !m.found {
			continue
		}
		d, good := aiDuration(line, m.val, m.unit)
		if !good {
			return rec, false, false
		}
		f.phases[k], f.hasPhase[k] = d, true
	}
	rec.FirstToken, rec.LastToken, rec.Chunks = rec.Start.Add(ttft), rec.Start.Add(lat), 1
	if f.ttfo.found {
		ttfo, good := aiDuration(line, f.ttfo.val, f.ttfo.unit)
		if !good {
			return rec, false, false
		}
		rec.FirstOutput = rec.Start.Add(ttfo)
		f.sawTTFO = true
	}
	if f.icl.found && line[f.icl.val.a] == '[' {
		f.gaps = f.gaps[:0]
		i, more, good := j.OpenArray(f.icl.val.a, 3)
		for good && more {
			var next int
			if next, good = j.Skip(i, 4); !good {
				return rec, false, false
			}
			d, valid := aiDuration(line, span{i, next}, f.icl.unit)
			if !valid {
				return rec, false, false
			}
			f.gaps = append(f.gaps, d)
			i, more, good = j.NextElement(next)
		}
		if !good {
			return rec, false, false
		}
		rec.ITL = f.gaps // the scratch: emit's Summarizer copies the gaps
		rec.Chunks += len(rec.ITL)
	} else if f.icl.found {
		return rec, false, false
	}
	return rec, false, true
}

func aiNumber(line []byte, s span) (float64, bool) {
	v, err := strconv.ParseFloat(string(line[s.a:s.b]), 64)
	return v, err == nil
}

func aiDuration(line []byte, s span, unit []byte) (time.Duration, bool) {
	v, ok := aiNumber(line, s)
	if !ok {
		return 0, false
	}
	sc, err := unitScale(string(unit))
	if err != nil {
		return 0, false
	}
	return seconds(v * sc / 1e9)
}

func aiCount(line []byte, m aiMetric) (int, bool) {
	if !m.found {
		return 0, true
	}
	v, ok := aiNumber(line, m.val)
	if !ok {
		return 0, false
	}
	n, err := countOf(v)
	return n, err == nil
}
