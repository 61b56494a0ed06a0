package perfdoc

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// The crossrole table (bench/crossrole, make crossrole-bench, issue 34):
// one row per setting (lease, with or without the intruder), a before and
// an after column per figure. A setting's files are told apart by their
// settings: "label" (before | after), "mode" (intruder | control) and
// "krabka.lease.ms".

// crossroleLabels are the columns of each figure, in order.
var crossroleLabels = []string{"before", "after"}

// crossroleKey is one row of the table.
type crossroleKey struct {
	leaseMs float64
	control bool
}

func (k crossroleKey) String() string {
	s := "lease " + strconv.FormatFloat(k.leaseMs/1000, 'f', -1, 64) + " s, "
	if k.control {
		return s + "control (no intruder)"
	}
	return s + "intruder"
}

// crossroleSetting reads the row and the label of a crossrole file; ok is
// false when the file does not say them.
func crossroleSetting(f *File) (k crossroleKey, label string, ok bool) {
	lease, err := strconv.ParseFloat(f.Settings["krabka.lease.ms"], 64)
	if err != nil || lease <= 0 {
		return k, "", false
	}
	switch f.Settings["mode"] {
	case "intruder":
	case "control":
		k.control = true
	default:
		return k, "", false
	}
	k.leaseMs = lease
	return k, f.Settings["label"], true
}

// crossroleDeposed: "deposed/healthy" of one run, with the unhealthy
// holders (not counted) when there were any.
func crossroleDeposed(f *File) string {
	m := f.Measure("healthy-deposed")
	if m == nil {
		return "not measured"
	}
	s := fmt.Sprintf("%.0f/%.0f", m.Extra["deposed"], m.Extra["healthy_holders"])
	if u := m.Extra["unhealthy_holders"]; u > 0 {
		s += fmt.Sprintf(" (+%.0f unhealthy)", u)
	}
	return s
}

// crossroleRounds is the number of rounds of a run.
func crossroleRounds(f *File) int {
	if n, err := strconv.Atoi(f.Settings["rounds"]); err == nil {
		return n
	}
	if m := f.Measure("healthy-deposed"); m != nil {
		return m.N
	}
	return 0
}

// crossroleReplaced: the dead holder's deadline -> its standby's win, p50 /
// max. With the intruder, of the rounds whose standby's view held the dead
// holder's last lease (the other rounds follow, apart); in the control, of
// every round.
func crossroleReplaced(f *File, control bool) string {
	rounds := crossroleRounds(f)
	all := f.Measure("dead-replacement")
	if all == nil {
		return fmt.Sprintf("not replaced in any of %d rounds", rounds)
	}
	var s string
	if control {
		s = fmt.Sprintf("%s / %s %s (%d of %d rounds)", num(all.P50), num(all.Max), unit(all.Unit), all.N, rounds)
	} else {
		if seen := f.Measure("dead-replacement-last-seen"); seen != nil {
			s = fmt.Sprintf("%s / %s %s (%d of %d rounds)", num(seen.P50), num(seen.Max), unit(seen.Unit), seen.N, rounds)
		} else {
			s = fmt.Sprintf("no such round (0 of %d)", rounds)
		}
		if un := f.Measure("dead-replacement-last-unseen"); un != nil {
			s += fmt.Sprintf("; the view held an older lease in %d: p50 %s %s", un.N, num(un.P50), unit(un.Unit))
		}
	}
	if n := all.Extra["not_replaced"]; n > 0 {
		s += fmt.Sprintf("; not replaced in %.0f", n)
	}
	if n := all.Extra["won_before_kill"]; n > 0 {
		s += fmt.Sprintf("; won before the kill in %.0f", n)
	}
	return s
}

// crossroleLSO: how long the intruder's record held the stable offset, p50.
func crossroleLSO(f *File, control bool) string {
	if control {
		return "no intruder"
	}
	m := f.Measure("lso-held")
	if m == nil {
		return "not measured"
	}
	return fmt.Sprintf("%s %s (n %d)", num(m.P50), unit(m.Unit), m.N)
}

func crossroleTable(g *gen) (string, error) {
	runs := map[crossroleKey]map[string][]*File{} // oldest first
	var keys []crossroleKey
	var used []*File
	for _, f := range g.files {
		if f.Bench != "crossrole" {
			continue
		}
		k, label, ok := crossroleSetting(f)
		if !ok {
			continue
		}
		known := false
		for _, l := range crossroleLabels {
			known = known || l == label
		}
		if !known {
			continue
		}
		if runs[k] == nil {
			runs[k] = map[string][]*File{}
			keys = append(keys, k)
		}
		runs[k][label] = append(runs[k][label], f)
	}
	if len(keys) == 0 {
		return "", fmt.Errorf("no crossrole results file labelled before or after (make crossrole-bench)")
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].control != keys[j].control {
			return !keys[i].control
		}
		return keys[i].leaseMs < keys[j].leaseMs
	})
	var b strings.Builder
	b.WriteString("| setting | healthy holders deposed, before | after | dead holder replaced after its deadline, p50 / max, before | after | stable offset held, p50, before | after | results files |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---|\n")
	for _, k := range keys {
		var deposed, replaced, lso, links []string
		for _, l := range crossroleLabels {
			fs := runs[k][l]
			if len(fs) == 0 {
				deposed = append(deposed, "not measured")
				replaced = append(replaced, "not measured")
				lso = append(lso, "not measured")
				continue
			}
			var counts []string
			for _, f := range fs {
				counts = append(counts, crossroleDeposed(f))
				used = append(used, f)
				links = append(links, g.link(f, fmt.Sprintf("%s %s %s", l, crossroleShape(f), strings.Replace(strings.TrimSuffix(f.Date, "Z"), "T", " ", 1))))
			}
			newest := fs[len(fs)-1]
			deposed = append(deposed, strings.Join(counts, ", "))
			replaced = append(replaced, crossroleReplaced(newest, k.control))
			lso = append(lso, crossroleLSO(newest, k.control))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", k, strings.Join(deposed, " | "), strings.Join(replaced, " | "),
			strings.Join(lso, " | "), strings.Join(links, ", "))
	}
	b.WriteString("\nHealthy holders deposed: deposed/healthy holders of each run of the setting, oldest first. " +
		"Dead holder replaced: the killed holder's last lease deadline -> its standby's acquire returned, of the newest run; " +
		"with the intruder only the rounds whose dead holder renewed last before the intruder's record was sent " +
		"(the standby's view held the dead holder's last lease), the other rounds after the semicolon (negative: the standby won before the deadline); " +
		"in the control every round. Stable offset held: the intruder's record acknowledged -> the partition's last stable offset passed it, of the newest run.\n")
	return b.String() + "\nRuns:\n\n" + g.runs(used...), nil
}

// crossroleShape is "<roles>x<rounds>" of a run.
func crossroleShape(f *File) string {
	return f.Settings["roles"] + "x" + f.Settings["rounds"]
}
