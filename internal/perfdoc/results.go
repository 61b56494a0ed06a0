// Package perfdoc reads and writes the benchmark results files of
// bench/results (the schema is documented in bench/README.md) and
// generates the figure tables of docs/PERFORMANCE.md and README.md from
// them (cmd/perfdoc, make perf-doc). Its test fails when a generated table
// is stale or when a figure outside the generated tables names no results
// file.
package perfdoc

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Schema is the value of every results file's "schema" field.
const Schema = "krabka-bench/1"

// MaxSamples: a measure with at most this many samples keeps them all
// ("samples"); a larger one keeps a histogram instead.
const MaxSamples = 2000

// File is one results file: one run of one bench on one cluster.
type File struct {
	Schema     string            `json:"schema"`
	Bench      string            `json:"bench"`
	Commit     string            `json:"commit"`
	Dirty      bool              `json:"dirty"`
	Date       string            `json:"date"`
	Machine    Machine           `json:"machine"`
	LoadBefore []float64         `json:"load_before"`
	LoadAfter  []float64         `json:"load_after"`
	Kafka      *Kafka            `json:"kafka,omitempty"`
	Settings   map[string]string `json:"settings,omitempty"`
	Measures   []Measure         `json:"measures"`
	Note       string            `json:"note,omitempty"`

	// Name is the file's base name (not stored).
	Name string `json:"-"`
}

// Machine says where the run happened.
type Machine struct {
	CPU     string `json:"cpu"`
	Cores   int    `json:"cores"`
	OS      string `json:"os"`
	Runtime string `json:"runtime"`
}

// Kafka describes the cluster a bench ran against, as the brokers report it.
type Kafka struct {
	Version            string            `json:"version"`
	Nodes              int               `json:"nodes"`
	TransactionVersion int               `json:"transaction_version"`
	ReplicationFactor  int               `json:"replication_factor"`
	MinInsyncReplicas  int               `json:"min_insync_replicas"`
	TxnStateRF         int               `json:"transaction_state_replication_factor"`
	TxnStateMinISR     int               `json:"transaction_state_min_isr"`
	Settings           map[string]string `json:"settings,omitempty"`
}

// Measure is one measured quantity: n samples in Unit and their summary.
// Percentiles are nearest-rank: the sample at round(p*(n-1)) of the sorted
// samples.
type Measure struct {
	Name      string             `json:"name"`
	What      string             `json:"what,omitempty"`
	Unit      string             `json:"unit"`
	N         int                `json:"n"`
	Min       float64            `json:"min"`
	Mean      float64            `json:"mean"`
	P50       float64            `json:"p50"`
	P90       float64            `json:"p90"`
	P99       float64            `json:"p99"`
	Max       float64            `json:"max"`
	PerSecond float64            `json:"per_second,omitempty"`
	Extra     map[string]float64 `json:"extra,omitempty"`
	Samples   []float64          `json:"samples,omitempty"`
	Histogram *Histogram         `json:"histogram,omitempty"`
}

// Histogram: Counts[i] samples were <= UpperBounds[i] (and above the
// previous bound); the last bound is the maximum sample.
type Histogram struct {
	UpperBounds []float64 `json:"upper_bounds"`
	Counts      []int     `json:"counts"`
}

// Summarize builds a measure from raw samples (in unit).
func Summarize(name, what, unit string, samples []float64) Measure {
	m := Measure{Name: name, What: what, Unit: unit, N: len(samples)}
	if len(samples) == 0 {
		return m
	}
	s := make([]float64, len(samples))
	for i, v := range samples {
		s[i] = round(v)
	}
	sort.Float64s(s)
	sum := 0.0
	for _, v := range s {
		sum += v
	}
	pct := func(p float64) float64 { return s[int(p*float64(len(s)-1)+0.5)] }
	m.Min, m.Max, m.Mean = s[0], s[len(s)-1], round(sum/float64(len(s)))
	m.P50, m.P90, m.P99 = pct(0.50), pct(0.90), pct(0.99)
	if len(s) <= MaxSamples {
		m.Samples = make([]float64, len(samples))
		for i, v := range samples {
			m.Samples[i] = round(v) // in the order taken
		}
	} else {
		m.Histogram = histogram(s)
	}
	return m
}

// Value is a measure of one sample (a single figure such as a duration of
// a whole phase or a CPU share).
func Value(name, what, unit string, v float64) Measure {
	return Summarize(name, what, unit, []float64{v})
}

// Durations converts durations to float samples in unit ("ms", "us", "ns", "s").
func Durations(d []time.Duration, unit string) []float64 {
	div := map[string]float64{"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[unit]
	if div == 0 {
		panic("perfdoc: unknown duration unit " + unit)
	}
	out := make([]float64, len(d))
	for i, x := range d {
		out[i] = float64(x) / div
	}
	return out
}

// histogram: log-spaced buckets, 10 per decade, over the sorted samples.
func histogram(s []float64) *Histogram {
	h := &Histogram{}
	i := 0
	lo := s[0]
	if lo <= 0 {
		lo = 1e-3
	}
	b := math.Pow(10, math.Floor(math.Log10(lo)*10)/10)
	for i < len(s) {
		b = round(b * math.Pow(10, 0.1))
		n := 0
		for i < len(s) && s[i] <= b {
			i++
			n++
		}
		if n > 0 {
			h.UpperBounds = append(h.UpperBounds, b)
			h.Counts = append(h.Counts, n)
		}
	}
	return h
}

// round keeps 4 significant digits after the point for sub-unit values and
// 3 decimals otherwise: enough for any table, short in the file.
func round(v float64) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 6, 64), 64)
	return r
}

// NewFile starts a results file for bench: commit, date, machine and the
// load average now (LoadBefore).
func NewFile(bench string) *File {
	f := &File{Schema: Schema, Bench: bench, Date: time.Now().UTC().Format(time.RFC3339),
		Machine: ThisMachine(), LoadBefore: LoadAvg()}
	f.Commit, f.Dirty = GitCommit()
	return f
}

// ThisMachine reads the CPU model and count of this host.
func ThisMachine() Machine {
	m := Machine{Cores: runtime.NumCPU(), OS: runtime.GOOS + "/" + runtime.GOARCH, Runtime: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}

// LoadAvg is /proc/loadavg's 1, 5 and 15 minute figures (nil if unreadable).
func LoadAvg() []float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return nil
	}
	var out []float64
	for _, f := range strings.Fields(string(b))[:3] {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return nil
		}
		out = append(out, v)
	}
	return out
}

// GitCommit is the short commit of the working tree and whether files other
// than bench/results differ from it.
func GitCommit() (string, bool) {
	out, err := exec.Command("git", "rev-parse", "--short=7", "HEAD").Output()
	if err != nil {
		return "unknown", true
	}
	// Pathspecs from the top of the tree, whatever the working directory
	// (go test runs in the package's).
	st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no", "--", ":/", ":(top,exclude)bench/results").Output()
	return strings.TrimSpace(string(out)), err != nil || len(strings.TrimSpace(string(st))) > 0
}

// Finish records the load average now and writes f into dir (created if
// needed) as BENCH[-LABEL]-YYYYMMDDTHHMMSSZ-COMMIT.json; it returns the path.
func (f *File) Finish(dir, label string) (string, error) {
	f.LoadAfter = LoadAvg()
	t, err := time.Parse(time.RFC3339, f.Date)
	if err != nil {
		return "", err
	}
	name := f.Bench
	if label != "" {
		name += "-" + label
	}
	name += "-" + t.UTC().Format("20060102T150405Z") + "-" + f.Commit + ".json"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	b, err := json.MarshalIndent(f, "", " ")
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, name)
	return p, os.WriteFile(p, append(b, '\n'), 0o644)
}

// Load reads every results file of the schema in dir, oldest first (by
// date, then name). Files of another schema (the older produce benches)
// are skipped; a file that claims the schema but breaks it is an error.
func Load(dir string) ([]*File, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []*File
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		var probe struct {
			Schema string `json:"schema"`
		}
		if err := json.Unmarshal(b, &probe); err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		if probe.Schema != Schema {
			continue
		}
		f := &File{}
		if err := json.Unmarshal(b, f); err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		f.Name = e.Name()
		if err := f.check(); err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		out = append(out, f)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Date != out[j].Date {
			return out[i].Date < out[j].Date
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

func (f *File) check() error {
	switch {
	case f.Bench == "":
		return fmt.Errorf("no bench")
	case f.Commit == "":
		return fmt.Errorf("no commit")
	case len(f.LoadBefore) != 3 || len(f.LoadAfter) != 3:
		return fmt.Errorf("load_before and load_after must hold 3 figures")
	case f.Machine.Cores <= 0:
		return fmt.Errorf("no machine.cores")
	}
	if _, err := time.Parse(time.RFC3339, f.Date); err != nil {
		return fmt.Errorf("date: %w", err)
	}
	seen := map[string]bool{}
	for _, m := range f.Measures {
		if m.Name == "" || m.Unit == "" || m.N <= 0 {
			return fmt.Errorf("measure %q: name, unit and n > 0 required", m.Name)
		}
		if seen[m.Name] {
			return fmt.Errorf("measure %q twice", m.Name)
		}
		seen[m.Name] = true
		if len(m.Samples) != m.N && m.Histogram == nil {
			return fmt.Errorf("measure %q: n=%d but %d samples and no histogram", m.Name, m.N, len(m.Samples))
		}
	}
	return nil
}

// Measure returns the measure called name, or nil.
func (f *File) Measure(name string) *Measure {
	for i := range f.Measures {
		if f.Measures[i].Name == name {
			return &f.Measures[i]
		}
	}
	return nil
}

// Cluster is a short label of the file's cluster: "1n-tv2", "3n-tv2", or ""
// without Kafka.
func (f *File) Cluster() string { return f.Kafka.Label() }

// Label is the cluster's part of a results file's name: "1n-tv2", "3n-tv2".
func (k *Kafka) Label() string {
	if k == nil {
		return ""
	}
	return fmt.Sprintf("%dn-tv%d", k.Nodes, k.TransactionVersion)
}
