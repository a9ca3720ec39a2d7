package llmmetrics

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDocsNamesExist: every Go name the Markdown files cite in backticks
// as the library's (a With…, New…, Protocol…, Outcome… or Latency… name,
// Type.Member of one of its exported types, pkg.Name of one of its
// packages, or a Test…, Benchmark…, Fuzz… or Example… function) exists,
// so a rename cannot leave a stale name in the docs.
func TestDocsNamesExist(t *testing.T) {
	pkgs := map[string]string{"llmmetrics": ".", "saturation": "saturation", "llmmetricstest": "llmmetricstest", "otelsdk": "otelsdk"}
	names := map[string]bool{} // every exported name, Type.Member and pkg.Name
	types := map[string]bool{} // exported type names
	tests := map[string]bool{} // test, benchmark, fuzz and example functions of the repository
	for pkg, dir := range pkgs {
		for name, isType := range declaredNames(t, dir) {
			names[name], names[pkg+"."+name] = true, true
			if isType {
				types[name] = true
			}
		}
	}
	testFunc := regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz|Example)\w*)\(`)
	require.NoError(t, filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, err := os.ReadFile(path)
		for _, m := range testFunc.FindAllSubmatch(b, -1) {
			tests[string(m[1])] = true
		}
		return err
	}))

	cited := regexp.MustCompile("`((?:[a-z]+\\.)?[A-Z][A-Za-z0-9]*(?:\\.[A-Z][A-Za-z0-9]*)?)(?:\\(\\))?`")
	ourPrefix := func(name string) bool {
		for _, prefix := range []string{"Test", "Benchmark", "Fuzz", "Example", "With", "New", "Protocol", "Outcome", "Latency"} {
			if strings.HasPrefix(name, prefix) {
				return true
			}
		}
		return false
	}
	// toCheck returns the name to look up for a cited name, or "" when the
	// citation is not the library's (a net/http name, say). Of a value's
	// method (ProtocolGemini.NewDecoder) the value is checked.
	toCheck := func(name string) string {
		first, _, qualified := strings.Cut(name, ".")
		switch {
		case qualified && (pkgs[first] != "" || types[first]):
			return name
		case ourPrefix(first):
			return first
		}
		return ""
	}
	docs, err := filepath.Glob("docs/*.md")
	require.NoError(t, err)
	// Not CHANGELOG.md: it names what was removed or renamed.
	for _, doc := range append(docs, "README.md", "CONTRIBUTING.md", "BENCHMARKS.md") {
		b, err := os.ReadFile(doc)
		require.NoError(t, err)
		for n, line := range strings.Split(string(b), "\n") {
			for _, m := range cited.FindAllStringSubmatch(line, -1) {
				name := toCheck(m[1])
				if name == "" {
					continue
				}
				if tests[name] {
					continue
				}
				assert.True(t, names[name], "%s:%d cites %s, which neither the library nor a test file defines", doc, n+1, m[1])
			}
		}
	}
}

// declaredNames returns the exported names a package in dir declares
// (constants, variables, functions, types, and Type.Member for the
// methods, struct fields and interface methods of its types), each with
// whether it is a type.
func declaredNames(t *testing.T, dir string) map[string]bool {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	names := map[string]bool{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv == nil {
					names[d.Name.Name] = false
					continue
				}
				typ := d.Recv.List[0].Type
				if s, ok := typ.(*ast.StarExpr); ok {
					typ = s.X
				}
				if id, ok := typ.(*ast.Ident); ok {
					names[id.Name+"."+d.Name.Name] = false
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								names[n.Name] = false
							}
						}
					case *ast.TypeSpec:
						if !s.Name.IsExported() {
							continue
						}
						names[s.Name.Name] = true
						var fields *ast.FieldList
						switch tt := s.Type.(type) {
						case *ast.StructType:
							fields = tt.Fields
						case *ast.InterfaceType:
							fields = tt.Methods
						}
						if fields == nil {
							continue
						}
						for _, fl := range fields.List {
							for _, n := range fl.Names {
								if n.IsExported() {
									names[s.Name.Name+"."+n.Name] = false
								}
							}
						}
					}
				}
			}
		}
	}
	return names
}
