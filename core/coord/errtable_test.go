package coord_test

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
)

// The one error table (coord.ErrorTable, derived from the Error values) is
// the source of truth: the C API is built from it, internal/gen writes the
// bindings' constants from it (_abi.py, lib/abi.js, abi.d.ts), and every
// copy of the codes (the header's enum and the generated files, from which
// the bindings take their ErrorCode objects and TypeScript types) and of
// the version must match it. A new code
// added anywhere else, a renumbered code or a forgotten copy fails here.
func TestErrorTableHasNoDrift(t *testing.T) {
	want := map[string]int{}
	seen := map[int]bool{}
	prev := -1
	for _, r := range coord.ErrorTable {
		if r.Code <= prev || seen[r.Code] {
			t.Fatalf("table not in strictly increasing code order at %s=%d", r.Name, r.Code)
		}
		prev, seen[r.Code] = r.Code, true
		want[r.Name] = r.Code
		if r.Text == "" || strings.ToUpper(r.Name) != r.Name {
			t.Errorf("%d: name %q text %q", r.Code, r.Name, r.Text)
		}
		if r.Retriable && r.Fatal {
			t.Errorf("%s is both retriable and fatal", r.Name)
		}
	}
	root := filepath.Join("..", "..")
	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	check := func(where string, re *regexp.Regexp, text string, prefix string) {
		t.Helper()
		got := map[string]int{}
		for _, m := range re.FindAllStringSubmatch(text, -1) {
			n, _ := strconv.Atoi(m[2])
			got[strings.TrimPrefix(m[1], prefix)] = n
		}
		for name, code := range want {
			if g, ok := got[name]; !ok || g != code {
				t.Errorf("%s: %s is %d (present %v), the table says %d", where, name, g, ok, code)
			}
		}
		for name, code := range got {
			if _, ok := want[name]; !ok {
				t.Errorf("%s: %s=%d is not in the table", where, name, code)
			}
		}
	}
	hdr := read("include/krabka_coord.h")
	enum := hdr[strings.Index(hdr, "typedef enum krabka_err {"):]
	enum = enum[:strings.Index(enum, "}")]
	check("include/krabka_coord.h", regexp.MustCompile(`\bKRABKA_(?:ERR_)?([A-Z0-9_]+)\s*=\s*(\d+)`), enum, "")
	// The generated copies (internal/gen): the codes, and the whole rows.
	pyAbi := read("bindings/python/src/krabka_coord/_abi.py")
	pyEnum := pyAbi[strings.Index(pyAbi, "class ErrorCode(enum.IntEnum):"):]
	pyEnum = pyEnum[:strings.Index(pyEnum, "\n\n\n")]
	check("bindings/python _abi.py ErrorCode", regexp.MustCompile(`(?m)^\s+([A-Z0-9_]+) = (\d+)$`), pyEnum, "")
	jsAbi := read("bindings/node/lib/abi.js")
	jsEnum := jsAbi[strings.Index(jsAbi, "const ErrorCode = Object.freeze({"):]
	jsEnum = jsEnum[:strings.Index(jsEnum, "});")]
	check("bindings/node lib/abi.js ErrorCode", regexp.MustCompile(`(?m)^\s+([A-Z0-9_]+): (\d+),$`), jsEnum, "")
	tsAbi := read("bindings/node/abi.d.ts")
	tsEnum := tsAbi[strings.Index(tsAbi, "export interface ErrorCodeMap {"):]
	tsEnum = tsEnum[:strings.Index(tsEnum, "}")]
	check("bindings/node abi.d.ts ErrorCodeMap", regexp.MustCompile(`readonly ([A-Z0-9_]+): (\d+);`), tsEnum, "")
	rows := func(where string, re *regexp.Regexp, text string) {
		t.Helper()
		var got []string
		for _, m := range re.FindAllStringSubmatch(text, -1) {
			text, err := strconv.Unquote(`"` + m[3] + `"`)
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			got = append(got, fmt.Sprintf("%s|%s|%s|%v|%v", m[1], m[2], text, strings.EqualFold(m[4], "true"), strings.EqualFold(m[5], "true")))
		}
		var want []string
		for _, r := range coord.ErrorTable {
			want = append(want, fmt.Sprintf("%d|%s|%s|%v|%v", r.Code, r.Name, r.Text, r.Retriable, r.Fatal))
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: the error descriptions differ from coord.ErrorTable:\n%s\nwant\n%s", where, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	rows("bindings/python _abi.py ERROR_DESCS", regexp.MustCompile(`\((\d+), "([A-Z0-9_]+)", "((?:[^"\\]|\\.)*)", (True|False), (True|False)\),`), pyAbi)
	rows("bindings/node lib/abi.js ERROR_DESCS", regexp.MustCompile(`\{ code: (\d+), name: '([A-Z0-9_]+)', text: '((?:[^'\\]|\\.)*)', retriable: (true|false), fatal: (true|false) \}`), jsAbi)

	// Versions.
	ver := fmt.Sprintf("%d.%d.%d", coord.VersionMajor, coord.VersionMinor, coord.VersionPatch)
	for _, c := range []struct{ file, re string }{
		{"include/krabka_coord.h", `#define KRABKA_VERSION_STRING "([^"]+)"`},
		{"bindings/python/src/krabka_coord/__init__.py", `__version__ = "([^"]+)"`},
		{"bindings/python/pyproject.toml", `(?m)^version = "([^"]+)"`},
		{"bindings/node/package.json", `"version": "([^"]+)"`},
	} {
		m := regexp.MustCompile(c.re).FindStringSubmatch(read(c.file))
		if m == nil || m[1] != ver {
			t.Errorf("%s: version %v, the table says %s", c.file, m, ver)
		}
	}
	for name, v := range map[string]int{"MAJOR": coord.VersionMajor, "MINOR": coord.VersionMinor, "PATCH": coord.VersionPatch} {
		if !strings.Contains(hdr, fmt.Sprintf("#define KRABKA_VERSION_%s %d\n", name, v)) {
			t.Errorf("header: KRABKA_VERSION_%s is not %d", name, v)
		}
	}
	if !strings.Contains(hdr, fmt.Sprintf("#define KRABKA_ABI_VERSION %d\n", coord.ABIVersion)) {
		t.Errorf("header: KRABKA_ABI_VERSION is not %d", coord.ABIVersion)
	}
}

// Every data category of core has exactly one code, and every Go error value
// of the cluster side is one sentinel of the table; both lists are read from
// the source (core/errors.go, this package), not written out here again.
func TestErrorTableCoversEveryKind(t *testing.T) {
	fset := token.NewFileSet()
	coreFile, err := parser.ParseFile(fset, "../errors.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var cats []core.Category
	for _, d := range coreFile.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Category" {
				continue
			}
			for _, v := range vs.Values {
				lit, ok := v.(*ast.BasicLit)
				if !ok {
					t.Fatalf("core/errors.go: a Category constant that is not a string literal: %T", v)
				}
				s, _ := strconv.Unquote(lit.Value)
				cats = append(cats, core.Category(s))
			}
		}
	}
	if len(cats) < 15 {
		t.Fatalf("found %d Category constants in core/errors.go", len(cats))
	}
	count := map[core.Category]int{}
	for _, r := range coord.ErrorTable {
		if r.Category != "" {
			count[r.Category]++
			if r.Name != strings.ToUpper(string(r.Category)) || r.Sentinel != nil {
				t.Errorf("%d: data code %s for category %s", r.Code, r.Name, r.Category)
			}
		}
	}
	for _, c := range cats {
		if count[c] != 1 {
			t.Errorf("category %s has %d codes in coord.ErrorTable", c, count[c])
		}
	}
	if len(count) != len(cats) {
		t.Errorf("coord.ErrorTable has %d categories, core/errors.go %d", len(count), len(cats))
	}

	// The exported Err* variables of this package, in declaration order:
	// all in one block, each a sentinel(&Error{Name: ...}).
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	blocks := map[token.Pos]bool{}
	for _, f := range pkgs["coord"].Files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, id := range vs.Names {
					if !reSentinelName.MatchString(id.Name) {
						continue
					}
					blocks[g.Pos()] = true
					name := ""
					if i < len(vs.Values) {
						name = sentinelName(vs.Values[i])
					}
					if name == "" {
						t.Errorf("%s: %s is not declared as sentinel(&Error{Name: ...})", fset.Position(id.Pos()), id.Name)
					}
					declared = append(declared, name)
				}
			}
		}
	}
	if len(blocks) != 1 {
		t.Errorf("the Err* variables are declared in %d var blocks, want one (the classifier's order)", len(blocks))
	}
	var order []string
	for _, s := range coord.Sentinels() {
		order = append(order, s.Name)
	}
	if strings.Join(order, " ") != strings.Join(declared, " ") {
		t.Errorf("ClientErrorKind tests %v, the declarations are in the order %v", order, declared)
	}
	inTable := 0
	for _, r := range coord.ErrorTable {
		if r.Sentinel == nil {
			continue
		}
		inTable++
		s := r.Sentinel
		e, ok := s.(*coord.Error)
		if !ok || e.Code != r.Code || e.Name != r.Name || s.Error() != "krabka: "+r.Text {
			t.Errorf("%s: the table row and its value differ: %#v / %q", r.Name, s, s.Error())
		}
		wrapped := coord.WrapError(s, errors.New("cause"), "reason %d", 1)
		if k := coord.ClientErrorKind(wrapped); k != s || !errors.Is(wrapped, s) || wrapped.Error() != s.Error()+": reason 1: cause" {
			t.Errorf("%s: ClientErrorKind %v, message %q", r.Name, k, wrapped.Error())
		}
		for _, other := range coord.Sentinels() {
			if other != s && errors.Is(wrapped, other) {
				t.Errorf("an error wrapping %s matches %s", r.Name, other.Name)
			}
		}
	}
	if inTable != len(declared) {
		t.Errorf("coord.ErrorTable has %d sentinels, the package declares %d", inTable, len(declared))
	}
	// ErrTimeout also matches context.DeadlineExceeded, and only ErrTimeout does.
	if !errors.Is(coord.WrapError(coord.ErrTimeout, nil, "x"), context.DeadlineExceeded) ||
		errors.Is(coord.WrapError(coord.ErrTransport, nil, "x"), context.DeadlineExceeded) ||
		errors.Is(context.DeadlineExceeded, coord.ErrTimeout) {
		t.Error("ErrTimeout and context.DeadlineExceeded")
	}
	// A more specific sentinel wins over a later one.
	both := coord.WrapError(coord.ErrFenced, coord.WrapError(coord.ErrTransport, nil, "inner"), "outer")
	if coord.ClientErrorKind(both) != coord.ErrFenced {
		t.Errorf("FENCED wrapping TRANSPORT: %v", coord.ClientErrorKind(both))
	}
	if coord.ClientErrorKind(nil) != nil || coord.ClientErrorKind(errors.New("x")) != nil {
		t.Error("ClientErrorKind of nil or of a foreign error")
	}
}

// reSentinelName: ErrFenced, not ErrorTable.
var reSentinelName = regexp.MustCompile(`^Err[A-Z]`)

// sentinelName reads the Name of sentinel(&Error{... Name: "X" ...}).
func sentinelName(e ast.Expr) string {
	call, ok := e.(*ast.CallExpr)
	if !ok || len(call.Args) != 1 {
		return ""
	}
	if fn, ok := call.Fun.(*ast.Ident); !ok || fn.Name != "sentinel" {
		return ""
	}
	u, ok := call.Args[0].(*ast.UnaryExpr)
	if !ok || u.Op != token.AND {
		return ""
	}
	lit, ok := u.X.(*ast.CompositeLit)
	if !ok {
		return ""
	}
	if id, ok := lit.Type.(*ast.Ident); !ok || id.Name != "Error" {
		return ""
	}
	for _, el := range lit.Elts {
		kv, ok := el.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Name" {
			if v, ok := kv.Value.(*ast.BasicLit); ok {
				s, _ := strconv.Unquote(v.Value)
				return s
			}
		}
	}
	return ""
}
