package main

import (
	"fmt"
	"regexp"
	"strings"
)

// header is what the generator reads from include/krabka_coord.h.
type header struct {
	funcs []cFunc // every function, in the header's order
}

func parseHeader(text string) (*header, error) {
	funcs, err := parseHeaderFunctions(text)
	if err != nil {
		return nil, err
	}
	return &header{funcs: funcs}, nil
}

type cParam struct{ decl, name string }

type cFunc struct {
	ret, name string
	params    []cParam
}

// blocking: the call takes a timeout_ms (it may wait on the cluster or on
// another thread) or is a destroy that waits for background work.
func (f cFunc) blocking() bool {
	if f.name == "krabka_client_destroy" || f.name == "krabka_leadership_destroy" {
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

var (
	reComment = regexp.MustCompile(`(?s)/\*.*?\*/|//[^\n]*`)
	rePreproc = regexp.MustCompile(`(?m)^[ \t]*#(?:[^\n]*\\\n)*[^\n]*`)
	reFunc    = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_ \t\n\*]*?)\b(krabka_[A-Za-z0-9_]+)\s*\(([^()]*)\)$`)
	reParam   = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)\s*$`)
	reSpace   = regexp.MustCompile(`\s+`)
)

func parseHeaderFunctions(text string) ([]cFunc, error) {
	text = reComment.ReplaceAllString(text, " ")
	text = rePreproc.ReplaceAllString(text, " ")
	var out []cFunc
	for _, stmt := range strings.Split(text, ";") {
		if i := strings.LastIndexAny(stmt, "{}"); i >= 0 {
			stmt = stmt[i+1:]
		}
		stmt = strings.TrimSpace(reSpace.ReplaceAllString(stmt, " "))
		if strings.HasPrefix(stmt, "typedef") {
			continue
		}
		m := reFunc.FindStringSubmatch(stmt)
		if m == nil {
			if strings.Contains(stmt, "krabka_") && strings.Contains(stmt, "(") {
				return nil, fmt.Errorf("cannot read the declaration %q", stmt)
			}
			continue
		}
		f := cFunc{ret: strings.TrimSpace(m[1]), name: m[2]}
		if strings.HasSuffix(f.ret, "*") {
			f.ret = strings.TrimSpace(strings.TrimRight(f.ret, "* ")) + " *"
		}
		if args := strings.TrimSpace(m[3]); args != "void" {
			for _, a := range strings.Split(args, ",") {
				a = strings.TrimSpace(a)
				pm := reParam.FindStringSubmatch(a)
				if pm == nil {
					return nil, fmt.Errorf("%s: cannot read the parameter %q", f.name, a)
				}
				f.params = append(f.params, cParam{decl: a, name: pm[1]})
			}
		}
		out = append(out, f)
	}
	return out, nil
}
