package main

// watch, roles and leave against C members on a real broker.

import (
	"context"
	"encoding/json"
	"regexp"
	"syscall"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/krabka/krabka-coord/core"
)

func mustToken(t *testing.T, s string) core.FencingToken {
	t.Helper()
	tok, err := core.ParseFencingToken(s)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestWatchPrintsAFailoverInOrder(t *testing.T) {
	bs := tv2(t)
	role := uniqueRole("cli-watch")
	a, tokA := leaderOf(t, bs, role, "c-node-1")
	b := standby(t, bs, role, "c-node-2")

	w := startProc(t, nil, cliBin(t), "-b", bs, "watch", role)
	q := regexp.QuoteMeta
	// The first lines describe the current state.
	w.next(t, regexp.MustCompile(`^\S+ `+q(role)+` HOLDER_CHANGED holder=c-node-1 token=`+q(tokA)+` prev_holder=\(none\) prev_token=-1:-1 `))
	w.next(t, regexp.MustCompile(`^\S+ `+q(role)+` ROSTER_CHANGED roster=c-node-1:0,c-node-2:0( |$)`))

	a.cmd.Process.Signal(syscall.SIGKILL)
	tokB := b.next(t, reAcquired)[2]
	m := w.next(t, regexp.MustCompile(`^\S+ `+q(role)+` HOLDER_CHANGED holder=(\S+) token=(\S+) prev_holder=(\S+) prev_token=(\S+) `))
	if m[1] != "c-node-2" || m[2] != tokB || m[3] != "c-node-1" || m[4] != tokA {
		t.Fatalf("failover line %q: want holder c-node-2 token %s prev c-node-1 %s", m[0], tokB, tokA)
	}
	if !mustToken(t, tokB).Supersedes(mustToken(t, tokA)) {
		t.Fatalf("new token %s does not supersede %s", tokB, tokA)
	}

	// Ctrl-C: a clean exit.
	w.cmd.Process.Signal(syscall.SIGINT)
	if code := w.wait(t); code != exitOK {
		t.Fatalf("watch exit %d after SIGINT:\n%s", code, w.output())
	}
}

func TestWatchJSONLines(t *testing.T) {
	bs := tv2(t)
	role := uniqueRole("cli-watch-json")
	_, tok := leaderOf(t, bs, role, "c-node-1")
	w := startProc(t, nil, cliBin(t), "-b", bs, "watch", "-o", "json", role)
	line := w.next(t, regexp.MustCompile(`^\{.*"HOLDER_CHANGED".*\}$`))[0]
	var ev eventJSON
	if err := json.Unmarshal([]byte(line), &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Role != role || ev.Holder == nil || *ev.Holder != "c-node-1" || ev.Token != tok || ev.Lease == nil || ev.Lease.Token != tok {
		t.Fatalf("%s", line)
	}
	w.cmd.Process.Signal(syscall.SIGTERM)
	if code := w.wait(t); code != exitOK {
		t.Fatalf("exit %d", code)
	}
}

func TestRolesListsTheRoleACMemberHolds(t *testing.T) {
	bs := tv2(t)
	role := uniqueRole("cli-roles")
	_, tok := leaderOf(t, bs, role, "c-node-1")

	code, out, errs := cli(t, "-b", bs, "roles", "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rj rolesJSON
	if err := json.Unmarshal([]byte(out), &rj); err != nil {
		t.Fatal(err)
	}
	var found *statusJSON
	for i := range rj.Roles {
		if rj.Roles[i].Role == role {
			found = &rj.Roles[i]
		}
	}
	if found == nil || found.Holder == nil || *found.Holder != "c-node-1" || found.Lease == nil || found.Lease.Token != tok {
		t.Fatalf("roles does not show %s held by c-node-1 with %s: %+v", role, tok, found)
	}
	// At least the registration and the lease record of this role were read.
	if rj.RecordsRead < 2 || rj.Partitions != 16 || rj.Topic != "__coordination_state" {
		t.Fatalf("records_read %d partitions %d topic %s", rj.RecordsRead, rj.Partitions, rj.Topic)
	}

	code, out, _ = cli(t, "-b", bs, "roles")
	if code != exitOK ||
		!regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(role)+`\s+\d+\s+c-node-1\s+`+regexp.QuoteMeta(tok)+`\s+true\s+\S+s\s+1$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^\d+ role\(s\); read \d+ record\(s\) from 16 partition\(s\) of __coordination_state$`).MatchString(out) {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

func TestLeaveRemovesAMember(t *testing.T) {
	bs := tv2(t)
	role := uniqueRole("cli-leave")
	// A long lease, so that the dead holder's lease is still live below.
	long := []string{"KRABKA_LEASE_MS=120000", "KRABKA_RENEW_INTERVAL_MS=10000", "KRABKA_CHALLENGE_STAGGER_MS=500"}
	a := startProc(t, long, cHost(t), bs, role, "c-node-1", commandTopic)
	a.next(t, reAcquired)
	b := startProc(t, long, cHost(t), bs, role, "c-node-2", commandTopic)
	b.next(t, reStandby)
	// Two crashed members: their registrations stay in the roster.
	b.cmd.Process.Signal(syscall.SIGKILL)
	a.cmd.Process.Signal(syscall.SIGKILL)
	b.wait(t)
	a.wait(t)
	roster := func() []string {
		st := describeJSON(t, bs, role)
		var out []string
		for _, r := range st.Roster {
			out = append(out, r.Member)
		}
		return out
	}
	if r := roster(); len(r) != 2 {
		t.Fatalf("roster before: %v", r)
	}

	code, _, errs := cli(t, "-b", bs, "leave", role, "ghost")
	if code != exitNotFound || !regexp.MustCompile(`ghost is not registered in role `+regexp.QuoteMeta(role)+`: nothing written`).MatchString(errs) {
		t.Fatalf("leave ghost: exit %d: %s", code, errs)
	}

	code, out, errs := cli(t, "-b", bs, "leave", role, "c-node-2")
	if code != exitOK || !regexp.MustCompile(`removed c-node-2 from role \S+; roster now: c-node-1\n`).MatchString(out) {
		t.Fatalf("leave c-node-2: exit %d: %s %s", code, out, errs)
	}
	if r := roster(); len(r) != 1 || r[0] != "c-node-1" {
		t.Fatalf("roster after leave: %v", r)
	}

	// The holder's lease is live: refused without --yes, nothing written.
	code, _, errs = cli(t, "-b", bs, "leave", role, "c-node-1")
	if code != exitRefused || !regexp.MustCompile(`c-node-1 holds the lease of \S+ .*give --yes`).MatchString(errs) {
		t.Fatalf("leave holder: exit %d: %s", code, errs)
	}
	if r := roster(); len(r) != 1 {
		t.Fatalf("roster after the refusal: %v", r)
	}
	code, out, errs = cli(t, "-b", bs, "leave", "--yes", role, "c-node-1")
	if code != exitOK || !regexp.MustCompile(`roster now: \(empty\)`).MatchString(out) {
		t.Fatalf("leave --yes holder: exit %d: %s %s", code, out, errs)
	}
	st := describeJSON(t, bs, role)
	if len(st.Roster) != 0 || st.Holder == nil || *st.Holder != "c-node-1" {
		t.Fatalf("after leave --yes: the lease stays, the roster is empty: %+v", st)
	}
}

func TestExporterAllRolesFindsARoleTakenLater(t *testing.T) {
	bs := tv2(t)
	// The topic exists before the exporter starts (it refuses otherwise).
	leaderOf(t, bs, uniqueRole("cli-any"), "c-any")
	ex, url := exporter(t, "-b", bs, "exporter", "--all-roles")
	role := uniqueRole("cli-allroles")
	_, tok := leaderOf(t, bs, role, "c-node-1")
	scrapeUntil(t, url, role+" held by c-node-1", func(f map[string]*dto.MetricFamily) bool {
		li := leaderInfo(f, role)
		return len(li) == 1 && li[0] == [2]string{"c-node-1", tok}
	})
	ex.cmd.Process.Signal(syscall.SIGINT)
	if code := ex.wait(t); code != exitOK {
		t.Fatalf("exporter exit %d after SIGINT", code)
	}
}

// `leave -X krabka.role.prefix=...` removes the prefixed member, on a topic
// that an unprefixed client shares under the bare role name (issue 26: the
// library's Leave once ignored the prefix). The members are Go clients of
// the library; the CLI does the leave and the reading.
func TestLeaveWithARolePrefix(t *testing.T) {
	bs := tv2(t)
	role := uniqueRole("cli-leave-prefix")
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	prefixed := libClient(t, bs, "krabka.leave.on.close", "false", "krabka.role.prefix", "env.")
	plain := libClient(t, bs, "krabka.leave.on.close", "false")
	r := core.MustRole(role)
	for _, m := range []string{"p1", "p2"} {
		if _, _, err := prefixed.TryAcquire(ctx, r, core.MustMemberID(m)); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := plain.TryAcquire(ctx, r, core.MustMemberID("p2")); err != nil {
		t.Fatal(err)
	}
	rosterOf := func(name string) []string {
		var out []string
		for _, rr := range describeJSON(t, bs, name).Roster {
			out = append(out, rr.Member)
		}
		return out
	}
	full := prefixed.TransactionalID(r)
	if got := rosterOf(full); len(got) != 2 {
		t.Fatalf("prefixed roster before: %v", got)
	}
	code, out, errs := cli(t, "-b", bs, "-X", "krabka.role.prefix=env.", "leave", role, "p2")
	if code != exitOK || !regexp.MustCompile(`removed p2 from role \S+; roster now: p1\n`).MatchString(out) {
		t.Fatalf("prefixed leave p2: exit %d: %s %s", code, out, errs)
	}
	if got := rosterOf(full); len(got) != 1 || got[0] != "p1" {
		t.Fatalf("prefixed roster after the leave, read as %s: %v", full, got)
	}
	if got := rosterOf(role); len(got) != 1 || got[0] != "p2" {
		t.Fatalf("the unprefixed role's roster: %v, want its own p2 untouched", got)
	}
}
