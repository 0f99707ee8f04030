package folio

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
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
		pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pkgs {
			files := make([]*ast.File, 0, len(p.Files))
			for _, f := range p.Files {
				files = append(files, f)
			}
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
