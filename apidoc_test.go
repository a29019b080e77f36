package weir_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestPublicDocsNameNoInternals keeps go doc of the public packages
// readable by users: a doc comment of an exported identifier (or the
// package doc) that sends them to an internal/ package, or names a type of
// one (keygroup.Hashable, twophase.Tracker), names something they can
// neither import nor find in go doc. Doc comments should say what the
// user does instead (a method to implement, the types allowed).
func TestPublicDocsNameNoInternals(t *testing.T) {
	var dirs []string
	err := filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "internal" || d.Name() == "testdata" || d.Name() == "cmd" || d.Name() == "examples" || strings.HasPrefix(d.Name(), ".")) && p != "." {
			return filepath.SkipDir
		}
		if d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, dir := range dirs {
		fset := token.NewFileSet()
		pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pkgs {
			if p.Name == "main" {
				continue
			}
			checked++
			for name, f := range p.Files {
				bad := internalNames(f)
				check := func(what string, cg *ast.CommentGroup) {
					if cg == nil {
						return
					}
					text := cg.Text()
					if strings.Contains(text, "internal/") {
						t.Errorf("%s: doc of %s sends users to an internal/ package: %q", name, what, firstLine(text, "internal/"))
					}
					if bad != nil {
						if m := bad.FindString(text); m != "" {
							t.Errorf("%s: doc of %s names %s, of an internal package", name, what, m)
						}
					}
				}
				check("package "+p.Name, f.Doc)
				for _, d := range f.Decls {
					switch d := d.(type) {
					case *ast.FuncDecl:
						if d.Name.IsExported() && exportedRecv(d) {
							check(d.Name.Name, d.Doc)
						}
					case *ast.GenDecl:
						if exportedSpec(d) {
							check("a declaration group", d.Doc)
						}
						for _, s := range d.Specs {
							switch s := s.(type) {
							case *ast.TypeSpec:
								if s.Name.IsExported() {
									check(s.Name.Name, s.Doc)
									ast.Inspect(s.Type, func(n ast.Node) bool {
										if f, ok := n.(*ast.Field); ok {
											check(s.Name.Name+"'s field or method", f.Doc)
										}
										return true
									})
								}
							case *ast.ValueSpec:
								if s.Names[0].IsExported() {
									check(s.Names[0].Name, s.Doc)
								}
							}
						}
					}
				}
			}
		}
	}
	if checked < 5 {
		t.Fatalf("checked only %d packages: the walk is broken", checked)
	}
}

// internalNames matches "name.Ident" for every internal package f
// imports, or is nil if it imports none.
func internalNames(f *ast.File) *regexp.Regexp {
	var names []string
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if !strings.Contains(p, "/internal/") {
			continue
		}
		n := path.Base(p)
		if imp.Name != nil {
			n = imp.Name.Name
		}
		names = append(names, regexp.QuoteMeta(n))
	}
	if names == nil {
		return nil
	}
	return regexp.MustCompile(`\b(` + strings.Join(names, "|") + `)\.[A-Z]\w*`)
}

func firstLine(text, sub string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// exportedRecv reports whether d is a function or a method of an exported
// type.
func exportedRecv(d *ast.FuncDecl) bool {
	if d.Recv == nil {
		return true
	}
	t := d.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	id, ok := t.(*ast.Ident)
	return ok && id.IsExported()
}

// exportedSpec reports whether a declaration group declares anything
// exported.
func exportedSpec(d *ast.GenDecl) bool {
	for _, s := range d.Specs {
		switch s := s.(type) {
		case *ast.TypeSpec:
			if s.Name.IsExported() {
				return true
			}
		case *ast.ValueSpec:
			for _, n := range s.Names {
				if n.IsExported() {
					return true
				}
			}
		}
	}
	return false
}
