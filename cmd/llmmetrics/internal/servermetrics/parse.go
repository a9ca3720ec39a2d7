package servermetrics

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Scrape is what one payload said about the recognised figures: per figure,
// the value of each series (keyed by its sorted label set), in the figure's
// unit. A figure absent from the payload has no entry.
type Scrape map[figure]map[string]float64

// Parse reads a Prometheus text exposition (format 0.0.4, the one vLLM,
// SGLang, TGI, llama.cpp and the DCGM exporter serve) and keeps the
// recognised figures. Names may hold colons (vllm:…); values that are no
// reading (see reading) are skipped, and a name whose series are all
// skipped counts as absent.
func Parse(r io.Reader) (Scrape, error) {
	// The zero TextParser has no name validation scheme and rejects every
	// name; UTF8Validation accepts the legacy names and the colons.
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("llmmetrics: parse metrics: %w", err)
	}
	s := Scrape{}
	for f := range numFigures {
		for _, n := range names[f] {
			mf, ok := fams[n.name]
			if !ok {
				continue
			}
			vals := map[string]float64{}
			if f.isHistogram() {
				histogramValues(vals, n.name, mf)
			}
			for _, m := range mf.GetMetric() {
				v, ok := value(mf.GetType(), m)
				if !ok || !reading(f, v) {
					continue
				}
				vals[labelKey(m.GetLabel())] = v * n.scale
			}
			if len(vals) > 0 {
				s[f] = vals
				break // the first name present wins: no double counting
			}
		}
	}
	return s, nil
}

// dcgmBlank is DCGM_INT32_BLANK (dcgm_structs.h), the smallest of DCGM's
// "no value" sentinels: the int32 ones count up from it, DCGM_FP64_BLANK is
// 2^47 and DCGM_INT64_BLANK 0x7ffffffffffffff0. No utilization (percent or
// ratio) or power draw (watts) comes near it.
const dcgmBlank = 0x7ffffff0

// reading reports whether v, as exported, is a reading of figure f rather
// than a "no value" written as a number: NaN and infinities; a negative
// value, which none of the figures can take (vLLM v0's
// gpu_prefix_cache_hit_rate is -1 when prefix caching is off, "-1 means
// not supported or disabled", vllm/core/block/interfaces.py); and DCGM's
// blank sentinels, which the DCGM exporter wrote out as values until it
// began to skip them (NVIDIA/dcgm-exporter commit 65be65a, July 2020) and
// which its README's example still shows (DCGM_FI_DEV_MEMORY_TEMP
// 9223372036854775794, DCGM_INT64_NOT_SUPPORTED).
func reading(f figure, v float64) bool {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return false
	}
	if (f == figGPUUtil || f == figPower) && v >= dcgmBlank {
		return false
	}
	return true
}

// value returns a gauge's, counter's or untyped sample's value.
func value(t dto.MetricType, m *dto.Metric) (float64, bool) {
	switch t {
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue(), m.Gauge != nil
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue(), m.Counter != nil
	case dto.MetricType_UNTYPED:
		return m.GetUntyped().GetValue(), m.Untyped != nil
	}
	return 0, false
}

// labelKey is a series' identity within one endpoint: its labels, sorted.
func labelKey(ls []*dto.LabelPair) string {
	parts := make([]string, 0, len(ls))
	for _, l := range ls {
		parts = append(parts, l.GetName()+"="+l.GetValue())
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}
