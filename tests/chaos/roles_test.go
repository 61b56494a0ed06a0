package chaos

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core"
)

// The extra roles land where the layout says: three beside the primary
// role on its partition (one of them with a single member), two on the
// next partition; every name maps there by core.RolePartition.
func TestLayoutRolesShareThePrimaryPartition(t *testing.T) {
	for _, seed := range []string{"chaos-1", "chaos-202", "chaos-987654321"} {
		for _, n := range []int32{2, 4, 16} {
			p0, roles, err := layoutRoles(seed, n, "topic")
			if err != nil {
				t.Fatal(err)
			}
			r0, _ := core.NewRole(seed)
			if p, _ := core.RolePartition(r0, n); p != p0 {
				t.Fatalf("%s/%d: primary partition %d, RolePartition says %d", seed, n, p0, p)
			}
			on := map[int32]int{p0: 1}
			single := 0
			names := map[string]bool{seed: true}
			for _, r := range roles {
				rr, err := core.NewRole(r.Name)
				if err != nil {
					t.Fatal(err)
				}
				if p, _ := core.RolePartition(rr, n); p != r.Partition {
					t.Fatalf("%s: partition %d, RolePartition says %d", r.Name, r.Partition, p)
				}
				if names[r.Name] || !strings.HasPrefix(r.Topic, "topic-") {
					t.Fatalf("%+v", r)
				}
				names[r.Name] = true
				on[r.Partition]++
				if len(r.Members) == 1 && r.Partition == p0 {
					single++
				}
			}
			p1 := (p0 + 1) % n
			if on[p0] != 4 || on[p1] != 2 || single != 1 {
				t.Fatalf("%s/%d: roles by partition %v, single-member roles on the primary's %d", seed, n, on, single)
			}
		}
	}
}

// A Go process's events feed the extra roles' checks: acknowledged
// commands and mints by role, the holders, and a MIDTXN handed to the
// fault that waits for it (or released with GO when none waits).
func TestGoLineFeedsTheRoles(t *testing.T) {
	c := &campaign{opts: Options{Out: io.Discard}, start: time.Now(), events: map[string]int{}, roleAcks: map[string][]Ack{},
		roleMints: map[string][]Mint{}, roleAcquired: map[string]map[string]bool{}, holders: map[string]string{}}
	m := &member{name: "go-1", multi: true}
	c.goLine(m, "EVENT 1000 go-1 ACQUIRED role=r-a token=5:2 deadline=4000")
	c.goLine(m, "EVENT 1100 go-1 DISPATCHED role=r-a seq=1 token=5:2 partition=0 offset=7 writer=2")
	c.goLine(m, "EVENT 1200 go-1 MINTED role=r-a token=5:2 at_ms=900")
	c.goLine(m, "EVENT 1300 go-1 DISPATCHED role=r-b seq=x token=5:2 partition=0 offset=7 writer=2")
	if len(c.roleAcks["r-a"]) != 1 || c.roleAcks["r-a"][0] != (Ack{Member: "go-1", Token: tok(5, 2), Seq: 1, Writer: 2, Offset: 7, At: time.UnixMilli(1100)}) {
		t.Fatalf("acks %+v", c.roleAcks)
	}
	if len(c.roleMints["r-a"]) != 1 || !c.roleMints["r-a"][0].At.Equal(time.UnixMilli(900)) || c.events["go-DISPATCHED-unparsed"] != 1 {
		t.Fatalf("mints %+v events %v", c.roleMints, c.events)
	}
	if c.holders["r-a"] != "go-1" || !c.roleAcquired["r-a"]["go-1|5:2"] || c.goHolding("go-1") != 1 {
		t.Fatalf("holders %v acquired %v", c.holders, c.roleAcquired)
	}
	m.mid = make(chan MidTxnRecord, 1)
	c.goLine(m, "EVENT 1400 go-1 MIDTXN role=r-a token=5:2 broker=3")
	select {
	case ev := <-m.mid:
		if ev.Role != "r-a" || ev.Token != "5:2" || ev.Broker != "3" || !ev.At.Equal(time.UnixMilli(1400)) {
			t.Fatalf("%+v", ev)
		}
	default:
		t.Fatal("MIDTXN not handed on")
	}
	pr, pw := io.Pipe()
	m.stdin, m.mid = pw, nil
	got := make(chan string, 1)
	go func() {
		b := make([]byte, 16)
		n, _ := pr.Read(b)
		got <- string(b[:n])
	}()
	c.goLine(m, "EVENT 1500 go-1 MIDTXN role=r-a token=5:2 broker=3")
	if s := <-got; s != "GO\n" {
		t.Fatalf("wrote %q", s)
	}
	c.goLine(m, "EVENT 1600 go-1 FENCED role=r-a op=renew code=FENCED token=5:2")
	if c.goHolding("go-1") != 0 {
		t.Fatalf("holders %v", c.holders)
	}
}

// The fault log's member faults become the detection's stretches, one per
// member hit; broker faults hit no member.
func TestMemberFaultsFromTheLog(t *testing.T) {
	log := []FaultRecord{
		{Kind: "member-kill", Start: sec(1), End: sec(2), Members: []string{"c-host", "baseline"}},
		{Kind: "broker-kill(random)", Start: sec(3), End: sec(9)},
		{Kind: "midtxn-pause", Start: sec(4), End: sec(8), Members: []string{"go-2"}},
	}
	got := memberFaults(log)
	if len(got) != 3 || got[0].Member != "c-host" || got[2] != (MemberFault{Member: "go-2", Kind: "midtxn-pause", From: sec(4), To: sec(8)}) {
		t.Fatalf("%+v", got)
	}
}

// Every extra role must have had commands acknowledged.
func TestRoleShortfalls(t *testing.T) {
	m := MinimumsFor(90 * time.Second)
	got := RoleShortfalls(m, 90*time.Second, map[string]int{"r-b": 3, "r-a": 500, "r-c": 0})
	if len(got) != 2 || !strings.Contains(got[0], "role r-b") || !strings.Contains(got[1], "0 acknowledged commands of role r-c") {
		t.Fatalf("%q", got)
	}
}

// The campaign fails on a healthy holder deposed, even when every role's
// checks and the minimums passed; and on a violation in an extra role.
func TestReportFailsOnADeposedHolder(t *testing.T) {
	rep := &Report{Result: &Result{}, Deposed: &DeposeResult{}, Roles: map[string]*RoleReport{"r-a": {Result: &Result{}}}}
	if !rep.OK() {
		t.Fatal("a clean report fails")
	}
	rep.Deposed.Count = 1
	if rep.OK() {
		t.Fatal("a deposed holder passes")
	}
	rep.Deposed.Count = 0
	rep.Roles["r-a"].Result.Violations = []Violation{{Property: "lost"}}
	if rep.OK() {
		t.Fatal("a lost command of an extra role passes")
	}
	rep.Roles["r-a"].Result.Violations = nil
	rep.Deposed = nil
	if rep.OK() {
		t.Fatal("a report without the detection passes")
	}
}

// leaseRaw is a lease record of role r by member m, producer pid, granted
// at g seconds, written (its timestamp) then.
func leaseRaw(t *testing.T, off int64, r, m string, pid int64, g float64) RawRecord {
	t.Helper()
	role, err := core.NewRole(r)
	if err != nil {
		t.Fatal(err)
	}
	mem, err := core.NewMemberID(m)
	if err != nil {
		t.Fatal(err)
	}
	v := core.EncodeLease(core.Lease{Member: mem, Token: tok(pid, 0), GrantedAt: sec(g).UnixMilli(), Deadline: sec(g + 3).UnixMilli()})
	return RawRecord{Offset: off, ProducerID: pid, Key: core.EncodeKey(core.LeaseKey(role)), Value: v, Timestamp: sec(g), Transactional: true}
}

func marker(off, pid int64, commit bool, at float64) RawRecord {
	k := []byte{0, 0, 0, 0}
	if commit {
		k[3] = 1
	}
	return RawRecord{Offset: off, ProducerID: pid, Key: k, Timestamp: sec(at), Transactional: true, Control: true}
}

// The coordination topic read read_uncommitted: committed lease records
// only, each with its commit marker's time and the instant the last stable
// offset passed it; a lease committed while an older transaction of
// another role stayed open is hidden until that one ended, and says by
// whom. Registrations, tombstones and aborted leases are left out.
func TestLeasesOfTheCoordinationTopic(t *testing.T) {
	role, _ := core.NewRole("x")
	mem, _ := core.NewMemberID("a")
	reg := RawRecord{Offset: 2, ProducerID: 9, Key: core.EncodeKey(core.RegistrationKey(role, mem)),
		Value: core.EncodeRegistration(core.Registration{Member: mem, RegisteredAt: 1}), Timestamp: sec(10.2)}
	raw := []RawRecord{
		leaseRaw(t, 0, "solo", "g1", 1, 10), // its transaction is left open until 14 (a killed holder)
		leaseRaw(t, 1, "x", "a", 2, 10.1),
		reg,
		marker(3, 2, true, 10.3),
		leaseRaw(t, 4, "y", "b", 3, 10.5), // aborted
		marker(5, 3, false, 10.6),
		marker(6, 1, false, 14),
		leaseRaw(t, 7, "x", "a", 2, 15),
		marker(8, 2, true, 15.1),
		{Offset: 9, Key: []byte{1}, Timestamp: sec(16)}, // does not decode
	}
	got, bad := LeasesOf(raw)
	if bad != 1 || len(got) != 2 {
		t.Fatalf("bad %d, leases %+v", bad, got)
	}
	a, b := got[0], got[1]
	if a.Role != "x" || a.Offset != 1 || !a.Committed.Equal(sec(10.3)) || !a.Visible.Equal(sec(14)) || !strings.Contains(a.HiddenBy, "solo (token 1:0") {
		t.Fatalf("hidden lease %+v", a)
	}
	if b.Offset != 7 || !b.Committed.Equal(sec(15.1)) || !b.Visible.Equal(sec(15.1)) || b.HiddenBy != "" {
		t.Fatalf("visible lease %+v", b)
	}
	// Judged: a takeover of x by c granted at 13, before a's deadline 13.1,
	// with a's lease committed 2.7 s before (more than the race window) but
	// hidden until 14: deposed, and hidden.
	next := lease("x", "c", 5, 13)
	next.Token = tok(8, 0)
	res := HealthyDeposed(DeposeInput{Leases: []LeaseRecord{a, next}})
	if res.Count != 1 || !strings.Contains(res.Deposed[0].Text, "held by an open transaction of solo") {
		t.Fatalf("%+v", res)
	}
	// Had it been visible from its commit on, the challenger decided
	// before the commit: a slow challenge, not a deposition.
	a.Visible, a.HiddenBy = a.Committed, ""
	if res := HealthyDeposed(DeposeInput{Leases: []LeaseRecord{a, next}}); res.Count != 0 || res.Slow != 1 {
		t.Fatalf("visible: %+v", res)
	}
}

// lines collects what the campaign writes to a Go process's stdin.
func lines(t *testing.T, m *member) chan string {
	pr, pw := io.Pipe()
	m.stdin = pw
	out := make(chan string, 16)
	go func() {
		b := make([]byte, 64)
		for {
			n, err := pr.Read(b)
			for _, l := range strings.Fields(string(b[:n])) {
				out <- l
			}
			if err != nil {
				return
			}
		}
	}()
	return out
}

func next(t *testing.T, ch chan string) string {
	t.Helper()
	select {
	case l := <-ch:
		return l
	case <-time.After(5 * time.Second):
		t.Fatal("nothing written")
		return ""
	}
}

// A mid-transaction fault waits until a Go process holds a role, arms it,
// moves the arm when that process loses its roles to the other, and acts
// on the MIDTXN of the one that fired (recorded as a fault of that member).
func TestMidTxnArmsAHolderAndFollowsTheRoles(t *testing.T) {
	c := &campaign{opts: Options{Out: io.Discard}, start: time.Now(), events: map[string]int{}, roleAcks: map[string][]Ack{},
		roleMints: map[string][]Mint{}, roleAcquired: map[string]map[string]bool{}, holders: map[string]string{},
		drawn: map[string]int{}, faults: map[string]int{}}
	g1, g2 := &member{name: "go-1", multi: true}, &member{name: "go-2", multi: true}
	c.gos = []*member{g1, g2}
	in1, in2 := lines(t, g1), lines(t, g2)
	done := make(chan struct{})
	go func() {
		c.midTxn("midtxn-test", 0, 0)
		close(done)
	}()
	time.Sleep(300 * time.Millisecond)
	select {
	case l := <-in1:
		t.Fatalf("armed with no holder: %q", l)
	case l := <-in2:
		t.Fatalf("armed with no holder: %q", l)
	default:
	}
	c.mu.Lock()
	c.holders["r"] = "go-1"
	c.mu.Unlock()
	if l := next(t, in1); l != "ARM" {
		t.Fatalf("go-1 got %q", l)
	}
	c.mu.Lock()
	c.holders["r"] = "go-2"
	c.mu.Unlock()
	if l := next(t, in1); l != "DISARM" {
		t.Fatalf("go-1 got %q", l)
	}
	if l := next(t, in2); l != "ARM" {
		t.Fatalf("go-2 got %q", l)
	}
	c.goLine(g2, "EVENT 5000 go-2 MIDTXN role=r token=1:1 broker=1")
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the fault did not go on after MIDTXN")
	}
	if len(c.faultLog) != 1 || len(c.faultLog[0].Members) != 1 || c.faultLog[0].Members[0] != "go-2" || !c.faultLog[0].Start.Equal(time.UnixMilli(5000)) ||
		c.drawn["midtxn-test"] != 1 || g1.mid != nil || g2.mid != nil {
		t.Fatalf("log %+v drawn %v", c.faultLog, c.drawn)
	}
}
