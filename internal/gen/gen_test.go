package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/krabka/krabka-coord/core/coord"
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
	for _, o := range in.outputs() {
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

// The generator is driven by data: a new error code (the header line and
// the table row) and a new enum value in the header change the Python,
// Node and TypeScript outputs with no other edit.
func TestNewCodeAndEnumValueReachTheBindings(t *testing.T) {
	table := []coord.ErrorCodeInfo{{Code: 0, Name: "OK", Text: "success"}, {Code: 1, Name: "INVALID_ARG", Text: "invalid argument"},
		{Code: 30, Name: "FENCED", Text: "fenced", Fatal: true}, {Code: 31, Name: "NEXT", Text: "next"}}
	render := func(hdr, goSrc string, errs []coord.ErrorCodeInfo) map[string]string {
		t.Helper()
		files, err := renderAll(fixtureInputs(t, hdr, goSrc, errs))
		if err != nil {
			t.Fatal(err)
		}
		return files
	}
	before := render(fixtureHeader, fixtureGo, table)
	hdr := strings.Replace(fixtureHeader, "    KRABKA_ERR_NEXT,            /* implicit: 31 */\n",
		"    KRABKA_ERR_NEXT,            /* implicit: 31 */\n    KRABKA_ERR_FAKE_CODE = 99,\n", 1)
	hdr = strings.Replace(hdr, "KRABKA_LEADERSHIP_FENCED = KRABKA_LEADERSHIP_ACTIVE + 1\n",
		"KRABKA_LEADERSHIP_FENCED = KRABKA_LEADERSHIP_ACTIVE + 1,\n    KRABKA_LEADERSHIP_FAKE_STATE = 7\n", 1)
	goSrc := strings.Replace(fixtureGo, "\tFenced\n", "\tFenced\n\tFakeState LeadershipState = 7\n", 1)
	if hdr == fixtureHeader || goSrc == fixtureGo {
		t.Fatal("the fixture did not change")
	}
	after := render(hdr, goSrc, append(append([]coord.ErrorCodeInfo{}, table...), coord.ErrorCodeInfo{Code: 99, Name: "FAKE_CODE", Text: "a fake code", Retriable: true}))
	for _, c := range []struct{ file, want string }{
		{"bindings/python/src/krabka_coord/_abi.py", "    FAKE_CODE = 99\n"},
		{"bindings/python/src/krabka_coord/_abi.py", `    (99, "FAKE_CODE", "a fake code", True, False),` + "\n"},
		{"bindings/python/src/krabka_coord/_abi.py", "    FAKE_STATE = 7\n"},
		{"bindings/node/lib/abi.js", "  FAKE_CODE: 99,\n"},
		{"bindings/node/lib/abi.js", "  99: 'FAKE_CODE',\n"},
		{"bindings/node/lib/abi.js", "  Object.freeze({ code: 99, name: 'FAKE_CODE', text: 'a fake code', retriable: true, fatal: false }),\n"},
		{"bindings/node/lib/abi.js", "  FAKE_STATE: 7,\n"},
		{"bindings/node/lib/abi.js", "  7: 'FAKE_STATE',\n"},
		{"bindings/node/abi.d.ts", "  | 'FAKE_CODE';\n"},
		{"bindings/node/abi.d.ts", "export type ErrorCodeNumber = 0 | 1 | 30 | 31 | 99;\n"},
		{"bindings/node/abi.d.ts", "  readonly FAKE_STATE: 7;\n"},
		{"bindings/node/abi.d.ts", "export type LeadershipStateNumber = 0 | 1 | 7;\n"},
		{"capi/kc_guard.c", `    {99, "FAKE_CODE", "a fake code", 1, 0},` + "\n"},
		{"capi/enums_gen.go", "\t\t7: \"KRABKA_LEADERSHIP_FAKE_STATE\",\n"},
		{"core/coord/enum_strings_gen.go", "\tcase 7: // FakeState\n\t\treturn \"FAKE_STATE\"\n"},
	} {
		if strings.Contains(before[c.file], c.want) {
			t.Errorf("%s has %q before the change", c.file, c.want)
		}
		if !strings.Contains(after[c.file], c.want) {
			t.Errorf("%s lacks %q after the change", c.file, c.want)
		}
	}
}

// A code in the header and not in the table (or the other way round) stops
// the generator with what to add where.
func TestHeaderAndTableMustAgree(t *testing.T) {
	table := []coord.ErrorCodeInfo{{Code: 0, Name: "OK", Text: "success"}, {Code: 1, Name: "INVALID_ARG", Text: "invalid argument"},
		{Code: 30, Name: "FENCED", Text: "fenced"}}
	in := fixtureInputs(t, fixtureHeader, fixtureGo, table) // the header also has NEXT = 31
	if _, err := renderAll(in); err == nil || !strings.Contains(err.Error(), "KRABKA_ERR_NEXT = 31 and coord.ErrorTable does not") {
		t.Errorf("header ahead of the table: %v", err)
	}
	in.errors = append(table, coord.ErrorCodeInfo{Code: 31, Name: "NEXT", Text: "next"}, coord.ErrorCodeInfo{Code: 40, Name: "LATER", Text: "later"})
	if _, err := renderAll(in); err == nil || !strings.Contains(err.Error(), "add KRABKA_ERR_LATER = 40") {
		t.Errorf("table ahead of the header: %v", err)
	}
	in.errors[3].Code = 32 // NEXT renumbered
	in.errors = in.errors[:4]
	if _, err := renderAll(in); err == nil || !strings.Contains(err.Error(), "NEXT = 32") {
		t.Errorf("renumbered: %v", err)
	}
}

// ABI 2: krabka_err_desc_t and krabka_get_err_descs. The child's table is
// an array of the header's struct (filled by field name) and the function
// answers from it in a forked child; the parent calls the Go export.
func TestGuardAnswersErrDescsInTheChild(t *testing.T) {
	hdr := strings.Replace(fixtureHeader, "const char *krabka_version(void);", `typedef struct krabka_err_desc {
    krabka_err_t code;
    const char *name;
    const char *desc;
    int retriable;
    int fatal;
} krabka_err_desc_t;
void krabka_get_err_descs(const krabka_err_desc_t **descs, size_t *count);
const char *krabka_version(void);`, 1)
	table := []coord.ErrorCodeInfo{{Code: 0, Name: "OK", Text: "success"}, {Code: 1, Name: "INVALID_ARG", Text: "invalid \"argument\""},
		{Code: 30, Name: "FENCED", Text: "fenced", Fatal: true}, {Code: 31, Name: "NEXT", Text: "next", Retriable: true}}
	in := &inputs{header: parseFixture(t, hdr), errors: table}
	got, err := renderGuard(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"static const krabka_err_desc_t kc_child_errs[] = {\n",
		`    {(krabka_err_t)1, "INVALID_ARG", "invalid \"argument\"", 0, 0},` + "\n",
		`    {(krabka_err_t)31, "NEXT", "next", 1, 0},` + "\n",
		"    return e != NULL ? e->desc : \"unknown error\";\n",
		"static void kc_child_get_err_descs(const krabka_err_desc_t **descs, size_t *count) {\n",
		"extern void kc_go_get_err_descs(const krabka_err_desc_t **descs, size_t *count);\n",
		"void krabka_get_err_descs(const krabka_err_desc_t **descs, size_t *count) {\n    if (kc_forked()) { kc_child_get_err_descs(descs, count); return; }\n    kc_go_get_err_descs(descs, count);\n}\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("kc_guard.c lacks %q", want)
		}
	}
	if strings.Contains(got, "struct kc_child_err") {
		t.Error("kc_guard.c keeps the ABI 1 table next to the krabka_err_desc_t one")
	}
	// A field the generator cannot fill from the table is an error.
	bad := strings.Replace(hdr, "    int fatal;\n", "    int fatal;\n    int severity;\n", 1)
	if _, err := renderGuard(&inputs{header: parseFixture(t, bad), errors: table}); err == nil || !strings.Contains(err.Error(), "krabka_err_desc_t.severity") {
		t.Errorf("unknown field: %v", err)
	}
}

// A new function that returns something else than krabka_err_t needs a
// child fallback: the generator says so instead of writing a guard that
// would enter Go in a child.
func TestGuardNeedsAFallback(t *testing.T) {
	hdr := strings.Replace(fixtureHeader, "void krabka_free(void *ptr);", "void krabka_free(void *ptr);\nint krabka_new_count(void);", 1)
	_, err := renderGuard(&inputs{header: parseFixture(t, hdr)})
	if err == nil || !strings.Contains(err.Error(), "krabka_new_count returns int: give it a child fallback") {
		t.Errorf("%v", err)
	}
}
