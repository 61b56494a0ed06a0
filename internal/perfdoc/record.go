package perfdoc

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// SampleTag starts a sample line of the line protocol that the benches
// outside Go print (bench/README.md):
//
//	KRABKA-SAMPLE<TAB>name<TAB>unit<TAB>value<TAB>what
//
// one line per sample; the samples of one name form one measure.
const SampleTag = "KRABKA-SAMPLE"

// SettingTag: KRABKA-SETTING<TAB>key<TAB>value records a setting of the run.
const SettingTag = "KRABKA-SETTING"

// Recorder collects the samples of a bench's output.
type Recorder struct {
	GoBench bool // also read `go test -bench` result lines

	order    []string
	samples  map[string][]float64
	unit     map[string]string
	what     map[string]string
	extra    map[string]map[string][]float64
	Settings map[string]string
}

// NewRecorder returns an empty recorder.
func NewRecorder(goBench bool) *Recorder {
	return &Recorder{GoBench: goBench, samples: map[string][]float64{}, unit: map[string]string{},
		what: map[string]string{}, extra: map[string]map[string][]float64{}, Settings: map[string]string{}}
}

var goBenchLine = regexp.MustCompile(`^Benchmark(\S+?)(?:-\d+)?\s+(\d+)\s+(.*)$`)

// Line takes one line of output; it returns an error for a malformed
// sample line (a bench that breaks the protocol must not be recorded
// silently wrong).
func (r *Recorder) Line(l string) error {
	l = strings.TrimRight(l, "\r\n")
	switch {
	case strings.HasPrefix(l, SampleTag+"\t"):
		f := strings.Split(l, "\t")
		if len(f) < 4 {
			return fmt.Errorf("sample line needs name, unit and value: %q", l)
		}
		v, err := strconv.ParseFloat(f[3], 64)
		if err != nil {
			return fmt.Errorf("sample line %q: %v", l, err)
		}
		what := ""
		if len(f) > 4 {
			what = f[4]
		}
		return r.add(f[1], f[2], what, v)
	case strings.HasPrefix(l, SettingTag+"\t"):
		f := strings.SplitN(l, "\t", 3)
		if len(f) != 3 {
			return fmt.Errorf("setting line needs key and value: %q", l)
		}
		r.Settings[f[1]] = f[2]
	case r.GoBench:
		m := goBenchLine.FindStringSubmatch(l)
		if m == nil {
			return nil
		}
		f := strings.Fields(m[3])
		var ns float64 = -1
		ex := map[string]float64{"iterations": 0}
		ex["iterations"], _ = strconv.ParseFloat(m[2], 64)
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return fmt.Errorf("benchmark line %q: %v", l, err)
			}
			switch f[i+1] {
			case "ns/op":
				ns = v
			case "B/op":
				ex["bytes_per_op"] = v
			case "allocs/op":
				ex["allocs_per_op"] = v
			default:
				ex[strings.ReplaceAll(f[i+1], "/", "_per_")] = v
			}
		}
		if ns < 0 {
			return fmt.Errorf("benchmark line without ns/op: %q", l)
		}
		if err := r.add(m[1], "ns", "Benchmark"+m[1], ns); err != nil {
			return err
		}
		if r.extra[m[1]] == nil {
			r.extra[m[1]] = map[string][]float64{}
		}
		for k, v := range ex {
			r.extra[m[1]][k] = append(r.extra[m[1]][k], v)
		}
	}
	return nil
}

func (r *Recorder) add(name, unit, what string, v float64) error {
	if u, ok := r.unit[name]; ok && u != unit {
		return fmt.Errorf("measure %q: unit %q, earlier %q", name, unit, u)
	}
	if _, ok := r.unit[name]; !ok {
		r.order = append(r.order, name)
		r.unit[name], r.what[name] = unit, what
	}
	r.samples[name] = append(r.samples[name], v)
	return nil
}

// Copy reads out, writing every line to w, and records it.
func (r *Recorder) Copy(w io.Writer, out io.Reader) error {
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var first error
	for sc.Scan() {
		l := sc.Text()
		if !strings.HasPrefix(l, SampleTag+"\t") {
			fmt.Fprintln(w, l)
		}
		if err := r.Line(l); err != nil && first == nil {
			first = err
		}
	}
	if err := sc.Err(); err != nil && first == nil {
		first = err
	}
	return first
}

// Measures returns one measure per name, in the order first seen; the
// extra figures of a Go benchmark are their means over its runs.
func (r *Recorder) Measures() []Measure {
	var out []Measure
	for _, n := range r.order {
		m := Summarize(n, r.what[n], r.unit[n], r.samples[n])
		if ex := r.extra[n]; len(ex) > 0 {
			m.Extra = map[string]float64{}
			for k, vs := range ex {
				s := 0.0
				for _, v := range vs {
					s += v
				}
				m.Extra[k] = round(s / float64(len(vs)))
			}
		}
		out = append(out, m)
	}
	return out
}
