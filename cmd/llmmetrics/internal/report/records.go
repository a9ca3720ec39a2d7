package report

import (
	"bytes"
	"errors"
	"io"

	"github.com/llmmetrics/llmmetrics"
)

// The format of `llmmetrics bench`'s DIR/records.jsonl (docs/command.md):
// one JSON object per line, {"mode", "load", "repeat", "record"}, where
// record is an llmmetrics.Record in its own JSON form.
func init() {
	formats = append(formats, &format{
		name:   "records",
		detect: func(h []byte) bool { return h[0] == '{' && bytes.Contains(firstLine(h), []byte(`"record"`)) },
		decode: decodeRecords,
		clock:  clockWall,
		ttft:   "llmmetrics: the first chunk that carries tokens (reasoning or answer), measured by the client",
	})
}

// firstLine returns h up to its first newline.
func firstLine(h []byte) []byte {
	if i := bytes.IndexByte(h, '\n'); i >= 0 {
		return h[:i]
	}
	return h
}

// benchLine is one line of records.jsonl.
type benchLine struct {
	Mode   string             `json:"mode"`
	Load   float64            `json:"load"`
	Repeat int                `json:"repeat"`
	Record *llmmetrics.Record `json:"record"`
}

func decodeRecords(fr *fileRun) error {
	src := fr.src
	var (
		rec        llmmetrics.Record // reused: its ITL keeps its storage
		first      benchLine         // the first line's level
		manyLevels bool
	)
	for {
		line, n, err := src.nextLine()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		rec = llmmetrics.Record{ITL: rec.ITL[:0]}
		bl := benchLine{Record: &rec}
		if err := src.unmarshalLine(line, &bl); err != nil {
			return src.errorf(n, "malformed line: %v", err)
		}
		if bl.Record == nil || !bytes.Contains(line, []byte(`"record"`)) {
			return src.errorf(n, `malformed line: no "record"`)
		}
		if first.Record == nil {
			first = bl
		}
		manyLevels = manyLevels || bl.Mode != first.Mode || bl.Load != first.Load
		at := func(format string, args ...any) error { return src.errorf(n, format, args...) }
		if err := fr.emit(at, rec); err != nil {
			return err
		}
	}
	if manyLevels {
		fr.note(src.name + ": holds several load levels, summarized here as one run")
	}
	return nil
}
