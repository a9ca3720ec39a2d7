package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/llmmetrics/llmmetrics"
)

// unknown lists what a level's Summary holds as 0 without knowing it: the
// library's Summary has no "unknown", so the report says it (null in
// JSON, "unknown" or "-" in text and HTML).
type unknown struct {
	// input: a completed request without an input count (the total is
	// then not the run's).
	input bool
	// cached, reasoning, cacheWrite: no file of the level says them.
	cached, reasoning, cacheWrite bool
	// concurrency: requests were placed without start times, so the peak
	// concurrency is not known (the mean, Σ E2EL / duration, is).
	concurrency bool
	// duration: no run duration is known, so no rate is.
	duration bool
}

func (lv *level) unknown() unknown {
	return unknown{
		input:       lv.noInput > 0,
		cached:      lv.says&saysCached == 0,
		reasoning:   lv.says&saysReasoning == 0,
		cacheWrite:  lv.says&saysCacheWrite == 0,
		concurrency: lv.noStarts,
		duration:    lv.noDuration,
	}
}

// summaryJSON is the Summary's JSON with what is not known null, and each
// empty distribution only its count ({"count": 0}): never a 0 for unknown.
// The transport phases a format keeps (aiperf's http_req_*) are added as
// "http_req": {"time_to_first_byte", "connecting"} where there are any.
func summaryJSON(s llmmetrics.Summary, u unknown, phases [len(httpPhases)]llmmetrics.Distribution) (json.RawMessage, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	top, err := parseObject(b)
	if err != nil {
		return nil, err
	}
	null := json.RawMessage("null")
	set := func(o object, cond bool, keys ...string) {
		if cond {
			for _, k := range keys {
				o.set(k, null)
			}
		}
	}
	set(top, u.input, "input_tokens", "total_token_throughput", "prefix_cache_hit_rate")
	set(top, u.cached, "cached_input_tokens", "prefix_cache_hit_rate")
	set(top, u.reasoning, "reasoning_tokens")
	set(top, u.cacheWrite, "cache_write_input_tokens")
	set(top, u.concurrency, "peak_concurrency")
	set(top, u.duration, "duration_ns", "request_throughput", "output_throughput", "total_token_throughput", "mean_concurrency")
	set(top, s.TPOT.Count == 0, "tpot_token_weighted_ns")
	for i, m := range top {
		var probe struct {
			Count *int `json:"count"`
		}
		if m.val[0] == '{' && json.Unmarshal(m.val, &probe) == nil && probe.Count != nil && *probe.Count == 0 {
			top[i].val = json.RawMessage(`{"count":0}`)
		}
	}
	if u.duration {
		gp, err := parseObject(top.get("goodput"))
		if err != nil {
			return nil, err
		}
		set(gp, true, "requests_per_second", "tokens_per_second")
		raw, err := json.Marshal(gp)
		if err != nil {
			return nil, err
		}
		top.set("goodput", raw)
	}
	var http object
	for k, d := range phases {
		if d.Count > 0 {
			raw, err := json.Marshal(d)
			if err != nil {
				return nil, err
			}
			http = append(http, member{key: httpPhases[k].json, val: raw})
		}
	}
	if len(http) > 0 {
		raw, err := json.Marshal(http)
		if err != nil {
			return nil, err
		}
		top = append(top, member{key: "http_req", val: raw})
	}
	return json.Marshal(top)
}

// object is a JSON object with its members in order.
type object []member

type member struct {
	key string
	val json.RawMessage
}

func parseObject(b []byte) (object, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	var o object
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return nil, err
		}
		o = append(o, member{key: fmt.Sprint(t), val: v})
	}
	return o, nil
}

func (o object) get(key string) json.RawMessage {
	for _, m := range o {
		if m.key == key {
			return m.val
		}
	}
	return nil
}

// set replaces the value of key (a key it does not have is left out).
func (o object) set(key string, v json.RawMessage) {
	for i := range o {
		if o[i].key == key {
			o[i].val = v
		}
	}
}

func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(m.key)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(m.val)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
