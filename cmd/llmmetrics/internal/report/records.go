package report

import (
	"bytes"
	"errors"
	"io"

	"github.com/llmmetrics/llmmetrics"
)

// The format of `llmmetrics bench`'s DIR/records.jsonl (docs/command.md):
// one JSON object per line, {"mode", "load", "repeat", "record"}, where
// record is an llmmetrics.Record in its own JSON form. Each mode and load
// is a level of the run.
func init() {
	formats = append(formats, &format{
		name:   "records",
		detect: func(h []byte) bool { return h[0] == '{' && bytes.Contains(firstLine(h), []byte(`"record"`)) },
		decode: decodeRecords,
		clock:  clockWall,
		says:   saysCached | saysReasoning | saysCacheWrite,
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
		rec  llmmetrics.Record // reused: its ITL keeps its storage
		load Load
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
		at := func(format string, args ...any) error { return src.errorf(n, format, args...) }
		if l := (Load{Mode: bl.Mode, Value: bl.Load}); fr.lv == nil || l != load {
			load = l
			if err := fr.setLevel(load); err != nil {
				return at("%v", err)
			}
		}
		if err := fr.emit(at, rec); err != nil {
			return err
		}
	}
	return nil
}
