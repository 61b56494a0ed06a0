package main

import (
	"fmt"
	"regexp"
	"strings"
)

// The header parser: a small reader for the regular C of
// include/krabka_coord.h, not a C compiler. It reads
//
//   - #define NAME VALUE: numeric constants (integers and integer arithmetic
//     on earlier constants), string constants, cast constants such as
//     ((size_t)-1); object-like macros whose value is a brace initializer
//     ({ ... }), function-like macros and empty defines (the include guard)
//     are not constants and are left out;
//   - typedef enum tag { NAME = value, ... } name_t;
//   - typedef struct tag { type field; type field[DIM]; ... } name_t;
//   - typedef struct tag name_t; (opaque) and struct tag; (a forward
//     declaration);
//   - typedef R (*name)(params); (a callback type);
//   - function declarations R name(params);
//
// and drops comments and whatever #ifdef __cplusplus encloses. Any other
// declaration, and any type it does not know, is an error naming it: the
// generator never skips what it cannot read.

// header is what the generator reads from include/krabka_coord.h, each list
// in the header's order.
type header struct {
	text      string // as read: the source of line numbers in messages
	defines   []cDefine
	enums     []cEnum
	structs   []cStruct
	opaques   []cOpaque
	callbacks []cCallback
	aliases   []cAlias
	funcs     []cFunc

	kinds map[string]typeKind // every type name the header declares
	tags  map[string]string   // struct tag -> typedef name
}

type defineKind int

const (
	defNumber defineKind = iota
	defString
	defCast // ((type)number): the value depends on the platform's type
)

type cDefine struct {
	name  string // with its KRABKA_ prefix
	kind  defineKind
	value int64  // defNumber, defCast (before the cast)
	text  string // defString
	cast  string // defCast: the C type
}

type cEnumMember struct {
	name  string // the C name, KRABKA_ERR_FENCED
	value int64
}

type cEnum struct {
	tag, name string // krabka_err, krabka_err_t
	members   []cEnumMember
}

type cStruct struct {
	tag, name string
	fields    []cDecl
}

type cOpaque struct{ tag, name string }

type cCallback struct {
	name   string
	ret    cType
	params []cDecl
}

type cAlias struct {
	name string
	typ  cType
}

type typeKind int

const (
	kindBuiltin typeKind = iota
	kindEnum
	kindStruct
	kindOpaque
	kindCallback
	kindAlias
)

// cType is a C type as the header writes it: a base type, const on the base
// and a number of pointer levels.
type cType struct {
	isConst bool
	base    string // "char", "int64_t", "krabka_token_t" (struct tags resolved to their typedef)
	ptr     int
}

func (t cType) String() string {
	s := t.base
	if t.isConst {
		s = "const " + s
	}
	if t.ptr > 0 {
		s += " " + strings.Repeat("*", t.ptr)
	}
	return s
}

// cDecl is a parameter or a struct field.
type cDecl struct {
	decl string // as written, spaces normalised: "const char *name"
	name string
	typ  cType
	dim  string // array dimension as written ("KRABKA_NAME_BUF"), "" for none
	n    int64  // the dimension's value
}

// cParam is a function parameter.
type cParam = cDecl

type cFunc struct {
	ret     string // as written, "const char *"
	retType cType
	name    string
	params  []cParam
}

// blocking: the call takes a timeout_ms (it may wait on the cluster or on
// another thread) or is a destroy that waits for background work.
func (f cFunc) blocking() bool {
	if f.name == "krabka_client_destroy" || f.name == "krabka_leadership_destroy" || f.name == "krabka_elector_destroy" ||
		f.name == "krabka_elector_set_destroy" {
		return true // they wait for background work to stop
	}
	for _, p := range f.params {
		if p.name == "timeout_ms" {
			return true
		}
	}
	return false
}

func (f cFunc) hasErrstr() bool {
	n := len(f.params)
	return n >= 2 && f.params[n-2].name == "errstr" && f.params[n-1].name == "errstr_size"
}

// builtinTypes are the C types the header may use without declaring them.
var builtinTypes = map[string]bool{
	"void": true, "char": true, "signed char": true, "unsigned char": true,
	"short": true, "unsigned short": true, "int": true, "unsigned": true, "unsigned int": true,
	"long": true, "unsigned long": true, "long long": true, "unsigned long long": true,
	"float": true, "double": true, "size_t": true,
	"int8_t": true, "int16_t": true, "int32_t": true, "int64_t": true,
	"uint8_t": true, "uint16_t": true, "uint32_t": true, "uint64_t": true,
}

var (
	reSpace    = regexp.MustCompile(`\s+`)
	reIdent    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	reEnum     = regexp.MustCompile(`^typedef enum(?: ([A-Za-z_][A-Za-z0-9_]*))? ?\{(.*)\} ?([A-Za-z_][A-Za-z0-9_]*)$`)
	reStruct   = regexp.MustCompile(`^typedef struct(?: ([A-Za-z_][A-Za-z0-9_]*))? ?\{(.*)\} ?([A-Za-z_][A-Za-z0-9_]*)$`)
	reOpaque   = regexp.MustCompile(`^typedef struct ([A-Za-z_][A-Za-z0-9_]*) ([A-Za-z_][A-Za-z0-9_]*)$`)
	reForward  = regexp.MustCompile(`^struct [A-Za-z_][A-Za-z0-9_]*$`)
	reCallback = regexp.MustCompile(`^typedef ([^()]+?) ?\( ?\* ?([A-Za-z_][A-Za-z0-9_]*) ?\) ?\(([^()]*)\)$`)
	reFunc     = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_ \*]*?) ?\b([A-Za-z_][A-Za-z0-9_]*) ?\(([^()]*)\)$`)
	reDefine   = regexp.MustCompile(`^#\s*define\s+([A-Za-z_][A-Za-z0-9_]*)(\(?)(.*)$`)
	reDirctv   = regexp.MustCompile(`^#\s*([a-z]+)\b\s*(.*)$`)
)

// parseHeader reads the whole header.
func parseHeader(text string) (*header, error) {
	h := &header{text: text, kinds: map[string]typeKind{}, tags: map[string]string{}}
	for b := range builtinTypes {
		h.kinds[b] = kindBuiltin
	}
	code, err := stripComments(text)
	if err != nil {
		return nil, err
	}
	code, err = h.preprocess(code)
	if err != nil {
		return nil, err
	}
	stmts, err := splitStatements(code)
	if err != nil {
		return nil, err
	}
	// Pass 1: the type names (a field may point to a struct declared later).
	for _, s := range stmts {
		if m := reEnum.FindStringSubmatch(s); m != nil {
			if err := h.declareType(m[3], m[1], kindEnum); err != nil {
				return nil, err
			}
		} else if m := reStruct.FindStringSubmatch(s); m != nil {
			if err := h.declareType(m[3], m[1], kindStruct); err != nil {
				return nil, err
			}
		} else if m := reOpaque.FindStringSubmatch(s); m != nil {
			if err := h.declareType(m[2], m[1], kindOpaque); err != nil {
				return nil, err
			}
		} else if m := reCallback.FindStringSubmatch(s); m != nil {
			if err := h.declareType(m[2], "", kindCallback); err != nil {
				return nil, err
			}
		}
	}
	// Pass 2: everything, in order.
	consts := map[string]int64{}
	for _, d := range h.defines {
		if d.kind == defNumber {
			consts[d.name] = d.value
		}
	}
	for _, s := range stmts {
		switch {
		case reEnum.MatchString(s):
			m := reEnum.FindStringSubmatch(s)
			e, err := parseEnum(m[1], m[3], m[2], consts)
			if err != nil {
				return nil, err
			}
			h.enums = append(h.enums, e)
		case reStruct.MatchString(s):
			m := reStruct.FindStringSubmatch(s)
			st := cStruct{tag: m[1], name: m[3]}
			for _, f := range strings.Split(m[2], ";") {
				if f = strings.TrimSpace(f); f == "" {
					continue
				}
				d, err := h.parseDecl(f, consts, true)
				if err != nil {
					return nil, fmt.Errorf("struct %s: %w", st.name, err)
				}
				st.fields = append(st.fields, d)
			}
			if len(st.fields) == 0 {
				return nil, fmt.Errorf("struct %s has no fields", st.name)
			}
			h.structs = append(h.structs, st)
		case reOpaque.MatchString(s):
			m := reOpaque.FindStringSubmatch(s)
			h.opaques = append(h.opaques, cOpaque{tag: m[1], name: m[2]})
		case reForward.MatchString(s):
			// struct tag; names a type that is declared elsewhere.
			tag := strings.TrimPrefix(s, "struct ")
			if _, ok := h.tags[tag]; !ok {
				return nil, fmt.Errorf("%q declares struct %s, which the header never defines", s, tag)
			}
		case reCallback.MatchString(s):
			m := reCallback.FindStringSubmatch(s)
			ret, err := h.parseType(strings.Fields(m[1]))
			if err != nil {
				return nil, fmt.Errorf("callback %s: %w", m[2], err)
			}
			params, err := h.parseParams(m[3], consts)
			if err != nil {
				return nil, fmt.Errorf("callback %s: %w", m[2], err)
			}
			h.callbacks = append(h.callbacks, cCallback{name: m[2], ret: ret, params: params})
		case strings.HasPrefix(s, "typedef "):
			// A plain alias: typedef int32_t krabka_x_t;
			d, err := h.parseDecl(strings.TrimPrefix(s, "typedef "), consts, false)
			if err != nil || d.dim != "" {
				return nil, fmt.Errorf("cannot read the declaration %q", s)
			}
			if err := h.declareType(d.name, "", kindAlias); err != nil {
				return nil, err
			}
			h.aliases = append(h.aliases, cAlias{name: d.name, typ: d.typ})
		default:
			m := reFunc.FindStringSubmatch(s)
			if m == nil {
				return nil, fmt.Errorf("cannot read the declaration %q", s)
			}
			f := cFunc{ret: strings.TrimSpace(m[1]), name: m[2]}
			if !strings.HasPrefix(f.name, "krabka_") {
				return nil, fmt.Errorf("function %s: every function of the header is krabka_*", f.name)
			}
			if strings.HasSuffix(f.ret, "*") {
				f.ret = strings.TrimSpace(strings.TrimRight(f.ret, "* ")) + " " + strings.Repeat("*", strings.Count(f.ret, "*"))
			}
			rt, err := h.parseType(tokenize(f.ret))
			if err != nil {
				return nil, fmt.Errorf("%s: return type: %w", f.name, err)
			}
			f.retType = rt
			if f.params, err = h.parseParams(m[3], consts); err != nil {
				return nil, fmt.Errorf("%s: %w", f.name, err)
			}
			h.funcs = append(h.funcs, f)
		}
	}
	seen := map[string]bool{}
	for _, f := range h.funcs {
		if seen[f.name] {
			return nil, fmt.Errorf("function %s is declared twice", f.name)
		}
		seen[f.name] = true
	}
	return h, nil
}

func (h *header) funcByName(name string) (cFunc, bool) {
	for _, f := range h.funcs {
		if f.name == name {
			return f, true
		}
	}
	return cFunc{}, false
}

func (h *header) structByName(name string) (cStruct, bool) {
	for _, s := range h.structs {
		if s.name == name {
			return s, true
		}
	}
	return cStruct{}, false
}

func (h *header) declareType(name, tag string, k typeKind) error {
	if _, dup := h.kinds[name]; dup {
		return fmt.Errorf("type %s is declared twice", name)
	}
	h.kinds[name] = k
	if tag != "" {
		if k == kindStruct || k == kindOpaque {
			h.tags[tag] = name
		}
	}
	return nil
}

// stripComments replaces every comment by a space (keeping its newlines, so
// that preprocessor lines stay lines); string and character literals are
// kept as they are.
func stripComments(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "/*"):
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return "", fmt.Errorf("a comment that never ends, at byte %d", i)
			}
			b.WriteByte(' ')
			b.WriteString(strings.Repeat("\n", strings.Count(s[i:i+2+end], "\n")))
			i += end + 4
		case strings.HasPrefix(s[i:], "//"):
			end := strings.IndexByte(s[i:], '\n')
			if end < 0 {
				end = len(s) - i
			}
			b.WriteByte(' ')
			i += end
		case s[i] == '"' || s[i] == '\'':
			q := s[i]
			j := i + 1
			for j < len(s) && s[j] != q {
				if s[j] == '\\' {
					j++
				}
				if j < len(s) && s[j] == '\n' {
					return "", fmt.Errorf("a literal that never ends, at byte %d", i)
				}
				j++
			}
			if j >= len(s) {
				return "", fmt.Errorf("a literal that never ends, at byte %d", i)
			}
			b.WriteString(s[i : j+1])
			i = j + 1
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String(), nil
}

// preprocess records the #defines, drops every directive and what
// #ifdef __cplusplus encloses, and returns the C that remains.
func (h *header) preprocess(code string) (string, error) {
	var out strings.Builder
	lines := strings.Split(code, "\n")
	skip := 0 // depth inside #ifdef __cplusplus
	depth := 0
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		t := strings.TrimSpace(line)
		if !strings.HasPrefix(t, "#") {
			if skip == 0 {
				out.WriteString(line)
			}
			out.WriteByte('\n')
			continue
		}
		for strings.HasSuffix(t, "\\") && i+1 < len(lines) {
			i++
			t = strings.TrimSuffix(t, "\\") + " " + strings.TrimSpace(lines[i])
			out.WriteByte('\n')
		}
		out.WriteByte('\n')
		m := reDirctv.FindStringSubmatch(t)
		if m == nil {
			return "", fmt.Errorf("cannot read the preprocessor line %q", t)
		}
		switch m[1] {
		case "if", "ifdef", "ifndef":
			depth++
			if skip > 0 {
				skip++
			} else if m[1] == "ifdef" && strings.TrimSpace(m[2]) == "__cplusplus" ||
				m[1] == "if" && strings.ReplaceAll(m[2], " ", "") == "defined(__cplusplus)" {
				skip = 1
			}
		case "endif":
			depth--
			if depth < 0 {
				return "", fmt.Errorf("#endif without #if")
			}
			if skip > 0 {
				skip--
			}
		case "else", "elif":
			if skip == 1 {
				return "", fmt.Errorf("%q: only #ifdef __cplusplus ... #endif is understood around C++ code", t)
			}
		case "define":
			if skip > 0 {
				continue
			}
			if err := h.define(t); err != nil {
				return "", err
			}
		case "include", "undef", "pragma", "error", "warning":
		default:
			return "", fmt.Errorf("cannot read the preprocessor line %q", t)
		}
	}
	if depth != 0 {
		return "", fmt.Errorf("an #if without its #endif")
	}
	return out.String(), nil
}

// define reads one #define line.
func (h *header) define(line string) error {
	m := reDefine.FindStringSubmatch(line)
	if m == nil {
		return fmt.Errorf("cannot read %q", line)
	}
	name, value := m[1], strings.TrimSpace(m[3])
	switch {
	case m[2] == "(":
		return nil // function-like macro: not a constant
	case value == "":
		return nil // the include guard
	case strings.HasPrefix(value, "{"):
		return nil // an initializer (KRABKA_MESSAGE_INIT): not a constant
	}
	if !strings.HasPrefix(name, "KRABKA_") {
		return fmt.Errorf("#define %s: every constant of the header is KRABKA_*", name)
	}
	for _, d := range h.defines {
		if d.name == name {
			return fmt.Errorf("#define %s appears twice", name)
		}
	}
	d := cDefine{name: name}
	consts := map[string]int64{}
	for _, o := range h.defines {
		if o.kind == defNumber {
			consts[o.name] = o.value
		}
	}
	if strings.HasPrefix(value, `"`) {
		s, err := cStringLiteral(value)
		if err != nil {
			return fmt.Errorf("#define %s: %w", name, err)
		}
		d.kind, d.text = defString, s
	} else if typ, rest, ok := h.castPrefix(value); ok {
		v, err := evalExpr(rest, consts)
		if err != nil {
			return fmt.Errorf("#define %s %s: %w", name, value, err)
		}
		d.kind, d.cast, d.value = defCast, typ, v
	} else {
		v, err := evalExpr(value, consts)
		if err != nil {
			return fmt.Errorf("#define %s %s: %w", name, value, err)
		}
		d.kind, d.value = defNumber, v
	}
	h.defines = append(h.defines, d)
	return nil
}

// castPrefix recognises ((type)expr) and (type)expr with a built-in type.
func (h *header) castPrefix(v string) (typ, rest string, ok bool) {
	v = strings.TrimSpace(v)
	for strings.HasPrefix(v, "(") && matchingParen(v, 0) == len(v)-1 {
		inner := strings.TrimSpace(v[1 : len(v)-1])
		if _, _, isCast := h.castPrefix1(inner); !isCast && !strings.HasPrefix(inner, "(") {
			break
		}
		v = inner
	}
	return h.castPrefix1(v)
}

func (h *header) castPrefix1(v string) (string, string, bool) {
	if !strings.HasPrefix(v, "(") {
		return "", "", false
	}
	end := matchingParen(v, 0)
	if end < 0 {
		return "", "", false
	}
	t := strings.Join(strings.Fields(v[1:end]), " ")
	if !builtinTypes[t] || t == "void" {
		return "", "", false
	}
	return t, v[end+1:], true
}

func matchingParen(s string, open int) int {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

func cStringLiteral(v string) (string, error) {
	if len(v) < 2 || !strings.HasSuffix(v, `"`) || strings.ContainsAny(v[1:len(v)-1], `"\`) {
		return "", fmt.Errorf("only a plain string literal without escapes is understood, not %s", v)
	}
	return v[1 : len(v)-1], nil
}

// splitStatements cuts the C into top-level statements at the semicolons
// outside braces, with whitespace normalised.
func splitStatements(code string) ([]string, error) {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(code); i++ {
		switch code[i] {
		case '{':
			depth++
		case '}':
			depth--
			if depth < 0 {
				return nil, fmt.Errorf("a } without its {")
			}
		case ';':
			if depth == 0 {
				if s := normalise(code[start:i]); s != "" {
					out = append(out, s)
				}
				start = i + 1
			}
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("a { without its }")
	}
	if rest := normalise(code[start:]); rest != "" {
		return nil, fmt.Errorf("cannot read %q: a declaration without its semicolon", rest)
	}
	return out, nil
}

// normalise collapses whitespace and removes it around punctuation where C
// does not need it, so that the regular expressions see one spelling.
func normalise(s string) string {
	s = strings.TrimSpace(reSpace.ReplaceAllString(s, " "))
	for _, p := range []string{"{", "}", "(", ")", ",", "[", "]", "="} {
		s = strings.ReplaceAll(s, " "+p, p)
		s = strings.ReplaceAll(s, p+" ", p)
	}
	// Keep the spellings the old parser saw (and the guard repeats):
	// "const char *name", "krabka_err_t krabka_f(...)".
	s = strings.ReplaceAll(s, "(", " (")
	s = strings.ReplaceAll(s, ",", ", ")
	s = strings.ReplaceAll(s, "{", " {")
	s = strings.ReplaceAll(s, "}", "} ")
	s = strings.ReplaceAll(s, "=", " = ")
	return strings.TrimSpace(reSpace.ReplaceAllString(s, " "))
}

// tokenize splits a declaration into identifiers, stars and brackets.
var reToken = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*|\*|\[|\]|[^\s]`)

func tokenize(s string) []string { return reToken.FindAllString(s, -1) }

// parseType reads "const char *", "struct krabka_watch_event *" or
// "krabka_token_t".
func (h *header) parseType(toks []string) (cType, error) {
	var t cType
	var words []string
	isStruct := false
	for i, tok := range toks {
		switch {
		case tok == "const" && t.ptr == 0:
			t.isConst = true
		case tok == "const":
			return t, fmt.Errorf("a const pointer (%s) is not understood", strings.Join(toks, " "))
		case tok == "struct" && len(words) == 0 && !isStruct:
			isStruct = true
		case tok == "*":
			t.ptr++
		case reIdent.MatchString(tok) && t.ptr == 0:
			words = append(words, tok)
		default:
			return t, fmt.Errorf("cannot read the type %q (at %q)", strings.Join(toks, " "), toks[i])
		}
	}
	if len(words) == 0 {
		return t, fmt.Errorf("no type in %q", strings.Join(toks, " "))
	}
	base := strings.Join(words, " ")
	if isStruct {
		if len(words) != 1 {
			return t, fmt.Errorf("cannot read the type %q", strings.Join(toks, " "))
		}
		name, ok := h.tags[base]
		if !ok {
			return t, fmt.Errorf("struct %s is not defined in the header", base)
		}
		base = name
	}
	if _, ok := h.kinds[base]; !ok {
		return t, fmt.Errorf("unknown type %s (neither a C type the generator knows nor one the header declares)", base)
	}
	t.base = base
	return t, nil
}

// parseDecl reads "const char *name" or "char member[KRABKA_NAME_BUF]".
func (h *header) parseDecl(s string, consts map[string]int64, arrays bool) (cDecl, error) {
	s = strings.TrimSpace(s)
	d := cDecl{decl: s}
	if strings.ContainsAny(s, "(){}") || strings.Contains(s, ",") {
		return d, fmt.Errorf("cannot read the declaration %q (one plain declaration per field, callbacks through a typedef)", s)
	}
	toks := tokenize(s)
	if n := len(toks); n >= 4 && toks[n-1] == "]" {
		if !arrays {
			return d, fmt.Errorf("%q: an array is not understood here", s)
		}
		open := -1
		for i := n - 2; i >= 0; i-- {
			if toks[i] == "[" {
				open = i
				break
			}
		}
		if open < 0 {
			return d, fmt.Errorf("cannot read the array %q", s)
		}
		d.dim = strings.Join(toks[open+1:n-1], " ")
		v, err := evalExpr(d.dim, consts)
		if err != nil {
			return d, fmt.Errorf("%q: array size: %w", s, err)
		}
		if v <= 0 {
			return d, fmt.Errorf("%q: array size %d", s, v)
		}
		d.n = v
		toks = toks[:open]
	}
	if len(toks) < 2 || !reIdent.MatchString(toks[len(toks)-1]) {
		return d, fmt.Errorf("cannot read the declaration %q (a name is needed)", s)
	}
	d.name = toks[len(toks)-1]
	t, err := h.parseType(toks[:len(toks)-1])
	if err != nil {
		return d, fmt.Errorf("%s: %w", d.name, err)
	}
	if t.base == "void" && t.ptr == 0 {
		return d, fmt.Errorf("%q: void %s", s, d.name)
	}
	d.typ = t
	return d, nil
}

func (h *header) parseParams(s string, consts map[string]int64) ([]cDecl, error) {
	s = strings.TrimSpace(s)
	if s == "void" {
		return nil, nil
	}
	if s == "" {
		return nil, fmt.Errorf("empty parameter list: write (void)")
	}
	var out []cDecl
	names := map[string]bool{}
	for _, a := range strings.Split(s, ",") {
		d, err := h.parseDecl(a, consts, false)
		if err != nil {
			return nil, fmt.Errorf("cannot read the parameter %q: %w", strings.TrimSpace(a), err)
		}
		if names[d.name] {
			return nil, fmt.Errorf("parameter %s appears twice", d.name)
		}
		names[d.name] = true
		out = append(out, d)
	}
	return out, nil
}

func parseEnum(tag, name, body string, consts map[string]int64) (cEnum, error) {
	e := cEnum{tag: tag, name: name}
	next := int64(0)
	seen := map[string]bool{}
	for _, item := range strings.Split(body, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue // the comma after the last member
		}
		mname, expr, hasValue := strings.Cut(item, "=")
		mname = strings.TrimSpace(mname)
		if !reIdent.MatchString(mname) {
			return e, fmt.Errorf("enum %s: cannot read the member %q", name, item)
		}
		v := next
		if hasValue {
			var err error
			if v, err = evalExpr(expr, consts); err != nil {
				return e, fmt.Errorf("enum %s: %s: %w", name, mname, err)
			}
		}
		if seen[mname] {
			return e, fmt.Errorf("enum %s: %s appears twice", name, mname)
		}
		seen[mname] = true
		e.members = append(e.members, cEnumMember{name: mname, value: v})
		consts[mname] = v
		next = v + 1
	}
	if len(e.members) == 0 {
		return e, fmt.Errorf("enum %s has no members", name)
	}
	return e, nil
}
