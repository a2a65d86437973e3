package bridge_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryTestMainIsolates fails when a package with tests has no TestMain
// that isolates the test process through internal/testenv (Main or Isolate):
// without it a test reads the HOME, the per-user .env, the state dir and the
// running daemon of whoever runs `make test`.
func TestEveryTestMainIsolates(t *testing.T) {
	isolated := map[string]bool{} // dir → a TestMain calling testenv.Main/Isolate
	hasTests := map[string]bool{}
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && p != "." || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		dir := filepath.Dir(p)
		hasTests[dir] = true
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Name.Name != "TestMain" || fn.Recv != nil {
				continue
			}
			if callsTestenv(f, fn) {
				isolated[dir] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for dir := range hasTests {
		if !isolated[dir] {
			t.Errorf("%s has tests but no TestMain isolating them: add\n\tfunc TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }", dir)
		}
	}
	if len(hasTests) < 10 {
		t.Fatalf("found tests in only %d dirs: the walk is broken", len(hasTests))
	}
}

// callsTestenv reports whether fn calls testenv.Main or testenv.Isolate, or a
// function of the same file that does (a TestMain that returns runTests(m)).
func callsTestenv(f *ast.File, fn *ast.FuncDecl) bool {
	funcs := map[string]*ast.FuncDecl{}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil {
			funcs[fd.Name.Name] = fd
		}
	}
	seen := map[*ast.FuncDecl]bool{}
	var walk func(*ast.FuncDecl) bool
	walk = func(fd *ast.FuncDecl) bool {
		if fd == nil || seen[fd] || fd.Body == nil {
			return false
		}
		seen[fd] = true
		found := false
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || found {
				return !found
			}
			switch fun := call.Fun.(type) {
			case *ast.SelectorExpr:
				if x, ok := fun.X.(*ast.Ident); ok && x.Name == "testenv" && (fun.Sel.Name == "Main" || fun.Sel.Name == "Isolate") {
					found = true
				}
			case *ast.Ident:
				if walk(funcs[fun.Name]) {
					found = true
				}
			}
			return !found
		})
		return found
	}
	return walk(fn)
}
