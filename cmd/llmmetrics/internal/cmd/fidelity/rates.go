package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmmetrics/llmmetrics"
	"github.com/llmmetrics/llmmetrics/cmd/llmmetrics/internal/bench"
)

// The rates mode measures bench's pacing against the truth server: an
// open loop at each rate of -rates and a closed loop at each concurrency
// of -closed, with short answers (one chunk, 1 ms after the request), so
// the client's core spends its time sending:
//
//	go build -o /tmp/fidelity ./cmd/llmmetrics/internal/cmd/fidelity
//	taskset -c 0 /tmp/fidelity -rates 1000,5000 -closed 1,8
//
// For each level it prints the send lag as the run reported it
// (results.json client_timing: Record.Start minus the scheduled time) and
// as the truth server saw it: the time each request reached the server
// minus its scheduled time.
//
// A request's arrival is the kernel's receive time of its bytes on the
// server's socket where the truth server keeps it (arrivedAt), so the
// server's own scheduling does not count; else its handler's entry, which
// adds the server's delay before its handler runs. The server's view
// adds the way from the client's Start to the server's socket (loopback,
// and whatever of the client's HTTP stack lies after Start), printed as
// "arrival − Start p50". The lag is also given above its floor (the
// smallest arrival minus scheduled), and the arrival spacing against the
// scheduled spacing (jitter) needs no offset at all.
//
// Requests are matched by order: the k-th measured arrival at the server
// with the request whose Start came k-th (records.jsonl keeps each
// request's Start beside its scheduled time). Two requests whose Starts
// are closer than the way to the server may swap; a late request does not
// shift the others' pairs. A starved client (-hog) sends in bursts whose
// requests reach the server in another order than they started: a floor
// below zero says the pairing failed there. The measured requests are the
// last ones the server received (the warm-up and the preflight come
// first).
//
// For a closed loop the run's send lag is the gap from a request's end
// (its last byte read) to the same client's next request's Start; the
// server sees, per connection, the gap from flushing an answer's last
// bytes to the next request's arrival, which adds a loopback round trip
// and the server's own flush.
//
// "waiting for a CPU" is the time the client's threads were runnable but
// not running (Linux schedstat), over the run's wall time: what other
// programs on the client's core took, a lag no pacer removes.

// arrival is what the truth server recorded of one request.
type arrival struct {
	Arrived int64  `json:"arrived_unix_ns"` // the handler entered
	Kernel  int64  `json:"kernel_unix_ns"`  // the request's bytes reached the socket (0: not known)
	End     int64  `json:"end_unix_ns"`     // the answer's last bytes flushed (0: not yet)
	Conn    string `json:"conn"`            // the client's address
}

// reqEnd is when a request's answer ended, and on which connection.
type reqEnd struct {
	conn string    // the client's address: requests of one connection share it
	at   time.Time // the answer's last bytes flushed
}

// ended notes that rt's answer was flushed to its end, on conn.
func (s *server) ended(rt *reqTimes, conn string) {
	at := time.Now()
	s.mu.Lock()
	if s.ends == nil {
		s.ends = map[*reqTimes]reqEnd{}
	}
	s.ends[rt] = reqEnd{conn: conn, at: at}
	s.mu.Unlock()
}

// arrivedAt is when rt's request reached the server, and whether that is
// the kernel's receive time of its bytes (else the handler's entry).
func arrivedAt(rt *reqTimes) (time.Time, bool) {
	if !rt.arrived.IsZero() {
		return rt.arrived, true
	}
	return rt.start, false
}

// arrivals answers every request received since the last reset, in
// arrival order.
func (s *server) arrivals(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	out := make([]arrival, len(s.reqs))
	for i, rt := range s.reqs {
		at, kernel := arrivedAt(rt)
		out[i] = arrival{Arrived: rt.start.UnixNano()}
		if kernel {
			out[i].Kernel = at.UnixNano()
		}
		if e, ok := s.ends[rt]; ok {
			out[i].Conn, out[i].End = e.conn, e.at.UnixNano()
		}
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// startServer starts the truth server child on cpu with args and returns
// its base URL and a function that stops it.
func startServer(ctx context.Context, cpu string, args ...string) (string, func(), error) {
	self, err := os.Executable()
	if err != nil {
		return "", nil, err
	}
	child := exec.CommandContext(ctx, "taskset", append([]string{"-c", cpu, self, "-serve"}, args...)...)
	child.Stderr = os.Stderr
	out, err := child.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := child.Start(); err != nil {
		return "", nil, err
	}
	stop := func() { _ = child.Process.Kill(); _ = child.Wait() }
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		stop()
		return "", nil, fmt.Errorf("server did not start: %w", err)
	}
	return "http://" + strings.TrimSpace(line), stop, nil
}

// runRates measures the open loop at each rate and the closed loop at
// each concurrency, seconds of measured requests per level.
func runRates(rates, closed string, seconds float64, cpu string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	base, stop, err := startServer(ctx, cpu, "-tokens", "1", "-every", "1ms", "-ttft", "1ms")
	if err != nil {
		return err
	}
	defer stop()
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("client GOMAXPROCS %d (pin it with taskset -c 0), server on CPU %s, one chunk after 1 ms; load average %s\n",
		runtime.GOMAXPROCS(0), cpu, strings.Join(strings.Fields(string(load))[:3], " "))
	fmt.Println("| loop | level | requests | run: send lag p50 / p99 | truth: arrival − scheduled p50 / p99 | floor (min) | truth above the floor p50 / p99 | spacing jitter p99 | arrival − Start p50 | server's handler after its socket p50 | client CPU per request | waiting for a CPU | run's warning |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, lv := range levels("rate", rates) {
		if err := ratesLevel(ctx, base, lv, seconds); err != nil {
			return err
		}
	}
	for _, lv := range levels("concurrency", closed) {
		if err := ratesLevel(ctx, base, lv, seconds); err != nil {
			return err
		}
	}
	return nil
}

type level struct {
	mode string // "rate" or "concurrency"
	load int
}

func levels(mode, list string) []level {
	var out []level
	for _, f := range strings.Split(list, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
			out = append(out, level{mode, n})
		}
	}
	return out
}

// ratesLevel runs bench at one level and prints its row.
func ratesLevel(ctx context.Context, base string, lv level, seconds float64) error {
	hc := &http.Client{Timeout: time.Minute}
	if _, err := get(hc, base+"/truth?reset=1"); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "fidelity")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	args := []string{"-url", base + "/v1", "-model", "truth", "-input-tokens", "16", "-repeats", "1", "-out", dir}
	var n, warmup int // measured and warm-up requests: the CPU is divided by both
	loop := "open"
	if lv.mode == "rate" {
		n, warmup = int(float64(lv.load)*seconds), lv.load/2
		args = append(args, "-rates", strconv.Itoa(lv.load), "-requests", strconv.Itoa(n), "-warmup", strconv.Itoa(warmup))
	} else {
		loop = "closed"
		// A request takes ~5 ms: seconds of it per client.
		n, warmup = max(lv.load, int(float64(lv.load)*seconds*150)), lv.load
		args = append(args, "-concurrency", strconv.Itoa(lv.load), "-requests", strconv.Itoa(n), "-warmup", strconv.Itoa(warmup))
	}
	cpu0, wait0, t0 := cpuTime(), runDelay(), time.Now()
	stopHog := startHog(hogOn)
	code := bench.Main(ctx, args, io.Discard, os.Stderr)
	stopHog()
	if code != 0 {
		return fmt.Errorf("bench exited %d", code)
	}
	used, waited, wall := cpuTime()-cpu0, runDelay()-wait0, time.Since(t0)
	b, err := get(hc, base+"/arrivals")
	if err != nil {
		return err
	}
	var arr []arrival
	if err := json.Unmarshal(b, &arr); err != nil {
		return err
	}
	sched, starts, err := readSchedule(dir + "/records.jsonl")
	if err != nil {
		return err
	}
	ct := runTiming(dir + "/results.json")
	if ct == nil || len(sched) == 0 || len(arr) < len(sched) {
		return fmt.Errorf("%s %d: %d scheduled requests, %d arrivals", lv.mode, lv.load, len(sched), len(arr))
	}
	handler := useKernel(arr)
	var lag, jitter []time.Duration
	if lv.mode == "rate" {
		lag, jitter = openTruth(arr[len(arr)-len(sched):], sched)
	} else {
		lag = closedTruth(arr, len(sched))
	}
	way := wayIn(arr[len(arr)-len(sched):], starts)
	floor := slices.Min(lag)
	above := make([]time.Duration, len(lag))
	for i, l := range lag {
		above[i] = l - floor
	}
	jit := "—"
	if jitter != nil {
		jit = us(pct(jitter, 99))
	}
	warn := ct.Warning
	if warn == "" {
		warn = "none"
	}
	fmt.Printf("| %s | %d | %d | %s / %s | %s / %s | %s | %s / %s | %s | %s | %s | %.1f µs | %.0f %% | %s |\n", loop, lv.load, len(sched),
		us(ct.SendLagP50), us(ct.SendLagP99), us(pct(lag, 50)), us(pct(lag, 99)), us(floor), us(pct(above, 50)), us(pct(above, 99)),
		jit, us(way), handler, float64(used)/1e3/float64(n+warmup), 100*waited.Seconds()/wall.Seconds(), warn)
	return nil
}

func us(d time.Duration) string { return fmt.Sprintf("%.0f µs", float64(d)/1e3) }

// openTruth pairs the k-th arrival with the request of the k-th Start
// (sched is in the order of the Starts): the lags (arrival − scheduled)
// and the spacing errors (|gap between arrivals − gap between scheduled
// times|).
func openTruth(arr []arrival, sched []time.Time) (lag, jitter []time.Duration) {
	at := make([]int64, len(arr))
	for i, a := range arr {
		at[i] = a.Arrived
	}
	slices.Sort(at)
	for i, s := range sched {
		lag = append(lag, time.Duration(at[i]-s.UnixNano()))
		if i > 0 {
			e := time.Duration(at[i]-at[i-1]) - sched[i].Sub(sched[i-1])
			jitter = append(jitter, max(e, -e))
		}
	}
	return lag, jitter
}

// closedTruth is, for each of the last n arrivals, the time from the
// server's flush of the previous answer on the same connection to the
// arrival (requests whose connection carried no previous answer are left
// out).
func closedTruth(arr []arrival, n int) []time.Duration {
	last := map[string]int64{}
	var gaps []time.Duration
	for i, a := range arr {
		if prev, ok := last[a.Conn]; ok && prev > 0 && i >= len(arr)-n {
			gaps = append(gaps, time.Duration(a.Arrived-prev))
		}
		last[a.Conn] = a.End
	}
	return gaps
}

// useKernel makes each arrival's time the kernel's receive time of its
// bytes where the server kept it (the server's goroutines may run late;
// the socket's stamp does not; a request without one keeps its handler's
// entry), and says how many had one and the median of the handler's entry
// after it.
func useKernel(arr []arrival) string {
	var after []time.Duration
	for i, a := range arr {
		if a.Kernel != 0 {
			after = append(after, time.Duration(a.Arrived-a.Kernel))
			arr[i].Arrived = a.Kernel
		}
	}
	if len(after) == 0 {
		return "no stamps"
	}
	return fmt.Sprintf("%s (%d of %d stamped)", us(pct(after, 50)), len(after), len(arr))
}

// wayIn is the median of the k-th arrival minus the k-th Start (both
// sorted): the way from the client's Start to the server's handler.
func wayIn(arr []arrival, starts []time.Time) time.Duration {
	at := make([]int64, len(arr))
	for i, a := range arr {
		at[i] = a.Arrived
	}
	slices.Sort(at)
	st := slices.Clone(starts)
	slices.SortFunc(st, func(a, b time.Time) int { return a.Compare(b) })
	d := make([]time.Duration, len(st))
	for i, s := range st {
		d[i] = time.Duration(at[i] - s.UnixNano())
	}
	return pct(d, 50)
}

// runDelay is the time this process's threads have spent runnable but
// waiting for a CPU (Linux /proc/self/task/*/schedstat; 0 elsewhere): on
// a machine whose other programs take the client's core, the lag the
// pacer cannot help.
func runDelay() time.Duration {
	var sum time.Duration
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/schedstat")
		if err != nil {
			continue
		}
		if f := strings.Fields(string(b)); len(f) >= 2 {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			sum += time.Duration(n)
		}
	}
	return sum
}

// readSchedule returns the measured requests' scheduled times and
// Starts, in the order of their Starts.
func readSchedule(path string) (sched, starts []time.Time, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	dec := json.NewDecoder(f)
	for {
		var l struct {
			Record    llmmetrics.Record `json:"record"`
			Scheduled time.Time         `json:"scheduled"`
		}
		if err := dec.Decode(&l); err == io.EOF {
			break
		} else if err != nil {
			return nil, nil, err
		}
		sched, starts = append(sched, l.Scheduled), append(starts, l.Record.Start)
	}
	idx := make([]int, len(starts))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return starts[a].Compare(starts[b]) })
	ss, st := make([]time.Time, len(idx)), make([]time.Time, len(idx))
	for k, i := range idx {
		ss[k], st[k] = sched[i], starts[i]
	}
	return ss, st, nil
}

// runTiming reads results.json's client_timing.
func runTiming(path string) *bench.ClientTiming {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var r bench.Results
	if json.Unmarshal(b, &r) != nil {
		return nil
	}
	return r.ClientTiming
}
