package llmmetrics

import (
	"flag"
	"go/ast"
	"go/doc"
	"go/parser"
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

// maxExported bounds the package's exported names: an addition beyond it is
// a decision to take on purpose, not an accident.
const maxExported = 156

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

// exportedNames parses the package's non-test files in dir and returns its
// exported names, sorted: Type.Method for methods.
func exportedNames(t *testing.T, dir string) []string {
	t.Helper()
	fset := token.NewFileSet()
	var files []*ast.File
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
	}
	p, err := doc.NewFromFiles(fset, files, "github.com/llmmetrics/llmmetrics")
	require.NoError(t, err)
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
