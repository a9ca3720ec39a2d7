package workload

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"time"
)

// maxSkippedNames bounds Info.Skipped; Info.SkippedCount counts them all.
const maxSkippedNames = 20

// datasetSource cycles through a dataset's sendable entries.
type datasetSource struct {
	path, format string
	r            entryReader
	rng          *rand.Rand
}

func openDataset(w *Workload) (source, error) {
	path := w.cfg.Dataset
	format, err := detect(path)
	if err != nil {
		return nil, err
	}
	if format == FormatMooncake {
		return nil, badf("%s: a Mooncake trace (timestamp, input_length, hash_ids): replay it with -trace", path)
	}
	w.info = Info{Source: "dataset", Format: format, Path: path}
	r, err := newReader(path, format)
	if err != nil {
		return nil, err
	}
	defer r.close()
	for {
		e, err := r.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if e.skip != "" {
			w.info.SkippedCount++
			if len(w.info.Skipped) < maxSkippedNames {
				w.info.Skipped = append(w.info.Skipped, e.origin+": "+e.skip)
			}
			continue
		}
		if err := w.checkContext(e); err != nil {
			return nil, err
		}
		w.info.Entries++
		if e.replay != nil {
			w.info.ToolConversations++
		}
	}
	if w.info.Entries == 0 {
		why := ""
		if w.info.SkippedCount > 0 {
			why = fmt.Sprintf(" (%d cannot be sent, e.g. %s)", w.info.SkippedCount, w.info.Skipped[0])
		}
		return nil, badf("%s: empty dataset: no entry to send%s", path, why)
	}
	if w.info.SHA256, err = fileSHA256(path); err != nil {
		return nil, badf("%v", err)
	}
	return &datasetSource{path: path, format: format, rng: seeded(w.cfg.Seed, kindMain, 0)}, nil
}

// checkContext rejects an entry whose first turn does not fit the context.
func (w *Workload) checkContext(e entry) error {
	if w.cfg.Context <= 0 {
		return nil
	}
	chars := len(e.system) + len(e.turns[0].prompt) + w.cfg.PrefixTokens*int(w.cfg.Text.CharsPerToken)
	for _, m := range e.history {
		chars += len(m.Content)
	}
	if r := e.replay; r != nil { // its longest request: the conversation up to its last turn
		for _, t := range e.tools {
			for _, x := range t.toolTexts() {
				chars += len(x)
			}
		}
		for _, m := range r.conv[:r.turns[len(r.turns)-1]] {
			chars += len(m.Content)
			for _, c := range m.ToolCalls {
				chars += len(c.Name) + len(c.Arguments)
			}
		}
	}
	if n := w.cfg.Text.Tokens(chars) + w.cfg.Overhead; n > w.cfg.Context {
		return badf("%s: a prompt of about %d tokens is longer than the model's context (%d)", e.origin, n, w.cfg.Context)
	}
	return nil
}

func (d *datasetSource) next(w *Workload) (*Session, error) {
	for rewound := false; ; {
		if d.r == nil {
			r, err := newReader(d.path, d.format)
			if err != nil {
				return nil, err
			}
			d.r = r
		}
		e, err := d.r.next()
		if err == io.EOF && !rewound { // start again from the first entry
			d.r.close()
			d.r, rewound = nil, true
			continue
		}
		if err != nil {
			return nil, err
		}
		if e.skip != "" {
			continue
		}
		return d.session(w, e), nil
	}
}

func (d *datasetSource) session(w *Workload, e entry) *Session {
	c := &w.cfg
	s := &Session{group: -1, origin: e.origin, history: e.history, system: e.system}
	if c.PrefixTokens > 0 {
		s.group = w.sessions % c.PrefixGroups
		s.system = w.prefix(s.group) + e.system
	}
	s.turns = e.turns
	if e.replay != nil {
		s.replay, s.tools = e.replay, e.tools
	}
	limit := c.Turns
	if limit == 0 && d.format == FormatShareGPT {
		limit = 1 // its first question, as vllm bench serve sends ShareGPT
	}
	if limit > 0 && len(s.turns) > limit {
		s.turns = s.turns[:limit]
	}
	for i := range s.turns {
		if s.turns[i].output == 0 && s.replay == nil { // a replayed turn asks its recorded length
			s.turns[i].output = drawOutput(c, d.rng)
		}
	}
	s.n = len(s.turns)
	return s
}

func (d *datasetSource) close() {
	if d.r != nil {
		d.r.close()
	}
}

// BlockTokens is the length of a Mooncake trace's hash block.
const BlockTokens = 512

// traceLine is one line of a Mooncake trace.
type traceLine struct {
	Timestamp    *float64 `json:"timestamp"`
	InputLength  *int     `json:"input_length"`
	OutputLength *int     `json:"output_length"`
	HashIDs      []uint64 `json:"hash_ids"`
}

// traceSource streams a trace's lines.
type traceSource struct {
	r *lineReader
}

func parseTrace(line []byte) (traceLine, error) {
	var t traceLine
	if err := json.Unmarshal(line, &t); err != nil {
		return t, fmt.Errorf("not a Mooncake trace line: %v", err)
	}
	switch {
	case t.Timestamp == nil || t.InputLength == nil || t.OutputLength == nil:
		return t, fmt.Errorf("missing timestamp, input_length or output_length")
	case *t.Timestamp < 0:
		return t, fmt.Errorf("negative timestamp %g", *t.Timestamp)
	case *t.InputLength < 1 || *t.OutputLength < 1:
		return t, fmt.Errorf("input_length and output_length must be ≥ 1")
	}
	return t, nil
}

func openTraceReader(path string) (*lineReader, error) {
	r, err := newReader(path, FormatPrompts) // a line reader; lines are parsed by next
	if err != nil {
		return nil, err
	}
	return r.(*lineReader), nil
}

func openTrace(w *Workload) (source, error) {
	path := w.cfg.Trace
	w.info = Info{Source: "trace", Format: FormatMooncake, Path: path}
	r, err := openTraceReader(path)
	if err != nil {
		return nil, err
	}
	defer r.close()
	last := -1.0
	for r.sc.Scan() {
		r.line++
		b := r.sc.Bytes()
		if strings.TrimSpace(string(b)) == "" {
			continue
		}
		t, err := parseTrace(b)
		if err != nil {
			return nil, badf("%s:%d: %v", path, r.line, err)
		}
		if *t.Timestamp < last {
			return nil, badf("%s:%d: timestamp %g ms goes back (the line before: %g ms); a trace must be in time order", path, r.line, *t.Timestamp, last)
		}
		if c := w.cfg.Context; c > 0 && *t.InputLength > c {
			return nil, badf("%s:%d: input_length %d is longer than the model's context (%d)", path, r.line, *t.InputLength, c)
		}
		last = *t.Timestamp
		w.info.Entries++
	}
	if err := r.sc.Err(); err != nil {
		return nil, badf("%s:%d: %v", path, r.line+1, err)
	}
	if w.info.Entries == 0 {
		return nil, badf("%s: empty trace", path)
	}
	w.info.Span = w.arrival(last)
	if w.info.SHA256, err = fileSHA256(path); err != nil {
		return nil, badf("%v", err)
	}
	return &traceSource{}, nil
}

// arrival converts a trace timestamp (ms) to an arrival time.
func (w *Workload) arrival(ms float64) time.Duration {
	return time.Duration(ms * w.cfg.TimeScale * float64(time.Millisecond))
}

func (t *traceSource) next(w *Workload) (*Session, error) {
	if t.r == nil {
		r, err := openTraceReader(w.cfg.Trace)
		if err != nil {
			return nil, err
		}
		t.r = r
	}
	for t.r.sc.Scan() {
		t.r.line++
		b := t.r.sc.Bytes()
		if strings.TrimSpace(string(b)) == "" {
			continue
		}
		tl, err := parseTrace(b)
		if err != nil { // the file changed since Open
			return nil, badf("%s:%d: %v", w.cfg.Trace, t.r.line, err)
		}
		return &Session{group: -1, n: 1, arrival: w.arrival(*tl.Timestamp),
			origin: fmt.Sprintf("%s:%d", w.cfg.Trace, t.r.line),
			turns:  []turn{{prompt: w.tracePrompt(tl, t.r.line), output: *tl.OutputLength}}}, nil
	}
	return nil, io.EOF
}

// tracePrompt builds a trace line's prompt: block i is the text of hash id
// hash_ids[i] (the same id, the same bytes, in any request), cut at
// input_length; tokens past the blocks the ids name are text of this line
// alone.
func (w *Workload) tracePrompt(t traceLine, line int) string {
	tx := w.cfg.Text
	if tx.counted != nil {
		return w.tracePromptCounted(t, line)
	}
	total := tx.chars(*t.InputLength)
	block := tx.chars(BlockTokens)
	var b strings.Builder
	b.Grow(total + block)
	for _, id := range t.HashIDs {
		if b.Len() >= total {
			break
		}
		// The whole block, or the part the prompt keeps: a prefix of it.
		b.WriteString(wordsChars(seeded(w.cfg.Seed, kindBlock, id), min(block, total-b.Len())))
	}
	if b.Len() < total {
		b.WriteString(tx.Words(seeded(w.cfg.Seed, kindMain, uint64(line)<<1|1), tx.Tokens(total-b.Len())))
	}
	return b.String()[:total]
}

// tracePromptCounted is tracePrompt for a counted Text: the blocks'
// words count BlockTokens each (the last one fewer, when input_length
// ends in it: the words its full text starts with, but for the last few
// tokens), separated by spaces.
func (w *Workload) tracePromptCounted(t traceLine, line int) string {
	tx := w.cfg.Text
	left := *t.InputLength
	parts := make([]string, 0, len(t.HashIDs)+1)
	for _, id := range t.HashIDs {
		if left <= 0 {
			break
		}
		p := tx.Words(seeded(w.cfg.Seed, kindBlock, id), min(BlockTokens, left))
		parts = append(parts, p)
		left -= tx.Count(p)
	}
	if left > 0 {
		parts = append(parts, tx.Words(seeded(w.cfg.Seed, kindMain, uint64(line)<<1|1), left))
	}
	return strings.Join(parts, " ")
}

func (t *traceSource) close() {
	if t.r != nil {
		t.r.close()
	}
}
