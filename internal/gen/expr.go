package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// evalExpr evaluates the integer constant expressions of the header:
// decimal, hex and octal literals (with u/l suffixes), names of earlier
// constants, parentheses, unary - + ~ and the binary operators * / % + -
// << >> & ^ |, with C's precedence. Anything else is an error naming it.
func evalExpr(s string, consts map[string]int64) (int64, error) {
	p := &exprParser{consts: consts}
	toks := reExprToken.FindAllString(s, -1)
	if strings.Join(toks, "") != strings.Join(strings.Fields(s), "") {
		return 0, fmt.Errorf("cannot read the expression %q", strings.TrimSpace(s))
	}
	p.toks = toks
	if len(toks) == 0 {
		return 0, fmt.Errorf("empty expression")
	}
	v, err := p.binary(0)
	if err != nil {
		return 0, err
	}
	if p.pos != len(p.toks) {
		return 0, fmt.Errorf("cannot read the expression %q (at %q)", strings.TrimSpace(s), p.toks[p.pos])
	}
	return v, nil
}

var reExprToken = regexp.MustCompile(`0[xX][0-9a-fA-F]+[uUlL]*|[0-9]+[uUlL]*|[A-Za-z_][A-Za-z0-9_]*|<<|>>|[-+*/%&|^~()]|\S`)

type exprParser struct {
	toks   []string
	pos    int
	consts map[string]int64
}

var binaryPrec = map[string]int{"|": 1, "^": 2, "&": 3, "<<": 4, ">>": 4, "+": 5, "-": 5, "*": 6, "/": 6, "%": 6}

func (p *exprParser) binary(minPrec int) (int64, error) {
	l, err := p.unary()
	if err != nil {
		return 0, err
	}
	for p.pos < len(p.toks) {
		op := p.toks[p.pos]
		prec, ok := binaryPrec[op]
		if !ok || prec <= minPrec {
			break
		}
		p.pos++
		r, err := p.binary(prec)
		if err != nil {
			return 0, err
		}
		switch op {
		case "|":
			l |= r
		case "^":
			l ^= r
		case "&":
			l &= r
		case "<<":
			l <<= uint64(r)
		case ">>":
			l >>= uint64(r)
		case "+":
			l += r
		case "-":
			l -= r
		case "*":
			l *= r
		case "/", "%":
			if r == 0 {
				return 0, fmt.Errorf("division by zero")
			}
			if op == "/" {
				l /= r
			} else {
				l %= r
			}
		}
	}
	return l, nil
}

func (p *exprParser) unary() (int64, error) {
	if p.pos >= len(p.toks) {
		return 0, fmt.Errorf("the expression ends too early")
	}
	t := p.toks[p.pos]
	p.pos++
	switch {
	case t == "-" || t == "+" || t == "~":
		v, err := p.unary()
		if err != nil {
			return 0, err
		}
		switch t {
		case "-":
			return -v, nil
		case "~":
			return ^v, nil
		}
		return v, nil
	case t == "(":
		v, err := p.binary(0)
		if err != nil {
			return 0, err
		}
		if p.pos >= len(p.toks) || p.toks[p.pos] != ")" {
			return 0, fmt.Errorf("a ( without its )")
		}
		p.pos++
		return v, nil
	case t[0] >= '0' && t[0] <= '9':
		v, err := strconv.ParseInt(strings.TrimRight(t, "uUlL"), 0, 64)
		if err != nil {
			return 0, fmt.Errorf("the number %s: %w", t, err)
		}
		return v, nil
	case reIdent.MatchString(t):
		v, ok := p.consts[t]
		if !ok {
			return 0, fmt.Errorf("%s is not a numeric constant declared before", t)
		}
		return v, nil
	}
	return 0, fmt.Errorf("cannot read %q in an expression", t)
}
