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

// The parser reads what the guard needs: name, return type and parameters.
func TestParseHeaderFunctions(t *testing.T) {
	decls, err := parseHeaderFunctions(`/* krabka_nope(int x); */
typedef void (*krabka_cb)(void *opaque, const char *line);
#define KRABKA_X(a) (a)
typedef struct krabka_t { int a; } krabka_t;
const char *krabka_version(void);
krabka_err_t krabka_f(const krabka_conf_t *conf, const char *name,
                      char *errstr, size_t errstr_size);`)
	if err != nil {
		t.Fatal(err)
	}
	if len(decls) != 2 {
		t.Fatalf("got %d declarations, want 2: %+v", len(decls), decls)
	}
	if decls[0].name != "krabka_version" || decls[0].ret != "const char *" || len(decls[0].params) != 0 {
		t.Errorf("first: %+v", decls[0])
	}
	f := decls[1]
	if f.name != "krabka_f" || f.ret != "krabka_err_t" || len(f.params) != 4 || f.params[1].name != "name" ||
		f.params[1].decl != "const char *name" || !f.hasErrstr() {
		t.Errorf("second: %+v", f)
	}
}
