package perfdoc

import (
	"strings"
	"testing"
)

// tputFile is a results file of bench/scale -mode tput on a cluster of
// nodes brokers: per renewer count its renew measure (T per second, four
// latencies) and the CPU measures.
func tputFile(name, date, label string, nodes int, perSecond map[string]float64) *File {
	f := testFile("lease-tput", date, nodes)
	f.Name = name
	f.LoadAfter = []float64{1, 1, 1}
	f.Settings = map[string]string{"label": label}
	for _, conc := range []string{"64", "256"} {
		m := Summarize("renew-"+conc, "renew", "ms", []float64{10, 20, 30, 400})
		m.PerSecond = perSecond[conc]
		m.Extra = map[string]float64{"roles": 2000, "renewals_failed": 1, "leaderships_ended": 0}
		cpu := Value("client-cpu-"+conc, "client", "ms/s", 500)
		cpu.Extra = map[string]float64{"cpu_per_renewal_ms": 0.42}
		f.Measures = append(f.Measures, m, cpu)
		if conc == "64" {
			mach := Value("machine-cpu-"+conc, "machine", "ms/s", 1900)
			mach.Extra = map[string]float64{"other_ms_per_s": 150, "steal_ms_per_s": 4}
			f.Measures = append(f.Measures, mach)
		}
	}
	f.Measures = append(f.Measures, Value("broker-cpu-idle", "idle", "ms/s", 35))
	return f
}

func TestLeaseTputTable(t *testing.T) {
	files := []*File{
		tputFile("lease-tput-1n-tv2-old.json", "2026-12-07T17:00:00Z", "", 1, map[string]float64{"64": 900, "256": 950}),
		tputFile("lease-tput-1n-tv2-new.json", "2026-12-07T18:00:00Z", "", 1, map[string]float64{"64": 1250, "256": 1000}),
		tputFile("lease-tput-1n-tv2-smoke.json", "2026-12-07T19:00:00Z", "smoke", 1, map[string]float64{"64": 1, "256": 1}),
		tputFile("lease-tput-3n-tv2-a.json", "2026-12-07T18:10:00Z", "", 3, map[string]float64{"64": 400, "256": 0}),
	}
	doc := "# P\n\n<!-- perfdoc:begin lease-tput -->\n<!-- perfdoc:end lease-tput -->\n"
	out, used, err := Render(doc, "r/", files)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		// 2·100,000/1,250 = 160 s, lease 480 s; p50 of 10, 20, 30, 400 is the
		// sample at round(0.5·3) = 2 (nearest rank).
		"| 1 broker, tv2 | 2026-12-07 18:00:00, 1.00 / 1.00 | 64 | 1,250 | 30.0 / 400 / 400 ms | 1 / 0 | 500 ms/s (0.420 ms a renewal) | not measured | 1900 ms/s (other 150; steal 4.00) | renew every 160 s, lease 480 s | [1n-tv2 abc1234](r/lease-tput-1n-tv2-new.json) |",
		// 200,000/1,000 = 200 s.
		"| 1 broker, tv2 | 2026-12-07 18:00:00, 1.00 / 1.00 | 256 | 1,000 | 30.0 / 400 / 400 ms | 1 / 0 | 500 ms/s (0.420 ms a renewal) | not measured | not measured | renew every 200 s, lease 600 s |",
		// The older run has rows too, after the newer one.
		"| 1 broker, tv2 | 2026-12-07 17:00:00, 1.00 / 1.00 | 64 | 900 |",
		// 200,000/400 = 500 s; the run of 256 renewers has no rate and no row.
		"| 3 brokers, RF 3, min ISR 2, tv2 | 2026-12-07 18:10:00, 1.00 / 1.00 | 64 | 400 | 30.0 / 400 / 400 ms | 1 / 0 | 500 ms/s (0.420 ms a renewal) | not measured | 1900 ms/s (other 150; steal 4.00) | renew every 500 s, lease 1,500 s |",
		// The range over the four windows of 1n-tv2 (900, 950, 1,000, 1,250),
		// sized with the lowest: 200,000/900 = 222.2, so 223 s.
		"- 1n-tv2: T from 900 to 1,250 a second over 4 windows (median 1,000); with the lowest, 100,000 roles need a renewal every 223 s and a lease of 669 s; the brokers idle (every role held, none renewed): 35.0, 35.0 ms/s.",
		"- 3n-tv2: T from 400 to 400 a second over 1 windows (median 400)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if i, j := strings.Index(out, "2026-12-07 18:00:00, 1.00"), strings.Index(out, "2026-12-07 17:00:00, 1.00"); i < 0 || j < i {
		t.Errorf("the newer run is not first:\n%s", out)
	}
	if strings.Contains(out, "| 3 brokers, RF 3, min ISR 2, tv2 | 2026-12-07 18:10:00, 1.00 / 1.00 | 256 |") {
		t.Errorf("a row for a measure without a rate:\n%s", out)
	}
	if used["lease-tput-1n-tv2-smoke.json"] || !used["lease-tput-1n-tv2-old.json"] || !used["lease-tput-3n-tv2-a.json"] {
		t.Errorf("cited %v: want every unlabelled run", used)
	}
	if _, _, err := Render(doc, "r/", files[2:3]); err == nil {
		t.Error("a labelled run alone rendered a table")
	}
}

func TestSizing(t *testing.T) {
	for _, c := range []struct{ roles, t, iv, lease float64 }{
		{100000, 1200, 167, 501}, // 166.7 rounds up
		{10000, 1200, 17, 51},
		{1000, 2000, 1, 3},
	} {
		if iv, lease := sizing(c.roles, c.t); iv != c.iv || lease != c.lease {
			t.Errorf("sizing(%v, %v) = %v, %v; want %v, %v", c.roles, c.t, iv, lease, c.iv, c.lease)
		}
	}
}
