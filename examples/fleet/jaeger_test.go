package fleet_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// jaegerClient reads traces through Jaeger's HTTP query API (api_v3, whose
// answers are OTLP JSON).
type jaegerClient struct {
	url string
	hc  *http.Client
}

// span is a span as Jaeger returns it, with its resource's and its own
// attributes flattened to strings.
type span struct {
	TraceID, SpanID, ParentSpanID string
	Name                          string
	Kind                          int
	Start, End                    time.Time
	Attributes                    map[string]string
	Resource                      map[string]string
}

// otlpJSON is the part of an OTLP JSON traces document the test reads.
type otlpJSON struct {
	ResourceSpans []struct {
		Resource struct {
			Attributes []keyValue `json:"attributes"`
		} `json:"resource"`
		ScopeSpans []struct {
			Spans []struct {
				TraceID           string     `json:"traceId"`
				SpanID            string     `json:"spanId"`
				ParentSpanID      string     `json:"parentSpanId"`
				Name              string     `json:"name"`
				Kind              int        `json:"kind"`
				StartTimeUnixNano string     `json:"startTimeUnixNano"`
				EndTimeUnixNano   string     `json:"endTimeUnixNano"`
				Attributes        []keyValue `json:"attributes"`
			} `json:"spans"`
		} `json:"scopeSpans"`
	} `json:"resourceSpans"`
}

type keyValue struct {
	Key   string `json:"key"`
	Value struct {
		String *string  `json:"stringValue"`
		Int    *string  `json:"intValue"` // int64 is a string in OTLP JSON
		Double *float64 `json:"doubleValue"`
		Bool   *bool    `json:"boolValue"`
		Array  *struct {
			Values []json.RawMessage `json:"values"`
		} `json:"arrayValue"`
	} `json:"value"`
}

func (kv keyValue) text() string {
	v := kv.Value
	switch {
	case v.String != nil:
		return *v.String
	case v.Int != nil:
		return *v.Int
	case v.Double != nil:
		return strconv.FormatFloat(*v.Double, 'g', -1, 64)
	case v.Bool != nil:
		return strconv.FormatBool(*v.Bool)
	case v.Array != nil:
		b, _ := json.Marshal(v.Array.Values)
		return string(b)
	}
	return ""
}

func attrs(kvs []keyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = kv.text()
	}
	return m
}

// trace returns the spans of the trace id (32 hex digits), waiting at
// most startTimeout for Jaeger to have it; ok is false when it never did.
func (c jaegerClient) trace(t *testing.T, id string) (spans []span, ok bool) {
	t.Helper()
	deadline := time.Now().Add(startTimeout)
	for {
		resp, err := c.hc.Get(c.url + "/api/v3/traces/" + id)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		if resp.StatusCode == http.StatusOK {
			return parseTrace(t, body), true
		}
		require.Equal(t, http.StatusNotFound, resp.StatusCode, "GET trace %s: %s", id, body)
		if time.Now().After(deadline) {
			return nil, false
		}
		time.Sleep(100 * time.Millisecond) // polling another process; bounded by the deadline
	}
}

func parseTrace(t *testing.T, body []byte) []span {
	t.Helper()
	var doc struct {
		Result otlpJSON `json:"result"`
	}
	require.NoError(t, json.Unmarshal(body, &doc), "%s", body)
	var out []span
	for _, rs := range doc.Result.ResourceSpans {
		res := attrs(rs.Resource.Attributes)
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				start, err := strconv.ParseInt(s.StartTimeUnixNano, 10, 64)
				require.NoError(t, err)
				end, err := strconv.ParseInt(s.EndTimeUnixNano, 10, 64)
				require.NoError(t, err)
				out = append(out, span{
					TraceID: s.TraceID, SpanID: s.SpanID, ParentSpanID: s.ParentSpanID,
					Name: s.Name, Kind: s.Kind,
					Start: time.Unix(0, start), End: time.Unix(0, end),
					Attributes: attrs(s.Attributes), Resource: res,
				})
			}
		}
	}
	return out
}
