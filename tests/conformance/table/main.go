// Command table runs every conformance runner and prints one table of runner x
// vector group with passed / failed / not-run counts.
//
//	go run ./tests/conformance/table [-vectors DIR] [-timeout D] \
//	    -runner 'go=CMD' -runner 'c=CMD' ... -runner 'kafka-java:murmur2,partition=CMD'
//
// Each -runner is NAME[:GROUP,GROUP...]=COMMAND. COMMAND runs under `sh -c`
// from the current directory and must print its per-group counts as JSON on
// stdout (the runners' --json / -json form). The optional group list limits
// the groups the row covers; the other cells show "-".
//
// Accepted JSON shapes (the last line of stdout that starts with '{', or the
// whole of stdout):
//
//	{"codec": {"passed": 22, "failed": 0, "not_run": 0}, ...}
//	{"groups": {"codec": {...}, ...}, ...}
//	{"groups": [{"group": "codec", "passed": 22, ...}, ...], ...}
//
// "not_run" (also "notRun", "not-run", "skipped") is optional: the table
// computes not-run as the group's vector count (read from the vector files)
// minus passed and failed, and flags a runner whose own count disagrees.
// A group a runner does not report is wholly not run.
//
// The exit status is 1 when any vector failed, when a runner crashed (no JSON,
// JSON that does not parse, a non-zero exit with no failed vector, a timeout),
// when a runner's counts do not add up or when a runner passed no vector at
// all; 2 on bad usage or when the vector files hold no vector.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// Count is one cell of the table.
type Count struct {
	Passed, Failed, NotRun int
	// Reported is false when the runner said nothing about the group.
	Reported bool
}

// Runner is one row: a command and what came of it.
type Runner struct {
	Name    string
	Groups  []string // nil: every group
	Command string

	Counts   map[string]Count
	Problems []string // crash, bad output, inconsistent counts
	Stderr   string
	Elapsed  time.Duration
	ExitCode int
}

func (r *Runner) covers(group string) bool {
	if r.Groups == nil {
		return true
	}
	for _, g := range r.Groups {
		if g == group {
			return true
		}
	}
	return false
}

// Failed reports whether the row makes the whole run fail.
func (r *Runner) Failed() bool {
	if len(r.Problems) > 0 {
		return true
	}
	for _, c := range r.Counts {
		if c.Failed > 0 {
			return true
		}
	}
	return false
}

type runnerFlags []*Runner

func (f *runnerFlags) String() string { return "" }

func (f *runnerFlags) Set(s string) error {
	r, err := parseRunnerFlag(s)
	if err != nil {
		return err
	}
	*f = append(*f, r)
	return nil
}

func parseRunnerFlag(s string) (*Runner, error) {
	head, cmd, ok := strings.Cut(s, "=")
	if !ok || strings.TrimSpace(cmd) == "" || head == "" {
		return nil, fmt.Errorf("runner %q: want NAME[:GROUPS]=COMMAND", s)
	}
	r := &Runner{Name: head, Command: cmd}
	if name, groups, ok := strings.Cut(head, ":"); ok {
		r.Name = name
		r.Groups = []string{}
		for _, g := range strings.Split(groups, ",") {
			if g = strings.TrimSpace(g); g != "" {
				r.Groups = append(r.Groups, g)
			}
		}
	}
	return r, nil
}

func main() {
	var runners runnerFlags
	vectors := flag.String("vectors", "tests/conformance/vectors", "directory of the vector files (for the group sizes)")
	timeout := flag.Duration("timeout", 5*time.Minute, "bound on each runner")
	details := flag.Bool("details", true, "on a failure, re-run the runner without its JSON flag and show its report")
	flag.Var(&runners, "runner", "NAME[:GROUP,...]=COMMAND (repeatable)")
	flag.Parse()
	if len(runners) == 0 || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: table [-vectors DIR] [-timeout D] -runner NAME[:GROUPS]=COMMAND ...")
		os.Exit(2)
	}
	sizes, err := groupSizes(*vectors)
	if err != nil {
		fmt.Fprintln(os.Stderr, "table:", err)
		os.Exit(2)
	}
	for _, r := range runners {
		fmt.Fprintf(os.Stderr, "conformance: running %s\n", r.Name)
		stdout := run(r, *timeout)
		r.interpret(stdout, sizes)
	}
	fmt.Print(render(runners, sizes))
	failed := false
	for _, r := range runners {
		if !r.Failed() {
			continue
		}
		failed = true
		fmt.Printf("\n%s (%s):\n", r.Name, r.Command)
		for _, p := range r.Problems {
			fmt.Printf("  %s\n", p)
		}
		for _, g := range sortedKeys(r.Counts) {
			if c := r.Counts[g]; c.Failed > 0 {
				fmt.Printf("  %s: %d vector(s) failed\n", g, c.Failed)
			}
		}
		if s := tail(r.Stderr, 20); s != "" {
			fmt.Printf("  stderr (last lines):\n%s", indent(s, "    "))
		}
		if *details {
			if out := textReport(r, *timeout); out != "" {
				fmt.Printf("  report (%s):\n%s", withoutJSONFlag(r.Command), indent(tail(out, 40), "    "))
			}
		}
	}
	if failed {
		fmt.Println("\nconformance: FAILED")
		os.Exit(1)
	}
	fmt.Println("\nconformance: all runners passed")
}

// groupSizes counts the vectors of each group in the vector files.
func groupSizes(dir string) (map[string]int, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no vector files in %s", dir)
	}
	sizes := map[string]int{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var file struct {
			Group   string            `json:"group"`
			Vectors []json.RawMessage `json:"vectors"`
		}
		if err := json.Unmarshal(data, &file); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if file.Group == "" {
			return nil, fmt.Errorf("%s: no group", f)
		}
		sizes[file.Group] += len(file.Vectors)
	}
	total := 0
	for _, n := range sizes {
		total += n
	}
	if total == 0 {
		return nil, fmt.Errorf("the vector files in %s hold no vector", dir)
	}
	return sizes, nil
}

// run executes the runner's command and returns its stdout; the exit code,
// stderr and problems are stored in r.
func run(r *Runner, timeout time.Duration) []byte {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", r.Command)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	r.Elapsed = time.Since(start)
	r.Stderr = stderr.String()
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		r.Problems = append(r.Problems, fmt.Sprintf("timed out after %s", timeout))
		r.ExitCode = -1
	case errors.As(err, &exit):
		r.ExitCode = exit.ExitCode()
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			r.Problems = append(r.Problems, fmt.Sprintf("crashed: killed by %s", ws.Signal()))
		}
	case err != nil:
		r.Problems = append(r.Problems, fmt.Sprintf("could not start: %v", err))
		r.ExitCode = -1
	}
	return stdout.Bytes()
}

// interpret parses the runner's JSON and checks that the counts add up.
func (r *Runner) interpret(stdout []byte, sizes map[string]int) {
	counts, err := parseCounts(stdout)
	if err != nil {
		r.Problems = append(r.Problems, fmt.Sprintf("crashed or gave no result (exit status %d): %v", r.ExitCode, err))
		r.Counts = map[string]Count{}
		return
	}
	r.Counts = map[string]Count{}
	anyFailed := false
	for g, c := range counts {
		size, known := sizes[g]
		if !known {
			r.Problems = append(r.Problems, fmt.Sprintf("reported group %q, which no vector file has", g))
			continue
		}
		if !r.covers(g) {
			r.Problems = append(r.Problems, fmt.Sprintf("reported group %q, outside the groups of its row", g))
			continue
		}
		notRun := size - c.Passed - c.Failed
		switch {
		case c.Passed < 0 || c.Failed < 0 || notRun < 0:
			r.Problems = append(r.Problems, fmt.Sprintf("%s: %d passed + %d failed does not fit the group's %d vectors", g, c.Passed, c.Failed, size))
			notRun = 0
		case c.NotRun >= 0 && c.NotRun != notRun:
			r.Problems = append(r.Problems, fmt.Sprintf("%s: reports %d not run, but %d - %d passed - %d failed = %d", g, c.NotRun, size, c.Passed, c.Failed, notRun))
		}
		if c.Failed > 0 {
			anyFailed = true
		}
		r.Counts[g] = Count{Passed: c.Passed, Failed: c.Failed, NotRun: notRun, Reported: true}
	}
	for g, size := range sizes {
		if _, ok := r.Counts[g]; !ok && r.covers(g) {
			r.Counts[g] = Count{NotRun: size}
		}
	}
	// A row that passed nothing proves nothing: every vector of its groups
	// not run (a runner that found no vector file, or skipped them all).
	passed := 0
	for _, c := range r.Counts {
		passed += c.Passed
	}
	if passed == 0 && !anyFailed {
		r.Problems = append(r.Problems, "ran no vector: every vector of its groups is not run")
	}
	if r.ExitCode != 0 && !anyFailed && len(r.Problems) == 0 {
		r.Problems = append(r.Problems, fmt.Sprintf("exited with status %d although no vector failed", r.ExitCode))
	}
	if r.ExitCode == 0 && anyFailed {
		r.Problems = append(r.Problems, "exited with status 0 although vectors failed")
	}
}

// rawCount is a group's counts as a runner reports them; NotRun is -1 when
// the runner does not say.
type rawCount struct {
	Passed, Failed, NotRun int
}

// parseCounts reads the per-group counts from a runner's stdout.
func parseCounts(stdout []byte) (map[string]rawCount, error) {
	text := strings.TrimSpace(string(stdout))
	if text == "" {
		return nil, errors.New("no output")
	}
	var doc any
	if err := decode(text, &doc); err != nil {
		// Not one JSON document: take the last line that starts with '{'.
		lines := strings.Split(text, "\n")
		found := false
		for i := len(lines) - 1; i >= 0; i-- {
			l := strings.TrimSpace(lines[i])
			if strings.HasPrefix(l, "{") {
				if err := decode(l, &doc); err != nil {
					return nil, fmt.Errorf("last JSON line does not parse: %v", err)
				}
				found = true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("no JSON object in the output (%q)", tail(text, 3))
		}
	}
	top, ok := doc.(map[string]any)
	if !ok {
		return nil, errors.New("the JSON is not an object")
	}
	out := map[string]rawCount{}
	if gs, ok := top["groups"]; ok {
		switch gs := gs.(type) {
		case map[string]any:
			top = gs
		case []any:
			for i, e := range gs {
				m, ok := e.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("groups[%d] is not an object", i)
				}
				name, _ := m["group"].(string)
				if name == "" {
					name, _ = m["name"].(string)
				}
				if name == "" {
					return nil, fmt.Errorf("groups[%d] has no group name", i)
				}
				c, err := countOf(m)
				if err != nil {
					return nil, fmt.Errorf("group %s: %v", name, err)
				}
				out[name] = c
			}
			return out, nil
		default:
			return nil, errors.New(`"groups" is neither an object nor an array`)
		}
	}
	for name, v := range top {
		m, ok := v.(map[string]any)
		if !ok {
			continue // a summary field such as "passed": 677
		}
		c, err := countOf(m)
		if err != nil {
			return nil, fmt.Errorf("group %s: %v", name, err)
		}
		out[name] = c
	}
	if len(out) == 0 {
		return nil, errors.New("the JSON names no group")
	}
	return out, nil
}

func decode(s string, v any) error {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("more than one JSON value")
	}
	return nil
}

func countOf(m map[string]any) (rawCount, error) {
	c := rawCount{NotRun: -1}
	var err error
	if c.Passed, err = intField(m, "passed"); err != nil {
		return c, err
	}
	if c.Failed, err = intField(m, "failed"); err != nil {
		return c, err
	}
	for _, k := range []string{"not_run", "notRun", "not-run", "skipped"} {
		if _, ok := m[k]; ok {
			if c.NotRun, err = intField(m, k); err != nil {
				return c, err
			}
			break
		}
	}
	return c, nil
}

func intField(m map[string]any, k string) (int, error) {
	v, ok := m[k]
	if !ok {
		return 0, fmt.Errorf("no %q count", k)
	}
	n, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("%q is not a number", k)
	}
	i, err := n.Int64()
	if err != nil {
		return 0, fmt.Errorf("%q: %v", k, err)
	}
	return int(i), nil
}

// render draws the table: one row per runner, one column per group, each
// cell passed/failed/not-run.
func render(runners []*Runner, sizes map[string]int) string {
	groups := make([]string, 0, len(sizes))
	total := 0
	for g, n := range sizes {
		groups = append(groups, g)
		total += n
	}
	sort.Strings(groups)
	header := append([]string{"runner"}, groups...)
	header = append(header, "total", "status")
	rows := [][]string{header}
	sizeRow := []string{"(vectors)"}
	for _, g := range groups {
		sizeRow = append(sizeRow, fmt.Sprint(sizes[g]))
	}
	sizeRow = append(sizeRow, fmt.Sprint(total), "")
	rows = append(rows, sizeRow)
	for _, r := range runners {
		row := []string{r.Name}
		var sum Count
		for _, g := range groups {
			c, ok := r.Counts[g]
			if !r.covers(g) {
				row = append(row, "-")
				continue
			}
			if !ok {
				row = append(row, "?")
				continue
			}
			sum.Passed += c.Passed
			sum.Failed += c.Failed
			sum.NotRun += c.NotRun
			row = append(row, cell(c))
		}
		if len(r.Counts) == 0 {
			row = append(row, "?", status(r))
		} else {
			row = append(row, cell(sum), status(r))
		}
		rows = append(rows, row)
	}
	widths := make([]int, len(header))
	for _, row := range rows {
		for i, s := range row {
			if len(s) > widths[i] {
				widths[i] = len(s)
			}
		}
	}
	var b strings.Builder
	b.WriteString("conformance: cells are passed/failed/not-run; - = group outside the runner's scope; ? = no result\n\n")
	for ri, row := range rows {
		for i, s := range row {
			if i > 0 {
				b.WriteString("  ")
			}
			if i == 0 || i == len(row)-1 {
				fmt.Fprintf(&b, "%-*s", widths[i], s)
			} else {
				fmt.Fprintf(&b, "%*s", widths[i], s)
			}
		}
		b.WriteString("\n")
		if ri == 1 {
			for i, w := range widths {
				if i > 0 {
					b.WriteString("  ")
				}
				b.WriteString(strings.Repeat("-", w))
			}
			b.WriteString("\n")
		}
	}
	lines := strings.Split(b.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

func cell(c Count) string { return fmt.Sprintf("%d/%d/%d", c.Passed, c.Failed, c.NotRun) }

func status(r *Runner) string {
	switch {
	case len(r.Problems) > 0 && len(r.Counts) == 0:
		return "CRASHED"
	case len(r.Problems) > 0:
		return "BROKEN"
	case r.Failed():
		return "FAILED"
	default:
		return fmt.Sprintf("ok (%.1fs)", r.Elapsed.Seconds())
	}
}

// textReport re-runs a failed runner without its JSON flag, to show which
// vectors failed.
func textReport(r *Runner, timeout time.Duration) string {
	cmdText := withoutJSONFlag(r.Command)
	if cmdText == r.Command {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", cmdText)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	out, _ := cmd.CombinedOutput()
	return string(out)
}

func withoutJSONFlag(command string) string {
	fields := strings.Fields(command)
	kept := fields[:0:0]
	for _, f := range fields {
		if f != "--json" && f != "-json" && f != "-json=true" && f != "--json=true" {
			kept = append(kept, f)
		}
	}
	return strings.Join(kept, " ")
}

func tail(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n") + "\n"
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n") + "\n"
}

func sortedKeys(m map[string]Count) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
