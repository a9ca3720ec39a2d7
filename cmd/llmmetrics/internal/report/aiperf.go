package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/cmd/llmmetrics/internal/jsonscan"
)

// aiperf's profile_export.jsonl (ai-dynamo/aiperf:
// aiperf/post_processors/record_export_results_processor.py writes one
// MetricRecordInfo per line, aiperf/common/models/record_models.py): the
// metadata's wall-clock request_start_ns and request_end_ns, and the
// metrics in their display units (each {"value", "unit"}), converted here by
// their unit.
func init() {
	formats = append(formats, &format{
		name:   "aiperf",
		detect: func(h []byte) bool { return h[0] == '{' && bytes.Contains(firstLine(h), []byte(`"request_start_ns"`)) },
		decode: decodeAIPerf,
		notes:  []string{"no TTFO: the format does not tell reasoning from answer tokens"},
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
		BenchmarkPhase string `json:"benchmark_phase"`
		WasCancelled   bool   `json:"was_cancelled"`
	} `json:"metadata"`
	Metrics struct {
		TTFT           aiperfNum  `json:"time_to_first_token"`
		RequestLatency aiperfNum  `json:"request_latency"`
		ICL            aiperfList `json:"inter_chunk_latency"`
		ISL            aiperfNum  `json:"input_sequence_length"`
		ErrorISL       aiperfNum  `json:"error_isl"`
		OSL            aiperfNum  `json:"output_sequence_length"`
		Reasoning      aiperfNum  `json:"reasoning_token_count"`
	} `json:"metrics"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
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
	d, ok := seconds(*n.Value * sc / 1e9)
	if !ok {
		return 0, false, fmt.Errorf("%s: bad value %v", name, *n.Value)
	}
	return d, true, nil
}

func (n aiperfNum) count() int {
	if n.Value == nil || !(*n.Value >= 0) || *n.Value > math.MaxInt32 {
		return 0
	}
	return int(*n.Value)
}

func decodeAIPerf(fr *fileRun) error {
	src := fr.src
	var (
		l      aiperfLine
		j      jsonscan.Scanner
		facts  aiFacts
		warmup int
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
			} else if err := fr.emit(at, rec); err != nil {
				return err
			}
			continue
		}
		l.reset()
		if err := json.Unmarshal(line, &l); err != nil {
			return src.errorf(n, "malformed line: %v", err)
		}
		if l.Metadata == nil || l.Metadata.RequestStartNS == nil || l.Metadata.RequestEndNS == nil {
			return at("malformed line: no metadata.request_start_ns and request_end_ns")
		}
		if l.Metadata.BenchmarkPhase == "warmup" {
			warmup++
			continue
		}
		rec, err := aiperfRecord(&l, fr)
		if err != nil {
			return at("%v", err)
		}
		if err := fr.emit(at, rec); err != nil {
			return err
		}
	}
	if warmup > 0 {
		fr.note(fmt.Sprintf("%s: %d warm-up records (benchmark_phase \"warmup\") left out", src.name, warmup))
	}
	return nil
}

func aiperfRecord(l *aiperfLine, fr *fileRun) (llmmetrics.Record, error) {
	m := &l.Metrics
	rec := llmmetrics.Record{
		Start:           time.Unix(0, *l.Metadata.RequestStartNS).UTC(),
		End:             time.Unix(0, *l.Metadata.RequestEndNS).UTC(),
		InputTokens:     m.ISL.count(),
		OutputTokens:    m.OSL.count(),
		ReasoningTokens: m.Reasoning.count(),
		Outcome:         llmmetrics.OutcomeOK,
	}
	switch {
	case l.Metadata.WasCancelled:
		rec.Outcome = llmmetrics.OutcomeCanceled
	case l.Error != nil:
		rec.Outcome = llmmetrics.OutcomeError
	}
	if rec.Outcome != llmmetrics.OutcomeOK {
		if rec.InputTokens == 0 {
			rec.InputTokens = m.ErrorISL.count()
		}
		return rec, nil
	}
	ttft, hasTTFT, err := m.TTFT.duration("time_to_first_token")
	if err != nil {
		return rec, err
	}
	lat, hasLat, err := m.RequestLatency.duration("request_latency")
	if err != nil {
		return rec, err
	}
	switch {
	case hasTTFT && hasLat:
		rec.FirstToken = rec.Start.Add(ttft)
		rec.LastToken = rec.Start.Add(lat)
		rec.Chunks = 1
		if len(m.ICL.Value) > 0 {
			sc, err := unitScale(m.ICL.Unit)
			if err != nil {
				return rec, fmt.Errorf("inter_chunk_latency: %w", err)
			}
			rec.ITL = make([]time.Duration, len(m.ICL.Value))
			for i, v := range m.ICL.Value {
				d, ok := seconds(v * sc / 1e9)
				if !ok {
					return rec, fmt.Errorf("inter_chunk_latency: bad value %v", v)
				}
				rec.ITL[i] = d
			}
			rec.Chunks += len(rec.ITL)
		}
	case hasLat:
		// No time_to_first_token: a non-streaming request (aiperf computes
		// TTFT for streaming only). Its one response is taken as its one
		// chunk, as vLLM does for a non-streaming endpoint.
		rec.FirstToken = rec.Start.Add(lat)
		rec.Chunks = 1
		fr.note(fr.src.name + ": records without time_to_first_token (non-streaming): the first token is taken at the response, TTFT = request latency")
	default:
		return rec, errors.New("a successful record without request_latency")
	}
	return rec, nil
}
