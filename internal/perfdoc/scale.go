package perfdoc

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The scale table (issue 35, bench/scale): one row per figure, one column
// per label (before, after) and role count, each the newest run of that
// label and count.

var scaleLabels = []string{"before", "after"}

// scaleRows are the table's rows: the measure and how its cell reads.
var scaleRows = []struct {
	measure, title string
	cell           func(*Measure) string
}{
	{"acquire-all", "acquire every free role, one process", single},
	{"acquire", "one acquire of a free role, p50 / p99", lat},
	{"held-mem-per-role", "heap + goroutine stacks per held role", single},
	{"standby-mem-per-role", "heap + goroutine stacks per standby role (with the bench's goroutine when it waits in Acquire)", single},
	{"standby-heap-per-role", "of which Go heap", single},
	{"standby-stacks-per-role", "of which goroutine stacks", single},
	{"held-goroutines-per-role", "goroutines per held role", single},
	{"standby-goroutines-per-role", "goroutines per standby role (without the bench's own)", single},
	{"holder-goroutines", "goroutines, holder process", single},
	{"standby-goroutines", "goroutines, standby process (without the bench's own)", single},
	{"holder-sockets-per-broker", "sockets per broker, holder process", single},
	{"standby-sockets-per-broker", "sockets per broker, standby process", single},
	{"cpu-per-renewal", "CPU per renewal, holder process", single},
	{"holder-view-waits", "waits on the live views a second (one per wake-up of a waiter), holder process", single},
	{"standby-view-waits", "waits on the live views a second, standby process", single},
	{"holder-cpu", "CPU a second, holder process (after its acquisitions)", single},
	{"standby-cpu", "CPU a second, standby process", single},
	{"renewals-late", "renewals late (granted > 1 s after due)", single},
	{"renewals-missed", "renewals missed (+ leaderships ended)", single},
	{"takeovers", "takeovers while the holder lived", single},
	{"takeover-past-deadline", "standby takes over after the holder's SIGKILL, past the deadline, p50 / p99", lat},
	{"fold", "a fresh process folds the whole topic (both processes running)", scaleFold},
	{"fold-after-kill", "the same right after the holder's SIGKILL (waits for the markers the kill left open)", scaleFold},
}

// scaleWindow is a scale run's window (0 when its settings lack one).
func scaleWindow(f *File) time.Duration {
	d, _ := time.ParseDuration(f.Settings["window"])
	return d
}

func scaleFold(m *Measure) string {
	s := single(m)
	if r, ok := m.Extra["records"]; ok {
		s += fmt.Sprintf(" (%s records)", commas(strconv.FormatInt(int64(r), 10)))
	}
	return s
}

func scaleTable(g *gen) (string, error) {
	type col struct {
		label string
		roles int
	}
	newest := map[col]*File{}
	for _, f := range g.files { // oldest first: the newest wins
		if f.Bench != "scale" {
			continue
		}
		n, err := strconv.Atoi(f.Settings["roles"])
		if err != nil {
			continue
		}
		for _, l := range scaleLabels {
			// The newest run of the label and count, among those with the
			// longest window (the issue asks for 10 minutes; shorter runs
			// of later commits stay in the list and the prose).
			if f.Settings["label"] == l {
				if old := newest[col{l, n}]; old == nil || scaleWindow(f) >= scaleWindow(old) {
					newest[col{l, n}] = f
				}
			}
		}
	}
	if len(newest) == 0 {
		return "", fmt.Errorf("no scale results file labelled before or after (make scale-bench)")
	}
	var counts []int
	seen := map[int]bool{}
	for c := range newest {
		if !seen[c.roles] {
			seen[c.roles] = true
			counts = append(counts, c.roles)
		}
	}
	sort.Ints(counts)
	var cols []col
	for _, n := range counts {
		for _, l := range scaleLabels {
			cols = append(cols, col{l, n})
		}
	}
	var b strings.Builder
	b.WriteString("| figure |")
	for _, c := range cols {
		fmt.Fprintf(&b, " %s roles, %s |", commas(strconv.Itoa(c.roles)), c.label)
	}
	b.WriteString("\n|---|" + strings.Repeat("---:|", len(cols)) + "\n")
	var used []*File
	// How the standby waited (bench/scale -standby-api; runs before it
	// had the flag waited in Acquire).
	b.WriteString("| the standby waits in |")
	for _, c := range cols {
		api := "Acquire, a goroutine per role"
		if f := newest[c]; f == nil {
			api = "not measured"
		} else if strings.HasPrefix(f.Settings["standby.api"], "each") {
			api = "one AcquireEach"
		}
		b.WriteString(" " + api + " |")
	}
	b.WriteString("\n")
	for _, r := range scaleRows {
		b.WriteString("| " + r.title + " |")
		for _, c := range cols {
			f := newest[c]
			m := (*Measure)(nil)
			if f != nil {
				m = f.Measure(r.measure)
			}
			if m == nil {
				b.WriteString(" not measured |")
				continue
			}
			b.WriteString(" " + r.cell(m) + " |")
		}
		b.WriteString("\n")
	}
	b.WriteString("\nColumns: ")
	var links []string
	for _, c := range cols {
		if f := newest[c]; f != nil {
			used = append(used, f)
			links = append(links, fmt.Sprintf("%s roles %s: %s (window %s)", commas(strconv.Itoa(c.roles)), c.label, g.link(f, ""), f.Settings["window"]))
		}
	}
	b.WriteString(strings.Join(links, "; ") + ".\n")
	return b.String() + "\nRuns:\n\n" + g.runs(used...), nil
}
