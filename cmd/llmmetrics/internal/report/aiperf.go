package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/cmd/llmmetrics/internal/jsonscan"
)

// aiperf's profile_export.jsonl (ai-dynamo/aiperf:
// aiperf/post_processors/record_export_results_processor.py writes one
// MetricRecordInfo per line, aiperf/common/models/record_models.py): the
// metadata's wall-clock start and end, and the metrics in their display
// units (each {"value", "unit"}), converted here by their unit. Two shapes
// of the metadata are read (docs/report.md lists the versions): aiperf 0.1
// writes timestamp_ns and credit_phase, a cancellation as an error of type
// RequestCancellationError, and tags TTFT "ttft"; later versions write
// request_start_ns, request_end_ns, benchmark_phase and was_cancelled, and
// tag TTFT "time_to_first_token".
func init() {
	formats = append(formats, &format{
		name: "aiperf",
		detect: func(h []byte) bool {
			l := firstLine(h)
			return h[0] == '{' && (bytes.Contains(l, []byte(`"request_start_ns"`)) ||
				bytes.Contains(l, []byte(`"timestamp_ns"`)) && bytes.Contains(l, []byte(`"metrics"`)))
		},
		decode: decodeAIPerf,
		says:   saysReasoning,
		clock:  clockWall,
		ttft:   "aiperf's: the first parsed response of the stream (aiperf drops responses without content), from the request's start",
	})
}

type aiperfNum struct {
	Value *float64 `json:"value"`
	Unit  string   `json:"unit"`
}

type aiperfList struct {
	Value []float64 `json:"value"`
	Unit  string    `json:"unit"`
}

type aiperfLine struct {
	Metadata *struct {
		RequestStartNS *int64 `json:"request_start_ns"`
		RequestEndNS   *int64 `json:"request_end_ns"`
		TimestampNS    *int64 `json:"timestamp_ns"` // aiperf 0.1
		BenchmarkPhase string `json:"benchmark_phase"`
		CreditPhase    string `json:"credit_phase"` // aiperf 0.1
		WasCancelled   bool   `json:"was_cancelled"`
	} `json:"metadata"`
	Metrics aiperfMetrics `json:"metrics"`
	Error   *struct {
		Code    *float64 `json:"code"`
		Type    string   `json:"type"`
		Message string   `json:"message"`
	} `json:"error"`
}

type aiperfMetrics struct {
	TTFT           aiperfNum  `json:"time_to_first_token"`
	TTFT01         aiperfNum  `json:"ttft"` // aiperf 0.1
	TTFO           aiperfNum  `json:"time_to_first_output_token"`
	TTFOShort      aiperfNum  `json:"time_to_first_output"`
	HTTPWaiting    aiperfNum  `json:"http_req_waiting"`
	HTTPConnecting aiperfNum  `json:"http_req_connecting"`
	RequestLatency aiperfNum  `json:"request_latency"`
	ICL            aiperfList `json:"inter_chunk_latency"`
	ISL            aiperfNum  `json:"input_sequence_length"`
	ErrorISL       aiperfNum  `json:"error_isl"`
	OSL            aiperfNum  `json:"output_sequence_length"`
	Reasoning      aiperfNum  `json:"reasoning_token_count"`
}

// reset clears l for reuse, keeping the ICL slice's storage.
func (l *aiperfLine) reset() {
	icl := l.Metrics.ICL.Value[:0]
	*l = aiperfLine{}
	l.Metrics.ICL.Value = icl
}

func (n aiperfNum) duration(name string) (time.Duration, bool, error) {
	if n.Value == nil {
		return 0, false, nil
	}
	sc, err := unitScale(n.Unit)
	if err != nil {
		return 0, false, fmt.Errorf("%s: %w", name, err)
	}
	d, ok := nanos(*n.Value * sc)
	if !ok {
		return 0, false, fmt.Errorf("%s: %v %s out of range", name, *n.Value, n.Unit)
	}
	return d, true, nil
}

// count returns the metric as a count (0 when absent).
func (n aiperfNum) count(name string, errp *error) int {
	if n.Value == nil {
		return 0
	}
	c, err := countOf(*n.Value)
	if err != nil && *errp == nil {
		*errp = fmt.Errorf("%s: %v", name, err)
	}
	return c
}

func decodeAIPerf(fr *fileRun) error {
	src := fr.src
	var (
		l       aiperfLine
		j       jsonscan.Scanner
		facts   aiFacts
		warmup  int
		sawTTFO bool
	)
	for {
		line, n, err := src.nextLine()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		at := func(format string, args ...any) error { return src.errorf(n, format, args...) }
		if rec, skip, ok := aiperfFast(&j, line, &facts); ok {
			if skip {
				warmup++
				continue
			}
			if err := fr.emit(at, rec); err != nil {
				return err
			}
			for k, has := range facts.hasPhase {
				if has {
					fr.lv.addPhase(k, facts.phases[k])
				}
			}
			continue
		}
		l.reset()
		if err := src.unmarshalLine(line, &l); err != nil {
			return src.errorf(n, "malformed line: %v", err)
		}
		rec, warm, err := aiperfRecord(&l, fr)
		sawTTFO = sawTTFO || !rec.FirstOutput.IsZero()
		switch {
		case err != nil:
			return at("%v", err)
		case warm:
			warmup++
		default:
			if err := fr.emit(at, rec); err != nil {
				return err
			}
			if rec.Outcome == llmmetrics.OutcomeOK {
				for k, m := range []aiperfNum{l.Metrics.HTTPWaiting, l.Metrics.HTTPConnecting} {
					d, has, err := m.duration(httpPhases[k].tag)
					if err != nil {
						return at("%v", err)
					}
					if has {
						fr.lv.addPhase(k, d)
					}
				}
			}
		}
	}
	if warmup > 0 {
		fr.note(fmt.Sprintf("%s: %d warm-up records (benchmark_phase \"warmup\") left out", src.name, warmup))
	}
	if !facts.sawTTFO && !sawTTFO {
		fr.cannot("ttfo", "aiperf saves time_to_first_output_token from late 2025 only")
		fr.note(src.name + ": no TTFO: this aiperf version saves no time_to_first_output_token")
	}
	return nil
}

// aiperfTimes returns a record's start and end and its phase. aiperf 0.1
// saves no end: it is the start here, and the last response's time
// (start + request_latency) for a successful record; its
// max_response_timestamp is not used, a float that has lost the
// nanoseconds.
func aiperfTimes(l *aiperfLine) (start, end time.Time, phase string, err error) {
	md := l.Metadata
	switch {
	case md != nil && md.RequestStartNS != nil && md.RequestEndNS != nil:
		return time.Unix(0, *md.RequestStartNS).UTC(), time.Unix(0, *md.RequestEndNS).UTC(), md.BenchmarkPhase, nil
	case md != nil && md.TimestampNS != nil:
		start = time.Unix(0, *md.TimestampNS).UTC()
		return start, start, md.CreditPhase, nil
	}
	return start, end, "", errors.New("a record without metadata.request_start_ns and request_end_ns (aiperf 0.2 and later) or metadata.timestamp_ns (aiperf 0.1): not an aiperf version this report reads")
}

// aiperfRecord builds the Record of one line; warm is true for a warm-up
// record (left out).
func aiperfRecord(l *aiperfLine, fr *fileRun) (rec llmmetrics.Record, warm bool, err error) {
	start, end, phase, err := aiperfTimes(l)
	if err != nil || phase == "warmup" {
		return rec, phase == "warmup", err
	}
	m := &l.Metrics
	rec = llmmetrics.Record{Start: start, End: end, Outcome: llmmetrics.OutcomeOK}
	rec.InputTokens = m.ISL.count("input_sequence_length", &err)
	rec.OutputTokens = m.OSL.count("output_sequence_length", &err)
	rec.ReasoningTokens = m.Reasoning.count("reasoning_token_count", &err)
	switch {
	case l.Metadata.WasCancelled || l.Error != nil && l.Error.Type == "RequestCancellationError":
		rec.Outcome, rec.ErrorType = llmmetrics.OutcomeCanceled, "canceled"
	case l.Error != nil:
		rec.Outcome, rec.ErrorType = llmmetrics.OutcomeError, aiperfErrorType(l.Error.Code, l.Error.Type)
	}
	if err != nil || rec.Outcome != llmmetrics.OutcomeOK {
		if rec.InputTokens == 0 {
			rec.InputTokens = m.ErrorISL.count("error_isl", &err)
		}
		return rec, false, err
	}
	ttft := m.TTFT
	if ttft.Value == nil {
		ttft = m.TTFT01
	}
	return rec, false, aiperfTokens(&rec, ttft, m, fr)
}

// aiperfErrorType is the error_type of an aiperf error: its code when an
// HTTP status, else its type, else "_OTHER".
func aiperfErrorType(code *float64, typ string) string {
	switch {
	case code != nil && *code >= 100 && *code < 600 && *code == math.Trunc(*code):
		return strconv.Itoa(int(*code))
	case typ != "" && len(typ) <= 64:
		return typ
	}
	return "_OTHER"
}

// aiperfTokens sets the token times of a successful record.
func aiperfTokens(rec *llmmetrics.Record, ttftMetric aiperfNum, m *aiperfMetrics, fr *fileRun) error {
	ttft, hasTTFT, err := ttftMetric.duration("time_to_first_token")
	if err != nil {
		return err
	}
	lat, hasLat, err := m.RequestLatency.duration("request_latency")
	if err != nil {
		return err
	}
	if !hasLat {
		return errors.New("a successful record without request_latency")
	}
	rec.LastToken, rec.Chunks = rec.Start.Add(lat), 1
	if rec.End.Equal(rec.Start) { // aiperf 0.1: no end saved
		rec.End = rec.LastToken
	}
	if !hasTTFT {
		// No TTFT: a non-streaming request (aiperf computes TTFT for
		// streaming only). Its one response is taken as its one chunk, as
		// vLLM does for a non-streaming endpoint.
		rec.FirstToken, rec.LastToken = rec.LastToken, time.Time{}
		fr.note(fr.src.name + ": records without time_to_first_token (non-streaming): the first token is taken at the response, TTFT = request latency")
		return nil
	}
	rec.FirstToken = rec.Start.Add(ttft)
	ttfoMetric := m.TTFO
	if ttfoMetric.Value == nil {
		ttfoMetric = m.TTFOShort
	}
	ttfo, hasTTFO, err := ttfoMetric.duration("time_to_first_output_token")
	if err != nil {
		return err
	}
	if hasTTFO {
		rec.FirstOutput = rec.Start.Add(ttfo)
	}
	if len(m.ICL.Value) == 0 {
		return nil
	}
	sc, err := unitScale(m.ICL.Unit)
	if err != nil {
		return fmt.Errorf("inter_chunk_latency: %w", err)
	}
	rec.ITL = make([]time.Duration, len(m.ICL.Value))
	for i, v := range m.ICL.Value {
		if rec.ITL[i], hasLat = nanos(v * sc); !hasLat {
			return fmt.Errorf("inter_chunk_latency: %v %s out of range", v, m.ICL.Unit)
		}
	}
	rec.Chunks += len(rec.ITL)
	return nil
}
