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
	once sync.Once
	mu   sync.Mutex
	fn   func(error)
}

// handleOtel sends what otel.Handle receives to fn until tb ends, then
// gives it back to the previous handler (an enclosing test's, or none).
func handleOtel(tb testing.TB, fn func(error)) {
	tb.Helper()
	otelHandler.once.Do(func() {
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
			otelHandler.mu.Lock()
			fn := otelHandler.fn
			otelHandler.mu.Unlock()
			if fn == nil {
				log.Print(err)
				return
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
	errA, errB := errors.New("a"), errors.New("b")
	var first, second []error
	t.Run("first", func(t *testing.T) {
		handleOtel(t, func(err error) { first = append(first, err) })
		otel.Handle(errA)
		t.Run("nested", func(t *testing.T) {
			handleOtel(t, func(err error) { second = append(second, err) })
			otel.Handle(errB)
		})
		otel.Handle(errA) // back to first's handler
	})
	otel.Handle(errors.New("llmmetrics test: a report after every handler ended is logged"))
	assert.Equal(t, []error{errA, errA}, first)
	assert.Equal(t, []error{errB}, second)
}
