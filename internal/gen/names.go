package main

import (
	"fmt"
	"strings"
)

// Names the bindings use for what the header declares.

// camel turns leadership_state into LeadershipState.
func camel(s string) string {
	var b strings.Builder
	for _, w := range strings.Split(s, "_") {
		if w == "" {
			continue
		}
		b.WriteString(strings.ToUpper(w[:1]) + w[1:])
	}
	return b.String()
}

// bare strips the krabka_ prefix and the _t suffix: krabka_token_t -> token.
func bare(name string) string {
	return strings.TrimSuffix(strings.TrimPrefix(name, "krabka_"), "_t")
}

// enumClass names an enum in the bindings: krabka_err_t -> ErrorCode (the
// bindings' name since ABI 1), otherwise the CamelCase of the typedef:
// krabka_leadership_state_t -> LeadershipState.
func enumClass(e cEnum) string {
	if e.name == "krabka_err_t" {
		return "ErrorCode"
	}
	return camel(bare(e.name))
}

// structClass names a struct in the bindings: krabka_roster_entry_t ->
// RosterEntry.
func structClass(name string) string { return camel(bare(name)) }

// callbackClass names a callback type: krabka_log_cb -> LogCb.
func callbackClass(name string) string { return camel(bare(name)) }

// constName is a #define without its prefix: KRABKA_NAME_BUF -> NAME_BUF.
func constName(name string) string { return strings.TrimPrefix(name, "KRABKA_") }

// memberNames strips every member of an enum of its prefix: the typedef's
// own (KRABKA_ERR_ for krabka_err_t) where a member has it, otherwise the
// prefix all members share, cut at an underscore (KRABKA_LEADERSHIP_ for
// krabka_leadership_state_t; KRABKA_ for KRABKA_OK).
func memberNames(e cEnum) ([]string, error) {
	own := "KRABKA_" + strings.ToUpper(bare(e.name)) + "_"
	common := e.members[0].name
	for _, m := range e.members[1:] {
		for !strings.HasPrefix(m.name, common) {
			common = common[:len(common)-1]
		}
	}
	if i := strings.LastIndex(common, "_"); i >= 0 {
		common = common[:i+1]
	} else {
		common = ""
	}
	if len(e.members) == 1 {
		common = "KRABKA_"
	}
	var out []string
	seen := map[string]bool{}
	for _, m := range e.members {
		n := strings.TrimPrefix(m.name, common)
		if strings.HasPrefix(m.name, own) {
			n = strings.TrimPrefix(m.name, own)
		}
		if n == "" || !reIdent.MatchString(n) || seen[n] {
			return nil, fmt.Errorf("enum %s: member %s gives the name %q in the bindings, which is empty, not an identifier or taken twice", e.name, m.name, n)
		}
		seen[n] = true
		out = append(out, n)
	}
	return out, nil
}

// resolve follows typedef aliases to the type they stand for.
func (h *header) resolve(t cType) cType {
	for i := 0; i < 16; i++ {
		if h.kinds[t.base] != kindAlias {
			return t
		}
		for _, a := range h.aliases {
			if a.name == t.base {
				t = cType{isConst: t.isConst || a.typ.isConst, base: a.typ.base, ptr: t.ptr + a.typ.ptr}
				break
			}
		}
	}
	return t
}

// isByte: char and the 8-bit integer types, whose pointers are byte strings.
func isByte(base string) bool {
	switch base {
	case "char", "signed char", "unsigned char", "int8_t", "uint8_t":
		return true
	}
	return false
}

// uniqueNames fails when two declarations would get one name in a binding.
func uniqueNames(where string, names map[string]string, name, what string) error {
	if prev, ok := names[name]; ok {
		return fmt.Errorf("%s: %s and %s both get the name %s", where, prev, what, name)
	}
	names[name] = what
	return nil
}
