package perfdoc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The committed documents: every generated table is up to date and every
// figure outside them names a results file (or is labelled history).
func TestDocsMatchResults(t *testing.T) {
	problems, err := Check(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// Every committed results file of the schema loads and checks.
func TestCommittedResultsLoad(t *testing.T) {
	files, err := Load(filepath.Join("..", "..", ResultsDir))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no results file of schema " + Schema + " in " + ResultsDir)
	}
	for _, f := range files {
		if f.Kafka != nil && (f.Kafka.Nodes < 1 || f.Kafka.ReplicationFactor < 1 || f.Kafka.Version == "") {
			t.Errorf("%s: incomplete kafka block %+v", f.Name, f.Kafka)
		}
	}
}

func TestSummarizeNearestRank(t *testing.T) {
	var s []float64
	for i := 100; i >= 1; i-- {
		s = append(s, float64(i))
	}
	m := Summarize("x", "x", "ms", s)
	if m.N != 100 || m.Min != 1 || m.Max != 100 || m.P50 != 51 || m.P90 != 90 || m.P99 != 99 || m.Mean != 50.5 {
		t.Fatalf("summary %+v", m)
	}
	if len(m.Samples) != 100 || m.Samples[0] != 100 || m.Histogram != nil {
		t.Fatalf("samples not kept in order taken: %v", m.Samples[:3])
	}
}

func TestSummarizeHistogramAboveMaxSamples(t *testing.T) {
	var s []float64
	for i := 0; i < MaxSamples+500; i++ {
		s = append(s, 0.5+float64(i%1000)/10)
	}
	m := Summarize("x", "x", "ms", s)
	if m.Samples != nil || m.Histogram == nil {
		t.Fatal("want a histogram instead of samples")
	}
	total, prev := 0, 0.0
	for i, c := range m.Histogram.Counts {
		total += c
		if m.Histogram.UpperBounds[i] <= prev {
			t.Fatalf("bounds not increasing: %v", m.Histogram.UpperBounds)
		}
		prev = m.Histogram.UpperBounds[i]
	}
	if total != m.N || prev < m.Max {
		t.Fatalf("histogram holds %d of %d samples, last bound %v < max %v", total, m.N, prev, m.Max)
	}
}

func TestRecorder(t *testing.T) {
	r := NewRecorder(true)
	var out strings.Builder
	in := "hello\nKRABKA-SAMPLE\tcmp\tns\t80\ttoken compare\nKRABKA-SAMPLE\tcmp\tns\t90\ttoken compare\n" +
		"KRABKA-SETTING\tcalls\t100\n" +
		"BenchmarkFold-2   \t      68\t  17300000 ns/op\t   5760000 records/s\t  123 B/op\t 20000 allocs/op\n"
	if err := r.Copy(&out, strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "KRABKA-SAMPLE") || !strings.Contains(out.String(), "hello") {
		t.Fatalf("output passed through: %q", out.String())
	}
	ms := r.Measures()
	if len(ms) != 2 || ms[0].Name != "cmp" || ms[0].N != 2 || ms[0].Min != 80 || ms[1].Name != "Fold" || ms[1].P50 != 17300000 ||
		ms[1].Extra["allocs_per_op"] != 20000 || ms[1].Extra["records_per_s"] != 5760000 || r.Settings["calls"] != "100" {
		t.Fatalf("measures %+v settings %v", ms, r.Settings)
	}
	for _, bad := range []string{"KRABKA-SAMPLE\tx\tns\tfast", "KRABKA-SAMPLE\tx", "KRABKA-SETTING\tonly-key"} {
		if err := NewRecorder(false).Line(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	r2 := NewRecorder(false)
	_ = r2.Line("KRABKA-SAMPLE\tx\tns\t1")
	if err := r2.Line("KRABKA-SAMPLE\tx\tms\t1"); err == nil {
		t.Error("a unit change within one measure was accepted")
	}
}

func writeFile(t *testing.T, dir string, f *File) string {
	t.Helper()
	f.LoadAfter = []float64{1, 1, 1}
	p, err := f.Finish(dir, f.Kafka.Label())
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Base(p)
}

func testFile(bench, date string, nodes int, ms ...Measure) *File {
	return &File{Schema: Schema, Bench: bench, Commit: "abc1234", Date: date, Machine: Machine{CPU: "cpu", Cores: 2},
		LoadBefore: []float64{1, 2, 3}, Kafka: &Kafka{Version: "4.1.2", Nodes: nodes, TransactionVersion: 2, ReplicationFactor: nodes}, Measures: ms}
}

func TestLoadRejectsBrokenFiles(t *testing.T) {
	for name, body := range map[string]string{
		"no-load.json":    `{"schema":"krabka-bench/1","bench":"x","commit":"a","date":"2026-12-02T00:00:00Z","machine":{"cores":2},"measures":[]}`,
		"bad-date.json":   `{"schema":"krabka-bench/1","bench":"x","commit":"a","date":"yesterday","machine":{"cores":2},"load_before":[1,1,1],"load_after":[1,1,1]}`,
		"no-samples.json": `{"schema":"krabka-bench/1","bench":"x","commit":"a","date":"2026-12-02T00:00:00Z","machine":{"cores":2},"load_before":[1,1,1],"load_after":[1,1,1],"measures":[{"name":"m","unit":"ms","n":3,"samples":[1]}]}`,
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(dir); err == nil {
			t.Errorf("%s: loaded", name)
		}
	}
	dir := t.TempDir()
	_ = os.WriteFile(filepath.Join(dir, "old.json"), []byte(`{"bench":"python-produce"}`), 0o644)
	if fs, err := Load(dir); err != nil || len(fs) != 0 {
		t.Fatalf("a file of the older schema: %v %v", fs, err)
	}
}

// A generated table picks the newest file per cluster and names it; a
// stale table, a figure without a results file and a citation of a
// missing file are problems.
func TestGenerateAndCheck(t *testing.T) {
	root := t.TempDir()
	res := filepath.Join(root, ResultsDir)
	old := writeFile(t, res, testFile("client", "2026-12-01T00:00:00Z", 1, Summarize("renew", "renew", "ms", []float64{9, 9, 9})))
	newer := writeFile(t, res, testFile("client", "2026-12-02T00:00:00Z", 1, Summarize("renew", "renew", "ms", []float64{1, 2, 3})))
	three := writeFile(t, res, testFile("client", "2026-12-02T01:00:00Z", 3, Summarize("renew", "renew", "ms", []float64{4, 5, 60})))
	_ = os.MkdirAll(filepath.Join(root, "docs"), 0o755)
	perf := "# P\n\n<!-- perfdoc:begin client -->\n<!-- perfdoc:end client -->\n\nProse with no figure.\n"
	readme := "# R\n\n## Performance\n\n<!-- perfdoc:begin readme -->\n<!-- perfdoc:end readme -->\n\n## Next\n\nOutside: 5 ms is not checked here.\n"
	_ = os.WriteFile(filepath.Join(root, "docs/PERFORMANCE.md"), []byte(perf), 0o644)
	_ = os.WriteFile(filepath.Join(root, "README.md"), []byte(readme), 0o644)
	_ = os.WriteFile(filepath.Join(root, "docs/PIPELINES.md"), []byte("# Pipelines\n\nProse with no figure.\n"), 0o644)

	problems, err := Check(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) != 2 || !strings.Contains(problems[0], "stale") {
		t.Fatalf("want two stale documents, got %q", problems)
	}
	if _, err := Generate(root, true); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(root, "docs/PERFORMANCE.md"))
	doc := string(b)
	if !strings.Contains(doc, newer) || !strings.Contains(doc, three) || strings.Contains(doc, old) ||
		!strings.Contains(doc, "| 2.00 / 3.00 ms (n 3) |") || !strings.Contains(doc, "| 5.00 / 60.0 ms (n 3) |") {
		t.Fatalf("generated table:\n%s", doc)
	}
	if problems, _ := Check(root); len(problems) != 0 {
		t.Fatalf("after generate: %q", problems)
	}

	add := func(s string) {
		_ = os.WriteFile(filepath.Join(root, "docs/PERFORMANCE.md"), []byte(doc+s), 0o644)
	}
	add("\nA renew takes 3 ms here.\n")
	if problems, _ := Check(root); len(problems) != 1 || !strings.Contains(problems[0], `"3 ms"`) {
		t.Fatalf("an uncited figure: %q", problems)
	}
	add("\nA renew takes 3 ms ([file](../bench/results/" + newer + ")).\n")
	if problems, _ := Check(root); len(problems) != 0 {
		t.Fatalf("a cited figure: %q", problems)
	}
	add("\nA renew took 30 ms (history, commit 1234abc; no results file).\n\nPlain text.\n\n| a | b |\n|---|---|\n| x | 4 ms |\n")
	if problems, _ := Check(root); len(problems) != 1 || !strings.Contains(problems[0], `"4 ms"`) {
		t.Fatalf("history paragraph and an uncaptioned table: %q", problems)
	}
	add("\nTable (history, commit 1234abc):\n\n| a | b |\n|---|---|\n| x | 4 ms |\n\nThe setting `linger.ms=1`, 1,000 roles and the p99s are no figures.\n")
	if problems, _ := Check(root); len(problems) != 0 {
		t.Fatalf("a captioned history table: %q", problems)
	}
	add("\nSee ../bench/results/missing-1.json for 3 ms.\n")
	if problems, _ := Check(root); len(problems) != 1 || !strings.Contains(problems[0], "does not exist") {
		t.Fatalf("a missing file: %q", problems)
	}
	add("\n<!-- perfdoc:begin nosuch -->\n<!-- perfdoc:end nosuch -->\n")
	if _, err := Check(root); err == nil || !strings.Contains(err.Error(), "nosuch") {
		t.Fatalf("an unknown table: %v", err)
	}
}
