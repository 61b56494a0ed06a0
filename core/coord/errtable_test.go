package coord_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
)

// The one error table (coord.ErrorTable) is the source of truth: the C API
// is built from it, and every hand-written copy of the codes (the header's
// enum, Python's ErrorCode, Node's ErrorCode, the TypeScript declarations)
// and of the version must match it. A new code added anywhere else, a
// renumbered code or a forgotten copy fails here.
func TestErrorTableHasNoDrift(t *testing.T) {
	want := map[string]int{}
	seen := map[int]bool{}
	prev := -1
	for _, r := range coord.ErrorTable {
		if r.Code <= prev || seen[r.Code] {
			t.Fatalf("table not in strictly increasing code order at %s=%d", r.Name, r.Code)
		}
		prev, seen[r.Code] = r.Code, true
		want[r.Name] = r.Code
		if r.Text == "" || strings.ToUpper(r.Name) != r.Name {
			t.Errorf("%d: name %q text %q", r.Code, r.Name, r.Text)
		}
		if r.Retriable && r.Fatal {
			t.Errorf("%s is both retriable and fatal", r.Name)
		}
	}
	root := filepath.Join("..", "..")
	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	check := func(where string, re *regexp.Regexp, text string, prefix string) {
		t.Helper()
		got := map[string]int{}
		for _, m := range re.FindAllStringSubmatch(text, -1) {
			n, _ := strconv.Atoi(m[2])
			got[strings.TrimPrefix(m[1], prefix)] = n
		}
		for name, code := range want {
			if g, ok := got[name]; !ok || g != code {
				t.Errorf("%s: %s is %d (present %v), the table says %d", where, name, g, ok, code)
			}
		}
		for name, code := range got {
			if _, ok := want[name]; !ok {
				t.Errorf("%s: %s=%d is not in the table", where, name, code)
			}
		}
	}
	hdr := read("include/krabka_coord.h")
	enum := hdr[strings.Index(hdr, "typedef enum krabka_err {"):]
	enum = enum[:strings.Index(enum, "}")]
	check("include/krabka_coord.h", regexp.MustCompile(`\bKRABKA_(?:ERR_)?([A-Z0-9_]+)\s*=\s*(\d+)`), enum, "")
	py := read("bindings/python/src/krabka_coord/_errors.py")
	pyCls := py[strings.Index(py, "class ErrorCode"):]
	pyCls = pyCls[:strings.Index(pyCls, "\nclass ")]
	check("bindings/python _errors.py", regexp.MustCompile(`(?m)^\s+([A-Z0-9_]+) = (\d+)$`), pyCls, "")
	js := read("bindings/node/lib/errors.js")
	jsObj := js[strings.Index(js, "const ErrorCode"):]
	jsObj = jsObj[:strings.Index(jsObj, "});")]
	check("bindings/node errors.js", regexp.MustCompile(`(?m)^\s+([A-Z0-9_]+): (\d+),`), jsObj, "")
	ts := read("bindings/node/index.d.ts")
	tsObj := ts[strings.Index(ts, "export const ErrorCode"):]
	tsObj = tsObj[:strings.Index(tsObj, "};")]
	check("bindings/node index.d.ts", regexp.MustCompile(`readonly ([A-Z0-9_]+): (\d+);`), tsObj, "")

	// Versions.
	ver := fmt.Sprintf("%d.%d.%d", coord.VersionMajor, coord.VersionMinor, coord.VersionPatch)
	for _, c := range []struct{ file, re string }{
		{"include/krabka_coord.h", `#define KRABKA_VERSION_STRING "([^"]+)"`},
		{"bindings/python/src/krabka_coord/__init__.py", `__version__ = "([^"]+)"`},
		{"bindings/python/pyproject.toml", `(?m)^version = "([^"]+)"`},
		{"bindings/node/package.json", `"version": "([^"]+)"`},
	} {
		m := regexp.MustCompile(c.re).FindStringSubmatch(read(c.file))
		if m == nil || m[1] != ver {
			t.Errorf("%s: version %v, the table says %s", c.file, m, ver)
		}
	}
	for name, v := range map[string]int{"MAJOR": coord.VersionMajor, "MINOR": coord.VersionMinor, "PATCH": coord.VersionPatch} {
		if !strings.Contains(hdr, fmt.Sprintf("#define KRABKA_VERSION_%s %d\n", name, v)) {
			t.Errorf("header: KRABKA_VERSION_%s is not %d", name, v)
		}
	}
	if !strings.Contains(hdr, fmt.Sprintf("#define KRABKA_ABI_VERSION %d\n", coord.ABIVersion)) {
		t.Errorf("header: KRABKA_ABI_VERSION is not %d", coord.ABIVersion)
	}
}

// Every data category and every client sentinel has exactly one code, and
// the classifier's sentinels are all in the table.
func TestErrorTableCoversEveryKind(t *testing.T) {
	cats := map[core.Category]int{}
	sents := map[error]int{}
	for _, r := range coord.ErrorTable {
		if r.Category != "" {
			cats[r.Category]++
		}
		if r.Sentinel != nil {
			sents[r.Sentinel]++
		}
	}
	for _, c := range []core.Category{core.CatTruncated, core.CatTrailingBytes, core.CatUnsupportedVersion, core.CatUnknownKind,
		core.CatNegativeLength, core.CatInvalidUTF8, core.CatLeaseKeyHasMember, core.CatEmptyRole, core.CatEmptyMember,
		core.CatRoleTooLong, core.CatMemberTooLong, core.CatNegativeToken, core.CatTokenForm, core.CatInvalidPartitionCount,
		core.CatInvalidLeaseConfig} {
		if cats[c] != 1 {
			t.Errorf("category %s has %d codes", c, cats[c])
		}
	}
	for _, s := range []error{coord.ErrFenced, coord.ErrLeaseExpired, coord.ErrNotLeader, coord.ErrClosed, coord.ErrAuthorization,
		coord.ErrAuthentication, coord.ErrUnsupported, coord.ErrUnknownConfig, coord.ErrInvalidConfig, coord.ErrInvalidArgument,
		coord.ErrMessageTooLarge, coord.ErrUnknownTopicOrPartition, coord.ErrTLS, coord.ErrTimeout, coord.ErrTransport} {
		if sents[s] != 1 {
			t.Errorf("sentinel %v has %d codes", s, sents[s])
		}
		if k := coord.ClientErrorKind(coord.WrapError(s, nil, "x")); !errors.Is(k, s) {
			t.Errorf("ClientErrorKind does not know %v (got %v)", s, k)
		}
	}
}
