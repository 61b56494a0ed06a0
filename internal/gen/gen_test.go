package main

import (
	"os"
	"path/filepath"
	"testing"
)

// Every generated file on disk is what the generator renders now from the
// header and the Go tables; a stale file fails here with the command that
// regenerates it.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	root, err := findRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	in, err := loadInputs(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.header.funcs) < 60 {
		t.Fatalf("found %d function declarations in the header, expected every krabka_* function", len(in.header.funcs))
	}
	files, err := renderAll(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range outputs {
		got, err := os.ReadFile(filepath.Join(root, o.path))
		if err != nil {
			t.Errorf("%s: %v; run `go generate ./...` (or `make generate`) from the repository root", o.path, err)
			continue
		}
		if string(got) != files[o.path] {
			t.Errorf("%s is stale: it differs from what %s and the Go tables give; run `go generate ./...` (or `make generate`) from the repository root", o.path, headerPath)
		}
	}
}
