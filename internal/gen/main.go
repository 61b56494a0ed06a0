// Command gen writes every file of the repository that is derived from
// include/krabka_coord.h and the Go tables of core/coord (the error table,
// the configuration keys). `go generate ./...` from the repository root runs
// it (the directive below); the test of this package renders every output
// again and fails when a file on disk is stale.
//
// Adding an error code or an event kind is the Go value (core/coord), the
// header line, and `go generate ./...`.
package main

//go:generate go run .

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

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
	header *header               // include/krabka_coord.h, parsed
	errors []coord.ErrorCodeInfo // coord.ErrorTable
}

const headerPath = "include/krabka_coord.h"

// outputs lists every generated file, in the order they are written.
var outputs = []output{
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
	return &inputs{header: h, errors: coord.ErrorTable}, nil
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
	return nil
}

// renderAll renders every output in memory: path -> content.
func renderAll(in *inputs) (map[string]string, error) {
	if err := in.check(); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, o := range outputs {
		s, err := o.render(in)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.path, err)
		}
		out[o.path] = s
	}
	return out, nil
}

func run() error {
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	root, err := findRoot(wd)
	if err != nil {
		return err
	}
	in, err := loadInputs(root)
	if err != nil {
		return err
	}
	files, err := renderAll(in)
	if err != nil {
		return err
	}
	for _, o := range outputs {
		p := filepath.Join(root, o.path)
		old, err := os.ReadFile(p)
		if err == nil && bytes.Equal(old, []byte(files[o.path])) {
			continue
		}
		if err := os.WriteFile(p, []byte(files[o.path]), 0o644); err != nil {
			return err
		}
		fmt.Printf("gen: wrote %s\n", o.path)
	}
	return nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
