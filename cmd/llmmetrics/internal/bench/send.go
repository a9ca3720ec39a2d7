package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/cmd/llmmetrics/internal/workload"
)

// sent is what bench learned from sending one request, besides its Record.
type sent struct {
	// retried: the first attempt failed on a reused connection before any
	// byte of its answer arrived, and the request was sent again on a
	// fresh connection (the Record is the second attempt's).
	retried bool
	// msg says why the request failed, in a few words ("" when it did not).
	msg string
	// contentType and head are the answer's Content-Type and first bytes
	// (head only when asked: the preflight shows them).
	contentType string
	head        []byte
	// answer is the answer's text and tool calls (only when asked: a
	// session's next turn sends them back).
	answer workload.Answer
}

// keep says what send keeps of an answer besides its Record.
type keep uint8

const (
	keepNothing keep = iota
	keepHead         // its first bytes (the preflight shows them)
	keepAnswer       // its text (a session's next turn sends it)
)

// maxAnswer bounds the answer kept for a session's next turn.
const maxAnswer = 16 << 20

// Limits of what a failure keeps: the excerpt of an error answer shown to
// the user, and how much of an error answer is read to find its message.
const (
	maxErrorMessage = 300
	maxErrorBody    = 64 << 10
	maxHead         = 512
)

// send sends one streaming request of the -api and reads it to its end, within
// -timeout; the Tracker's WithOnEnd hook stores its Record in *slot.
//
// A request whose first attempt fails on a reused connection before any
// byte of the answer arrived is sent once more, on a fresh connection:
// servers close keep-alive connections (idle or after N requests; some
// right after a streamed answer), and the next request written on such a
// connection meets EOF or a reset. That is the connection's fault, not the
// server's answer to the request, so the second attempt's Record is the
// request's, and the first attempt's time counts in no latency.
//
// A request cut by -timeout fails with error_type "timeout". The slot
// always ends with a Record that has a start time, even when the transport
// kept none (a redirect loop the client gave up on).
func (b *bench) send(ctx context.Context, body []byte, slot *llmmetrics.Record, k keep) sent {
	rctx, cancel := context.WithTimeout(ctx, b.o.timeout)
	defer cancel()
	began := time.Now()
	s, retry, err := b.try(rctx, b.hc, body, slot, k)
	if retry && rctx.Err() == nil {
		*slot = llmmetrics.Record{}
		s, _, err = b.try(rctx, b.fresh, body, slot, k)
		s.retried = true
	}
	if slot.Start.IsZero() {
		et := "_OTHER"
		if err != nil && strings.Contains(err.Error(), "redirect") {
			et = "redirect"
		}
		*slot = llmmetrics.Record{Start: began, End: time.Now(), Outcome: llmmetrics.OutcomeError, ErrorType: et}
		if s.msg == "" {
			s.msg = "the request ended with no answer"
		}
	}
	if ctx.Err() == nil && errors.Is(rctx.Err(), context.DeadlineExceeded) && slot.Outcome != llmmetrics.OutcomeOK {
		// The run goes on: the server did not answer in time, a failure
		// (the Tracker calls a passed deadline a cancel, as for a caller
		// that gave up).
		slot.Outcome, slot.ErrorType = llmmetrics.OutcomeError, "timeout"
		s.msg = fmt.Sprintf("not done within -timeout %v", b.o.timeout)
	}
	return s
}

// try makes one attempt through hc. retry reports that it failed on a
// reused connection before any byte of the answer arrived.
func (b *bench) try(ctx context.Context, hc *http.Client, body []byte, slot *llmmetrics.Record, k keep) (s sent, retry bool, err error) {
	a := new(attempt)
	if rt, ok := ctx.Value(timingKey{}).(*reqTiming); ok {
		rt.attempt = a // arrivalTransport reads the same trace's connection and write time
		a.hold = rt.hold
	}
	ctx = context.WithValue(ctx, slotKey{}, slot)
	ctx = httptrace.WithClientTrace(ctx, a.trace())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.url, bytes.NewReader(body))
	if err != nil { // the URL passed the flags' check: not expected
		now := time.Now()
		*slot = llmmetrics.Record{Start: now, End: now, Outcome: llmmetrics.OutcomeError, ErrorType: "_OTHER"}
		return sent{msg: err.Error()}, false, err
	}
	b.setHeaders(req)
	resp, err := hc.Do(req)
	if err != nil {
		return sent{msg: shortError(err)}, a.reused.Load() && !a.answered.Load(), err
	}
	defer resp.Body.Close()
	s.contentType = resp.Header.Get("Content-Type")
	if resp.StatusCode >= 400 {
		errBody, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		s.msg = httpError(resp.StatusCode, errBody)
		return s, false, nil
	}
	head := prefixWriter{max: 0}
	switch k {
	case keepHead:
		head.max = maxHead
	case keepAnswer:
		head.max = maxAnswer
	}
	buf := copyBufs.Get().(*[]byte)
	_, err = io.CopyBuffer(&head, resp.Body, *buf)
	copyBufs.Put(buf)
	if err != nil {
		s.msg = shortError(err)
	}
	s.head = head.b
	if k == keepAnswer && err == nil {
		s.answer, _ = workload.ReadAnswer(b.o.wl.api, bytes.NewReader(head.b))
		s.head = nil
	}
	return s, false, err
}

// copyBufs holds the buffers answers are read with: io.Copy would make
// and zero 32 KB per request, a tenth of the client's CPU at 1,000
// requests/s of short answers.
var copyBufs = sync.Pool{New: func() any {
	b := make([]byte, 32<<10)
	return &b
}}

// prefixWriter keeps the first max bytes written to it and discards the rest.
type prefixWriter struct {
	b   []byte
	max int
}

func (w *prefixWriter) Write(p []byte) (int, error) {
	if room := w.max - len(w.b); room > 0 {
		w.b = append(w.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// shortError is err without the "Post URL:" that http.Client adds, cut
// to maxErrorMessage.
func shortError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil {
		err = ue.Err
	}
	return excerpt([]byte(err.Error()))
}

// httpError is "HTTP 404: <the server's message>": the message field of
// an OpenAI-style error object ({"error": {"message": …}}), of a vLLM
// error ({"message": …}) or an Ollama one ({"error": "…"}), else the
// start of the body.
func httpError(code int, body []byte) string {
	msg := providerMessage(body)
	if msg == "" {
		msg = excerpt(stripTags(body))
	}
	if msg == "" {
		return fmt.Sprintf("HTTP %d %s", code, http.StatusText(code))
	}
	return fmt.Sprintf("HTTP %d: %s", code, msg)
}

func providerMessage(body []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &v) != nil {
		return ""
	}
	var inner struct {
		Message string `json:"message"`
	}
	var s string
	switch {
	case json.Unmarshal(v.Error, &inner) == nil && inner.Message != "":
		return excerpt([]byte(inner.Message))
	case json.Unmarshal(v.Error, &s) == nil && s != "":
		return excerpt([]byte(s))
	}
	return excerpt([]byte(v.Message))
}

// excerpt returns b as one line of valid UTF-8, runs of white space as one
// space, cut to maxErrorMessage bytes with "…".
func excerpt(b []byte) string {
	s := strings.Join(strings.Fields(strings.ToValidUTF8(string(b), "\uFFFD")), " ")
	if len(s) <= maxErrorMessage {
		return s
	}
	cut := maxErrorMessage
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// stripTags returns an HTML body's text (what lies outside <…>), and any
// other body unchanged: a web server's error page, shown in one line.
func stripTags(body []byte) []byte {
	if !bytes.HasPrefix(bytes.TrimSpace(body), []byte("<")) {
		return body
	}
	var out []byte
	in := false
	for _, c := range body {
		switch {
		case c == '<':
			in = true
			out = append(out, ' ')
		case c == '>':
			in = false
		case !in:
			out = append(out, c)
		}
	}
	return out
}
