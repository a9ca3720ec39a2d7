package llmmetrics

import (
	"errors"
	"log"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/otel"
)

// otel hands its default error handler, once per process, to the first
// handler ever given to otel.SetErrorHandler (delegateErrorHandlerOnce in
// go.opentelemetry.io/otel/internal/errorhandler). A test that sets its own
// handler and restores the previous one in Cleanup thus leaves every later
// otel.Handle call of the test binary in its closure, after it has ended.
// Tests capture through handleOtel instead: one handler, installed once,
// passes each report to the handler of the test running now, or logs it as
// otel's default does when no test has one.
var otelHandler struct {
	once     sync.Once
	mu       sync.Mutex
	fn       func(error)
	fallback func(error) // when no test has a handler (nil: log.Print)
}

// handleOtel sends what otel.Handle receives to fn until tb ends, then
// gives it back to the previous handler (an enclosing test's, or none).
func handleOtel(tb testing.TB, fn func(error)) {
	tb.Helper()
	otelHandler.once.Do(func() {
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
			otelHandler.mu.Lock()
			fn := otelHandler.fn
			if fn == nil {
				fn = otelHandler.fallback
			}
			otelHandler.mu.Unlock()
			if fn == nil {
				fn = func(err error) { log.Print(err) }
			}
			fn(err)
		}))
	})
	otelHandler.mu.Lock()
	prev := otelHandler.fn
	otelHandler.fn = fn
	otelHandler.mu.Unlock()
	tb.Cleanup(func() {
		otelHandler.mu.Lock()
		otelHandler.fn = prev
		otelHandler.mu.Unlock()
	})
}

// TestHandleOtelEndsWithTheTest: a report made after the capturing test has
// ended is not given to that test's handler (with SetErrorHandler and a
// restore in Cleanup it was: otel's default handler delegates to the first
// handler ever set).
func TestHandleOtelEndsWithTheTest(t *testing.T) {
	errA, errB, late := errors.New("a"), errors.New("b"), errors.New("late")
	var first, second, fallback []error
	otelHandler.mu.Lock()
	otelHandler.fallback = func(err error) { fallback = append(fallback, err) }
	otelHandler.mu.Unlock()
	t.Cleanup(func() {
		otelHandler.mu.Lock()
		otelHandler.fallback = nil
		otelHandler.mu.Unlock()
	})
	t.Run("first", func(t *testing.T) {
		handleOtel(t, func(err error) { first = append(first, err) })
		otel.Handle(errA)
		t.Run("nested", func(t *testing.T) {
			handleOtel(t, func(err error) { second = append(second, err) })
			otel.Handle(errB)
		})
		otel.Handle(errA) // back to first's handler
	})
	otel.Handle(late)
	assert.Equal(t, []error{errA, errA}, first)
	assert.Equal(t, []error{errB}, second)
	assert.Equal(t, []error{late}, fallback, "no test's handler is set: the fallback")
}
