package llmmetrics

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite the generated protocol tables of docs/http.md")

// The generated part of docs/http.md lies between these markers.
const (
	docsTableStart = "<!-- protocol tables: generated from the protocol table by TestHTTPDocsTable (go test -run TestHTTPDocsTable -update-docs .) -->\n"
	docsTableEnd   = "<!-- end of the generated protocol tables -->\n"
)

// TestHTTPDocsTable: the tables of paths and Content-Types in docs/http.md
// are the protocol table's, and every row says what detectProtocol does.
func TestHTTPDocsTable(t *testing.T) {
	got := renderProtocolTables(t)
	const doc = "docs/http.md"
	b, err := os.ReadFile(doc)
	require.NoError(t, err)
	s := string(b)
	i, j := strings.Index(s, docsTableStart), strings.Index(s, docsTableEnd)
	require.True(t, i >= 0 && j > i, "%s lacks the markers of the generated tables", doc)
	if *updateDocs {
		s = s[:i+len(docsTableStart)] + got + s[j:]
		require.NoError(t, os.WriteFile(doc, []byte(s), 0o644))
		return
	}
	assert.Equal(t, got, s[i+len(docsTableStart):j],
		"docs/http.md's protocol tables differ from the protocol table: run go test -run TestHTTPDocsTable -update-docs .")
}

// renderProtocolTables writes the two tables of docs/http.md from the
// protocol table, checking each row against detectProtocol as it goes.
func renderProtocolTables(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("| the path ends with | protocol | `gen_ai.operation.name` |\n|---|---|---|\n")
	var sse, others []string
	for p, s := range protocolSpecs {
		proto := Protocol(p)
		for _, r := range s.paths {
			path := "/v1/x" + r.suffix
			ep := classifyPath(path)
			require.Equal(t, proto, ep.proto, "path %s", path)
			require.Equal(t, r.op, ep.op, "path %s", path)
			fmt.Fprintf(&b, "| `%s` | %s | `%s` |\n", r.suffix, protoCell(proto), r.op.Value.AsString())
			if s.sse {
				require.Equal(t, proto, detectProtocol(path, "text/event-stream"), "SSE on %s", path)
			}
			require.Equal(t, proto, detectProtocol(path, "application/octet-stream"), "no known type on %s", path)
			if r.array {
				require.Equal(t, proto, detectProtocol(path, "application/json"), "JSON on %s", path)
				others = append(others, fmt.Sprintf("| `application/json` | `…%s` (a JSON array of answers) | %s |\n", r.suffix, protoCell(proto)))
			} else if !s.ndjson {
				require.Equal(t, ProtocolJSON, detectProtocol(path, "application/json"), "JSON on %s", path)
			}
		}
		if s.sse {
			sse = append(sse, protoCell(proto))
		}
		if s.ndjson {
			require.Equal(t, proto, detectProtocol("/anything", "application/x-ndjson"))
			others = append([]string{fmt.Sprintf("| `application/x-ndjson` | any | %s |\n", protoCell(proto))}, others...)
		}
	}
	require.Equal(t, ProtocolUnknown, detectProtocol("/anything", "text/event-stream"))
	require.Equal(t, ProtocolJSON, detectProtocol("/anything", "application/json"))
	require.Equal(t, ProtocolUnknown, detectProtocol("/anything", ""))
	b.WriteString("\n| Content-Type | path | decoder |\n|---|---|---|\n")
	fmt.Fprintf(&b, "| `text/event-stream` | a path of %s | that protocol's |\n", strings.Join(sse, ", "))
	b.WriteString("| `text/event-stream` | other | sniffed from the first events |\n")
	for _, row := range others {
		b.WriteString(row)
	}
	b.WriteString("| `application/json` | other | one JSON answer (`ProtocolJSON.NewDecoder`) |\n")
	b.WriteString("| `text/plain` or none | any | **the first byte that is not white space decides:** `{` or `[` is one JSON answer (unless the path's answers are a stream of JSON values, as above); else as the path says |\n")
	b.WriteString("| other | a path above | that path's protocol; else sniffed |\n")
	return b.String()
}

// protoCell names a protocol in the docs' tables.
func protoCell(p Protocol) string {
	return fmt.Sprintf("%s (`%s`)", p.spec().title, p)
}
