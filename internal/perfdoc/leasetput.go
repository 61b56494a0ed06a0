package perfdoc

import (
	"fmt"
	"math"
	"strings"
)

// The lease throughput table (issue 35, bench/scale -mode tput, make
// lease-tput-bench): per cluster, the newest run without a label, one row
// per renewer count (its renew-<C> measure), with what T means for
// 100,000 roles under docs/OPERATIONS.md's rule (renew interval
// I >= 2·R/T, lease >= 3·I).

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
	b.WriteString("| cluster | roles | renewers | lease transactions/s (T) | latency p50 / p90 / p99 | failed / leaderships ended | renewer process CPU | brokers' CPU | machine busy (other work; steal) | 100,000 roles need (I >= 2·R/T, lease >= 3·I) | results file |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n")
	var used []*File
	var idle []string
	for _, c := range clusters {
		var f *File
		for i := len(g.files) - 1; i >= 0; i-- {
			if x := g.files[i]; x.Bench == "lease-tput" && x.Cluster() == c.Label && x.Settings["label"] == "" {
				f = x
				break
			}
		}
		if f == nil {
			continue
		}
		used = append(used, f)
		for _, m := range f.Measures {
			conc, ok := strings.CutPrefix(m.Name, "renew-")
			if !ok || m.PerSecond <= 0 {
				continue
			}
			e := m.Extra
			iv, lease := sizing(sizingRoles, m.PerSecond)
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s / %s / %s ms | %.0f / %.0f | %s | %s | %s | renew every %s s, lease %s s | %s |\n",
				c.Head, commas(fmt.Sprintf("%.0f", e["roles"])), conc, commas(fmt.Sprintf("%.0f", m.PerSecond)),
				num(m.P50), num(m.P90), num(m.P99), e["renewals_failed"], e["leaderships_ended"],
				perRenewal(f.Measure("client-cpu-"+conc)), perRenewal(f.Measure("broker-cpu-"+conc)), machineBusy(f.Measure("machine-cpu-"+conc)),
				commas(fmt.Sprintf("%.0f", iv)), commas(fmt.Sprintf("%.0f", lease)), g.link(f, c.Label))
		}
		if m := f.Measure("broker-cpu-idle"); m != nil {
			idle = append(idle, fmt.Sprintf("%s %s ms/s", c.Label, num(m.P50)))
		}
	}
	if len(used) == 0 {
		return "", fmt.Errorf("no lease-tput results file without a label (make lease-tput-bench)")
	}
	if len(idle) > 0 {
		b.WriteString("\nThe brokers' CPU with every role held and none renewed (before the first run): " + strings.Join(idle, ", ") + ".\n")
	}
	return b.String() + "\nRuns:\n\n" + g.runs(used...), nil
}
