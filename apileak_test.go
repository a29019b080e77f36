package weir_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

// module is the import path of this module.
const module = "github.com/weirstream/weir"

// TestPublicAPINamesNoInternalTypes keeps the public API closed: users
// cannot import internal/ packages, so an exported function, method,
// field, type or alias of a public package that mentions a type from one
// (or aliases one, whose methods and fields go doc then hides) is a hole.
// It type-checks every public non-main package of the module from the
// compiler's export data (go list -export) and names each such
// declaration.
func TestPublicAPINamesNoInternalTypes(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the module's packages")
	}
	pkgs, exports := listPackages(t)
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	var leaks []string
	for _, path := range pkgs {
		p, err := imp.Import(path)
		if err != nil {
			t.Fatalf("import %s: %v", path, err)
		}
		leaks = append(leaks, packageLeaks(p)...)
	}
	if len(pkgs) < 3 {
		t.Fatalf("found only public packages %v: the listing is broken", pkgs)
	}
	sort.Strings(leaks)
	for _, l := range leaks {
		t.Errorf("exported API names an internal type: %s", l)
	}
}

type listed struct {
	ImportPath string
	Name       string
	Export     string
	Standard   bool
}

// listPackages returns the module's public non-main packages and the
// export data file of every package they depend on.
func listPackages(t *testing.T) ([]string, map[string]string) {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-export", "-deps", "-json=ImportPath,Name,Export,Standard", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	exports := map[string]string{}
	var pkgs []string
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		exports[p.ImportPath] = p.Export
		if !p.Standard && isModule(p.ImportPath) && !isInternal(p.ImportPath) && p.Name != "main" {
			pkgs = append(pkgs, p.ImportPath)
		}
	}
	return pkgs, exports
}

func isModule(path string) bool { return path == module || strings.HasPrefix(path, module+"/") }

// isInternal reports whether path is an internal package of this module
// (whose types users cannot name).
func isInternal(path string) bool {
	return isModule(path) && (strings.Contains(path, "/internal/") || strings.HasSuffix(path, "/internal"))
}

// packageLeaks lists the exported declarations of p that mention an
// internal type.
func packageLeaks(p *types.Package) []string {
	var leaks []string
	report := func(decl string, t types.Type) {
		if n := internalIn(t, map[types.Type]bool{}); n != "" {
			leaks = append(leaks, fmt.Sprintf("%s mentions %s", decl, n))
		}
	}
	scope := p.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		decl := p.Name() + "." + name
		switch o := obj.(type) {
		case *types.Func, *types.Var, *types.Const:
			report(decl, o.Type())
		case *types.TypeName:
			typeLeaks(decl, o, report)
		}
	}
	return leaks
}

// typeLeaks checks an exported type: what an alias stands for, a named
// type's type parameters, exported fields and exported methods (promoted
// ones included).
func typeLeaks(decl string, o *types.TypeName, report func(string, types.Type)) {
	if a, ok := o.Type().(*types.Alias); ok {
		report(decl+" (alias)", types.Unalias(a))
		return
	}
	named, ok := o.Type().(*types.Named)
	if !ok {
		return
	}
	for i := range named.TypeParams().Len() {
		report(decl+" type parameter "+named.TypeParams().At(i).Obj().Name(), named.TypeParams().At(i).Constraint())
	}
	if s, ok := named.Underlying().(*types.Struct); ok {
		structFieldLeaks(decl, s, report, map[*types.Struct]bool{})
	} else if _, ok := named.Underlying().(*types.Interface); !ok {
		report(decl+" (underlying)", named.Underlying())
	}
	var recv types.Type = types.NewPointer(named)
	if types.IsInterface(named) {
		recv = named
	}
	ms := types.NewMethodSet(recv)
	for i := range ms.Len() {
		m := ms.At(i).Obj()
		if m.Exported() {
			report(decl+"."+m.Name(), m.Type())
		}
	}
}

// structFieldLeaks checks the exported fields of s, and those promoted
// from unexported embedded structs (type T struct{ inner } makes inner's
// exported fields T's), which users reach though no declaration they can
// read shows them.
func structFieldLeaks(decl string, s *types.Struct, report func(string, types.Type), seen map[*types.Struct]bool) {
	if seen[s] {
		return
	}
	seen[s] = true
	for i := range s.NumFields() {
		f := s.Field(i)
		if f.Exported() {
			report(decl+"."+f.Name(), f.Type())
			continue
		}
		if !f.Embedded() {
			continue
		}
		t := f.Type()
		if p, ok := t.(*types.Pointer); ok {
			t = p.Elem()
		}
		if es, ok := t.Underlying().(*types.Struct); ok {
			structFieldLeaks(decl, es, report, seen)
		}
	}
}

// unexportedLeak returns the internal type that an unexported named type
// of a public package lets users reach: users get values of it from
// exported functions, and use its exported fields and methods without any
// declaration of it to check.
func unexportedLeak(t *types.Named, seen map[types.Type]bool) string {
	if s, ok := t.Underlying().(*types.Struct); ok {
		var found string
		structFieldLeaks("", s, func(_ string, ft types.Type) {
			if found == "" {
				found = internalIn(ft, seen)
			}
		}, map[*types.Struct]bool{})
		if found != "" {
			return found
		}
	}
	var recv types.Type = types.NewPointer(t)
	if types.IsInterface(t) {
		recv = t
	}
	ms := types.NewMethodSet(recv)
	for i := range ms.Len() {
		if m := ms.At(i).Obj(); m.Exported() {
			if n := internalIn(m.Type(), seen); n != "" {
				return n
			}
		}
	}
	return ""
}

// internalIn returns the name of an internal named type or alias that t
// mentions, or "". Exported named types of public packages are not
// entered: their own declarations are checked where they are declared;
// unexported ones are (unexportedLeak).
// internalInArgs is internalIn over a type's type arguments (nil: none).
func internalInArgs(args *types.TypeList, seen map[types.Type]bool) string {
	for i := range args.Len() {
		if n := internalIn(args.At(i), seen); n != "" {
			return n
		}
	}
	return ""
}

func internalIn(t types.Type, seen map[types.Type]bool) string {
	if t == nil || seen[t] {
		return ""
	}
	seen[t] = true
	switch t := t.(type) {
	case *types.Alias:
		if o := t.Obj(); o.Pkg() != nil && isInternal(o.Pkg().Path()) {
			return o.Pkg().Path() + "." + o.Name()
		}
		if n := internalInArgs(t.TypeArgs(), seen); n != "" {
			return n
		}
		return internalIn(types.Unalias(t), seen)
	case *types.Named:
		if o := t.Obj(); o.Pkg() != nil && isInternal(o.Pkg().Path()) {
			return o.Pkg().Path() + "." + o.Name()
		}
		if n := internalInArgs(t.TypeArgs(), seen); n != "" {
			return n
		}
		if o := t.Obj(); !o.Exported() && o.Pkg() != nil && isModule(o.Pkg().Path()) {
			return unexportedLeak(t, seen)
		}
		return ""
	case *types.Pointer:
		return internalIn(t.Elem(), seen)
	case *types.Slice:
		return internalIn(t.Elem(), seen)
	case *types.Array:
		return internalIn(t.Elem(), seen)
	case *types.Chan:
		return internalIn(t.Elem(), seen)
	case *types.Map:
		if n := internalIn(t.Key(), seen); n != "" {
			return n
		}
		return internalIn(t.Elem(), seen)
	case *types.Signature:
		if tps := t.TypeParams(); tps != nil {
			for i := range tps.Len() {
				if n := internalIn(tps.At(i).Constraint(), seen); n != "" {
					return n
				}
			}
		}
		if n := internalIn(t.Params(), seen); n != "" {
			return n
		}
		return internalIn(t.Results(), seen)
	case *types.Tuple:
		for i := range t.Len() {
			if n := internalIn(t.At(i).Type(), seen); n != "" {
				return n
			}
		}
	case *types.Struct:
		for i := range t.NumFields() {
			if f := t.Field(i); f.Exported() || f.Embedded() {
				if n := internalIn(f.Type(), seen); n != "" {
					return n
				}
			}
		}
	case *types.Interface:
		for i := range t.NumMethods() {
			if n := internalIn(t.Method(i).Type(), seen); n != "" {
				return n
			}
		}
		for i := range t.NumEmbeddeds() {
			if n := internalIn(t.EmbeddedType(i), seen); n != "" {
				return n
			}
		}
	case *types.Union:
		for i := range t.Len() {
			if n := internalIn(t.Term(i).Type(), seen); n != "" {
				return n
			}
		}
	case *types.TypeParam:
		return internalIn(t.Constraint(), seen)
	}
	return ""
}
