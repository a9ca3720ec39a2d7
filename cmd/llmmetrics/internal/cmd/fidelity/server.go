package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// server streams chat completion chunks on a fixed schedule and records,
// per request in arrival order, when each chunk left (just before its
// write and Flush).
type server struct {
	tokens      int
	every, ttft time.Duration

	mu    sync.Mutex
	reqs  []*reqTimes
	conns int // connections opened since the last reset
	ends  map[*reqTimes]reqEnd
	open  int // connections open now
}

type reqTimes struct {
	start   time.Time
	arrived time.Time // the kernel's receive time of the request's bytes (zero: unknown)
	chunks  []time.Time
}

// connKey is the context key of a request's *serverConn.
type connKey struct{}

func runServer(addr string, tokens int, every, ttft time.Duration) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	s := &server{tokens: tokens, every: every, ttft: ttft}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.stream)
	mux.HandleFunc("GET /truth", s.truth)
	mux.HandleFunc("GET /arrivals", s.arrivals)
	fmt.Println(ln.Addr().String())
	return (&http.Server{Handler: mux, ConnContext: func(ctx context.Context, c net.Conn) context.Context {
		if sc, ok := c.(*serverConn); ok {
			return context.WithValue(ctx, connKey{}, sc)
		}
		return ctx
	}, ConnState: func(_ net.Conn, st http.ConnState) {
		s.mu.Lock()
		switch st {
		case http.StateNew:
			s.conns++
			s.open++
		case http.StateClosed, http.StateHijacked:
			s.open--
		}
		s.mu.Unlock()
	}}).Serve(stampListener{ln})
}

var (
	contentChunk = []byte(`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"truth","choices":[{"index":0,"delta":{"content":"tok "},"finish_reason":null}]}` + "\n\n")
	doneChunks   = []byte(`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"truth","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}` + "\n\n")
)

func (s *server) stream(w http.ResponseWriter, r *http.Request) {
	rt := &reqTimes{start: time.Now(), chunks: make([]time.Time, 0, s.tokens)}
	if sc, ok := r.Context().Value(connKey{}).(*serverConn); ok {
		rt.arrived = sc.arrived() // the latest read carried the request (one at a time per connection)
	}
	s.mu.Lock()
	s.reqs = append(s.reqs, rt)
	s.mu.Unlock()
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fl := w.(http.Flusher)
	next := rt.start.Add(s.ttft)
	for range s.tokens {
		time.Sleep(time.Until(next))
		// Timed just before the write: after it, the goroutine may wait
		// for the processor for as long as the server is behind (the
		// write's system call can hand the processor to another), and a
		// time taken then is late by that wait, not the chunk.
		rt.chunks = append(rt.chunks, time.Now())
		if _, err := w.Write(contentChunk); err != nil {
			return
		}
		fl.Flush()
		next = next.Add(s.every)
	}
	usage := fmt.Sprintf(`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"truth","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":%d,"total_tokens":%d}}`+"\n\ndata: [DONE]\n\n", s.tokens, s.tokens+10)
	_, _ = w.Write(doneChunks)
	_, _ = io.WriteString(w, usage)
	fl.Flush()
	s.ended(rt, r.RemoteAddr)
}

// truth answers the TTFT and ITL lists of the requests after the first
// skip arrivals, or of the last ones (ended ones only); reset=1 forgets
// every request.
func (s *server) truth(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.URL.Query().Get("reset") == "1" {
		s.reqs, s.conns, s.ends = nil, 0, nil
		fmt.Fprintln(w, "{}")
		return
	}
	skip, _ := strconv.Atoi(r.URL.Query().Get("skip"))
	if last, err := strconv.Atoi(r.URL.Query().Get("last")); err == nil {
		skip = max(len(s.reqs)-last, 0)
	}
	t := truth{Conns: s.conns, Open: s.open}
	for i, rt := range s.reqs {
		if i < skip || len(rt.chunks) != s.tokens {
			continue
		}
		t.TTFT = append(t.TTFT, rt.chunks[0].Sub(rt.start))
		if !rt.arrived.IsZero() {
			t.TTFTArrival = append(t.TTFTArrival, rt.chunks[0].Sub(rt.arrived))
		}
		t.Entered = append(t.Entered, rt.start.UnixNano())
		t.FirstSent = append(t.FirstSent, rt.chunks[0].UnixNano())
		for j := 1; j < len(rt.chunks); j++ {
			t.ITL = append(t.ITL, rt.chunks[j].Sub(rt.chunks[j-1]))
		}
	}
	w.Header().Set("Content-Type", "application/json")
	b, _ := jsonMarshal(t)
	_, _ = w.Write(b)
}
