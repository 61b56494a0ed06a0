package main

import (
	"net/http"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/krabka/krabka-coord/core"
)

func mustRole(t *testing.T, s string) core.Role {
	t.Helper()
	r, err := core.NewRole(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// scrape fetches /metrics and parses it with Prometheus' own text parser.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return fams
}

func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// roleMetric returns the value of family for role (and ok).
func roleMetric(fams map[string]*dto.MetricFamily, family, role string) (float64, bool) {
	f := fams[family]
	if f == nil {
		return 0, false
	}
	for _, m := range f.GetMetric() {
		if labels(m)["role"] != role {
			continue
		}
		switch {
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		}
	}
	return 0, false
}

// leaderInfo returns the (member, token) label pairs of role's leader_info series.
func leaderInfo(fams map[string]*dto.MetricFamily, role string) [][2]string {
	var out [][2]string
	if f := fams["krabka_role_leader_info"]; f != nil {
		for _, m := range f.GetMetric() {
			l := labels(m)
			if l["role"] == role && m.GetGauge().GetValue() == 1 {
				out = append(out, [2]string{l["member"], l["token"]})
			}
		}
	}
	return out
}

// scrapeUntil scrapes until cond holds (failing at the bound).
func scrapeUntil(t *testing.T, url, what string, cond func(map[string]*dto.MetricFamily) bool) map[string]*dto.MetricFamily {
	t.Helper()
	deadline := time.Now().Add(bound)
	for {
		fams := scrape(t, url)
		if cond(fams) {
			return fams
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics never showed %s", what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestExporterShowsTheHolderChangeAfterAFailover(t *testing.T) {
	bs := tv2(t)
	role := uniqueRole("cli-exporter")
	a, tokA := leaderOf(t, bs, role, "c-node-1")
	b := standby(t, bs, role, "c-node-2")

	ex, url := exporter(t, "-b", bs, "exporter", role)
	fams := scrapeUntil(t, url, "c-node-1 as leader", func(f map[string]*dto.MetricFamily) bool {
		li := leaderInfo(f, role)
		return len(li) == 1 && li[0] == [2]string{"c-node-1", tokA}
	})
	if v, ok := roleMetric(fams, "krabka_role_failovers_total", role); !ok || v != 0 {
		t.Fatalf("failovers before any failover: %v %v", v, ok)
	}
	if v, ok := roleMetric(fams, "krabka_role_members", role); !ok || v != 2 {
		t.Fatalf("members: %v %v", v, ok)
	}
	if v, ok := roleMetric(fams, "krabka_role_lease_live", role); !ok || v != 1 {
		t.Fatalf("lease_live: %v %v", v, ok)
	}
	for _, name := range []string{"krabka_role_lease_remaining_seconds", "krabka_role_last_change_timestamp_seconds",
		"krabka_role_seconds_since_last_change", "krabka_client_reads_total"} {
		if fams[name] == nil {
			t.Errorf("no %s", name)
		}
	}
	firstChange, _ := roleMetric(fams, "krabka_role_last_change_timestamp_seconds", role)

	// SIGKILL the holder: c-node-2 takes over when the lease runs out.
	a.cmd.Process.Signal(syscall.SIGKILL)
	m := b.next(t, reAcquired)
	tokB := m[2]
	fams = scrapeUntil(t, url, "c-node-2 as leader", func(f map[string]*dto.MetricFamily) bool {
		li := leaderInfo(f, role)
		return len(li) == 1 && li[0] == [2]string{"c-node-2", tokB}
	})
	if v, _ := roleMetric(fams, "krabka_role_failovers_total", role); v < 1 {
		t.Fatalf("failovers after the failover: %v", v)
	}
	if v, _ := roleMetric(fams, "krabka_role_last_change_timestamp_seconds", role); v <= firstChange {
		t.Fatalf("last change %v not after %v", v, firstChange)
	}

	stopWith(t, ex, syscall.SIGTERM)
	if code := ex.wait(t); code != exitOK {
		t.Fatalf("exporter exit %d after SIGTERM", code)
	}
}
