package goconf

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// expectedVectors is the number of vectors in the suite; update it together
// with the vector files.
const expectedVectors = 677

func vectorFiles(t *testing.T) []string {
	t.Helper()
	files, err := DefaultFiles(filepath.Join("..", "vectors"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestEveryVectorPassesAgainstTheGoCore(t *testing.T) {
	res, err := RunFiles(vectorFiles(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Failures {
		t.Errorf("FAIL %s: %s", f.ID, f.Problem)
	}
	if res.Failed != 0 {
		t.Errorf("%d passed, %d failed", res.Passed, res.Failed)
	}
	if res.Passed+res.Failed != expectedVectors {
		t.Errorf("ran %d vectors, the suite has %d", res.Passed+res.Failed, expectedVectors)
	}
	if len(NotRun) != 0 {
		t.Errorf("the Go core must run every operation, but NotRun = %v", NotRun)
	}
}

func TestVectorIDsAreUniqueAcrossFiles(t *testing.T) {
	seen := map[string]string{}
	for _, p := range vectorFiles(t) {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var f struct {
			Vectors []struct {
				ID string `json:"id"`
			} `json:"vectors"`
		}
		if err := json.Unmarshal(data, &f); err != nil {
			t.Fatal(err)
		}
		for _, v := range f.Vectors {
			if prev, ok := seen[v.ID]; ok {
				t.Errorf("id %s in %s and %s", v.ID, prev, p)
			}
			seen[v.ID] = p
		}
	}
}

// A runner is trusted only once it has been seen to report a broken
// expectation: break one and check that exactly that vector fails.
func TestABrokenExpectationIsReportedByItsID(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "vectors", "codec.json"))
	if err != nil {
		t.Fatal(err)
	}
	broken := bytes.Replace(data, []byte(`"hex": "00000000000a636f6e74726f6c6c657200066e6f64652d31",
        "fields"`), []byte(`"hex": "00000000000a636f6e74726f6c6c657200066e6f64652d32",
        "fields"`), 1)
	if bytes.Equal(broken, data) {
		// The layout of the file differs from what this test expects;
		// break the expectation at the JSON level instead.
		var f map[string]any
		if err := json.Unmarshal(data, &f); err != nil {
			t.Fatal(err)
		}
		v := f["vectors"].([]any)[0].(map[string]any)
		v["expect"].(map[string]any)["hex"] = "00"
		broken, _ = json.Marshal(f)
	}
	p := filepath.Join(t.TempDir(), "codec.json")
	if err := os.WriteFile(p, broken, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := RunFiles([]string{p})
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed != 1 || len(res.Failures) != 1 || res.Failures[0].ID != "codec-golden-registration-key" {
		t.Fatalf("expected exactly codec-golden-registration-key to fail, got %+v", res.Failures)
	}
}

func TestRunReportsAPanicOrMalformedVectorAsAFailure(t *testing.T) {
	if p := Run(map[string]any{"id": "x", "op": "murmur2", "expect": map[string]any{"ok": true}}); p == "" {
		t.Fatal("a vector without inputs passed")
	}
	if p := Run(map[string]any{"id": "x", "op": "no_such_op", "expect": map[string]any{"ok": true}}); !strings.Contains(p, "unknown op") {
		t.Fatalf("unknown op reported as %q", p)
	}
}

// noSharedEnv, set to 1, says that the shared copy of the vectors
// (../shared/conformance beside the checkout) is deliberately absent, e.g. in
// a bare clone of this repository alone. Nothing in make test sets it: there
// a missing or empty shared copy fails the test.
const noSharedEnv = "KRABKA_CONFORMANCE_NO_SHARED"

// tests/conformance must be a verbatim copy of ../shared/conformance beside
// the checkout. That folder must exist and hold vectors, unless
// $KRABKA_CONFORMANCE_NO_SHARED=1 says it is deliberately absent.
func TestConformanceFolderMatchesTheSharedCopy(t *testing.T) {
	shared := filepath.Join("..", "..", "..", "..", "shared", "conformance")
	if os.Getenv(noSharedEnv) == "1" {
		t.Skipf("%s=1: the shared copy %s is declared absent; not compared", noSharedEnv, shared)
	}
	if _, err := os.Stat(shared); err != nil {
		t.Fatalf("the shared copy of the vectors is missing (%v); set %s=1 only where it is deliberately absent", err, noSharedEnv)
	}
	if files, _ := filepath.Glob(filepath.Join(shared, "vectors", "*.json")); len(files) == 0 {
		t.Fatalf("no vector files in %s: nothing to compare tests/conformance with", filepath.Join(shared, "vectors"))
	}
	local := ".."
	collect := func(root string) map[string][]byte {
		out := map[string][]byte{}
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			if d.IsDir() {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = b
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	want := collect(shared)
	got := collect(local)
	for name, w := range want {
		g, ok := got[name]
		switch {
		case !ok:
			t.Errorf("tests/conformance/%s is missing (present in %s)", name, shared)
		case !bytes.Equal(g, w):
			t.Errorf("tests/conformance/%s differs from %s", name, filepath.Join(shared, name))
		}
	}
	for name := range got {
		// Beside the copy live the runners of other surfaces (goconf, cmd,
		// java, ...); only the copied folders must hold nothing extra.
		top := strings.SplitN(filepath.ToSlash(name), "/", 2)[0]
		if top != "vectors" && top != "schema" && top != "README.md" {
			continue
		}
		if _, ok := want[name]; !ok {
			t.Errorf("tests/conformance/%s is not in %s", name, shared)
		}
	}
}
