package folio

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestAPIDocsReadAsAWhole: the documentation of the packages a user imports
// names no in-module audience ("for layers inside this module") and no
// internal package: go doc of each reads as an API a stranger can use.
// (No exported identifier can take an internal type: the module has no
// internal/ packages left.)
func TestAPIDocsReadAsAWhole(t *testing.T) {
	banned := []string{"inside this module", "in-module", "within this module", "internal/"}
	for _, dir := range []string{".", "group", "topic", "log", "partition", "readpath", "vfs", "errs", "record", "segment", "index"} {
		fset := token.NewFileSet()
		names, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		pkgs := map[string][]*ast.File{} // by package name
		for _, name := range names {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			pkgs[f.Name.Name] = append(pkgs[f.Name.Name], f)
		}
		for _, files := range pkgs {
			d, err := doc.NewFromFiles(fset, files, "github.com/foliolog/folio/"+dir)
			if err != nil {
				t.Fatal(err)
			}
			check := func(what, text string) {
				for _, b := range banned {
					if strings.Contains(text, b) {
						t.Errorf("%s: %s is documented with %q:\n%s", dir, what, b, text)
					}
				}
			}
			check("the package", d.Doc)
			funcs := func(fs []*doc.Func) {
				for _, f := range fs {
					check(f.Name, f.Doc)
				}
			}
			values := func(vs []*doc.Value) {
				for _, v := range vs {
					check(strings.Join(v.Names, ", "), v.Doc)
				}
			}
			funcs(d.Funcs)
			values(d.Consts)
			values(d.Vars)
			for _, ty := range d.Types {
				check(ty.Name, ty.Doc)
				funcs(ty.Funcs)
				funcs(ty.Methods)
				values(ty.Consts)
				values(ty.Vars)
			}
		}
	}
}
