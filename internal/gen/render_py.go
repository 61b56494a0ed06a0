package main

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// bindings/python/src/krabka_coord/_abi.py: the header's constants, enums,
// structs and prototypes for ctypes, and the error table.

var pyScalars = map[string]string{
	"char": "c_char", "signed char": "c_byte", "unsigned char": "c_ubyte",
	"short": "c_short", "unsigned short": "c_ushort", "int": "c_int", "unsigned": "c_uint", "unsigned int": "c_uint",
	"long": "c_long", "unsigned long": "c_ulong", "long long": "c_longlong", "unsigned long long": "c_ulonglong",
	"float": "c_float", "double": "c_double", "size_t": "c_size_t",
	"int8_t": "c_int8", "int16_t": "c_int16", "int32_t": "c_int32", "int64_t": "c_int64",
	"uint8_t": "c_uint8", "uint16_t": "c_uint16", "uint32_t": "c_uint32", "uint64_t": "c_uint64",
}

// pyType maps a C type onto its ctypes expression (see the mapping in the
// file's docstring).
func pyType(h *header, t cType) (string, error) {
	t = h.resolve(t)
	k := h.kinds[t.base]
	if t.ptr == 0 {
		switch k {
		case kindEnum:
			return "c_int", nil
		case kindStruct:
			return structClass(t.base), nil
		case kindCallback:
			return callbackClass(t.base), nil
		case kindOpaque:
			return "", fmt.Errorf("%s is opaque: it is used only through a pointer", t.base)
		}
		if t.base == "void" {
			return "None", nil
		}
		return pyScalars[t.base], nil
	}
	switch {
	case isByte(t.base) && t.ptr == 1:
		return "c_char_p", nil
	case isByte(t.base) && t.ptr == 2 && t.isConst:
		return "POINTER(c_char_p)", nil
	case isByte(t.base) && t.ptr == 2, t.base == "void" && t.ptr == 2, k == kindOpaque && t.ptr == 2:
		return "POINTER(c_void_p)", nil
	case t.base == "void" && t.ptr == 1, k == kindOpaque && t.ptr == 1:
		return "c_void_p", nil
	case k == kindCallback:
		return "", fmt.Errorf("a pointer to the callback type %s is not understood", t.base)
	}
	inner, err := pyType(h, cType{base: t.base})
	if err != nil {
		return "", err
	}
	for i := 0; i < t.ptr; i++ {
		inner = "POINTER(" + inner + ")"
	}
	return inner, nil
}

func pyString(s string) string { return strconv.Quote(s) }

func pyBool(v bool) string {
	if v {
		return "True"
	}
	return "False"
}

const pyDoc = `"""The C ABI of libkrabka_coord.so for ctypes, read from include/krabka_coord.h.

Constants are the header's #define KRABKA_* without the prefix; every typedef
enum is an enum.IntEnum (members without their common prefix); ERROR_DESCS is
coord.ErrorTable as (code, name, text, retriable, fatal); DATA_CATEGORIES maps
each data error code to its category word; every struct of the
header is a ctypes Structure; PROTOTYPES gives every function's (restype,
argtypes) and bind(lib) declares them on a CDLL.

Type mapping (C -> ctypes):
  enums (krabka_err_t ...)              c_int
  int, int32_t, size_t, uint64_t ...    c_int, c_int32, c_size_t, c_uint64 ...
  char *, const char *, uint8_t *,      c_char_p (inputs take bytes; outputs a
    const uint8_t * (byte strings)        ctypes.create_string_buffer)
  char **  (the caller frees)           POINTER(c_void_p) (free with krabka_free)
  const char ** (the library owns)      POINTER(c_char_p)
  void *, krabka_x_t * (opaque handle)  c_void_p
  void **, krabka_x_t **                POINTER(c_void_p)
  struct by value, struct *             the Structure, POINTER(the Structure)
  other pointers                        POINTER(...) of the pointed-to type
  callback typedefs                     CFUNCTYPE(restype, *argtypes)
  char name[N] (in a struct)            c_char * N; other arrays T * N
"""
`

func renderPython(in *inputs) (string, error) {
	h := in.header
	var b strings.Builder
	names := map[string]string{}
	reserve := func(name, what string) error { return uniqueNames("_abi.py", names, name, what) }
	for _, n := range []string{"ERROR_DESCS", "DATA_CATEGORIES", "PROTOTYPES", "MissingFunctionsError", "bind", "enum", "annotations", "Any", "Dict", "List", "Tuple"} {
		if err := reserve(n, "the generator's own "+n); err != nil {
			return "", err
		}
	}

	// Constants.
	b.WriteString("\n# Constants: #define KRABKA_*.\n")
	for _, d := range h.defines {
		n := constName(d.name)
		if err := reserve(n, d.name); err != nil {
			return "", err
		}
		switch d.kind {
		case defNumber:
			fmt.Fprintf(&b, "%s = %d\n", n, d.value)
		case defString:
			fmt.Fprintf(&b, "%s = %s\n", n, pyString(d.text))
		case defCast:
			fmt.Fprintf(&b, "%s = %s(%d).value  # (%s)%d\n", n, pyScalars[d.cast], d.value, d.cast, d.value)
		}
	}

	// Enums.
	for _, e := range h.enums {
		cls := enumClass(e)
		if err := reserve(cls, e.name); err != nil {
			return "", err
		}
		members, err := memberNames(e)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "\n\nclass %s(enum.IntEnum):\n    \"\"\"%s.\"\"\"\n\n", cls, e.name)
		for i, m := range e.members {
			fmt.Fprintf(&b, "    %s = %d\n", members[i], m.value)
		}
	}

	// The error table.
	b.WriteString("\n\n# coord.ErrorTable: (code, name, text, retriable, fatal), in numeric order.\n")
	b.WriteString("ERROR_DESCS: Tuple[Tuple[int, str, str, bool, bool], ...] = (\n")
	for _, e := range in.errors {
		fmt.Fprintf(&b, "    (%d, %s, %s, %s, %s),\n", e.Code, pyString(e.Name), pyString(e.Text), pyBool(e.Retriable), pyBool(e.Fatal))
	}
	b.WriteString(")\n")

	// The data codes: their category word of the conformance vocabulary.
	b.WriteString("\n# The data error codes (coord.ErrorTable's Category): code -> category word.\n")
	b.WriteString("DATA_CATEGORIES: Dict[int, str] = {\n")
	for _, e := range in.errors {
		if e.Category != "" {
			fmt.Fprintf(&b, "    %d: %s,\n", e.Code, pyString(string(e.Category)))
		}
	}
	b.WriteString("}\n")

	// Structs: every class first, then the fields in header order (a
	// field may point to a struct declared later).
	if len(h.structs) > 0 {
		b.WriteString("\n")
	}
	for _, s := range h.structs {
		cls := structClass(s.name)
		if err := reserve(cls, s.name); err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "\nclass %s(Structure):\n    \"\"\"%s.\"\"\"\n\n", cls, s.name)
	}
	for _, c := range h.callbacks {
		cls := callbackClass(c.name)
		if err := reserve(cls, c.name); err != nil {
			return "", err
		}
	}
	if len(h.structs) > 0 {
		b.WriteString("\n")
	}
	for _, s := range h.structs {
		fmt.Fprintf(&b, "\n%s._fields_ = [\n", structClass(s.name))
		for _, f := range s.fields {
			t, err := pyType(h, f.typ)
			if err != nil {
				return "", fmt.Errorf("%s.%s: %w", s.name, f.name, err)
			}
			if f.dim != "" {
				t = fmt.Sprintf("%s * %s", t, pyDim(h, f))
			}
			fmt.Fprintf(&b, "    (%s, %s),\n", pyString(f.name), t)
		}
		b.WriteString("]\n")
	}

	// Callbacks.
	if len(h.callbacks) > 0 {
		b.WriteString("\n")
	}
	for _, c := range h.callbacks {
		ret, err := pyType(h, c.ret)
		if err != nil {
			return "", fmt.Errorf("callback %s: %w", c.name, err)
		}
		args := []string{ret}
		var cdecl []string
		for _, p := range c.params {
			t, err := pyType(h, p.typ)
			if err != nil {
				return "", fmt.Errorf("callback %s: %s: %w", c.name, p.name, err)
			}
			args = append(args, t)
			cdecl = append(cdecl, p.decl)
		}
		fmt.Fprintf(&b, "\n# %s: %s (*)(%s)\n", c.name, c.ret, strings.Join(cdecl, ", "))
		fmt.Fprintf(&b, "%s = CFUNCTYPE(%s)\n", callbackClass(c.name), strings.Join(args, ", "))
	}

	// Prototypes.
	b.WriteString("\n# Every function of the header: name -> (restype, argtypes).\n")
	b.WriteString("PROTOTYPES: Dict[str, Tuple[Any, List[Any]]] = {\n")
	for _, f := range h.funcs {
		ret, err := pyType(h, f.retType)
		if err != nil {
			return "", fmt.Errorf("%s: return type: %w", f.name, err)
		}
		var args []string
		for _, p := range f.params {
			t, err := pyType(h, p.typ)
			if err != nil {
				return "", fmt.Errorf("%s: %s: %w", f.name, p.name, err)
			}
			args = append(args, t)
		}
		fmt.Fprintf(&b, "    %s: (%s, [%s]),\n", pyString(f.name), ret, strings.Join(args, ", "))
	}
	b.WriteString("}\n")
	b.WriteString(`

class MissingFunctionsError(ImportError):
    """The library lacks functions this header declares: it is not a build
    of this version. ` + "`missing`" + ` names them."""

    def __init__(self, missing: List[str]) -> None:
        self.missing = missing
        super().__init__(
            "libkrabka_coord lacks the functions %s declared by include/krabka_coord.h: "
            "it is not a build of this version" % ", ".join(missing)
        )


def bind(lib: CDLL) -> CDLL:
    """Set restype and argtypes of every function of PROTOTYPES on lib.

    Raises MissingFunctionsError naming every function lib lacks (and binds
    nothing then)."""
    missing = sorted(name for name in PROTOTYPES if not hasattr(lib, name))
    if missing:
        raise MissingFunctionsError(missing)
    for name, (restype, argtypes) in PROTOTYPES.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    return lib
`)
	// The imports: the ctypes names the body uses.
	body := b.String()
	used := []string{"CDLL"}
	for _, n := range pyCtypesNames {
		if regexp.MustCompile(`\b` + n + `\b`).MatchString(body) {
			used = append(used, n)
		}
	}
	sort.Strings(used)
	var out strings.Builder
	out.WriteString("# GENERATED by internal/gen from include/krabka_coord.h and coord.ErrorTable; do not edit.\n")
	out.WriteString("# Regenerate with `go generate ./...` from the repository root.\n")
	out.WriteString(pyDoc)
	out.WriteString("\nfrom __future__ import annotations\n\nimport enum\nfrom ctypes import (\n")
	for _, n := range used {
		out.WriteString("    " + n + ",\n")
	}
	out.WriteString(")\nfrom typing import Any, Dict, List, Tuple\n")
	out.WriteString(body)
	return out.String(), nil
}

// pyCtypesNames are the ctypes names the body may use.
var pyCtypesNames = func() []string {
	ns := []string{"CFUNCTYPE", "POINTER", "Structure", "c_char_p", "c_void_p"}
	for _, v := range pyScalars {
		ns = append(ns, v)
	}
	sort.Strings(ns)
	return ns
}()

// pyDim writes an array dimension: the constant's Python name when the
// header wrote a constant, else the number.
func pyDim(h *header, f cDecl) string {
	for _, d := range h.defines {
		if d.name == f.dim && d.kind == defNumber {
			return constName(d.name)
		}
	}
	return strconv.FormatInt(f.n, 10)
}
