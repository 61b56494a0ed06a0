package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var sizes = map[string]int{"codec": 22, "murmur2": 33, "partition": 43}

func TestParseCountsAcceptsTheRunnersShapes(t *testing.T) {
	for name, out := range map[string]string{
		"flat map":        `{"codec":{"passed":20,"failed":2}}`,
		"groups map":      `{"passed":20,"failed":2,"groups":{"codec":{"passed":20,"failed":2,"not_run":0}}}`,
		"groups array":    `{"groups":[{"group":"codec","passed":20,"failed":2,"notRun":0}]}`,
		"after log lines": "loading library\n{\"codec\":{\"passed\":20,\"failed\":2}}\n",
	} {
		counts, err := parseCounts([]byte(out))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if c := counts["codec"]; c.Passed != 20 || c.Failed != 2 || len(counts) != 1 {
			t.Errorf("%s: got %+v", name, counts)
		}
	}
}

func TestARunnerWithNoOutputCrashed(t *testing.T) {
	r := &Runner{Name: "c", ExitCode: 139}
	r.interpret(nil, sizes)
	if !r.Failed() || status(r) != "CRASHED" {
		t.Fatalf("status %s, problems %v", status(r), r.Problems)
	}
}

func TestUnreportedGroupsAreNotRunAndDoNotFail(t *testing.T) {
	r := &Runner{Name: "py"}
	r.interpret([]byte(`{"codec":{"passed":22,"failed":0}}`), sizes)
	if r.Failed() {
		t.Fatalf("failed: %v", r.Problems)
	}
	if c := r.Counts["murmur2"]; c.NotRun != 33 || c.Reported {
		t.Errorf("murmur2: %+v", c)
	}
}

func TestAFailedVectorFailsTheRow(t *testing.T) {
	r := &Runner{Name: "node", ExitCode: 1}
	r.interpret([]byte(`{"codec":{"passed":21,"failed":1}}`), sizes)
	if !r.Failed() || status(r) != "FAILED" || len(r.Problems) != 0 {
		t.Fatalf("status %s, problems %v", status(r), r.Problems)
	}
}

func TestCountsThatDoNotAddUpAreFlagged(t *testing.T) {
	r := &Runner{Name: "go"}
	r.interpret([]byte(`{"codec":{"passed":23,"failed":0},"murmur2":{"passed":30,"failed":0,"not_run":0}}`), sizes)
	if len(r.Problems) != 2 {
		t.Fatalf("problems %v", r.Problems)
	}
}

func TestNonZeroExitWithoutFailuresIsACrash(t *testing.T) {
	r := &Runner{Name: "go", ExitCode: 2}
	r.interpret([]byte(`{"codec":{"passed":22,"failed":0}}`), sizes)
	if !r.Failed() || !strings.Contains(strings.Join(r.Problems, ";"), "status 2") {
		t.Fatalf("problems %v", r.Problems)
	}
}

func TestARestrictedRowShowsOnlyItsGroups(t *testing.T) {
	r, err := parseRunnerFlag("kafka-java:murmur2,partition=java Check --json")
	if err != nil {
		t.Fatal(err)
	}
	r.interpret([]byte(`{"murmur2":{"passed":33,"failed":0,"not_run":0},"partition":{"passed":39,"failed":0,"not_run":4}}`), sizes)
	if r.Failed() {
		t.Fatalf("problems %v", r.Problems)
	}
	table := render([]*Runner{r}, sizes)
	if !strings.Contains(table, "33/0/0") || !strings.Contains(table, "39/0/4") || !strings.Contains(table, "72/0/4") {
		t.Errorf("table:\n%s", table)
	}
	if withoutJSONFlag(r.Command) != "java Check" {
		t.Errorf("text command %q", withoutJSONFlag(r.Command))
	}
}

// A row whose groups are all not run passed nothing: it fails, it does not
// count as a pass.
func TestARunnerThatRanNoVectorFails(t *testing.T) {
	for name, out := range map[string]string{
		"zero counts": `{"codec":{"passed":0,"failed":0}}`,
		"all not run": `{"codec":{"passed":0,"failed":0,"not_run":22}}`,
		"other scope": `{"murmur2":{"passed":0,"failed":0}}`,
	} {
		r := &Runner{Name: "py"}
		r.interpret([]byte(out), sizes)
		if !r.Failed() || !strings.Contains(strings.Join(r.Problems, "; "), "ran no vector") {
			t.Errorf("%s: failed=%v problems %v", name, r.Failed(), r.Problems)
		}
	}
}

func TestVectorFilesWithoutVectorsAreAnError(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "codec.json"), []byte(`{"group":"codec","vectors":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := groupSizes(dir); err == nil {
		t.Fatal("vector files holding no vector were accepted")
	}
	if _, err := groupSizes(t.TempDir()); err == nil {
		t.Fatal("an empty vector folder was accepted")
	}
}
