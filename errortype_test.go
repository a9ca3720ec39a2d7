package llmmetrics_test

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmmetrics/llmmetrics"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// TestRecordErrorType checks that a Record carries the error.type its
// request was counted under, and that the transport failures a client
// meets most get short stable names rather than a Go type.
func TestRecordErrorType(t *testing.T) {
	opErr := func(e error) error {
		return &url.Error{Op: "Post", URL: "http://x/v1", Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", e)}}
	}
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"ok", nil, ""},
		{"refused", opErr(syscall.ECONNREFUSED), "connection_refused"},
		{"reset", opErr(syscall.ECONNRESET), "connection_reset"},
		{"broken pipe", opErr(syscall.EPIPE), "connection_reset"},
		{"eof on a reused connection", &url.Error{Op: "Post", URL: "http://x", Err: io.EOF}, "eof"},
		{"unexpected eof mid-stream", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), "eof"},
		{"dns", &url.Error{Op: "Post", URL: "http://x", Err: &net.DNSError{Err: "no such host", Name: "x", IsNotFound: true}}, "dns"},
		{"untrusted certificate", &url.Error{Op: "Post", URL: "https://x", Err: x509.UnknownAuthorityError{}}, "tls_certificate"},
		{"net timeout", &url.Error{Op: "Post", URL: "http://x", Err: &net.OpError{Op: "read", Err: os.ErrDeadlineExceeded}}, "timeout"},
		{"context deadline", context.DeadlineExceeded, "timeout"},
		{"canceled", context.Canceled, "canceled"},
		{"HTTP status", &llmmetrics.HTTPStatusError{StatusCode: 503}, "503"},
		{"provider error", fmt.Errorf("stream: %w", &llmmetrics.StreamError{Type: "overloaded_error"}), "overloaded_error"},
		{"unknown", errors.New("boom"), "*errors.errorString"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr, c := newCollectedTracker(t)
			rec := tr.StartAt(context.Background(), atMS(0)).EndAt(atMS(1), tc.err)
			assert.Equal(t, tc.want, rec.ErrorType)
			byType := c.Collect(t).SumBy(llmmetrics.ServerMetricNames().Requests, semconv.ErrorTypeKey)
			if tc.want == "" {
				assert.Empty(t, byType, "no error.type on an OK request")
			} else {
				assert.Equal(t, map[string]float64{tc.want: 1}, byType, "the instruments and the Record agree")
			}
		})
	}
}

// TestRecordErrorTypeOverHTTP drives real failures through NewTransport:
// nothing listening, and a server that hangs up without answering.
func TestRecordErrorTypeOverHTTP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closedAddr := ln.Addr().String()
	require.NoError(t, ln.Close())

	hangup := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			_ = conn.Close()
		}
	}))
	t.Cleanup(hangup.Close)

	for _, tc := range []struct{ name, url, want string }{
		{"nothing listening", "http://" + closedAddr + "/v1/chat/completions", "connection_refused"},
		{"server hangs up", hangup.URL + "/v1/chat/completions", "eof"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []llmmetrics.Record
			tr, err := llmmetrics.NewTracker(llmmetrics.WithOnEnd(func(_ context.Context, r llmmetrics.Record) { got = append(got, r) }))
			require.NoError(t, err)
			hc := &http.Client{Transport: llmmetrics.NewTransport(tr, &http.Transport{})}
			resp, err := hc.Post(tc.url, "application/json", nil)
			if err == nil {
				_ = resp.Body.Close()
			}
			require.Error(t, err)
			require.Len(t, got, 1)
			assert.Equal(t, llmmetrics.OutcomeError, got[0].Outcome)
			assert.Equal(t, tc.want, got[0].ErrorType)
		})
	}
}
