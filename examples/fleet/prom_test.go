package fleet_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// promClient queries Prometheus's HTTP API.
type promClient struct {
	url string
	hc  *http.Client
}

// sample is one element of an instant vector: a float or a native
// histogram.
type sample struct {
	Metric    map[string]string   `json:"metric"`
	Value     *[2]any             `json:"value"`
	Histogram *[2]json.RawMessage `json:"histogram"`
}

// nativeHistogram is a native histogram as the API gives it.
type nativeHistogram struct {
	Count   string               `json:"count"`
	Sum     string               `json:"sum"`
	Buckets [][4]json.RawMessage `json:"buckets"` // [boundary rule, lower, upper, count]
}

// float is the sample's float value.
func (s sample) float(t *testing.T) float64 {
	t.Helper()
	require.NotNil(t, s.Value, "a float sample, got %+v", s)
	str, ok := s.Value[1].(string)
	require.True(t, ok, "value %v", s.Value[1])
	f, err := strconv.ParseFloat(str, 64)
	require.NoError(t, err)
	return f
}

// histogram is the sample's native histogram.
func (s sample) histogram(t *testing.T) nativeHistogram {
	t.Helper()
	require.NotNil(t, s.Histogram, "a histogram sample, got %+v", s)
	var h nativeHistogram
	require.NoError(t, json.Unmarshal(s.Histogram[1], &h))
	return h
}

// query evaluates expr at time at and returns the instant vector.
func (c promClient) query(t *testing.T, expr string, at time.Time) []sample {
	t.Helper()
	form := url.Values{"query": {expr}, "time": {strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64)}}
	resp, err := c.hc.PostForm(c.url+"/api/v1/query", form)
	require.NoError(t, err)
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string   `json:"resultType"`
			Result     []sample `json:"result"`
		} `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	require.Equal(t, "success", body.Status, "%s: %s", expr, body.Error)
	require.Equal(t, "vector", body.Data.ResultType, expr)
	return body.Data.Result
}

// scalar evaluates expr, which must give exactly one sample, and returns
// its float value.
func (c promClient) scalar(t *testing.T, expr string, at time.Time) float64 {
	t.Helper()
	v := c.query(t, expr, at)
	require.Len(t, v, 1, "%s: %+v", expr, v)
	return v[0].float(t)
}

// byLabels evaluates expr and returns its float samples keyed by the
// values of labels, joined by "|".
func (c promClient) byLabels(t *testing.T, expr string, at time.Time, labels ...string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, s := range c.query(t, expr, at) {
		key := ""
		for i, l := range labels {
			if i > 0 {
				key += "|"
			}
			key += s.Metric[l]
		}
		_, dup := out[key]
		require.False(t, dup, "%s: two samples for %q", expr, key)
		out[key] = s.float(t)
	}
	return out
}

// growth returns the ratio upper/lower of the histogram's buckets, which
// is the same for every bucket of a base-2 exponential schema s:
// 2^(2^-s). It fails when the buckets disagree (a histogram with custom
// buckets).
func (h nativeHistogram) growth(t *testing.T) float64 {
	t.Helper()
	require.NotEmpty(t, h.Buckets)
	g := 0.0
	for _, b := range h.Buckets {
		var lo, hi string
		require.NoError(t, json.Unmarshal(b[1], &lo))
		require.NoError(t, json.Unmarshal(b[2], &hi))
		l, err := strconv.ParseFloat(lo, 64)
		require.NoError(t, err)
		u, err := strconv.ParseFloat(hi, 64)
		require.NoError(t, err)
		if l <= 0 {
			continue // the zero bucket
		}
		r := u / l
		if g == 0 {
			g = r
		}
		require.InEpsilon(t, g, r, 1e-9, "bucket (%s, %s] of a histogram whose buckets grow by %v", lo, hi, g)
	}
	return g
}

func (h nativeHistogram) String() string {
	return fmt.Sprintf("count %s sum %s, %d buckets", h.Count, h.Sum, len(h.Buckets))
}

// exemplar is one exemplar of a series, as /api/v1/query_exemplars gives
// it.
type exemplar struct {
	Series map[string]string
	Labels map[string]string
	Value  float64
}

// exemplars returns the exemplars of the series expr selects, stored
// between from and to.
func (c promClient) exemplars(t *testing.T, expr string, from, to time.Time) []exemplar {
	t.Helper()
	form := url.Values{"query": {expr},
		"start": {strconv.FormatFloat(float64(from.UnixMilli())/1000, 'f', 3, 64)},
		"end":   {strconv.FormatFloat(float64(to.UnixMilli())/1000, 'f', 3, 64)}}
	resp, err := c.hc.PostForm(c.url+"/api/v1/query_exemplars", form)
	require.NoError(t, err)
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   []struct {
			SeriesLabels map[string]string `json:"seriesLabels"`
			Exemplars    []struct {
				Labels map[string]string `json:"labels"`
				Value  string            `json:"value"`
			} `json:"exemplars"`
		} `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	require.Equal(t, "success", body.Status, "%s: %s", expr, body.Error)
	var out []exemplar
	for _, s := range body.Data {
		for _, e := range s.Exemplars {
			v, err := strconv.ParseFloat(e.Value, 64)
			require.NoError(t, err)
			out = append(out, exemplar{Series: s.SeriesLabels, Labels: e.Labels, Value: v})
		}
	}
	return out
}
