package llmmetrics

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"syscall"
)

// transportErrorType names the transport failures a client meets most
// often with the short, stable error.type values a dashboard can group by,
// instead of the Go type that semconv.ErrorType falls back to (a refused
// connection, a reset and a timeout are all "*net.OpError" there). It
// returns "" for an error it does not know.
//
//	connection_refused  nothing listens at the address (ECONNREFUSED)
//	connection_reset    the peer reset or closed the connection while writing (ECONNRESET, EPIPE)
//	eof                 the connection closed before or during the answer (io.EOF, io.ErrUnexpectedEOF)
//	timeout             a deadline of the network stack passed (net.Error.Timeout)
//	dns                 the host name did not resolve
//	tls_certificate     the server's certificate was not trusted (unknown authority, wrong host, expired)
//	tls                 another TLS failure (a plain HTTP server answering a TLS client, say)
func transportErrorType(err error) string {
	var (
		dns      *net.DNSError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		verify   *tls.CertificateVerificationError
		record   tls.RecordHeaderError
		alert    tls.AlertError
		netErr   net.Error
	)
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection_refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection_reset"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "eof"
	case errors.As(err, &dns):
		return "dns"
	case errors.As(err, &unknown), errors.As(err, &hostname), errors.As(err, &invalid), errors.As(err, &verify):
		return "tls_certificate"
	case errors.As(err, &record), errors.As(err, &alert):
		return "tls"
	case errors.As(err, &netErr) && netErr.Timeout():
		return "timeout"
	}
	return ""
}

// HTTPStatusError is the error a request measured by NewTransport,
// Middleware or NewHandler ends with when the response's status code is 400
// or more: the request fails (OutcomeError) with error.type the status code
// ("429").
type HTTPStatusError struct {
	// StatusCode is the response's HTTP status code.
	StatusCode int
}

// Error returns "llmmetrics: HTTP status 429 Too Many Requests".
func (e *HTTPStatusError) Error() string {
	return fmt.Sprintf("llmmetrics: HTTP status %d %s", e.StatusCode, http.StatusText(e.StatusCode))
}

// ErrorType returns the status code in decimal, the error.type attribute
// of the GenAI conventions for an HTTP failure.
func (e *HTTPStatusError) ErrorType() string { return strconv.Itoa(e.StatusCode) }
