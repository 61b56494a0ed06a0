// Command gen writes every file of the repository that is derived from
// include/krabka_coord.h and the Go tables of core/coord (the error table,
// the configuration keys) and from the Go enums marked //krabka:enum. `go
// generate ./...` from the repository root runs it (the directive below);
// the test of this package renders every output again and fails when a file
// on disk is stale.
//
// Before it writes anything it checks that the header and Go agree, and
// stops with a message naming what to add where when they do not: every
// code of coord.ErrorTable is in krabka_err_t, and every Go enum that
// crosses the ABI has the numbers and names of its header enum, both ways
// (goenums.go).
//
// # Adding an error code
//
// The Error value (core/coord/errors_client.go), the header line in
// krabka_err_t, and `go generate ./...`.
//
// # Adding a value to an enum that crosses the ABI
//
// One Go constant and one header line, then `go generate ./...`:
//
//	TermLoopEnded                 // core/coord: a constant of TermEventKind
//	KRABKA_TERM_LOOP_ENDED = 6    // include/krabka_coord.h, enum krabka_term_event_kind_t
//
// The C name is the header enum's prefix and the Go name without the
// prefix of its //krabka:enum directive, in upper snake case (LoopEnded:
// LOOP_ENDED); the numbers must be equal. The generator writes String()
// (enum_strings_gen.go of the Go package), capi's names (capi/enums_gen.go)
// and the bindings' constants (Python, Node, TypeScript). With only one of
// the two lines it stops and says which line to add where.
//
// # Adding an enum
//
// The header's typedef enum, and the Go type with a directive in its doc
// comment naming that enum and the prefix its constants share:
//
//	//krabka:enum krabka_elector_state_t prefix=Elector
//	type ElectorState int
//
// Write no String() for it: the generator does. While one is written by
// hand it writes its own all the same and fails, naming the method to
// delete; the package compiles again once it is gone (the generator
// imports core/coord, so a package that does not compile stops it: the
// generated String() is there before the hand-written one goes). Its
// switch uses numbers, not the constants' names, so that renaming a
// constant by hand does not break the build either. A header enum with no Go type stops the generator too,
// unless headerOnlyEnums (goenums.go) lists it with the reason (capi's own
// event types, the syslog levels). A Go enum that never crosses the ABI may
// say //krabka:enum - to have its String() written (core.DecisionKind).
package main

//go:generate go run .

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/krabka/krabka-coord/core/coord"
)

// output is one generated file: its path from the repository root and how
// to render it from the inputs.
type output struct {
	path   string
	render func(in *inputs) (string, error)
}

// inputs are what every output is rendered from.
type inputs struct {
	header  *header               // include/krabka_coord.h, parsed
	errors  []coord.ErrorCodeInfo // coord.ErrorTable
	goEnums []*goEnum             // the //krabka:enum types under enumDirs
	// headerOnly: the header's enums no Go type mirrors (headerOnlyEnums)
	headerOnly map[string]string
}

const headerPath = "include/krabka_coord.h"

// headerOutputs lists the generated files that are there whatever the Go
// enums, in the order they are written.
var headerOutputs = []output{
	{"capi/kc_guard.c", renderGuard},
	{"capi/enums_gen.go", renderCapiEnums},
	{"bindings/python/src/krabka_coord/_abi.py", renderPython},
	{"bindings/node/lib/abi.js", renderJS},
	{"bindings/node/abi.d.ts", renderTS},
	{"docs/CONFIGURATION.md", renderConfigDoc},
}

// findRoot walks up from dir to the directory that holds go.mod.
func findRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("gen: no go.mod in this directory or any parent")
		}
		dir = parent
	}
}

// loadInputs reads and parses what the outputs are rendered from.
func loadInputs(root string) (*inputs, error) {
	text, err := os.ReadFile(filepath.Join(root, headerPath))
	if err != nil {
		return nil, err
	}
	h, err := parseHeader(string(text))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", headerPath, err)
	}
	enums, err := scanGoEnums(os.DirFS(root), enumDirs)
	if err != nil {
		return nil, err
	}
	return &inputs{header: h, errors: coord.ErrorTable, goEnums: enums, headerOnly: headerOnlyEnums}, nil
}

// outputs lists every generated file, in the order they are written: the
// header's, then the String() file of each package with a Go enum.
func (in *inputs) outputs() []output {
	return append(slices.Clip(headerOutputs), in.stringsOutputs()...)
}

// check fails when the header and the Go tables disagree: every code of
// the table is in the header's krabka_err_t under its name and number, and
// the other way round.
func (in *inputs) check() error {
	var errEnum *cEnum
	for i, e := range in.header.enums {
		if e.name == "krabka_err_t" {
			errEnum = &in.header.enums[i]
		}
	}
	if errEnum == nil {
		return fmt.Errorf("%s declares no typedef enum ... krabka_err_t", headerPath)
	}
	members, err := memberNames(*errEnum)
	if err != nil {
		return err
	}
	inHeader := map[string]int64{}
	for i, m := range errEnum.members {
		inHeader[members[i]] = m.value
	}
	inTable := map[string]bool{}
	for _, e := range in.errors {
		inTable[e.Name] = true
		if v, ok := inHeader[e.Name]; !ok || v != int64(e.Code) {
			return fmt.Errorf("coord.ErrorTable has %s = %d and the header's krabka_err_t does not: add KRABKA_ERR_%s = %d to %s", e.Name, e.Code, e.Name, e.Code, headerPath)
		}
	}
	for i, m := range errEnum.members {
		if !inTable[members[i]] {
			return fmt.Errorf("the header's krabka_err_t has %s = %d and coord.ErrorTable does not: declare its Error value in core/coord/errors_client.go", m.name, m.value)
		}
	}
	return in.checkEnums()
}

// renderAll renders every output in memory: path -> content.
func renderAll(in *inputs) (map[string]string, error) {
	if err := in.check(); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, o := range in.outputs() {
		s, err := o.render(in)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.path, err)
		}
		out[o.path] = s
	}
	// A marked type with a String() of its own: the files are rendered, and
	// run writes them, but the generator fails until the method is gone.
	return out, in.ownStrings()
}

// run checks and renders everything from the inputs under root and writes
// the files that changed.
func run(root string) error {
	in, err := loadInputs(root)
	if err != nil {
		return err
	}
	files, err := renderAll(in)
	var own *errOwnString
	if err != nil && !errors.As(err, &own) {
		return err
	}
	for _, o := range in.outputs() {
		p := filepath.Join(root, o.path)
		old, err := os.ReadFile(p)
		if err == nil && bytes.Equal(old, []byte(files[o.path])) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(files[o.path]), 0o644); err != nil {
			return err
		}
		fmt.Printf("gen: wrote %s\n", o.path)
	}
	return err
}

func main() {
	root, err := findRoot(".")
	if err == nil {
		err = run(root)
	}
	if err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintln(os.Stderr, "gen:", line)
		}
		os.Exit(1)
	}
}
