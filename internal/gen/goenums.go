package main

import (
	"errors"
	"fmt"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"
)

// The Go enums that cross the ABI. A Go type whose values the C API hands
// out as numbers (a watch kind, a stop reason, ...) carries a directive in
// its doc comment:
//
//	//krabka:enum krabka_term_event_kind_t prefix=Term
//	type TermEventKind int
//
// naming the header's typedef enum it is, and the prefix its constants
// share (dropped from their names: TermNewLeader is NEW_LEADER). The
// generator reads every constant of that type in the package, compares it
// with the header enum by name (NEW_LEADER is KRABKA_TERM_NEW_LEADER, the
// same name the bindings give the member) and by number, and writes the
// type's String() into the package's enum_strings_gen.go. A type that
// never crosses the ABI but wants its String() written too says
// //krabka:enum - (nothing to compare).

// directive is the comment that marks a Go enum.
const directive = "//krabka:enum"

// enumDirs are the folders (from the repository root, with every folder
// below them) whose Go enums the generator reads.
var enumDirs = []string{"core"}

// stringsFile is the generated file of each package with a Go enum.
const stringsFile = "enum_strings_gen.go"

// headerOnlyEnums are the header's enums no Go enum mirrors, and why. Every
// other typedef enum of the header needs a //krabka:enum Go type.
var headerOnlyEnums = map[string]string{
	"krabka_err_t":        "checked against coord.ErrorTable",
	"krabka_event_type_t": "capi's own: it posts and names its events by their C names (capi/queue_event.go)",
	"krabka_log_level_t":  "syslog numbers: capi maps slog's levels onto them by their C names (capi/log.go)",
}

// goEnum is one Go type marked //krabka:enum.
type goEnum struct {
	dir    string // the package's folder from the root: "core/coord"
	pkg    string // the package name: "coord"
	typ    string // "TermEventKind"
	cEnum  string // "krabka_term_event_kind_t"; "" for //krabka:enum -
	prefix string // "Term"
	pos    string // where the type is declared: "core/coord/elect_events.go:70"
	consts []goConst
	// ownString: where a String() written by hand is ("" when none)
	ownString string
}

// goConst is one constant of a goEnum.
type goConst struct {
	name  string // "TermNewLeader"
	value int64
	pos   string // "core/coord/elect_events.go:85"
}

// qualified is pkg.Type, as the messages name it.
func (e *goEnum) qualified() string { return e.pkg + "." + e.typ }

// bare is the constant's name in the header and the bindings without the
// enum's prefix: TermNewLeader -> NEW_LEADER.
func (e *goEnum) bare(c goConst) string {
	return upperSnake(strings.TrimPrefix(c.name, e.prefix))
}

// upperSnake turns NewLeader into NEW_LEADER (an acronym stays one word:
// OK, TLSError -> TLS_ERROR).
func upperSnake(s string) string {
	var b strings.Builder
	r := []rune(s)
	for i, c := range r {
		upper := c >= 'A' && c <= 'Z'
		if i > 0 && upper {
			prev := r[i-1]
			prevLower := prev >= 'a' && prev <= 'z' || prev >= '0' && prev <= '9'
			nextLower := i+1 < len(r) && r[i+1] >= 'a' && r[i+1] <= 'z'
			prevUpper := prev >= 'A' && prev <= 'Z'
			if prevLower || prevUpper && nextLower {
				b.WriteByte('_')
			}
		}
		b.WriteString(strings.ToUpper(string(c)))
	}
	return b.String()
}

// goCamel turns NEW_LEADER into NewLeader (the name to suggest for a
// constant the Go side lacks).
func goCamel(s string) string {
	var b strings.Builder
	for _, w := range strings.Split(strings.ToLower(s), "_") {
		if w != "" {
			b.WriteString(strings.ToUpper(w[:1]) + w[1:])
		}
	}
	return b.String()
}

var reDirective = regexp.MustCompile(`^//krabka:enum\s+(\S+)(?:\s+prefix=([A-Za-z0-9_]+))?\s*$`)

// scanGoEnums reads the //krabka:enum types of every package under dirs
// (paths of fsys, which is rooted at the repository).
func scanGoEnums(fsys fs.FS, dirs []string) ([]*goEnum, error) {
	var out []*goEnum
	for _, root := range dirs {
		err := fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if name := d.Name(); p != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
					return fs.SkipDir
				}
				enums, err := scanPackage(fsys, p)
				out = append(out, enums...)
				return err
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// scanPackage reads the Go files of one folder (tests and generated files
// aside).
func scanPackage(fsys fs.FS, dir string) ([]*goEnum, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, ent := range entries {
		n := ent.Name()
		if ent.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		src, err := fs.ReadFile(fsys, path.Join(dir, n))
		if err != nil {
			return nil, err
		}
		f, err := parser.ParseFile(fset, path.Join(dir, n), src, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		if ast.IsGenerated(f) {
			continue
		}
		files = append(files, f)
	}
	pos := func(p token.Pos) string {
		at := fset.Position(p)
		return fmt.Sprintf("%s:%d", at.Filename, at.Line)
	}
	enums, err := markedTypes(dir, files, pos)
	if err != nil || len(enums) == 0 {
		return nil, err
	}
	if err := readConsts(enums, files, pos); err != nil {
		return nil, err
	}
	for _, e := range enums {
		if err := e.validate(); err != nil {
			return nil, err
		}
	}
	return enums, nil
}

// markedTypes are the types of files with a //krabka:enum directive.
func markedTypes(dir string, files []*ast.File, pos func(token.Pos) string) ([]*goEnum, error) {
	byType := map[string]*goEnum{}
	var enums []*goEnum
	for _, f := range files {
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec)
				docs := []*ast.CommentGroup{ts.Doc}
				if len(gd.Specs) == 1 {
					docs = append(docs, gd.Doc)
				}
				for _, cg := range docs {
					if cg == nil {
						continue
					}
					for _, c := range cg.List {
						if !strings.HasPrefix(c.Text, directive) {
							continue
						}
						m := reDirective.FindStringSubmatch(c.Text)
						if m == nil {
							return nil, fmt.Errorf("%s: cannot read %q: write %s <typedef enum of the header, or -> [prefix=<the prefix of the Go constants>]", pos(c.Pos()), c.Text, directive)
						}
						if byType[ts.Name.Name] != nil {
							return nil, fmt.Errorf("%s: %s is marked %s twice", pos(c.Pos()), ts.Name.Name, directive)
						}
						e := &goEnum{dir: dir, pkg: f.Name.Name, typ: ts.Name.Name, prefix: m[2], pos: pos(ts.Pos())}
						if m[1] != "-" {
							e.cEnum = m[1]
						}
						byType[e.typ] = e
						enums = append(enums, e)
					}
				}
			}
		}
	}
	return enums, nil
}

// readConsts adds the constants of each marked type, and notes a String()
// written by hand.
func readConsts(enums []*goEnum, files []*ast.File, pos func(token.Pos) string) error {
	byType := map[string]*goEnum{}
	for _, e := range enums {
		byType[e.typ] = e
	}
	known := map[string]constant.Value{}
	for _, f := range files {
		for _, decl := range f.Decls {
			if fd, ok := decl.(*ast.FuncDecl); ok && fd.Recv != nil && fd.Name.Name == "String" && len(fd.Recv.List) == 1 {
				if id, ok := fd.Recv.List[0].Type.(*ast.Ident); ok && byType[id.Name] != nil {
					byType[id.Name].ownString = pos(fd.Pos())
				}
			}
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			var typ ast.Expr
			var values []ast.Expr
			for iota, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				if vs.Type != nil || len(vs.Values) > 0 {
					typ, values = vs.Type, vs.Values // else: the previous spec's, repeated
				}
				for i, name := range vs.Names {
					if i >= len(values) {
						break // a const without a value cannot be read; the compiler says so
					}
					t, expr := typ, values[i]
					if call, ok := expr.(*ast.CallExpr); ok && t == nil && len(call.Args) == 1 {
						if id, ok := call.Fun.(*ast.Ident); ok && byType[id.Name] != nil {
							t, expr = id, call.Args[0] // Kind(3)
						}
					}
					id, ok := t.(*ast.Ident)
					e := byType[identName(id, ok)]
					v, err := evalGoConst(expr, iota, known)
					if err != nil {
						if e != nil {
							return fmt.Errorf("%s: %s: %w", pos(name.Pos()), name.Name, err)
						}
						continue // not an enum constant: its value does not matter
					}
					known[name.Name] = v
					if e == nil || name.Name == "_" {
						continue
					}
					n, exact := constant.Int64Val(v)
					if !exact {
						return fmt.Errorf("%s: %s is not an integer", pos(name.Pos()), name.Name)
					}
					e.consts = append(e.consts, goConst{name: name.Name, value: n, pos: pos(name.Pos())})
				}
			}
		}
	}
	return nil
}

// validate checks what the header does not come into: the enum has
// constants, each with the directive's prefix, one name per value and
// one value per name.
func (e *goEnum) validate() error {
	if len(e.consts) == 0 {
		return fmt.Errorf("%s: %s is marked %s and has no constants", e.pos, e.typ, directive)
	}
	byValue := map[int64]string{}
	byBare := map[string]string{}
	for _, c := range e.consts {
		if !strings.HasPrefix(c.name, e.prefix) || c.name == e.prefix {
			return fmt.Errorf("%s: %s does not start with %s, the prefix the %s directive of %s gives", c.pos, c.name, e.prefix, directive, e.typ)
		}
		if prev, dup := byValue[c.value]; dup {
			return fmt.Errorf("%s: %s and %s are both %s(%d): every value has one name", c.pos, prev, c.name, e.typ, c.value)
		}
		byValue[c.value] = c.name
		if prev, dup := byBare[e.bare(c)]; dup {
			return fmt.Errorf("%s: %s and %s both give the name %s", c.pos, prev, c.name, e.bare(c))
		}
		byBare[e.bare(c)] = c.name
	}
	return nil
}

func identName(id *ast.Ident, ok bool) string {
	if !ok || id == nil {
		return ""
	}
	return id.Name
}

// evalGoConst evaluates the constant expressions enums are written with:
// integers, iota, earlier constants, + - * / % << >> & | ^, parentheses
// and conversions to a named integer type.
func evalGoConst(x ast.Expr, iota int, known map[string]constant.Value) (constant.Value, error) {
	switch x := x.(type) {
	case *ast.BasicLit:
		if x.Kind != token.INT {
			return nil, fmt.Errorf("%s is not an integer", x.Value)
		}
		v := constant.MakeFromLiteral(x.Value, x.Kind, 0)
		if v.Kind() == constant.Unknown {
			return nil, fmt.Errorf("cannot read %s", x.Value)
		}
		return v, nil
	case *ast.Ident:
		if x.Name == "iota" {
			return constant.MakeInt64(int64(iota)), nil
		}
		if v, ok := known[x.Name]; ok {
			return v, nil
		}
		return nil, fmt.Errorf("%s is not a constant declared before it in the package", x.Name)
	case *ast.ParenExpr:
		return evalGoConst(x.X, iota, known)
	case *ast.UnaryExpr:
		v, err := evalGoConst(x.X, iota, known)
		if err != nil {
			return nil, err
		}
		if x.Op != token.SUB && x.Op != token.ADD && x.Op != token.XOR {
			return nil, fmt.Errorf("cannot evaluate the operator %s", x.Op)
		}
		return constant.UnaryOp(x.Op, v, 0), nil
	case *ast.BinaryExpr:
		a, err := evalGoConst(x.X, iota, known)
		if err != nil {
			return nil, err
		}
		b, err := evalGoConst(x.Y, iota, known)
		if err != nil {
			return nil, err
		}
		switch x.Op {
		case token.SHL, token.SHR:
			n, ok := constant.Uint64Val(b)
			if !ok {
				return nil, errors.New("a shift by a negative or huge count")
			}
			return constant.Shift(a, x.Op, uint(n)), nil
		case token.QUO:
			if constant.Sign(b) == 0 {
				return nil, errors.New("a division by zero")
			}
			return constant.BinaryOp(a, token.QUO_ASSIGN, b), nil // integer division
		case token.REM:
			if constant.Sign(b) == 0 {
				return nil, errors.New("a division by zero")
			}
			return constant.BinaryOp(a, x.Op, b), nil
		case token.ADD, token.SUB, token.MUL, token.AND, token.OR, token.XOR, token.AND_NOT:
			return constant.BinaryOp(a, x.Op, b), nil
		}
		return nil, fmt.Errorf("cannot evaluate the operator %s", x.Op)
	case *ast.CallExpr:
		if len(x.Args) == 1 {
			if _, ok := x.Fun.(*ast.Ident); ok {
				return evalGoConst(x.Args[0], iota, known) // T(expr)
			}
		}
	}
	return nil, fmt.Errorf("cannot evaluate %T", x)
}

// headerLines finds the lines of an enum and its members in the header's
// text (1-based; 0 when not found, as for a header given without its text).
type headerLines struct{ lines []string }

// enumSpan is the first and last line of typedef enum ... name;.
func (h headerLines) enumSpan(name string) (first, last int) {
	end := regexp.MustCompile(`\}\s*` + regexp.QuoteMeta(name) + `\s*;`)
	for i, l := range h.lines {
		if end.MatchString(l) {
			last = i + 1
			break
		}
	}
	for i := last - 1; i >= 0 && last > 0; i-- {
		if strings.Contains(h.lines[i], "typedef enum") {
			return i + 1, last
		}
	}
	return 0, last
}

// member is the line of an enum member within [first, last].
func (h headerLines) member(name string, first, last int) int {
	re := regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\b`)
	for i := first; i >= 1 && i <= last && i <= len(h.lines); i++ {
		if re.MatchString(h.lines[i-1]) {
			return i
		}
	}
	return 0
}

func at(line int) string {
	if line == 0 {
		return headerPath
	}
	return fmt.Sprintf("%s:%d", headerPath, line)
}

// memberPrefix is the prefix a new member of e takes: the typedef's own
// (KRABKA_ERR_) when a member has it, otherwise the one all members share
// (KRABKA_TERM_), as memberNames strips them.
func memberPrefix(e cEnum) string {
	own := "KRABKA_" + strings.ToUpper(bare(e.name)) + "_"
	for _, m := range e.members {
		if strings.HasPrefix(m.name, own) {
			return own
		}
	}
	if len(e.members) == 1 {
		return "KRABKA_"
	}
	common := e.members[0].name
	for _, m := range e.members[1:] {
		for !strings.HasPrefix(m.name, common) {
			common = common[:len(common)-1]
		}
	}
	if i := strings.LastIndex(common, "_"); i >= 0 {
		return common[:i+1]
	}
	return ""
}

// checkEnums compares every //krabka:enum type with its header enum, by
// name and number, both ways, and fails when a header enum has no Go type
// (and is not one of headerOnlyEnums). It reports every disagreement, each
// saying what to add or change and where.
func (in *inputs) checkEnums() error {
	hl := headerLines{lines: strings.Split(in.header.text, "\n")}
	cEnums := map[string]cEnum{}
	for _, e := range in.header.enums {
		cEnums[e.name] = e
	}
	var errs []error
	claimed := map[string]*goEnum{}
	for _, g := range in.goEnums {
		if g.cEnum == "" {
			continue
		}
		ce, ok := cEnums[g.cEnum]
		if !ok {
			errs = append(errs, fmt.Errorf("%s: %s is marked %s %s and %s declares no typedef enum ... %s", g.pos, g.qualified(), directive, g.cEnum, headerPath, g.cEnum))
			continue
		}
		if why, ok := in.headerOnly[g.cEnum]; ok {
			errs = append(errs, fmt.Errorf("%s: %s is marked %s %s, which internal/gen lists as having no Go enum (%s): take it out of headerOnlyEnums (internal/gen/goenums.go)", g.pos, g.qualified(), directive, g.cEnum, why))
			continue
		}
		if prev := claimed[g.cEnum]; prev != nil {
			errs = append(errs, fmt.Errorf("%s: %s and %s are both marked %s %s", g.pos, prev.qualified(), g.qualified(), directive, g.cEnum))
			continue
		}
		claimed[g.cEnum] = g
		errs = append(errs, compareEnum(g, ce, hl)...)
	}
	for _, ce := range in.header.enums {
		if claimed[ce.name] != nil {
			continue
		}
		if _, ok := in.headerOnly[ce.name]; ok {
			continue
		}
		first, _ := hl.enumSpan(ce.name)
		errs = append(errs, fmt.Errorf("%s: the header's %s has no Go enum: mark the Go type whose values cross the ABI as this enum with %s %s prefix=<its constants' prefix> in its doc comment (or, if no Go type stands for it, list it in headerOnlyEnums in internal/gen/goenums.go with the reason)", at(first), ce.name, directive, ce.name))
	}
	var stale []string
	for name := range in.headerOnly {
		if _, ok := cEnums[name]; !ok {
			stale = append(stale, name)
		}
	}
	sort.Strings(stale)
	for _, name := range stale {
		errs = append(errs, fmt.Errorf("internal/gen/goenums.go: headerOnlyEnums lists %s, which %s does not declare: take it out", name, headerPath))
	}
	return errors.Join(errs...)
}

// compareEnum compares one Go enum with its header enum.
func compareEnum(g *goEnum, ce cEnum, hl headerLines) []error {
	var errs []error
	cBare, err := memberNames(ce)
	if err != nil {
		return []error{err}
	}
	first, last := hl.enumSpan(ce.name)
	byBare := map[string]cEnumMember{}
	byValue := map[int64]cEnumMember{}
	bareOf := map[string]string{}
	for i, m := range ce.members {
		byBare[cBare[i]] = m
		if _, dup := byValue[m.value]; !dup {
			byValue[m.value] = m
		}
		bareOf[m.name] = cBare[i]
	}
	matched := map[string]bool{}
	for _, c := range g.consts {
		b := g.bare(c)
		if m, ok := byBare[b]; ok {
			matched[m.name] = true
			if m.value != c.value {
				errs = append(errs, fmt.Errorf("%s: %s has %s = %d and the header has %s = %d (%s): numbers that cross the ABI never change: give %s the header's number", c.pos, g.qualified(), c.name, c.value, m.name, m.value, at(hl.member(m.name, first, last)), c.name))
			}
			continue
		}
		if m, ok := byValue[c.value]; ok {
			matched[m.name] = true
			errs = append(errs, fmt.Errorf("%s: %s has %s = %d, which the header names %s (%s): the names must agree (%s gives %s, %s gives %s): rename one", c.pos, g.qualified(), c.name, c.value, m.name, at(hl.member(m.name, first, last)), c.name, b, m.name, bareOf[m.name]))
			continue
		}
		lastMember := ce.members[len(ce.members)-1].name
		errs = append(errs, fmt.Errorf("%s: %s has %s = %d and the header does not: add %s%s = %d to enum %s in %s (lines %d-%d), after %s on line %d",
			c.pos, g.qualified(), c.name, c.value, memberPrefix(ce), b, c.value, ce.name, headerPath, first, last, lastMember, hl.member(lastMember, first, last)))
	}
	for i, m := range ce.members {
		if matched[m.name] {
			continue
		}
		errs = append(errs, fmt.Errorf("%s: the header's %s has %s = %d and %s (%s) does not: add %s%s = %d to its constants",
			at(hl.member(m.name, first, last)), ce.name, m.name, m.value, g.qualified(), g.pos, g.prefix, goCamel(cBare[i]), m.value))
	}
	return errs
}

// stringsFiles renders the String() methods of the Go enums: one file per
// package, path -> content.
func (in *inputs) stringsOutputs() []output {
	byDir := map[string][]*goEnum{}
	for _, g := range in.goEnums {
		byDir[g.dir] = append(byDir[g.dir], g)
	}
	var dirs []string
	for d := range byDir {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	var out []output
	for _, d := range dirs {
		enums := byDir[d]
		out = append(out, output{path.Join(d, stringsFile), func(*inputs) (string, error) { return renderStrings(enums) }})
	}
	return out
}

// errOwnString says which String() methods written by hand to delete.
// renderAll returns it with the rendered files, and run writes them first:
// the package still compiles once the hand-written method is gone (and
// the generator, which imports core/coord, still builds).
type errOwnString struct{ msgs []string }

func (e *errOwnString) Error() string { return strings.Join(e.msgs, "\n") }

// ownStrings is an *errOwnString for the marked types with a String() of
// their own, or nil.
func (in *inputs) ownStrings() error {
	var msgs []string
	for _, g := range in.goEnums {
		if g.ownString != "" {
			msgs = append(msgs, fmt.Sprintf("%s: %s has a String() of its own: delete it, internal/gen wrote it into %s", g.ownString, g.qualified(), path.Join(g.dir, stringsFile)))
		}
	}
	if msgs == nil {
		return nil
	}
	return &errOwnString{msgs}
}
