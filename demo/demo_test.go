package demo

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFailoverDemoKeepsTokensMonotonicAndFencesTheResumedLeader runs the
// demo scenario, shortened, against the cluster at $KRABKA_BOOTSTRAP with
// the real C, Python and Node hosts: the leader is killed; the next one is
// frozen past its lease and resumed (it stops; the broker fences its token);
// the third is frozen, its member restarted at once and the old process
// resumed with a live lease (the broker answers its next write FENCED). The
// committed command log must never see a token go backwards.
func TestFailoverDemoKeepsTokensMonotonicAndFencesTheResumedLeader(t *testing.T) {
	bootstrap := os.Getenv("KRABKA_BOOTSTRAP")
	if bootstrap == "" {
		// A failure, never a skip: a run without brokers has not tested the demo.
		t.Fatal("KRABKA_BOOTSTRAP is not set (make test starts the clusters and sets it; make demo-unit runs the broker-free tests)")
	}
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	lib := os.Getenv("KRABKA_COORD_LIBRARY")
	if lib == "" {
		lib = filepath.Join(repo, "build", "libkrabka_coord.so")
	}
	cHost := os.Getenv("KRABKA_DEMO_C_HOST")
	if cHost == "" {
		cHost = filepath.Join(repo, "build", "examples", "device_host")
	}
	for _, f := range []string{lib, cHost, filepath.Join(repo, "bindings", "node", "node_modules")} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("%v: build first (make lib examples node-deps)", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	var out bytes.Buffer
	rep, err := Run(ctx, Options{
		Bootstrap:          bootstrap,
		Hosts:              DefaultHosts(repo, lib, cHost),
		Dir:                repo,
		LogDir:             t.TempDir(),
		LeaseMs:            3000,
		RenewIntervalMs:    1000,
		StaggerMs:          500,
		DispatchIntervalMs: 150,
		LeadFor:            1500 * time.Millisecond,
		StepTimeout:        30 * time.Second,
		Zombie:             true,
		Out:                &out,
	})
	t.Logf("timeline:\n%s", out.String())
	if err != nil {
		t.Fatalf("the scenario did not complete: %v", err)
	}
	if rep.Check == nil || !rep.Check.OK() {
		t.Fatalf("the command log check failed")
	}
	if len(rep.Check.Runs) < 3 {
		t.Errorf("the log holds %d runs of one token, want at least 3 (three leaders)", len(rep.Check.Runs))
	}
	if len(rep.Failovers) != 3 {
		t.Fatalf("%d failovers, want 3 (crash, pause past the lease, zombie)", len(rep.Failovers))
	}
	if o := rep.ResumedOutcome; o == nil || o.Kind != Fenced {
		t.Errorf("the leader resumed after its lease, %s, did not report FENCED from the broker: %+v", rep.Resumed, o)
	}
	if !strings.Contains(rep.BrokerProbe, "PRODUCER_FENCED") && !strings.Contains(rep.BrokerProbe, "INVALID_PRODUCER_EPOCH") {
		t.Errorf("the broker did not fence the token of %s: %s", rep.Resumed, rep.BrokerProbe)
	}
	if o := rep.ZombieOutcome; o == nil || o.Kind != Fenced {
		t.Errorf("the zombie %s, resumed with a live lease, did not report FENCED from the broker: %+v", rep.Zombie, o)
	}
	if !rep.FencedObserved || !rep.OK() {
		t.Errorf("report not OK (fenced observed %v)", rep.FencedObserved)
	}
	seen := map[string]bool{}
	for _, term := range rep.Terms {
		seen[term.Lang] = true
	}
	for _, lang := range []string{"C", "Python", "Node"} {
		if !seen[lang] {
			t.Errorf("the %s host never led", lang)
		}
	}
}

func TestParseEventReadsTheLineProtocol(t *testing.T) {
	at := time.UnixMilli(5)
	ev, ok := ParseEvent(`EVENT 1700000000123 node-host FENCED op=renew code=FENCED msg="the cluster superseded it" token=7:3`, "x", at)
	if !ok || !ev.Strict || ev.Kind != Fenced || ev.Member != "node-host" || ev.At.UnixMilli() != 1700000000123 {
		t.Fatalf("parsed %+v", ev)
	}
	if ev.Fields["msg"] != "the cluster superseded it" || ev.Fields["op"] != "renew" {
		t.Errorf("fields %v", ev.Fields)
	}
	if tok, ok := ev.Token(); !ok || tok.ProducerID != 7 || tok.ProducerEpoch != 3 {
		t.Errorf("token %v %v", tok, ok)
	}
}

func TestParseEventToleratesAFreeFormHostLine(t *testing.T) {
	at := time.UnixMilli(42)
	for line, kind := range map[string]string{
		"[device_host] leader: acquired role controller with token 12:4": Acquired,
		"dispatched command 17 (token 12:4) offset=33":                   Dispatched,
		"krabka_leadership_renew: FENCED: the cluster superseded":        Fenced,
		"lease expired, stopping":                                        Expired,
	} {
		ev, ok := ParseEvent(line, "c-host", at)
		if !ok || ev.Kind != kind || ev.Member != "c-host" || !ev.At.Equal(at) {
			t.Errorf("%q: parsed kind %q ok %v", line, ev.Kind, ok)
		}
	}
	if ev, _ := ParseEvent("dispatched command 17 (token 12:4) offset=33", "c", at); ev.Fields["token"] != "12:4" || ev.Fields["offset"] != "33" {
		t.Errorf("fields %v", ev.Fields)
	}
	if _, ok := ParseEvent("connecting to 127.0.0.1:9092", "c", at); ok {
		t.Error("a log line without an event word was taken for an event")
	}
}

func TestTheLogCheckFlagsATokenGoingBackwards(t *testing.T) {
	rec := func(off int64, member, token string, pid int64, epoch int16) Record {
		r := Record{Offset: off, Member: member, ProducerID: pid, ProducerEpoch: epoch}
		if f, ok := (Event{Fields: map[string]string{"token": token}}).Token(); ok {
			r.Token, r.HasToken = f, true
		}
		return r
	}
	good := &Check{Records: []Record{rec(0, "a", "5:0", 5, 0), rec(2, "a", "5:0", 5, 0), rec(4, "b", "5:1", 5, 1), rec(6, "c", "6:0", 6, 0)}}
	good.evaluate([]Ack{{Member: "a", Offset: 2}, {Member: "c", Offset: 6}})
	if !good.OK() || len(good.Runs) != 3 {
		t.Fatalf("monotonic log judged bad: %s", good)
	}
	bad := &Check{Records: []Record{rec(0, "a", "5:1", 5, 1), rec(2, "b", "5:0", 5, 0)}}
	bad.evaluate([]Ack{{Member: "b", Offset: 4}})
	if bad.OK() || len(bad.TextViolations) != 1 || len(bad.BatchViolations) != 1 || len(bad.AckedMissing) != 1 {
		t.Fatalf("backwards log not flagged: %s", bad)
	}
	if !strings.Contains(bad.String(), "RESULT: FAIL") {
		t.Errorf("report:\n%s", bad)
	}
}
