package llmmetrics

import (
	"bytes"
	"flag"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var updateAPI = flag.Bool("update-api", false, "rewrite testdata/api.txt with the package's exported names")

// maxExported bounds the package's exported names, and maxDocLines the
// length of its documentation as `go doc -all .` prints it: an addition
// beyond either is a decision to take on purpose, not an accident. Long
// explanations belong in docs/, not in doc comments.
const (
	maxExported = 136
	maxDocLines = 1200
)

// TestAPI lists every exported name of the package (constants, variables,
// functions, types, and the methods of exported types) and compares the
// list with testdata/api.txt, so that a new exported name, or one removed,
// shows in review as a change to that file. After a deliberate change:
//
//	go test -run TestAPI -update-api .
func TestAPI(t *testing.T) {
	got := exportedNames(t, ".")
	const golden = "testdata/api.txt"
	if *updateAPI {
		require.NoError(t, os.WriteFile(golden, []byte(strings.Join(got, "\n")+"\n"), 0o644))
	}
	b, err := os.ReadFile(golden)
	require.NoError(t, err)
	want := strings.Fields(string(b))
	assert.Equal(t, want, got, "the exported API changed: if on purpose, run go test -run TestAPI -update-api . and review testdata/api.txt")
	assert.LessOrEqual(t, len(got), maxExported, "exported names")
}

// TestAPIDocLength bounds the package documentation: the lines `go doc -all .`
// prints, counted from the same go/doc data (the package doc, and each
// exported declaration with its doc comment), so the test needs no go
// command. It counts within a few percent of go doc's own output.
func TestAPIDocLength(t *testing.T) {
	n := docLines(t, ".")
	t.Logf("%d lines of documentation", n)
	assert.LessOrEqual(t, n, maxDocLines, "documentation lines: shorten doc comments (details go to docs/)")
}

// parsePackage parses the package's non-test files in dir and returns its
// documentation, and the file set and comments to print its declarations.
func parsePackage(t *testing.T, dir string) (*doc.Package, *token.FileSet, []*ast.CommentGroup) {
	t.Helper()
	fset := token.NewFileSet()
	var files []*ast.File
	var comments []*ast.CommentGroup
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		name := e.Name()
		if e.Type()&fs.ModeType != 0 || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
		require.NoError(t, err)
		files = append(files, f)
		comments = append(comments, f.Comments...)
	}
	p, err := doc.NewFromFiles(fset, files, "github.com/llmmetrics/llmmetrics")
	require.NoError(t, err)
	return p, fset, comments
}

// docLines counts the lines of the package's documentation as go doc -all
// shows it: the package doc, and every exported declaration (printed with
// its field comments, functions without bodies) with its doc comment.
func docLines(t *testing.T, dir string) int {
	t.Helper()
	p, fset, comments := parsePackage(t, dir)
	lines := func(s string) int {
		if s = strings.TrimSpace(s); s == "" {
			return 0
		}
		return strings.Count(s, "\n") + 1
	}
	decl := func(n ast.Node) int { // and the blank line go doc prints after it
		var b bytes.Buffer
		require.NoError(t, printer.Fprint(&b, fset, &printer.CommentedNode{Node: n, Comments: comments}))
		return lines(b.String()) + 1
	}
	n := lines(p.Doc)
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			n += decl(v.Decl) + lines(v.Doc)
		}
	}
	funcs := func(fs []*doc.Func) {
		for _, f := range fs {
			n += decl(f.Decl) + lines(f.Doc)
		}
	}
	values(p.Consts)
	values(p.Vars)
	funcs(p.Funcs)
	for _, typ := range p.Types {
		n += decl(typ.Decl) + lines(typ.Doc)
		values(typ.Consts)
		values(typ.Vars)
		funcs(typ.Funcs)
		funcs(typ.Methods)
	}
	return n
}

// exportedNames returns the package's exported names in dir, sorted:
// Type.Method for methods.
func exportedNames(t *testing.T, dir string) []string {
	t.Helper()
	p, _, _ := parsePackage(t, dir)
	var names []string
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			for _, n := range v.Names {
				if ast.IsExported(n) {
					names = append(names, n)
				}
			}
		}
	}
	values(p.Consts)
	values(p.Vars)
	for _, f := range p.Funcs {
		names = append(names, f.Name)
	}
	for _, typ := range p.Types {
		names = append(names, typ.Name)
		values(typ.Consts)
		values(typ.Vars)
		for _, f := range typ.Funcs {
			names = append(names, f.Name)
		}
		for _, m := range typ.Methods {
			names = append(names, typ.Name+"."+m.Name)
		}
	}
	slices.Sort(names)
	return names
}
