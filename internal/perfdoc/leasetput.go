package perfdoc

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// The lease throughput table (issue 35, bench/scale -mode tput, make
// lease-tput-bench): per cluster, every run without a label, newest first
// (runs of one profile on the shared 2-core machine differ by up to a
// factor of three, so no single run stands for it), one row per renewer
// count (its renew-<C> measure), with what T means for 100,000 roles under
// docs/OPERATIONS.md's rule (renew interval I >= 2·R/T, lease >= 3·I), and
// per cluster the range of T over every window and the sizing with the
// lowest.

// sizingRoles is the role count the table sizes the renew interval for.
const sizingRoles = 100000

// sizing is the renew interval and the lease that R roles need on a
// cluster that sustains perSecond lease transactions a second, in whole
// seconds rounded up: I >= 2·R/T, lease >= 3·I.
func sizing(roles, perSecond float64) (interval, lease float64) {
	interval = math.Ceil(2 * roles / perSecond)
	return interval, 3 * interval
}

// perRenewal is "X ms/s (Y ms a renewal)" of a CPU measure, or "not
// measured".
func perRenewal(m *Measure) string {
	if m == nil {
		return "not measured"
	}
	s := num(m.P50) + " ms/s"
	if v, ok := m.Extra["cpu_per_renewal_ms"]; ok {
		s += " (" + num(v) + " ms a renewal)"
	}
	return s
}

// machineBusy is "X ms/s (other Y; steal Z)" of a machine CPU measure, or
// "not measured".
func machineBusy(m *Measure) string {
	if m == nil {
		return "not measured"
	}
	other := "other not measured"
	if v, ok := m.Extra["other_ms_per_s"]; ok {
		other = "other " + num(v)
	}
	return fmt.Sprintf("%s ms/s (%s; steal %s)", num(m.P50), other, num(m.Extra["steal_ms_per_s"]))
}

func leaseTputTable(g *gen) (string, error) {
	var b strings.Builder
	b.WriteString("| cluster | run (UTC), load average before / after | renewers | lease transactions/s (T) | latency p50 / p90 / p99 | failed / leaderships ended | renewer process CPU | brokers' CPU | machine busy (other work; steal) | 100,000 roles need (I >= 2·R/T, lease >= 3·I) | results file |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|\n")
	var used []*File
	var summary []string
	for _, c := range clusters {
		var ts []float64
		var idle []string
		for i := len(g.files) - 1; i >= 0; i-- { // newest first
			f := g.files[i]
			if f.Bench != "lease-tput" || f.Cluster() != c.Label || f.Settings["label"] != "" {
				continue
			}
			used = append(used, f)
			run := fmt.Sprintf("%s, %s / %s", strings.Replace(strings.TrimSuffix(f.Date, "Z"), "T", " ", 1), num(f.LoadBefore[0]), num(f.LoadAfter[0]))
			for _, m := range f.Measures {
				conc, ok := strings.CutPrefix(m.Name, "renew-")
				if !ok || m.PerSecond <= 0 {
					continue
				}
				ts = append(ts, m.PerSecond)
				e := m.Extra
				iv, lease := sizing(sizingRoles, m.PerSecond)
				fmt.Fprintf(&b, "| %s | %s | %s | %s | %s / %s / %s ms | %.0f / %.0f | %s | %s | %s | renew every %s s, lease %s s | %s |\n",
					c.Head, run, conc, commas(fmt.Sprintf("%.0f", m.PerSecond)),
					num(m.P50), num(m.P90), num(m.P99), e["renewals_failed"], e["leaderships_ended"],
					perRenewal(f.Measure("client-cpu-"+conc)), perRenewal(f.Measure("broker-cpu-"+conc)), machineBusy(f.Measure("machine-cpu-"+conc)),
					commas(fmt.Sprintf("%.0f", iv)), commas(fmt.Sprintf("%.0f", lease)), g.link(f, c.Label+" "+f.Commit))
			}
			if m := f.Measure("broker-cpu-idle"); m != nil {
				idle = append(idle, num(m.P50))
			}
		}
		if len(ts) == 0 {
			continue
		}
		sort.Float64s(ts)
		lo, hi := ts[0], ts[len(ts)-1]
		iv, lease := sizing(sizingRoles, lo)
		line := fmt.Sprintf("%s: T from %s to %s a second over %d windows (median %s); with the lowest, 100,000 roles need a renewal every %s s and a lease of %s s",
			c.Label, commas(fmt.Sprintf("%.0f", lo)), commas(fmt.Sprintf("%.0f", hi)), len(ts), commas(fmt.Sprintf("%.0f", ts[len(ts)/2])),
			commas(fmt.Sprintf("%.0f", iv)), commas(fmt.Sprintf("%.0f", lease)))
		if len(idle) > 0 {
			line += "; the brokers idle (every role held, none renewed): " + strings.Join(idle, ", ") + " ms/s"
		}
		summary = append(summary, "- "+line+".")
	}
	if len(used) == 0 {
		return "", fmt.Errorf("no lease-tput results file without a label (make lease-tput-bench)")
	}
	return b.String() + "\nEvery run, newest first (median: the upper of the middle two when even):\n\n" + strings.Join(summary, "\n") + "\n\nRuns:\n\n" + g.runs(used...), nil
}
