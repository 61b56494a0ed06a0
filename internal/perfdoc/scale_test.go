package perfdoc

import (
	"strings"
	"testing"
)

func scaleFile(name, date, label, roles string, heldKiB, foldS float64) *File {
	f := testFile("scale", date, 1)
	f.Name = name
	f.LoadAfter = []float64{1, 1, 1}
	f.Settings = map[string]string{"label": label, "roles": roles, "window": "2m0s"}
	fold := Value("fold", "fold", "s", foldS)
	fold.Extra = map[string]float64{"records": 12345}
	f.Measures = append(f.Measures, Value("held-mem-per-role", "held", "KiB", heldKiB), fold,
		Summarize("takeover-past-deadline", "past", "ms", []float64{100, 200, 300}),
		Value("standby-view-waits", "waits", "waits/s", heldKiB*100))
	return f
}

func TestScaleTable(t *testing.T) {
	files := []*File{
		scaleFile("scale-before-1000n-a.json", "2026-12-07T04:01:00Z", "before", "1000", 81.9, 2.04),
		scaleFile("scale-after-1000n-old.json", "2026-12-07T04:20:00Z", "after", "1000", 50, 1.5),
		scaleFile("scale-after-1000n-b.json", "2026-12-07T04:30:00Z", "after", "1000", 40.2, 1.1),
		scaleFile("scale-other-1000n.json", "2026-12-07T04:40:00Z", "other", "1000", 1, 1),
	}
	doc := "# P\n\n<!-- perfdoc:begin scale -->\n<!-- perfdoc:end scale -->\n"
	out, used, err := Render(doc, "r/", files)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| figure | 1,000 roles, before | 1,000 roles, after |",
		"| heap + goroutine stacks per held role | 81.9 KiB | 40.2 KiB |",
		"| a fresh process folds the whole topic (both processes running) | 2.04 s (12,345 records) | 1.10 s (12,345 records) |",
		"| goroutines per held role | not measured | not measured |",
		"| waits on the live views a second, standby process | 8190 waits/s | 4020 waits/s |",
		"[scale-after-1000n-b.json](r/scale-after-1000n-b.json)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if used["scale-after-1000n-old.json"] || used["scale-other-1000n.json"] || !used["scale-before-1000n-a.json"] {
		t.Errorf("cited %v: want the newest before and after only", used)
	}

	// A longer window wins over a newer, shorter run of the same label.
	long := scaleFile("scale-after-1000n-long.json", "2026-12-07T04:25:00Z", "after", "1000", 30, 1)
	long.Settings["window"] = "10m0s"
	out, used, err = Render(doc, "r/", append(files[:3:3], long))
	if err != nil {
		t.Fatal(err)
	}
	if !used["scale-after-1000n-long.json"] || used["scale-after-1000n-b.json"] || !strings.Contains(out, "| 81.9 KiB | 30.0 KiB |") {
		t.Errorf("cited %v: want the 10-minute run over the newer 2-minute one:\n%s", used, out)
	}
}
