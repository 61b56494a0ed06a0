package perfdoc

import (
	"strconv"
	"strings"
	"testing"
)

// crossroleFile is a results file of bench/crossrole: deposed of healthy
// holders, the dead holder's replacements (all, last seen, last unseen)
// and the stable offset held.
func crossroleFile(name, date, label, mode, leaseMs string, rounds int, deposed, healthy float64, all, seen, unseen, lso []float64) *File {
	f := testFile("crossrole", date, 1)
	f.Name = name
	f.LoadAfter = []float64{1, 1, 1}
	f.Settings = map[string]string{"label": label, "mode": mode, "krabka.lease.ms": leaseMs, "roles": "4", "rounds": strconv.Itoa(rounds)}
	per := make([]float64, rounds)
	per[0] = deposed
	m := Summarize("healthy-deposed", "deposed", "holders", per)
	m.Extra = map[string]float64{"deposed": deposed, "healthy_holders": healthy, "unhealthy_holders": 0}
	f.Measures = append(f.Measures, m)
	if len(all) > 0 {
		m := Summarize("dead-replacement", "replaced", "ms", all)
		m.Extra = map[string]float64{"not_replaced": float64(rounds - len(all)), "won_before_kill": 0}
		f.Measures = append(f.Measures, m)
	}
	for _, s := range []struct {
		name string
		v    []float64
	}{{"dead-replacement-last-seen", seen}, {"dead-replacement-last-unseen", unseen}, {"lso-held", lso}} {
		if len(s.v) > 0 {
			f.Measures = append(f.Measures, Summarize(s.name, s.name, "ms", s.v))
		}
	}
	return f
}

const crossroleDoc = "# P\n\n<!-- perfdoc:begin crossrole -->\n<!-- perfdoc:end crossrole -->\n"

// crossroleRow is the table row that starts with setting.
func crossroleRow(t *testing.T, doc, setting string) []string {
	t.Helper()
	for _, l := range strings.Split(doc, "\n") {
		if strings.HasPrefix(l, "| "+setting+" |") {
			cells := strings.Split(strings.Trim(l, "| "), " | ")
			if len(cells) != 8 {
				t.Fatalf("row %q: %d cells", l, len(cells))
			}
			return cells
		}
	}
	t.Fatalf("no row %q in\n%s", setting, doc)
	return nil
}

func TestCrossroleTable(t *testing.T) {
	files := []*File{
		crossroleFile("crossrole-before-6s-a.json", "2026-12-07T00:58:00Z", "before", "intruder", "6000", 4, 12, 16,
			[]float64{900, 1000, 1100, 1200}, []float64{900, 1000, 1100, 1200}, nil, []float64{6100, 6200, 6300, 6400}),
		crossroleFile("crossrole-before-6s-b.json", "2026-12-07T00:59:00Z", "before", "intruder", "6000", 4, 10, 16,
			// the overall measure differs from the rounds whose view held the last lease
			[]float64{-4000, 1010, 1020, 1070}, []float64{1010, 1020, 1070}, []float64{-4000}, []float64{6500, 6600, 6700, 6800}),
		crossroleFile("crossrole-before-30s.json", "2026-12-07T01:01:00Z", "before", "intruder", "30000", 3, 12, 12,
			[]float64{-8990, -8980, -8995}, nil, []float64{-8990, -8980, -8995}, []float64{30500, 30400, 30800}),
		crossroleFile("crossrole-before-control-6s.json", "2026-12-07T01:03:00Z", "before", "control", "6000", 4, 0, 16,
			[]float64{13, 12, 18.7, 14}, nil, nil, nil),
		// Neither before nor after, and another bench: not in the table.
		crossroleFile("crossrole-trial-6s.json", "2026-12-07T01:04:00Z", "trial", "intruder", "6000", 4, 3, 16,
			[]float64{1}, []float64{1}, nil, []float64{1}),
		testFile("procs", "2026-12-07T01:05:00Z", 1, Summarize("handoff", "h", "ms", []float64{1})),
	}
	files[5].Name = "procs.json"
	files[5].LoadAfter = []float64{1, 1, 1}

	out, used, err := Render(crossroleDoc, "../bench/results/", files)
	if err != nil {
		t.Fatal(err)
	}
	six := crossroleRow(t, out, "lease 6 s, intruder")
	want := []string{"lease 6 s, intruder", "12/16, 10/16", "not measured", "1020 / 1070 ms (3 of 4 rounds); the view held an older lease in 1: p50 -4000 ms",
		"not measured", "6700 ms (n 4)", "not measured"}
	for i, w := range want {
		if six[i] != w {
			t.Errorf("6 s row, column %d: %q, want %q", i, six[i], w)
		}
	}
	if !strings.Contains(six[7], "crossrole-before-6s-a.json") || !strings.Contains(six[7], "crossrole-before-6s-b.json") {
		t.Errorf("6 s row does not link both runs: %q", six[7])
	}
	thirty := crossroleRow(t, out, "lease 30 s, intruder")
	if thirty[1] != "12/12" || thirty[3] != "no such round (0 of 3); the view held an older lease in 3: p50 -8990 ms" || thirty[5] != "30,500 ms (n 3)" {
		t.Errorf("30 s row: %q", thirty)
	}
	ctl := crossroleRow(t, out, "lease 6 s, control (no intruder)")
	if ctl[1] != "0/16" || ctl[3] != "14.0 / 18.7 ms (4 of 4 rounds)" || ctl[5] != "no intruder" || ctl[2] != "not measured" {
		t.Errorf("control row: %q", ctl)
	}
	if i, j, k := strings.Index(out, "| lease 6 s, intruder"), strings.Index(out, "| lease 30 s, intruder"), strings.Index(out, "| lease 6 s, control"); !(i < j && j < k) {
		t.Errorf("rows out of order (intruder by lease, then the control):\n%s", out)
	}
	if strings.Contains(out, "crossrole-trial-6s.json") || strings.Contains(out, "procs.json") || used["procs.json"] {
		t.Errorf("a file of another label or bench is in the table:\n%s", out)
	}
	for _, f := range files[:4] {
		if !used[f.Name] || !strings.Contains(out, "- ["+f.Name+"]") {
			t.Errorf("%s is not cited in the runs", f.Name)
		}
	}

	// An "after" run fills its side of its own row only.
	files = append(files, crossroleFile("crossrole-after-6s.json", "2026-12-07T02:00:00Z", "after", "intruder", "6000", 4, 0, 16,
		[]float64{20, 25, 30, 35}, []float64{20, 25, 30}, []float64{35}, []float64{6050, 6060, 6070, 6080}))
	out, _, err = Render(crossroleDoc, "../bench/results/", files)
	if err != nil {
		t.Fatal(err)
	}
	six = crossroleRow(t, out, "lease 6 s, intruder")
	if six[1] != "12/16, 10/16" || six[2] != "0/16" || six[4] != "25.0 / 30.0 ms (3 of 4 rounds); the view held an older lease in 1: p50 35.0 ms" || six[6] != "6070 ms (n 4)" ||
		!strings.Contains(six[7], "crossrole-after-6s.json") {
		t.Errorf("6 s row with an after run: %q", six)
	}
	if thirty := crossroleRow(t, out, "lease 30 s, intruder"); thirty[2] != "not measured" || thirty[4] != "not measured" || thirty[6] != "not measured" {
		t.Errorf("30 s row took the after run of another lease: %q", thirty)
	}

	// No crossrole run at all is an error, as for the other tables.
	if _, _, err := Render(crossroleDoc, "../bench/results/", files[5:6]); err == nil {
		t.Error("no crossrole file: no error")
	}
}
