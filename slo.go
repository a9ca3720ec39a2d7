package llmmetrics

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/llmmetrics/llmmetrics/internal/stats"
)

// SLO is a per-request service level objective: the latency limits a
// request must meet to count as good. A zero field means "no limit". Only
// OK requests can be good; comparisons are inclusive (value ≤ limit). A
// request without a token fails a TTFT limit, one without an answer token a
// TTFO limit; one with N ≤ 1 meets any TPOT limit, one with fewer than two
// chunks any ITL limit (which bounds the largest single gap, the "stutter").
//
// *SLO is a flag.Value in the text form of ParseSLO. JSON names: ttft_ns,
// ttfo_ns, tpot_ns, itl_ns, e2el_ns (unset limits omitted).
type SLO struct {
	// TTFT is the time-to-first-token limit (0 = none).
	TTFT time.Duration `json:"ttft_ns,omitempty"`
	// TTFO is the time-to-first-output (answer) token limit (0 = none).
	TTFO time.Duration `json:"ttfo_ns,omitempty"`
	// TPOT is the time-per-output-token limit (0 = none).
	TPOT time.Duration `json:"tpot_ns,omitempty"`
	// ITL is the limit on the largest gap between chunks (0 = none).
	ITL time.Duration `json:"itl_ns,omitempty"`
	// E2EL is the end-to-end latency limit (0 = none).
	E2EL time.Duration `json:"e2el_ns,omitempty"`
}

// Validate returns an error wrapping ErrInvalid when a limit is negative.
func (s SLO) Validate() error {
	for _, l := range s.limits() {
		if l.limit < 0 {
			return fmt.Errorf("%w: negative SLO %s limit %v", ErrInvalid, l.name, l.limit)
		}
	}
	return nil
}

// IsZero reports whether the SLO sets no limit.
func (s SLO) IsZero() bool { return s == SLO{} }

type namedLimit struct {
	name  string
	limit time.Duration
}

func (s SLO) limits() [5]namedLimit {
	return [5]namedLimit{{"ttft", s.TTFT}, {"ttfo", s.TTFO}, {"tpot", s.TPOT}, {"itl", s.ITL}, {"e2el", s.E2EL}}
}

// sloCheck is the result of checking one Record against an SLO, threshold
// by threshold (Goodput.ByThreshold counts each). Each threshold field is
// true when the limit is unset or the request's value meets it, whatever
// the outcome; Completed is true when the outcome is OutcomeOK.
type sloCheck struct {
	// Completed is true when the request's outcome is OutcomeOK (the
	// request completed); a failed or canceled request never meets an SLO.
	Completed bool `json:"completed"`
	// TTFT is true when the TTFT limit is unset or met.
	TTFT bool `json:"ttft"`
	// TTFO is true when the TTFO limit is unset or met.
	TTFO bool `json:"ttfo"`
	// TPOT is true when the TPOT limit is unset or met.
	TPOT bool `json:"tpot"`
	// ITL is true when the ITL (largest gap) limit is unset or met.
	ITL bool `json:"itl"`
	// E2EL is true when the E2EL limit is unset or met.
	E2EL bool `json:"e2el"`
}

// met reports whether the request is good: Completed and within every
// limit.
func (c sloCheck) met() bool { return c.Completed && c.TTFT && c.TTFO && c.TPOT && c.ITL && c.E2EL }

// Met reports whether r is good: its outcome is OK and it meets every limit
// of s (see SLO for the rules).
func (s SLO) Met(r Record) bool { return s.checkRecord(r).met() }

// checkRecord evaluates r against every limit of s.
func (s SLO) checkRecord(r Record) sloCheck {
	f := r.figures()
	return s.check(&r, &f)
}

// figures are the values of a Record that an SLO bounds. Record.figures
// takes them from the Record methods; Summarize computes the same values
// from integer offsets (recMetrics.fast) and checks them with the same
// SLO.check.
type figures struct {
	tok     bool          // hasToken()
	ttft    time.Duration // TTFT(), when tok
	hasTTFO bool          // !FirstOutput.IsZero()
	ttfo    time.Duration // TTFO(), when hasTTFO
	decode  time.Duration // LastToken − FirstToken (lastToken()), 0 without a token
	e2el    time.Duration // E2EL(), when hasE2EL
	hasE2EL bool
}

// figures returns r's figures from its methods.
func (r *Record) figures() figures {
	f := figures{tok: r.hasToken(), decode: r.decode()}
	f.ttft, _ = r.TTFT()
	f.ttfo, f.hasTTFO = r.TTFO()
	f.e2el, f.hasE2EL = r.E2EL()
	return f
}

// check is the one definition of the SLO rules: it evaluates r, whose
// figures are f, against every limit of s. The largest gap (the ITL
// limit) is read from r only when that limit is set: it costs a pass over
// the gaps.
func (s *SLO) check(r *Record, f *figures) sloCheck {
	c := sloCheck{Completed: r.Outcome == OutcomeOK, TTFT: true, TTFO: true, TPOT: true, ITL: true, E2EL: true}
	if s.TTFT > 0 {
		c.TTFT = f.tok && f.ttft <= s.TTFT
	}
	if s.TTFO > 0 {
		c.TTFO = f.hasTTFO && f.ttfo <= s.TTFO
	}
	if s.TPOT > 0 && r.OutputTokens > 1 && f.tok {
		// decode / (N − 1) ≤ limit exactly, without the rounding of
		// Record.TPOT. A request without TPOT meets the limit.
		k := time.Duration(r.OutputTokens - 1)
		q, rem := f.decode/k, f.decode%k
		c.TPOT = q < s.TPOT || (q == s.TPOT && rem == 0)
	}
	if s.ITL > 0 {
		d, ok := r.maxITLGap()
		c.ITL = !ok || d <= s.ITL
	}
	if s.E2EL > 0 {
		c.E2EL = f.hasE2EL && f.e2el <= s.E2EL
	}
	return c
}

// String returns the SLO in the text form ParseSLO reads, e.g.
// "ttft=200ms,tpot=50ms"; unset limits are left out and the zero SLO gives
// "".
func (s SLO) String() string {
	var b strings.Builder
	for _, l := range s.limits() {
		if l.limit == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(l.name)
		b.WriteByte('=')
		b.WriteString(l.limit.String())
	}
	return b.String()
}

// Set parses text with ParseSLO and stores the result (flag.Value).
func (s *SLO) Set(text string) error {
	v, err := ParseSLO(text)
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// ParseSLO parses a comma-separated list of limits such as
// "ttft=200ms,tpot=50ms,e2el=5s". Keys are ttft, ttfo, tpot, itl and e2el
// (case-insensitive); values are Go durations (time.ParseDuration). Spaces
// around items are ignored. The empty string gives the zero SLO (no
// limits). An unknown or repeated key, a malformed duration or a negative
// limit gives an error wrapping ErrInvalid.
func ParseSLO(text string) (SLO, error) {
	var s SLO
	if strings.TrimSpace(text) == "" {
		return s, nil
	}
	seen := map[string]bool{}
	for item := range strings.SplitSeq(text, ",") {
		key, val, found := strings.Cut(item, "=")
		key = strings.ToLower(strings.TrimSpace(key))
		val = strings.TrimSpace(val)
		if !found || key == "" {
			return SLO{}, fmt.Errorf("%w: SLO item %q is not key=duration", ErrInvalid, strings.TrimSpace(item))
		}
		if seen[key] {
			return SLO{}, fmt.Errorf("%w: SLO key %s given twice", ErrInvalid, key)
		}
		seen[key] = true
		d, err := time.ParseDuration(val)
		if err != nil {
			return SLO{}, fmt.Errorf("%w: SLO %s: %w", ErrInvalid, key, err)
		}
		switch key {
		case "ttft":
			s.TTFT = d
		case "ttfo":
			s.TTFO = d
		case "tpot":
			s.TPOT = d
		case "itl":
			s.ITL = d
		case "e2el":
			s.E2EL = d
		default:
			return SLO{}, fmt.Errorf("%w: unknown SLO key %q (want ttft, ttfo, tpot, itl or e2el)", ErrInvalid, key)
		}
	}
	if err := s.Validate(); err != nil {
		return SLO{}, err
	}
	return s, nil
}

// Objective is a percentile objective such as "p95 TTFT ≤ 200 ms", checked
// against a Summary's distribution (not per request). Percentile is in
// percent (0–100); the comparison is inclusive. Its text form (String,
// ParseObjective) is "p95 ttft<=200ms".
type Objective struct {
	// Latency is the distribution the objective bounds.
	Latency Latency `json:"latency"`
	// Percentile is the percentile in percent (0–100), e.g. 95.
	Percentile float64 `json:"p"`
	// Limit is the largest acceptable value at that percentile.
	Limit time.Duration `json:"limit_ns"`
}

// validate returns an error wrapping ErrInvalid when the latency is
// unknown, the percentile is NaN or outside [0, 100], or the limit is
// negative.
func (o Objective) validate() error {
	switch {
	case !o.Latency.valid():
		return fmt.Errorf("%w: objective with unknown latency %d", ErrInvalid, uint8(o.Latency))
	case !stats.ValidPercent(o.Percentile):
		return fmt.Errorf("%w: objective percentile %v outside [0, 100]", ErrInvalid, o.Percentile)
	case o.Limit < 0:
		return fmt.Errorf("%w: negative objective limit %v", ErrInvalid, o.Limit)
	}
	return nil
}

// String returns the objective as "p95 ttft<=200ms".
func (o Objective) String() string {
	return "p" + strconv.FormatFloat(o.Percentile, 'f', -1, 64) + " " + o.Latency.String() + "<=" + o.Limit.String()
}

// ParseObjective parses "p95 ttft<=200ms" (also "p99.9 E2EL <= 5s" and "≤";
// the latency is read case-insensitively). It returns an error wrapping
// ErrInvalid for any other form.
func ParseObjective(text string) (Objective, error) {
	t := strings.TrimSpace(text)
	bad := func(why string) (Objective, error) {
		return Objective{}, fmt.Errorf("%w: objective %q: %s", ErrInvalid, text, why)
	}
	if len(t) < 2 || (t[0] != 'p' && t[0] != 'P') {
		return bad(`want "p95 ttft<=200ms"`)
	}
	pStr, rest, ok := strings.Cut(t[1:], " ")
	if !ok {
		return bad("want a space after the percentile")
	}
	p, err := strconv.ParseFloat(pStr, 64)
	if err != nil || math.IsNaN(p) {
		return bad("bad percentile")
	}
	rest = strings.ReplaceAll(rest, "≤", "<=")
	name, limit, ok := strings.Cut(rest, "<=")
	if !ok {
		return bad(`want "<="`)
	}
	var o Objective
	if err := o.Latency.UnmarshalText([]byte(strings.TrimSpace(name))); err != nil {
		return bad("unknown latency")
	}
	d, err := time.ParseDuration(strings.TrimSpace(limit))
	if err != nil {
		return bad("bad duration")
	}
	o.Percentile, o.Limit = p, d
	if err := o.validate(); err != nil {
		return Objective{}, err
	}
	return o, nil
}

// ObjectiveResult is the outcome of checking an Objective against a
// Summary.
type ObjectiveResult struct {
	// Objective is the objective checked.
	Objective Objective `json:"objective"`
	// Found is false when the distribution is empty or does not hold the
	// percentile (request it in SummaryOptions.Percentiles); Pass is then
	// false.
	Found bool `json:"found"`
	// Pass is true when the value at the percentile is ≤ the limit.
	Pass bool `json:"pass"`
	// Value is the actual value at the percentile (0 when not Found).
	Value time.Duration `json:"value_ns"`
	// Margin is Limit − Value: positive = headroom, negative = overshoot.
	Margin time.Duration `json:"margin_ns"`
}

// Check evaluates the objective against s. The error wraps ErrInvalid for
// an invalid objective (an unknown latency, a percentile that is NaN or
// outside [0, 100], a negative limit), whatever s holds; a valid one whose
// percentile s does not hold gives a result that is not Found.
func (o Objective) Check(s Summary) (ObjectiveResult, error) {
	res := ObjectiveResult{Objective: o}
	if err := o.validate(); err != nil {
		return res, err
	}
	v, ok := s.Distribution(o.Latency).Percentile(o.Percentile)
	if !ok {
		return res, nil
	}
	res.Found, res.Value, res.Margin = true, v, o.Limit-v
	res.Pass = v <= o.Limit
	return res, nil
}
