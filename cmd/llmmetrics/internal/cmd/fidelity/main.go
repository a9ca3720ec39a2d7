// Command fidelity measures how far llmmetrics bench's timing is from a
// server's truth as concurrency grows: a truth server (a child process on
// another core) streams OpenAI chat chunks on a fixed schedule and records
// when each chunk left (just before its write); llmmetrics bench, in this
// process, measures the same streams through llmmetrics.NewTransport; the
// two distributions are compared per rung of the ladder.
//
// Pin the client to one core and let the server have the other:
//
//	ulimit -n 30000
//	go build -o /tmp/fidelity ./cmd/llmmetrics/internal/cmd/fidelity
//	taskset -c 0 /tmp/fidelity -streams 100,1000,2000,5000,10000 -timing kernel,user
//
// The server child is started with "taskset -c 1". Each rung runs bench
// with -concurrency N -requests N -warmup N -repeats 1 (one warm-up wave
// that opens the connections, one measured wave) once per timing method
// (-timing: kernel receive timestamps, or LLMMETRICS_TIMING=user) and
// compares the measured wave with the server's record of the same
// requests (the last N arrivals: each client's warm-up request comes
// first).
// Its table: TTFT p50/p99 and ITL p50/p99 of the truth and of bench; the
// truth's TTFT p50 timed from the kernel's arrival of the request at the
// server's socket (as bench's runs from its write to the socket: the
// server's own delay before its handler runs is in both);
// "write→handler", the time from the client's write of a request to the
// server's handler entry (the server's own read lag, inside bench's TTFT
// and outside the truth's); "first read", bench's first-token time minus
// the server's first send (p50 of each); the client's CPU per chunk and
// its peak resident memory per stream.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/cmd/llmmetrics/internal/bench"
)

func main() {
	var (
		serve   = flag.Bool("serve", false, "run the truth server (the child process)")
		addr    = flag.String("addr", "127.0.0.1:0", "with -serve: listen address")
		streams = flag.String("streams", "100,1000,2000,5000,10000", "the ladder: concurrent streams per rung")
		timing  = flag.String("timing", "kernel,user", "timing methods to run each rung with: kernel (receive timestamps), user (LLMMETRICS_TIMING=user)")
		tokens  = flag.Int("tokens", 40, "content chunks per stream")
		every   = flag.Duration("every", 50*time.Millisecond, "gap between chunks")
		ttft    = flag.Duration("ttft", 100*time.Millisecond, "server-side time to the first chunk")
		cpu     = flag.String("server-cpu", "1", "taskset CPU list of the server child")
		hog     = flag.Bool("hog", false, "starve the client: a goroutine that spins during each bench run (with GOMAXPROCS=1, the run should warn that its timing is client-bound)")
		prof    = flag.String("cpuprofile", "", "write the client's CPU profile (the ladder's bench runs) to this file")
		rates   = flag.String("rates", "", "measure pacing instead of the ladder: open-loop rates per second (e.g. 1000,5000; see rates.go)")
		closed  = flag.String("closed", "", "with -rates: closed-loop concurrencies whose start gap to measure (e.g. 1,8)")
		seconds = flag.Float64("seconds", 2, "with -rates: measured seconds per level")
	)
	flag.Parse()
	hogOn = *hog
	if *prof != "" && !*serve {
		f, err := os.Create(*prof)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fidelity:", err)
			os.Exit(1)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "fidelity:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if *serve {
		if err := runServer(*addr, *tokens, *every, *ttft); err != nil {
			fmt.Fprintln(os.Stderr, "fidelity server:", err)
			os.Exit(1)
		}
		return
	}
	if *rates != "" || *closed != "" {
		if err := runRates(*rates, *closed, *seconds, *cpu); err != nil {
			fmt.Fprintln(os.Stderr, "fidelity:", err)
			pprof.StopCPUProfile()
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := runLadder(ctx, *streams, *timing, *tokens, *every, *ttft, *cpu); err != nil {
		fmt.Fprintln(os.Stderr, "fidelity:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

// truth is what the server recorded for the measured requests.
type truth struct {
	TTFT []time.Duration `json:"ttft_ns"` // first chunk written − handler entered
	// TTFTArrival: first chunk written − the kernel's arrival of the
	// request's bytes at the server's socket, the server's TTFT timed at
	// the socket as bench's is (from the write of the request's last
	// bytes to the arrival of the first token's).
	TTFTArrival []time.Duration `json:"ttft_from_arrival_ns"`
	ITL         []time.Duration `json:"itl_ns"` // gaps between consecutive chunks flushed
	// Conns counts the connections opened since the reset: one per stream
	// when the client reuses its warm-up connections.
	Conns int `json:"conns"`
	// Open counts the server's connections open now.
	Open int `json:"open"`
	// Entered and FirstSent are the wall-clock times (Unix ns) each
	// request's handler was entered and its first chunk left: the same
	// clock as the client's Record.Start and FirstToken (one machine), so
	// the TTFT error splits into sending (Start → Entered) and reading
	// (FirstSent → FirstToken).
	Entered   []int64 `json:"entered_unix_ns"`
	FirstSent []int64 `json:"first_sent_unix_ns"`
}

func runLadder(ctx context.Context, ladder, timing string, tokens int, every, ttft time.Duration, cpu string) error {
	rungs, err := parseLadder(ladder)
	if err != nil {
		return err
	}
	methods, err := parseMethods(timing)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	args := []string{"-c", cpu, self, "-serve", "-tokens", strconv.Itoa(tokens), "-every", every.String(), "-ttft", ttft.String()}
	child := exec.CommandContext(ctx, "taskset", args...)
	child.Stderr = os.Stderr
	out, err := child.StdoutPipe()
	if err != nil {
		return err
	}
	if err := child.Start(); err != nil {
		return err
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return fmt.Errorf("server did not start: %w", err)
	}
	base := "http://" + strings.TrimSpace(line)
	hc := &http.Client{Timeout: time.Minute}

	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("client GOMAXPROCS %d (pin it with taskset -c 0), server on CPU %s, %d chunks every %v after a %v TTFT; load average %s\n",
		runtime.GOMAXPROCS(0), cpu, tokens, every, ttft, strings.Join(strings.Fields(string(load))[:3], " "))
	fmt.Println("| streams | timing | TTFT p50 truth / bench (Δ) | TTFT p99 truth / bench (Δ) | TTFT p50 truth from arrival (Δ) | ITL p50 truth / bench (Δ) | ITL p99 truth / bench (Δ) | write→handler p50 | first read p50 | requests | connections | client CPU per chunk | peak RSS per stream |")
	fmt.Println("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, n := range rungs {
		for _, m := range methods {
			if err := runRung(ctx, hc, base, n, m, tokens); err != nil {
				return err
			}
		}
	}
	return nil
}

// parseLadder reads -streams: concurrent streams per rung, in order.
func parseLadder(ladder string) ([]int, error) {
	var rungs []int
	for _, f := range strings.Split(ladder, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad rung %q", f)
		}
		rungs = append(rungs, n)
	}
	return rungs, nil
}

// parseMethods reads -timing: "kernel", "user", or both.
func parseMethods(timing string) ([]string, error) {
	var ms []string
	for _, f := range strings.Split(timing, ",") {
		switch m := strings.TrimSpace(f); m {
		case "kernel", "user":
			ms = append(ms, m)
		default:
			return nil, fmt.Errorf("bad -timing %q: kernel or user", f)
		}
	}
	return ms, nil
}

// runRung runs bench at n streams with the timing method m and prints its
// row against the truth server's record.
func runRung(ctx context.Context, hc *http.Client, base string, n int, m string, tokens int) error {
	if err := waitClosed(ctx, hc, base); err != nil {
		return err
	}
	if _, err := get(hc, base+"/truth?reset=1"); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "fidelity")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	os.Setenv("LLMMETRICS_TIMING", m)
	defer os.Unsetenv("LLMMETRICS_TIMING")
	runtime.GC()
	cpu0 := cpuTime()
	stopRSS := watchRSS()
	stopHog := startHog(hogOn)
	code := bench.Main(ctx, []string{"-url", base + "/v1", "-model", "truth", "-concurrency", strconv.Itoa(n),
		"-requests", strconv.Itoa(n), "-warmup", strconv.Itoa(n), "-repeats", "1", "-out", dir}, io.Discard, os.Stderr)
	stopHog()
	peak := stopRSS()
	if code != 0 {
		return fmt.Errorf("bench exited %d", code)
	}
	used := cpuTime() - cpu0 // both waves: 2n requests
	// The measured wave: the last n requests to arrive (bench's
	// preflight, its calibration probes and the warm-up wave came first).
	b, err := get(hc, base+"/truth?last="+strconv.Itoa(n))
	if err != nil {
		return err
	}
	var tr truth
	if err := json.Unmarshal(b, &tr); err != nil {
		return err
	}
	recs, err := readRecords(dir + "/records.jsonl")
	if err != nil {
		return err
	}
	ct := clientTiming(dir + "/results.json")
	s := llmmetrics.Summarize(recs, llmmetrics.SummaryOptions{})
	col := func(truth []time.Duration, h llmmetrics.Distribution, p float64) string {
		t := pct(truth, p)
		c, _ := h.Percentile(p)
		return fmt.Sprintf("%.2f / %.2f (%+.2f) ms", ms(t), ms(c), ms(c-t))
	}
	arrival := "-"
	if len(tr.TTFTArrival) > 0 {
		c, _ := s.TTFT.Percentile(50)
		arrival = fmt.Sprintf("%.2f (%+.2f) ms", ms(pct(tr.TTFTArrival, 50)), ms(c-pct(tr.TTFTArrival, 50)))
	}
	fmt.Printf("| %d | %s | %s | %s | %s | %s | %s | %.2f ms | %.2f ms | %d/%d ok | %d | %.1f µs | %.0f KB |\n", n, m,
		col(tr.TTFT, s.TTFT, 50), col(tr.TTFT, s.TTFT, 99), arrival, col(tr.ITL, s.ITL, 50), col(tr.ITL, s.ITL, 99),
		ms(sendDelay(recs, tr)), ms(readDelay(recs, tr)), s.Completed, s.Requests, tr.Conns,
		float64(used)/1e3/float64(2*n*tokens), float64(peak)/1024/float64(n))
	fmt.Printf("|   | | client timing (its own report): %s |\n", ct)
	return nil
}

// waitClosed waits until the server has closed the previous rung's
// connections (all but a few: the one asking, the idle one of bench's
// probe of /tokenize), for up to a minute: at 10,000 streams the server's
// open files would otherwise hold both rungs'.
func waitClosed(ctx context.Context, hc *http.Client, base string) error {
	deadline := time.Now().Add(time.Minute)
	for {
		b, err := get(hc, base+"/truth?skip="+strconv.Itoa(math.MaxInt))
		if err != nil {
			return err
		}
		var tr truth
		if err := json.Unmarshal(b, &tr); err != nil {
			return err
		}
		if tr.Open <= 16 || time.Now().After(deadline) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// watchRSS samples the process's resident memory every 50 ms until the
// returned function is called, which returns the largest sample (bytes).
func watchRSS() (stop func() uint64) {
	done := make(chan struct{})
	peak := make(chan uint64)
	go func() {
		var top uint64
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			top = max(top, rss())
			select {
			case <-done:
				peak <- max(top, rss())
				return
			case <-tick.C:
			}
		}
	}()
	return func() uint64 { close(done); return <-peak }
}

// rss is the process's resident set size (VmRSS), 0 when unknown.
func rss() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// pct is the p-th percentile (numpy's linear interpolation).
func pct(xs []time.Duration, p float64) time.Duration {
	fs := make([]float64, len(xs))
	for i, x := range xs {
		fs[i] = float64(x)
	}
	v, err := llmmetrics.Percentile(fs, p)
	if err != nil {
		return 0
	}
	return time.Duration(v)
}

func get(hc *http.Client, url string) ([]byte, error) {
	resp, err := hc.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

func readRecords(path string) ([]llmmetrics.Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []llmmetrics.Record
	dec := json.NewDecoder(f)
	for {
		var l struct {
			Record llmmetrics.Record `json:"record"`
		}
		if err := dec.Decode(&l); err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, err
		}
		out = append(out, l.Record)
	}
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

// sendDelay is p50(server entered) − p50(client Start): how late requests
// reach the handler after the client started timing them.
func sendDelay(recs []llmmetrics.Record, tr truth) time.Duration {
	starts := make([]time.Duration, len(recs))
	for i, r := range recs {
		starts[i] = time.Duration(r.Start.UnixNano())
	}
	return pctAbs(tr.Entered, 50) - pct(starts, 50)
}

// readDelay is p50(client FirstToken) − p50(server first chunk sent).
func readDelay(recs []llmmetrics.Record, tr truth) time.Duration {
	var firsts []time.Duration
	for _, r := range recs {
		if !r.FirstToken.IsZero() {
			firsts = append(firsts, time.Duration(r.FirstToken.UnixNano()))
		}
	}
	return pct(firsts, 50) - pctAbs(tr.FirstSent, 50)
}

func pctAbs(ns []int64, p float64) time.Duration {
	ds := make([]time.Duration, len(ns))
	for i, v := range ns {
		ds[i] = time.Duration(v)
	}
	return pct(ds, p)
}

// clientTiming summarizes results.json's client_timing in one line.
func clientTiming(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	var r bench.Results
	if err := json.Unmarshal(b, &r); err != nil || r.ClientTiming == nil {
		return "none"
	}
	ct := r.ClientTiming
	s := fmt.Sprintf("method %s, send lag p99 %.1f µs", ct.Method, float64(ct.SendLagP99)/1e3)
	if ct.ArrivalLagP99 != nil {
		s += fmt.Sprintf(", arrival lag p50 %.2f ms p99 %.2f ms, %d/%d reads with several frames, %d reads timed by the clock",
			ms(*ct.ArrivalLagP50), ms(*ct.ArrivalLagP99), ct.MultiFrameReads, ct.Reads, ct.UserReads)
	}
	if ct.Warning != "" {
		s += "; warning: " + ct.Warning
	}
	return s
}

// hogOn: -hog was given (set by main).
var hogOn bool

// startHog starts a goroutine that spins until the returned function is
// called (when on), taking a processor from the client.
func startHog(on bool) (stop func()) {
	if !on {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		for x := 0; ; x++ {
			select {
			case <-done:
				return
			default:
			}
			for range 1 << 16 { // spin without yielding between checks
				x ^= x << 1
			}
		}
	}()
	return func() { close(done) }
}
