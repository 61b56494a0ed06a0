package perfdoc

import (
	"fmt"
	"strings"
)

// tables maps a region name to its renderer.
var tables = map[string]func(*gen) (string, error){
	"client":      clientTable,
	"group":       groupTable,
	"follow":      followTable,
	"core":        coreTable,
	"capi":        capiTable,
	"python":      pythonTable,
	"node":        nodeTable,
	"readme":      readmeTable,
	"results":     resultsList,
	"client-runs": clientRuns,
	"goals":       goalsTable,
	"procs":       procsTable,
	"crossrole":   crossroleTable,
	"pipeline":    pipelineTable,
	"scale":       scaleTable,
	"lease-tput":  leaseTputTable,
}

// The clusters of the side-by-side tables, in column order.
var clusters = []struct{ Label, Head string }{
	{"1n-tv2", "1 broker, tv2"},
	{"1n-tv1", "1 broker, tv1"},
	{"3n-tv2", "3 brokers, RF 3, min ISR 2, tv2"},
}

type row struct {
	label, bench, measure string
	fn                    func(*Measure) string
}

func withN(m *Measure) string { return fmt.Sprintf("%s (n %d)", lat(m), m.N) }

func group(m *Measure) string {
	return fmt.Sprintf("%s/s; %s", commas(fmt.Sprintf("%.0f", m.PerSecond)), lat(m))
}

func handoff(m *Measure) string {
	return fmt.Sprintf("%s (n %d, minted twice: %.0f)", lat(m), m.N, m.Extra["minted_more_than_once"])
}

var clientRows = []row{
	{"uncontended acquire (new role)", "client", "acquire", withN},
	{"renew (one lease transaction)", "client", "renew", withN},
	{"guarded produce of one record, one writer", "client", "produce", withN},
	{"describe from the live view", "client", "describe-view", withN},
	{"describe, one-shot read (no view)", "client", "describe-oneshot", withN},
	{"planned handoff, resign -> next acquire returned", "follow", "handoff", handoff},
	{"crash failover overhead after the deadline (lease 1 s)", "client", "failover", withN},
	{"guarded writes, 1 writer: commands/s; p50 / p99", "client", "group-1", group},
	{"guarded writes, 64 writers: commands/s; p50 / p99", "client", "group-64", group},
	{"guarded writes, 256 writers: commands/s; p50 / p99", "client", "group-256", group},
}

// sideBySide renders rows with one column per cluster and a column naming
// the results files.
func (g *gen) sideBySide(first string, rows []row) (string, []*File) {
	var b strings.Builder
	b.WriteString("| " + first)
	for _, c := range clusters {
		b.WriteString(" | " + c.Head)
	}
	b.WriteString(" | results files |\n|---")
	for range clusters {
		b.WriteString("|---:")
	}
	b.WriteString("|---|\n")
	var used []*File
	for _, r := range rows {
		b.WriteString("| " + r.label)
		var links []string
		for _, c := range clusters {
			s, f := g.cell(r.bench, c.Label, r.measure, r.fn)
			b.WriteString(" | " + s)
			if f != nil {
				links = append(links, g.link(f, c.Label))
				used = append(used, f)
			}
		}
		b.WriteString(" | " + strings.Join(links, ", ") + " |\n")
	}
	return b.String(), used
}

// procsRows: bench/handoff, the holder and its standbys as separate
// processes (make handoff-bench).
var procsRows = []row{
	{"planned handoff, resign call -> the successor's acquire returned", "procs", "handoff", handoff},
	{"the resign call alone", "procs", "resign-call", withN},
	{"crash failover, the killed holder's deadline -> the successor's acquire returned (lease 5 s)", "procs", "crash-overhead", handoff},
	{"one guarded write of one record, one writer, back to back", "procs", "write-1", withN},
}

func procsTable(g *gen) (string, error) {
	var b strings.Builder
	b.WriteString("| separate processes (p50 / p99) | 1 broker, tv2 | 3 brokers, RF 3, min ISR 2, tv2 | results files |\n|---|---:|---:|---|\n")
	var used []*File
	for _, r := range procsRows {
		var links []string
		b.WriteString("| " + r.label)
		for _, c := range []string{"1n-tv2", "3n-tv2"} {
			s, f := g.cell(r.bench, c, r.measure, r.fn)
			b.WriteString(" | " + s)
			if f != nil {
				links = append(links, g.link(f, c))
				used = append(used, f)
			}
		}
		b.WriteString(" | " + strings.Join(links, ", ") + " |\n")
	}
	if len(used) == 0 {
		return "", fmt.Errorf("no procs results file (make handoff-bench)")
	}
	return b.String() + "\nRuns:\n\n" + g.runs(used...), nil
}

func clientTable(g *gen) (string, error) {
	t, used := g.sideBySide("operation (p50 / p99)", clientRows)
	return t + "\nRuns:\n\n" + g.runs(used...), nil
}

func groupTable(g *gen) (string, error) {
	var b strings.Builder
	b.WriteString("| cluster | writers | commands/s | p50 / p90 / p99 / max | transactions | commands per transaction: mean / p10 / p50 / p90 / max | results file |\n")
	b.WriteString("|---|---:|---:|---:|---:|---|---|\n")
	var used []*File
	for _, c := range clusters {
		f := g.latest("client", c.Label, "group-1")
		if f == nil {
			continue
		}
		used = append(used, f)
		for _, m := range f.Measures {
			if !strings.HasPrefix(m.Name, "group-") {
				continue
			}
			e := m.Extra
			fmt.Fprintf(&b, "| %s | %.0f | %s | %s / %s / %s / %s ms | %.0f | %.1f / %.0f / %.0f / %.0f / %.0f | %s |\n",
				c.Head, e["writers"], commas(fmt.Sprintf("%.0f", m.PerSecond)), num(m.P50), num(m.P90), num(m.P99), num(m.Max),
				e["transactions"], e["commands_per_txn_mean"], e["commands_per_txn_p10"], e["commands_per_txn_p50"],
				e["commands_per_txn_p90"], e["commands_per_txn_max"], g.link(f, c.Label))
		}
	}
	if len(used) == 0 {
		return "", fmt.Errorf("no client results file with group measures")
	}
	return b.String(), nil
}

func followTable(g *gen) (string, error) {
	f := g.latest("follow", "1n-tv2", "big-describe-view")
	if f == nil {
		return "", fmt.Errorf("no follow results file with the big partition")
	}
	var b strings.Builder
	b.WriteString("| measure | figure | results file |\n|---|---:|---|\n")
	for _, name := range []string{"big-fill", "big-oneshot-read", "big-watch-catchup", "big-describe-view", "big-standby-step", "idle-cpu",
		"roles-acquire-all", "roles-renew-all", "roles-rss-per-role", "roles-heap-per-role", "roles-goroutines-per-role"} {
		m := f.Measure(name)
		if m == nil {
			continue
		}
		v := single(m)
		if m.N > 1 {
			v = fmt.Sprintf("p50 / p99 %s (n %d)", lat(m), m.N)
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", m.What, v, g.link(f, "1n-tv2"))
	}
	return b.String() + "\nRun: " + g.run(f) + "\n", nil
}

// perCall renders the measures of one file as "name | best | median | range".
func (g *gen) perCall(bench, head string) (string, error) {
	f := g.latest(bench, "", "")
	if f == nil {
		return "", fmt.Errorf("no %s results file", bench)
	}
	var b strings.Builder
	b.WriteString(head)
	for _, m := range f.Measures {
		fmt.Fprintf(&b, "| %s | %s | %s | %s-%s | %d |\n", m.What, num(m.Min), num(m.P50), num(m.Min), num(m.Max), m.N)
	}
	return b.String() + "\nRun: " + g.run(f) + "\n", nil
}

func capiTable(g *gen) (string, error) {
	return g.perCall("capi", "| call | ns per call, best run | median run | range | runs |\n|---|---:|---:|---:|---:|\n")
}

func pythonTable(g *gen) (string, error) {
	return g.perCall("python", "| operation | µs per call, best run | median run | range | runs |\n|---|---:|---:|---:|---:|\n")
}

func coreTable(g *gen) (string, error) {
	f := g.latest("core", "", "")
	if f == nil {
		return "", fmt.Errorf("no core results file")
	}
	var b strings.Builder
	b.WriteString("| benchmark | ns/op, median of runs | range | allocs/op | B/op | other |\n|---|---:|---:|---:|---:|---|\n")
	for _, m := range f.Measures {
		var other []string
		for _, k := range sortedKeys(keysOf(m.Extra)) {
			if k != "allocs_per_op" && k != "bytes_per_op" && k != "iterations" {
				other = append(other, fmt.Sprintf("%s %s", num(m.Extra[k]), strings.ReplaceAll(k, "_per_", "/")))
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s-%s | %s | %s | %s |\n", m.Name, num(m.P50), num(m.Min), num(m.Max),
			num(m.Extra["allocs_per_op"]), num(m.Extra["bytes_per_op"]), strings.Join(other, ", "))
	}
	return b.String() + "\nRun: " + g.run(f) + "\n", nil
}

func nodeTable(g *gen) (string, error) {
	f := g.latest("node", "", "")
	if f == nil {
		return "", fmt.Errorf("no node results file")
	}
	var b strings.Builder
	b.WriteString("| operation | µs per call, main thread: median (min-max) | worker thread: median (min-max) |\n|---|---:|---:|\n")
	for _, m := range f.Measures {
		if !strings.HasSuffix(m.Name, "-main") {
			continue
		}
		w := f.Measure(strings.TrimSuffix(m.Name, "-main") + "-worker")
		ws := "not measured"
		if w != nil {
			ws = fmt.Sprintf("%s (%s-%s)", num(w.P50), num(w.Min), num(w.Max))
		}
		fmt.Fprintf(&b, "| %s | %s (%s-%s) | %s |\n", strings.TrimSuffix(m.What, ", main thread"), num(m.P50), num(m.Min), num(m.Max), ws)
	}
	return b.String() + "\nRun: " + g.run(f) + "\n", nil
}

// readmeTable: the README's figures, each row naming its results file.
func readmeTable(g *gen) (string, error) {
	var b strings.Builder
	b.WriteString("| what | 1 broker (tv2) | 3 brokers, replication 3, min.insync.replicas 2 | results files |\n|---|---:|---:|---|\n")
	var used []*File
	add := func(label, bench, measure string, fn func(*Measure) string) {
		one, f1 := g.cell(bench, "1n-tv2", measure, fn)
		three, f3 := g.cell(bench, "3n-tv2", measure, fn)
		var links []string
		for _, f := range []*File{f1, f3} {
			if f != nil {
				links = append(links, g.link(f, f.Cluster()))
				used = append(used, f)
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", label, one, three, strings.Join(links, ", "))
	}
	add("uncontended acquire, p50 / p99", "client", "acquire", lat)
	add("renew, p50 / p99", "client", "renew", lat)
	add("guarded produce of one record, p50 / p99", "client", "produce", lat)
	add("describe from the live view, p50 / p99", "client", "describe-view", lat)
	add("describe, one-shot read, p50 / p99", "client", "describe-oneshot", lat)
	add("planned handoff, resign -> next acquire returned, p50 / p99", "follow", "handoff", lat)
	add("crash failover overhead after the deadline (lease 1 s), p50 / p99", "client", "failover", lat)
	add("planned handoff between separate processes (default topic), p50 / p99", "procs", "handoff", lat)
	add("crash failover between separate processes (lease 5 s), after the deadline, p50 / p99", "procs", "crash-overhead", lat)
	add("guarded writes, 1 writer: commands/s; p50 / p99", "client", "group-1", group)
	add("guarded writes, 64 writers on one leadership (group commit)", "client", "group-64", group)
	add("guarded writes, 256 writers", "client", "group-256", group)
	local := func(label, bench, measure string, fn func(*Measure) string) {
		f := g.latest(bench, "", measure)
		if f == nil {
			fmt.Fprintf(&b, "| %s | not measured | | |\n", label)
			return
		}
		used = append(used, f)
		fmt.Fprintf(&b, "| %s | %s | no broker involved | %s |\n", label, fn(f.Measure(measure)), g.link(f, f.Bench))
	}
	local("Describe / standby step with 1,000,000 records in the partition, p50", "follow", "big-describe-view", func(m *Measure) string {
		return num(m.P50) + " / " + g.other("follow", "big-standby-step", single)
	})
	local("a waiting standby's CPU (% of a core)", "follow", "idle-cpu", single)
	local("lease value encode / decode (Go), ns/op", "core", "EncodeLease", func(m *Measure) string {
		return num(m.P50) + " / " + g.other("core", "DecodeLease", func(m *Measure) string { return num(m.P50) }) + " ns"
	})
	local("`Evaluate`, ns/op", "core", "Evaluate", func(m *Measure) string { return num(m.P50) + " ns" })
	local("one C call across the boundary (token compare), best run", "capi", "token-compare", func(m *Measure) string { return num(m.Min) + " ns" })
	local("Python per call (token compare / role partition), best run", "python", "token-compare-a-compare-b", func(m *Measure) string {
		return num(m.Min) + " / " + g.other("python", "role-partition-str-16", func(m *Measure) string { return num(m.Min) }) + " µs"
	})
	local("Node per call, token compare (JavaScript) / murmur2 main thread / murmur2 worker, median", "node", "token-compare-a-compare-b-main", func(m *Measure) string {
		med := func(m *Measure) string { return num(m.P50) }
		return num(m.P50) + " / " + g.other("node", "murmur2-buffer-main", med) + " / " + g.other("node", "murmur2-buffer-worker", med) + " µs"
	})
	var r strings.Builder
	seen := map[string]bool{}
	for _, f := range used {
		if !seen[f.Name] {
			seen[f.Name] = true
			fmt.Fprintf(&r, "- %s: %s, load average %s before, %s after\n", g.link(f, ""), strings.Replace(f.Date, "T", " ", 1),
				loadStr(f.LoadBefore[:1]), loadStr(f.LoadAfter[:1]))
		}
	}
	return b.String() + "\nRuns (1-minute load average on 2 cores; commits, machine and broker settings in the files):\n\n" + r.String(), nil
}

// clientRuns: the main figures of every client results file, newest first,
// so that the spread between runs is visible.
func clientRuns(g *gen) (string, error) {
	var b strings.Builder
	b.WriteString("| run | load before / after | acquire | renew | produce | failover | 64 writers | results file |\n|---|---:|---:|---:|---:|---:|---:|---|\n")
	n := 0
	for i := len(g.files) - 1; i >= 0; i-- {
		f := g.files[i]
		if f.Bench != "client" {
			continue
		}
		n++
		cell := func(name string, fn func(*Measure) string) string {
			if m := f.Measure(name); m != nil {
				return fn(m)
			}
			return "not measured"
		}
		fmt.Fprintf(&b, "| %s, %s | %s / %s | %s | %s | %s | %s | %s | %s |\n", f.Cluster(), strings.Replace(f.Date, "T", " ", 1),
			loadStr(f.LoadBefore[:1]), loadStr(f.LoadAfter[:1]), cell("acquire", lat), cell("renew", lat), cell("produce", lat),
			cell("failover", lat), cell("group-64", group), g.link(f, f.Commit))
	}
	if n == 0 {
		return "", fmt.Errorf("no client results file")
	}
	return b.String(), nil
}

func keysOf(m map[string]float64) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}

// resultsList lists every results file of the schema.
func resultsList(g *gen) (string, error) {
	var b strings.Builder
	for i := len(g.files) - 1; i >= 0; i-- {
		b.WriteString("- " + g.run(g.files[i]) + "\n")
	}
	return b.String(), nil
}

// other renders another measure of the newest file of bench (the same file
// as the row's when it has it).
func (g *gen) other(bench, measure string, fn func(*Measure) string) string {
	f := g.latest(bench, "", measure)
	if f == nil {
		return "not measured"
	}
	g.used[f.Name] = true
	return fn(f.Measure(measure))
}

// goal is a target from an issue, judged against the newest figures.
type goal struct {
	what, target, bench, measure string
	met                          func(*Measure) bool
	show                         func(*Measure) string
}

var goals = []goal{
	{"planned handoff (issue 11)", "p50 <= 10 ms, p99 <= 30 ms, no double mint", "follow", "handoff",
		func(m *Measure) bool { return m.P50 <= 10 && m.P99 <= 30 && m.Extra["minted_more_than_once"] == 0 }, handoff},
	{"crash failover overhead (issue 11)", "p99 <= 25 ms", "client", "failover",
		func(m *Measure) bool { return m.P99 <= 25 }, withN},
	{"planned handoff across processes (issue 25)", "p50 <= 3 ms, p99 <= 10 ms, no double mint", "procs", "handoff",
		func(m *Measure) bool { return m.P50 <= 3 && m.P99 <= 10 && m.Extra["minted_more_than_once"] == 0 }, handoff},
	{"crash failover overhead across processes (issue 25)", "p99 <= 25 ms, no double mint", "procs", "crash-overhead",
		func(m *Measure) bool { return m.P99 <= 25 && m.Extra["minted_more_than_once"] == 0 }, handoff},
	{"guarded writes, 64 writers (issue 18)", ">= 20,000 commands/s, p99 < 25 ms", "client", "group-64",
		func(m *Measure) bool { return m.PerSecond >= 20000 && m.P99 < 25 }, group},
}

func goalsTable(g *gen) (string, error) {
	var b strings.Builder
	b.WriteString("| goal | target | 1 broker, tv2 | 3 brokers, RF 3, min ISR 2 | results files |\n|---|---|---|---|---|\n")
	for _, gl := range goals {
		fmt.Fprintf(&b, "| %s | %s", gl.what, gl.target)
		var links []string
		for _, c := range []string{"1n-tv2", "3n-tv2"} {
			f := g.latest(gl.bench, c, gl.measure)
			if f == nil {
				b.WriteString(" | not measured")
				continue
			}
			m := f.Measure(gl.measure)
			verdict := "**not met**"
			if gl.met(m) {
				verdict = "met"
			}
			fmt.Fprintf(&b, " | %s: %s", verdict, gl.show(m))
			links = append(links, g.link(f, c))
		}
		b.WriteString(" | " + strings.Join(links, ", ") + " |\n")
	}
	// The Node token operations on the main thread (issue 16): under 5 µs.
	f := g.latest("node", "", "token-compare-a-compare-b-main")
	if f != nil {
		worst, name := 0.0, ""
		for _, m := range f.Measures {
			if strings.HasSuffix(m.Name, "-main") && (strings.HasPrefix(m.Name, "token-") || strings.HasPrefix(m.Name, "fencingtoken-parse")) && m.P50 > worst {
				worst, name = m.P50, m.What
			}
		}
		verdict := "**not met**"
		if worst < 5 {
			verdict = "met"
		}
		fmt.Fprintf(&b, "| Node token operations on the main thread (issue 16) | median < 5 µs each | %s: slowest %s µs (%s) | no broker involved | %s |\n",
			verdict, num(worst), strings.TrimSuffix(name, ", main thread"), g.link(f, "node"))
	}
	// Every synchronous call on Node's main thread (issue 25): p99 <= 5 µs
	// in each of the fresh processes (node-mainthread: a call's -p99
	// measure holds one sample per process, so its max is the worst one).
	if f := g.latest("node-mainthread", "", "krabka_abi_version-p99"); f != nil {
		calls, over, worst, name := 0, 0, 0.0, ""
		for _, m := range f.Measures {
			if !strings.HasSuffix(m.Name, "-p99") || strings.HasPrefix(m.Name, "control-") {
				continue
			}
			calls++
			if m.Max > 5 {
				over++
			}
			if m.Max > worst {
				worst, name = m.Max, strings.TrimSuffix(m.Name, "-p99")
			}
		}
		verdict := "met"
		if over > 0 {
			verdict = fmt.Sprintf("**not met**: %d of %d calls above", over, calls)
		} else {
			verdict += fmt.Sprintf(": %d calls", calls)
		}
		fmt.Fprintf(&b, "| every synchronous call on Node's main thread (issue 25) | p99 <= 5 µs in each fresh process | %s; the slowest process's p99: %s µs (%s) | not measured | %s |\n",
			verdict, num(worst), name, g.link(f, "node-mainthread"))
	}
	return b.String(), nil
}

// pipelineTable: guarded writes per second with consumed offsets carried
// beside plain ones (issue 38, make pipeline-bench), per cluster and writer
// count, from the latest pipeline results file of each cluster.
func pipelineTable(g *gen) (string, error) {
	var b strings.Builder
	b.WriteString("| cluster | writers | plain: commands/s; p50 / p99 | with offsets: commands/s; p50 / p99 | with offsets / plain | results file |\n")
	b.WriteString("|---|---:|---:|---:|---:|---|\n")
	var used []*File
	for _, c := range clusters {
		f := g.latest("pipeline", c.Label, "")
		if f == nil {
			continue
		}
		used = append(used, f)
		for _, m := range f.Measures {
			if !strings.HasPrefix(m.Name, "offsets-") {
				continue
			}
			w := strings.TrimPrefix(m.Name, "offsets-")
			plain := f.Measure("plain-" + w)
			if plain == nil {
				continue
			}
			o := m
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %.2f | %s |\n", c.Head, w, group(plain), group(&o),
				o.PerSecond/plain.PerSecond, g.link(f, c.Label))
		}
	}
	if len(used) == 0 {
		return "", fmt.Errorf("no pipeline results file")
	}
	return b.String() + "\nRuns:\n\n" + g.runs(used...), nil
}
