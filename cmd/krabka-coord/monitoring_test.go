package main

// The Grafana dashboard and the Prometheus alert rules of packaging/monitoring/
// (docs/OPERATIONS.md, Monitoring) against the exporter: every metric and
// label that a panel or a rule names is in the real /metrics of
// `krabka-coord exporter` following a held role on a real broker. promtool
// checks the rules themselves (make monitoring-check, mk/82-monitoring.mk).

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"go.yaml.in/yaml/v3"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/kafka"
)

const (
	dashboardFile = "packaging/monitoring/grafana/krabka-coord.json"
	rulesFile     = "packaging/monitoring/prometheus/krabka-coord-rules.yml"
)

// promExpr is one PromQL expression of an artifact and where it is.
type promExpr struct {
	where string // "panel 3 \"Lease remaining\" target A", "rule KrabkaRoleNoHolder"
	expr  string
}

func readArtifact(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(), rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Just the parts of Grafana's dashboard model these tests look at.
type grafanaDatasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type grafanaPanel struct {
	ID         int                `json:"id"`
	Type       string             `json:"type"`
	Title      string             `json:"title"`
	Datasource *grafanaDatasource `json:"datasource"`
	GridPos    *struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Targets []struct {
		RefID      string             `json:"refId"`
		Expr       string             `json:"expr"`
		Datasource *grafanaDatasource `json:"datasource"`
	} `json:"targets"`
	Panels []grafanaPanel `json:"panels"` // a collapsed row's panels
}

type grafanaDashboard struct {
	UID           string         `json:"uid"`
	Title         string         `json:"title"`
	SchemaVersion int            `json:"schemaVersion"`
	Panels        []grafanaPanel `json:"panels"`
	Templating    struct {
		List []struct {
			Name       string             `json:"name"`
			Type       string             `json:"type"`
			Query      json.RawMessage    `json:"query"`
			Definition string             `json:"definition"`
			Datasource *grafanaDatasource `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
}

// dashboardExprs checks the dashboard's structure and returns its PromQL:
// every panel target's expr and every query variable's query.
func dashboardExprs(data []byte) ([]promExpr, error) {
	var d grafanaDashboard
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("%s is not JSON: %v", dashboardFile, err)
	}
	var problems []string
	bad := func(f string, a ...any) { problems = append(problems, fmt.Sprintf(f, a...)) }
	if d.SchemaVersion < 36 {
		bad("schemaVersion %d (want a current one, 36 or later)", d.SchemaVersion)
	}
	if d.UID == "" || d.Title == "" {
		bad("no uid or title")
	}
	vars := map[string]string{}
	var out []promExpr
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
		if v.Type != "query" {
			continue
		}
		if v.Datasource == nil || v.Datasource.UID != "${datasource}" {
			bad("variable %s does not query the ${datasource} variable", v.Name)
		}
		q := v.Definition
		var obj struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &obj); err == nil && obj.Query != "" {
			q = obj.Query
		} else if err := json.Unmarshal(v.Query, &q); err != nil {
			bad("variable %s: query is neither a string nor {query: ...}", v.Name)
		}
		out = append(out, promExpr{"variable " + v.Name, q})
	}
	if vars["datasource"] != "datasource" {
		bad("no datasource variable (type datasource)")
	}
	if vars["role"] != "query" {
		bad("no role variable (type query)")
	}
	ids := map[int]bool{}
	var walk func([]grafanaPanel)
	walk = func(ps []grafanaPanel) {
		for _, p := range ps {
			name := fmt.Sprintf("panel %d %q", p.ID, p.Title)
			if ids[p.ID] || p.ID == 0 {
				bad("%s: id missing or not unique", name)
			}
			ids[p.ID] = true
			if p.GridPos == nil || p.GridPos.W == 0 || p.GridPos.H == 0 {
				bad("%s: no gridPos", name)
			}
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
				bad("%s: datasource is not the ${datasource} variable", name)
			}
			if len(p.Targets) == 0 {
				bad("%s: no targets", name)
			}
			for _, tg := range p.Targets {
				where := name + " target " + tg.RefID
				if tg.Datasource == nil || tg.Datasource.UID != "${datasource}" {
					bad("%s: datasource is not the ${datasource} variable", where)
				}
				if strings.TrimSpace(tg.Expr) == "" {
					bad("%s: no expr", where)
					continue
				}
				// A panel about roles follows the role variable.
				if strings.Contains(tg.Expr, "krabka_role_") && !strings.Contains(tg.Expr, `role=~"$role"`) {
					bad("%s: does not select role=~\"$role\"", where)
				}
				out = append(out, promExpr{where, tg.Expr})
			}
		}
	}
	walk(d.Panels)
	if len(problems) > 0 {
		return out, fmt.Errorf("%s:\n  %s", dashboardFile, strings.Join(problems, "\n  "))
	}
	return out, nil
}

// ruleExprs returns the expr of every rule of a Prometheus rules file.
func ruleExprs(data []byte) ([]promExpr, error) {
	var f struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Record      string            `yaml:"record"`
				Expr        string            `yaml:"expr"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%s is not YAML: %v", rulesFile, err)
	}
	var out []promExpr
	var problems []string
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				problems = append(problems, "recording rule "+r.Record+": these tests know only the exporter's metrics")
				continue
			}
			where := "rule " + r.Alert
			if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				problems = append(problems, where+": no summary or description annotation")
			}
			out = append(out, promExpr{where, r.Expr})
		}
	}
	if len(problems) > 0 {
		return out, fmt.Errorf("%s:\n  %s", rulesFile, strings.Join(problems, "\n  "))
	}
	return out, nil
}

// stripPromQL blanks out the string literals and comments of a PromQL (or
// Grafana) expression, so that a label value or a word in a comment is not
// taken for a name.
func stripPromQL(expr string) string {
	var b strings.Builder
	for i := 0; i < len(expr); i++ {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			b.WriteString(`""`)
			for i++; i < len(expr) && expr[i] != c; i++ {
				if expr[i] == '\\' && c != '`' {
					i++
				}
			}
		case c == '#':
			for i < len(expr) && expr[i] != '\n' {
				i++
			}
			b.WriteByte('\n')
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

var (
	reIdent    = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`)
	reKrabka   = regexp.MustCompile(`^krabka_[a-z0-9_]+$`)
	reSelector = regexp.MustCompile(`(krabka_[A-Za-z0-9_:]*)\s*\{([^}]*)\}`)
	reMatcher  = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)`)
	reGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)`)
)

// metricNames returns the krabka_ metric names an expression uses (every
// identifier that starts with krabka_, outside strings and comments; one
// that is not a well-formed name is returned as it is, so that it is
// reported missing).
func metricNames(expr string) []string {
	seen := map[string]bool{}
	var out []string
	for _, id := range reIdent.FindAllString(stripPromQL(expr), -1) {
		if strings.HasPrefix(id, "krabka_") && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// labelNames returns the label names an expression matches on krabka_
// selectors (metric -> labels) and those of its by/without/on/ignoring/
// group_* clauses.
func labelNames(expr string) (selectors map[string][]string, grouping []string) {
	s := stripPromQL(expr)
	selectors = map[string][]string{}
	for _, m := range reSelector.FindAllStringSubmatch(s, -1) {
		for _, l := range reMatcher.FindAllStringSubmatch(m[2], -1) {
			selectors[m[1]] = append(selectors[m[1]], l[1])
		}
	}
	for _, m := range reGrouping.FindAllStringSubmatch(s, -1) {
		for _, l := range strings.Split(m[1], ",") {
			if l = strings.TrimSpace(l); l != "" {
				grouping = append(grouping, l)
			}
		}
	}
	return selectors, grouping
}

// scrapeLabels are the labels Prometheus adds to every scraped series.
var scrapeLabels = map[string]bool{"job": true, "instance": true}

// missingInScrape lists every metric, and every label, that an expression
// names and the scraped families lack. Each krabka_ family must also have at
// least one series. An expression without any krabka_ metric is reported
// too, unless it only reads Prometheus' own up series.
func missingInScrape(exprs []promExpr, fams map[string]*dto.MetricFamily) []string {
	var out []string
	familyLabels := func(name string) map[string]bool {
		ls := map[string]bool{}
		if f := fams[name]; f != nil {
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					ls[l.GetName()] = true
				}
			}
		}
		return ls
	}
	for _, e := range exprs {
		before := len(out) // a missing metric explains its labels too
		names := metricNames(e.expr)
		if len(names) == 0 && !regexp.MustCompile(`^up\s*\{[^}]*\}(\s*==\s*0)?$`).MatchString(strings.TrimSpace(e.expr)) {
			out = append(out, e.where+": names no krabka_ metric")
		}
		usable := map[string]bool{}
		for l := range scrapeLabels {
			usable[l] = true
		}
		for _, n := range names {
			if !reKrabka.MatchString(n) {
				out = append(out, fmt.Sprintf("%s: %s is not a metric name", e.where, n))
				continue
			}
			f := fams[n]
			if f == nil || len(f.GetMetric()) == 0 {
				out = append(out, fmt.Sprintf("%s: %s is not in the exporter's output", e.where, n))
				continue
			}
			for l := range familyLabels(n) {
				usable[l] = true
			}
		}
		sels, grouping := labelNames(e.expr)
		for n, ls := range sels {
			have := familyLabels(n)
			for _, l := range ls {
				if fams[n] != nil && !have[l] && !scrapeLabels[l] {
					out = append(out, fmt.Sprintf("%s: %s has no label %s", e.where, n, l))
				}
			}
		}
		for _, l := range grouping {
			if !usable[l] && len(out) == before {
				out = append(out, fmt.Sprintf("%s: groups by %s, a label none of its metrics has", e.where, l))
			}
		}
	}
	sort.Strings(out)
	return out
}

// artifactExprs reads and checks both artifacts and returns their
// expressions; each must name at least one krabka_ metric in all.
func artifactExprs(t *testing.T) (dash, rules []promExpr) {
	t.Helper()
	dash, err := dashboardExprs(readArtifact(t, dashboardFile))
	if err != nil {
		t.Error(err)
	}
	rules, err = ruleExprs(readArtifact(t, rulesFile))
	if err != nil {
		t.Error(err)
	}
	for _, a := range []struct {
		file  string
		exprs []promExpr
	}{{dashboardFile, dash}, {rulesFile, rules}} {
		n := 0
		for _, e := range a.exprs {
			n += len(metricNames(e.expr))
		}
		if n == 0 {
			t.Errorf("%s references no krabka_ metric (%d expressions)", a.file, len(a.exprs))
		}
	}
	return dash, rules
}

// uses reports whether some expression names metric.
func uses(exprs []promExpr, metric string) bool {
	for _, e := range exprs {
		for _, n := range metricNames(e.expr) {
			if n == metric {
				return true
			}
		}
	}
	return false
}

// The artifacts cover what docs/OPERATIONS.md says they show, and the
// checker finds what it must (broker-free).
func TestMonitoringArtifactsParseAndCoverTheExporter(t *testing.T) {
	dash, rules := artifactExprs(t)
	for _, m := range []string{"krabka_role_leader_info", "krabka_role_failovers_total", "krabka_role_lease_remaining_seconds",
		"krabka_role_lease_live", "krabka_role_members", "krabka_role_seconds_since_last_change",
		"krabka_role_observe_errors_total", "krabka_client_reads_total", "krabka_role_view_lag_seconds",
		"krabka_group_member_shards", "krabka_group_member_target_shards", "krabka_group_moves_total",
		"krabka_group_moves_in_flight", "krabka_group_last_converge_seconds"} {
		if !uses(dash, m) {
			t.Errorf("no dashboard panel shows %s", m)
		}
	}
	alerts := map[string]string{}
	for _, r := range rules {
		alerts[strings.TrimPrefix(r.where, "rule ")] = r.expr
	}
	for alert, metric := range map[string]string{
		"KrabkaRoleNoHolder":          "krabka_role_lease_live",
		"KrabkaRoleHolderFlapping":    "krabka_role_failovers_total",
		"KrabkaRoleLeaseAtRisk":       "krabka_role_lease_remaining_seconds",
		"KrabkaExporterObserveErrors": "krabka_role_observe_errors_total",
		"KrabkaExporterViewStale":     "krabka_role_view_lag_seconds",
		"KrabkaExporterDown":          "",
	} {
		e, ok := alerts[alert]
		switch {
		case !ok:
			t.Errorf("no alert %s in %s", alert, rulesFile)
		case metric != "" && !uses([]promExpr{{alert, e}}, metric):
			t.Errorf("alert %s does not use %s: %s", alert, metric, e)
		case metric == "" && !strings.Contains(e, "up{"):
			t.Errorf("alert %s does not use up: %s", alert, e)
		}
	}

	// The parser: names in strings, comments and Grafana variables are not
	// metrics; a misspelt or malformed one is found.
	got := metricNames("sum by (role) (rate(krabka_role_failovers_total{role=~\"krabka_not_a_metric\"}[$__rate_interval])) # krabka_comment\n" +
		"  / on (role) krabka_role_members{job='krabka_x'} > bool krabka_Role_Members")
	if want := []string{"krabka_role_failovers_total", "krabka_role_members", "krabka_Role_Members"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("metricNames: %q, want %q", got, want)
	}
	fams := map[string]*dto.MetricFamily{"krabka_role_members": {Metric: []*dto.Metric{{Label: []*dto.LabelPair{
		{Name: ptr("role"), Value: ptr("r")}}}}}}
	miss := missingInScrape([]promExpr{
		{"ok", `max by (job, role) (krabka_role_members{role=~"$role"})`},
		{"misspelt", `krabka_role_member{role="r"}`},
		{"badlabel", `krabka_role_members{rol="r"}`},
		{"badgroup", `max by (member) (krabka_role_members)`},
		{"nothing", `vector(1)`},
	}, fams)
	want := []string{
		"badgroup: groups by member, a label none of its metrics has",
		"badlabel: krabka_role_members has no label rol",
		"misspelt: krabka_role_member is not in the exporter's output",
		"nothing: names no krabka_ metric",
	}
	if fmt.Sprint(miss) != fmt.Sprint(want) {
		t.Errorf("missingInScrape:\n  got  %q\n  want %q", miss, want)
	}
}

func ptr(s string) *string { return &s }

// labelMetric returns the value of family's series whose label is value.
func labelMetric(fams map[string]*dto.MetricFamily, family, label, value string) (float64, bool) {
	for _, m := range fams[family].GetMetric() {
		if labels(m)[label] != value {
			continue
		}
		if m.Gauge != nil {
			return m.GetGauge().GetValue(), true
		}
		return m.GetCounter().GetValue(), true
	}
	return 0, false
}

// Every metric and label the dashboard and the rules name is in the real
// exporter's /metrics: a Go member holds the role with a standby, another
// is the one member of a role group of 4 shards, and the exporter follows
// both on a real broker.
func TestMonitoringArtifactsUseOnlyTheExportersMetrics(t *testing.T) {
	dash, rules := artifactExprs(t)
	bs := tv2(t)
	role := uniqueRole("cli-monitoring")
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	newClient := func() *coord.Client {
		return libClient(t, bs, "krabka.lease.ms", "6000", "krabka.renew.interval.ms", "2000")
	}
	r := core.MustRole(role)
	holder, _, err := newClient().TryAcquire(ctx, r, core.MustMemberID("mon-1"))
	if err != nil || holder == nil {
		t.Fatalf("mon-1 did not take %s: %v", role, err)
	}
	if l, _, err := newClient().TryAcquire(ctx, r, core.MustMemberID("mon-2")); err != nil || l != nil {
		t.Fatalf("mon-2 should be a standby of %s: %v %v", role, l, err)
	}
	token := holder.Token().String()

	// The exporter starts before the group, so that it sees the group
	// converge (krabka_group_last_converge_seconds).
	group := uniqueRole("cli-mon-group")
	ex, url := exporter(t, "-b", bs, "exporter", "--group", group, role)
	gcfg := coord.DefaultConfig()
	if err := gcfg.Set("bootstrap.servers", bs); err != nil {
		t.Fatal(err)
	}
	glog, err := kafka.NewGroupLog(gcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer glog.Transport.Close()
	g, err := coord.NewGroup(newClient(), glog, group, 4, core.MustMemberID("mon-g"))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close(context.Background())
	// Until every family the artifacts use has its series: the holder,
	// the roster of two, the view lag (after the first read) and reads.
	var lastState string
	fams := scrapeUntil(t, url, "the held role with its roster, view lag and reads", func(f map[string]*dto.MetricFamily) bool {
		li := leaderInfo(f, role)
		lag, lagOK := roleMetric(f, "krabka_role_view_lag_seconds", role)
		members, _ := roleMetric(f, "krabka_role_members", role)
		reads := -1.0
		if fr := f["krabka_client_reads_total"]; fr != nil && len(fr.GetMetric()) == 1 {
			reads = fr.GetMetric()[0].GetCounter().GetValue()
		}
		conv, _ := labelMetric(f, "krabka_group_converged", "group", group)
		_, lastConv := labelMetric(f, "krabka_group_last_converge_seconds", "group", group)
		held, _ := labelMetric(f, "krabka_group_member_shards", "group", group)
		if s := fmt.Sprintf("leader_info %v (want mon-1 %s), members %v, view lag %v %v, reads %v, group converged %v (last %v) held %v",
			li, token, members, lag, lagOK, reads, conv, lastConv, held); s != lastState {
			lastState = s
			t.Log(s)
		}
		return len(li) == 1 && li[0] == [2]string{"mon-1", token} && lagOK && members == 2 && reads > 0 &&
			conv == 1 && lastConv && held == 4
	})
	stopWith(t, ex, syscall.SIGTERM)
	if code := ex.wait(t); code != exitOK {
		t.Fatalf("exporter exit %d after SIGTERM", code)
	}

	var names []string
	for n := range fams {
		if strings.HasPrefix(n, "krabka_") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	t.Logf("the exporter's krabka_ metrics: %s", strings.Join(names, " "))
	checked := 0
	for _, set := range [][]promExpr{dash, rules} {
		for _, e := range set {
			checked += len(metricNames(e.expr))
		}
		for _, m := range missingInScrape(set, fams) {
			t.Error(m)
		}
	}
	if !t.Failed() {
		t.Logf("%d dashboard and %d rule expressions, %d metric references, all in the exporter's output", len(dash), len(rules), checked)
	}
}
