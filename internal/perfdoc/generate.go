package perfdoc

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// The generated parts of a document sit between
//
//	<!-- perfdoc:begin NAME -->
//	<!-- perfdoc:end NAME -->
//
// and are rewritten from the results files by Generate (make perf-doc).
// NAME is one of the tables below.

// Docs are the documents with generated tables, relative to the root, and
// the relative path from each to the results folder.
var Docs = []struct{ Path, ToResults string }{
	{"docs/PERFORMANCE.md", "../bench/results/"},
	{"README.md", "bench/results/"},
	{"docs/PIPELINES.md", "../bench/results/"},
}

// ResultsDir is the committed results folder, relative to the root.
const ResultsDir = "bench/results"

var region = regexp.MustCompile(`(?s)(<!-- perfdoc:begin ([a-z0-9-]+) -->\n)(.*?)(<!-- perfdoc:end ([a-z0-9-]+) -->)`)

// Render returns doc with every generated region rewritten, and the names
// of the results files it cited.
func Render(doc, toResults string, files []*File) (string, map[string]bool, error) {
	g := &gen{files: files, rel: toResults, used: map[string]bool{}}
	var firstErr error
	out := region.ReplaceAllStringFunc(doc, func(m string) string {
		sm := region.FindStringSubmatch(m)
		if sm[2] != sm[5] {
			if firstErr == nil {
				firstErr = fmt.Errorf("perfdoc:begin %s closed by perfdoc:end %s", sm[2], sm[5])
			}
			return m
		}
		fn, ok := tables[sm[2]]
		if !ok {
			if firstErr == nil {
				firstErr = fmt.Errorf("unknown generated table %q", sm[2])
			}
			return m
		}
		body, err := fn(g)
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("table %s: %w", sm[2], err)
		}
		return sm[1] + body + sm[4]
	})
	if n := strings.Count(doc, "<!-- perfdoc:begin "); n != len(region.FindAllString(doc, -1)) {
		return "", nil, fmt.Errorf("a perfdoc:begin marker has no matching end")
	}
	return out, g.used, firstErr
}

// Generate rewrites the documents under root; with write false it only
// reports which would change.
func Generate(root string, write bool) ([]string, error) {
	files, err := Load(filepath.Join(root, ResultsDir))
	if err != nil {
		return nil, err
	}
	var changed []string
	for _, d := range Docs {
		p := filepath.Join(root, d.Path)
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		out, _, err := Render(string(b), d.ToResults, files)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d.Path, err)
		}
		if out != string(b) {
			changed = append(changed, d.Path)
			if write {
				if err := os.WriteFile(p, []byte(out), 0o644); err != nil {
					return nil, err
				}
			}
		}
	}
	return changed, nil
}

// gen is the state of one document's rendering.
type gen struct {
	files []*File
	rel   string
	used  map[string]bool
}

// latest is the newest file of bench on cluster ("" = any or none) that has
// measure (if given).
func (g *gen) latest(bench, cluster, measure string) *File {
	for i := len(g.files) - 1; i >= 0; i-- {
		f := g.files[i]
		if f.Bench != bench || (cluster != "" && f.Cluster() != cluster) {
			continue
		}
		if measure != "" && f.Measure(measure) == nil {
			continue
		}
		return f
	}
	return nil
}

// link names f as a markdown link with text (the file name if empty).
func (g *gen) link(f *File, text string) string {
	g.used[f.Name] = true
	if text == "" {
		text = f.Name
	}
	return fmt.Sprintf("[%s](%s%s)", text, g.rel, f.Name)
}

// run describes f in one line: its link, date, commit and load.
func (g *gen) run(f *File) string {
	s := fmt.Sprintf("%s: %s UTC, commit %s", g.link(f, ""), strings.Replace(strings.TrimSuffix(f.Date, "Z"), "T", " ", 1), f.Commit)
	if f.Dirty {
		s += " (with uncommitted changes)"
	}
	s += fmt.Sprintf(", load average %s before, %s after", loadStr(f.LoadBefore), loadStr(f.LoadAfter))
	s += fmt.Sprintf(", %s, %d cores", f.Machine.CPU, f.Machine.Cores)
	if k := f.Kafka; k != nil {
		s += fmt.Sprintf("; Kafka %s, %d broker(s), transaction.version %d, replication %d, min.insync.replicas %d, transaction state replication %d / min ISR %d",
			k.Version, k.Nodes, k.TransactionVersion, k.ReplicationFactor, k.MinInsyncReplicas, k.TxnStateRF, k.TxnStateMinISR)
	}
	return s
}

func loadStr(l []float64) string {
	var p []string
	for _, v := range l {
		p = append(p, fmt.Sprintf("%.2f", v))
	}
	return strings.Join(p, " / ")
}

// runs lists the files in order of first use.
func (g *gen) runs(fs ...*File) string {
	var b strings.Builder
	seen := map[string]bool{}
	for _, f := range fs {
		if f == nil || seen[f.Name] {
			continue
		}
		seen[f.Name] = true
		b.WriteString("- " + g.run(f) + "\n")
	}
	return b.String()
}

// num formats a figure with about 3 significant digits.
func num(v float64) string {
	a := v
	if a < 0 {
		a = -a
	}
	switch {
	case a >= 10000:
		return commas(fmt.Sprintf("%.0f", v))
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	case a >= 0.01:
		return fmt.Sprintf("%.3f", v)
	case a == 0:
		return "0"
	default:
		return fmt.Sprintf("%.4f", v)
	}
}

func commas(s string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var out []byte
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}

var unitText = map[string]string{"us": "µs", "ms": "ms", "ns": "ns", "s": "s", "%": "%", "KiB": "KiB", "goroutines": "goroutines"}

func unit(u string) string {
	if t, ok := unitText[u]; ok {
		return t
	}
	return u
}

// lat is "p50 / p99 unit".
func lat(m *Measure) string {
	return fmt.Sprintf("%s / %s %s", num(m.P50), num(m.P99), unit(m.Unit))
}

func single(m *Measure) string { return num(m.P50) + " " + unit(m.Unit) }

// cell renders measure of bench on cluster with fn, or "not measured".
func (g *gen) cell(bench, cluster, measure string, fn func(*Measure) string) (string, *File) {
	f := g.latest(bench, cluster, measure)
	if f == nil {
		return "not measured", nil
	}
	return fn(f.Measure(measure)), f
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
