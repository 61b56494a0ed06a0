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
)

// output is one generated file: its path from the repository root and how
// to render it from the inputs.
type output struct {
	path   string
	render func(in *inputs) (string, error)
}

// inputs are what every output is rendered from.
type inputs struct {
	header *header // include/krabka_coord.h, parsed
}

const headerPath = "include/krabka_coord.h"

// outputs lists every generated file, in the order they are written.
var outputs = []output{
	{"capi/kc_guard.c", renderGuard},
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
	return &inputs{header: h}, nil
}

// renderAll renders every output in memory: path -> content.
func renderAll(in *inputs) (map[string]string, error) {
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
