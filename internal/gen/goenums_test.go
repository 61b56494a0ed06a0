package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/krabka/krabka-coord/core/coord"
)

// fixtureGo is the Go side of fixtureHeader's krabka_leadership_state_t.
const fixtureGo = `package coord

// LeadershipState is a fixture.
//
//krabka:enum krabka_leadership_state_t
type LeadershipState int

const (
	Active LeadershipState = iota
	Fenced
)
`

// fixtureInputs are the inputs of a fixture header, a fixture core/coord
// package and an error table.
func fixtureInputs(t *testing.T, hdr, goSrc string, errs []coord.ErrorCodeInfo) *inputs {
	t.Helper()
	enums, err := scanGoEnums(fstest.MapFS{"core/coord/state.go": {Data: []byte(goSrc)}}, []string{"core"})
	if err != nil {
		t.Fatal(err)
	}
	return &inputs{header: parseFixture(t, hdr), errors: errs, goEnums: enums, headerOnly: map[string]string{"krabka_err_t": "the table"}}
}

// copyInputs copies what the generator reads (the header and the Go files
// under enumDirs) into a new directory, which it returns: the tests below
// change the copy, never the repository's files.
func copyInputs(t *testing.T) string {
	t.Helper()
	root, err := findRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	copyFile := func(rel string) {
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, rel), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	copyFile(headerPath)
	for _, d := range enumDirs {
		err := fs.WalkDir(os.DirFS(root), d, func(p string, e fs.DirEntry, err error) error {
			if err == nil && !e.IsDir() && strings.HasSuffix(p, ".go") {
				copyFile(p)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// editCopy applies a regexp replacement to one file of a copy; it must
// change the file.
func editCopy(t *testing.T, root, rel, pattern, repl string) {
	t.Helper()
	p := filepath.Join(root, rel)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	out := regexp.MustCompile(pattern).ReplaceAllString(string(b), repl)
	if out == string(b) {
		t.Fatalf("%s: %q matched nothing", rel, pattern)
	}
	if err := os.WriteFile(p, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
}

// lineOf is the 1-based line of the first match of pattern in a file of a
// copy (0: none).
func lineOf(t *testing.T, root, rel, pattern string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(pattern)
	for i, l := range strings.Split(string(b), "\n") {
		if re.MatchString(l) {
			return i + 1
		}
	}
	return 0
}

// nextValue is one more than the largest value of a Go enum in a copy.
func nextValue(t *testing.T, root, typ string) int64 {
	t.Helper()
	in, err := loadInputs(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range in.goEnums {
		if e.typ == typ {
			max := e.consts[0].value
			for _, c := range e.consts {
				if c.value > max {
					max = c.value
				}
			}
			return max + 1
		}
	}
	t.Fatalf("no Go enum %s", typ)
	return 0
}

// A kind added to a Go enum and not to the header stops the generator (the
// command's run, which then writes nothing) with the line to add, the
// header enum and its lines.
func TestGoOnlyKindStopsTheGenerator(t *testing.T) {
	for _, tc := range []struct {
		name, file, typ, last, add, cEnum, cName string
	}{
		{"watch kind", "core/coord/watch.go", "EventKind", "EventRoleFree", "EventLeaderResigned",
			"krabka_watch_event_kind_t", "KRABKA_WATCH_LEADER_RESIGNED"},
		{"term-event kind", "core/coord/elect_events.go", "TermEventKind", "TermElectorStopped", "TermHandedOver",
			"krabka_term_event_kind_t", "KRABKA_TERM_HANDED_OVER"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := copyInputs(t)
			// The copy as it is generates.
			in, err := loadInputs(root)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := renderAll(in); err != nil {
				t.Fatalf("the unchanged copy: %v", err)
			}
			v := nextValue(t, root, tc.typ)
			// The new constant goes last in the const block of tc.last.
			editCopy(t, root, tc.file, `(?s)(\n\t`+tc.last+`\b[^)]*?\n)\)`, "${1}\t// "+tc.add+": a kind only Go has.\n\t"+tc.add+" "+tc.typ+" = "+fmt.Sprint(v)+"\n)")
			goLine := lineOf(t, root, tc.file, `^\t`+tc.add+` `)
			first := lineOf(t, root, headerPath, `typedef enum `+strings.TrimSuffix(tc.cEnum, "_t")+`\b`)
			last := lineOf(t, root, headerPath, `\}\s*`+tc.cEnum+`\s*;`)
			if goLine == 0 || first == 0 || last == 0 {
				t.Fatalf("lines: Go %d, header %d-%d", goLine, first, last)
			}
			err = run(root)
			if err == nil {
				t.Fatal("the generator ran with a kind only Go has")
			}
			want := fmt.Sprintf("%s:%d: coord.%s has %s = %d and the header does not: add %s = %d to enum %s in include/krabka_coord.h (lines %d-%d), after ",
				tc.file, goLine, tc.typ, tc.add, v, tc.cName, v, tc.cEnum, first, last)
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("the message\n%v\ndoes not say\n%s", err, want)
			}
			if strings.Count(err.Error(), "\n") != 0 {
				t.Errorf("more than the one disagreement reported:\n%v", err)
			}
			if _, err := os.Stat(filepath.Join(root, "capi", "enums_gen.go")); !os.IsNotExist(err) {
				t.Errorf("the generator wrote capi/enums_gen.go after failing (%v)", err)
			}
		})
	}
}

// The other ways the two sides can disagree each stop the generator with
// what to change.
func TestEnumDisagreementsStopTheGenerator(t *testing.T) {
	for _, tc := range []struct {
		name, file, pattern, repl, want string
	}{
		{"a kind only the header has", headerPath,
			`(KRABKA_WATCH_ROLE_FREE = 3)`, "${1},\n    KRABKA_WATCH_HEADER_ONLY = 77",
			"krabka_watch_event_kind_t has KRABKA_WATCH_HEADER_ONLY = 77 and coord.EventKind (core/coord/watch.go:"},
		{"the header's number changed", headerPath,
			`KRABKA_TERM_AT_RISK = 2`, "KRABKA_TERM_AT_RISK = 9",
			"coord.TermEventKind has TermAtRisk = 2 and the header has KRABKA_TERM_AT_RISK = 9 (include/krabka_coord.h:"},
		{"one number under two names", "core/coord/watch.go",
			`\tEventRoleFree\n`, "\tEventRoleVacant\n",
			"coord.EventKind has EventRoleVacant = 3, which the header names KRABKA_WATCH_ROLE_FREE (include/krabka_coord.h:"},
		{"a directive naming no header enum", "core/coord/risk.go",
			`krabka_lease_event_kind_t`, "krabka_lease_kind_t",
			"coord.LeadershipEventKind is marked //krabka:enum krabka_lease_kind_t and include/krabka_coord.h declares no typedef enum ... krabka_lease_kind_t"},
		{"a header enum no Go type claims", "core/coord/risk.go",
			`//krabka:enum krabka_lease_event_kind_t prefix=Leadership\n`, "",
			"the header's krabka_lease_event_kind_t has no Go enum: mark the Go type"},
		{"a directive that does not read", "core/coord/risk.go",
			`prefix=Leadership`, "Leadership",
			`cannot read "//krabka:enum krabka_lease_event_kind_t Leadership": write //krabka:enum <typedef enum of the header, or -> [prefix=<the prefix of the Go constants>]`},
		{"a constant outside the prefix", "core/coord/elect_events.go",
			`\tTermNewLeader\n`, "\tNewLeaderTerm\n",
			"NewLeaderTerm does not start with Term"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := copyInputs(t)
			editCopy(t, root, tc.file, tc.pattern, tc.repl)
			err := run(root)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v\nwant a message with %q", err, tc.want)
			}
		})
	}
}

// A marked type with a String() written by hand: the generator writes its
// own all the same (so that the package compiles once the hand-written one
// is deleted) and fails, naming the method to delete.
func TestHandWrittenStringIsNamedForDeletion(t *testing.T) {
	root := copyInputs(t)
	gen := filepath.Join(root, "core", stringsFile)
	if err := os.Remove(gen); err != nil {
		t.Fatal(err)
	}
	editCopy(t, root, "core/verify.go", `\z`, "\n// String is written by hand.\nfunc (v Verdict) String() string { return \"\" }\n")
	line := lineOf(t, root, "core/verify.go", `^func \(v Verdict\) String\(\)`)
	err := run(root)
	want := fmt.Sprintf("core/verify.go:%d: core.Verdict has a String() of its own: delete it, internal/gen wrote it into core/enum_strings_gen.go", line)
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
	b, err := os.ReadFile(gen)
	if err != nil {
		t.Fatalf("the generator did not write core/%s: %v", stringsFile, err)
	}
	if !strings.Contains(string(b), "func (v Verdict) String() string {") {
		t.Errorf("core/%s lacks Verdict's String():\n%s", stringsFile, b)
	}
}

// Every typedef enum of the real header is either a Go enum's or listed as
// the header's own, and the generated String() gives each Go value the
// name the bindings give its header member.
func TestEveryHeaderEnumIsAccountedFor(t *testing.T) {
	root, err := findRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	in, err := loadInputs(root)
	if err != nil {
		t.Fatal(err)
	}
	byC := map[string]*goEnum{}
	for _, g := range in.goEnums {
		if g.cEnum != "" {
			byC[g.cEnum] = g
		}
	}
	for _, ce := range in.header.enums {
		g := byC[ce.name]
		if g == nil {
			if _, ok := headerOnlyEnums[ce.name]; !ok {
				t.Errorf("%s: no Go enum and not in headerOnlyEnums", ce.name)
			}
			continue
		}
		names, err := memberNames(ce)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range g.consts {
			got = append(got, fmt.Sprintf("%d=%s", c.value, g.bare(c)))
		}
		var want []string
		for i, m := range ce.members {
			want = append(want, fmt.Sprintf("%d=%s", m.value, names[i]))
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s: Go %s has %v, the header %v", ce.name, g.qualified(), got, want)
		}
	}
	// The enums the issue names are among them.
	for _, c := range []string{"krabka_watch_event_kind_t", "krabka_term_event_kind_t", "krabka_stop_reason_t",
		"krabka_kind_t", "krabka_leadership_state_t", "krabka_lease_event_kind_t", "krabka_verdict_t"} {
		if byC[c] == nil {
			t.Errorf("%s has no Go enum", c)
		}
	}
}

func TestUpperSnake(t *testing.T) {
	for in, want := range map[string]string{
		"NewLeader": "NEW_LEADER", "OK": "OK", "LostAtRisk": "LOST_AT_RISK", "TLSError": "TLS_ERROR",
		"Active": "ACTIVE", "V2": "V2", "AtRisk": "AT_RISK",
	} {
		if got := upperSnake(in); got != want {
			t.Errorf("upperSnake(%q) = %q, want %q", in, got, want)
		}
		if got := upperSnake(goCamel(want)); got != want && in != "TLSError" && in != "OK" {
			t.Errorf("goCamel(%q) = %q does not give it back", want, goCamel(want))
		}
	}
}

// The constant expressions enums are written with evaluate as Go does.
func TestGoConstValues(t *testing.T) {
	src := `package p

//krabka:enum -
type K int8

const base = 10

const (
	A K = iota + 1
	B
	_
	C
	D K = base << 2
	E = K(-3)
	F K = (17 - 1) / 3 % 4 & 7 | 16
)
`
	enums, err := scanGoEnums(fstest.MapFS{"core/p/p.go": {Data: []byte(src)}}, []string{"core"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range enums[0].consts {
		got = append(got, fmt.Sprintf("%s=%d", c.name, c.value))
	}
	if want := "A=1 B=2 C=4 D=40 E=-3 F=17"; strings.Join(got, " ") != want {
		t.Errorf("got %v, want %s", got, want)
	}
	out, err := renderStrings(enums)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"package p\n", "func (k K) String() string {\n", "\tcase -3: // E\n\t\treturn \"E\"\n",
		"\treturn \"K(\" + strconv.FormatInt(int64(k), 10) + \")\"\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("the rendered String() lacks %q:\n%s", want, out)
		}
	}
}
