package coord_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/memtransport"
)

// goroutinesAtMost waits (up to 30 s of wall time, for goroutines that are
// returning) until the process runs at most n goroutines, and returns the
// count it saw last.
func goroutinesAtMost(n int) int {
	got := runtime.NumGoroutine()
	for deadline := time.Now().Add(30 * time.Second); got > n && time.Now().Before(deadline); got = runtime.NumGoroutine() {
		time.Sleep(5 * time.Millisecond)
	}
	return got
}

// Issue 35, item 3: no goroutine per held role. One client holds 200
// roles and another 200 more with background renewal and their at-risk
// watches started: the process runs at most 20 more goroutines than with
// one role held per client (the old design ran 3 to 5 per role: deadline
// watcher, committer, view watcher, renewer, at-risk watcher). The
// leaderships still end as before: Fenced when the view shows a newer
// token of their role (a second client took ten of them over), Expired at
// their deadline when their renewals fail, after LeadershipAtRisk.
func TestManyRolesNoGoroutinePerRole(t *testing.T) {
	const roles, spare = 200, 20
	e := oneBus(t) // one partition: one follower per client for every role
	c1, tr1 := e.client()
	c3, _ := e.client("krabka.renew.background", "true")
	c2, _ := e.client()
	name := func(i int) core.Role { return core.MustRole(fmt.Sprintf("many-%03d", i)) }

	// The baseline: each client holds one role (its follower runs).
	for i, c := range []*coord.Client{c1, c3} {
		if _, err := c.Acquire(bg(), core.MustRole(fmt.Sprintf("first-%d", i)), ma); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(50 * time.Millisecond)
	base := runtime.NumGoroutine()

	// c1 holds 200 roles; c3 holds 200 more with background renewal and
	// their at-risk watches started (a subscription to Events, cancelled:
	// the watch stays).
	ls := make([]*coord.Leadership, roles)
	subs, unsubscribe := context.WithCancel(bg())
	for i := range ls {
		var err error
		if ls[i], err = c1.Acquire(bg(), name(i), ma); err != nil {
			t.Fatal(err)
		}
		l3, err := c3.Acquire(bg(), core.MustRole(fmt.Sprintf("bg-%03d", i)), ma)
		if err != nil {
			t.Fatal(err)
		}
		l3.Events(subs)
	}
	unsubscribe()
	if got := goroutinesAtMost(base + spare); got > base+spare {
		t.Fatalf("%d goroutines with %d roles held, %d with two: %d more (at most %d expected)", got, 2*roles+2, base, got-base, spare)
	}

	// A guarded write still commits (its committer starts on demand and
	// goes when the queue is empty).
	if _, err := ls[0].Produce(bg(), coord.Message{Topic: "cmds", Partition: 0, Value: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	if got := goroutinesAtMost(base + spare); got > base+spare {
		t.Fatalf("%d goroutines after a write, %d before the roles: the committer stayed", got, base)
	}

	// Fenced by the view: past the deadlines (c1 renews only when asked;
	// nothing failed, so nothing expired),
	// c2 takes ten roles over; c1 learns it from its view alone.
	e.clock.Advance(31 * time.Second)
	for i := 0; i < 10; i++ {
		for try := 0; ; try++ {
			l, at, err := c2.TryAcquire(bg(), name(i), mb)
			if err != nil {
				t.Fatal(err)
			}
			if l != nil {
				break
			}
			if try > 10 {
				t.Fatalf("c2 did not take %s over (next chance at %v)", name(i), at)
			}
			if d := at.UnixMilli() - e.clock.NowMs(); d > 0 {
				e.clock.Advance(time.Duration(d) * time.Millisecond)
			}
		}
	}
	for i := 0; i < 10; i++ {
		if !closedWithin(ls[i].Done(), 30*time.Second) {
			t.Fatalf("%s: not ended after c2 took it over", name(i))
		}
		if ls[i].State() != coord.Fenced || !errors.Is(ls[i].Err(), coord.ErrFenced) {
			t.Fatalf("%s: %s %v (want Fenced by the view)", name(i), ls[i].State(), ls[i].Err())
		}
	}

	// Expired at the deadline: the others renew (late, and the broker
	// takes it: nobody superseded them), then their renewals fail and the
	// deadline passes.
	for i := 10; i < roles; i++ {
		if ls[i].State() != coord.Active {
			t.Fatalf("%s: %s %v (want Active: nothing superseded it)", name(i), ls[i].State(), ls[i].Err())
		}
	}
	for i := 10; i < roles; i++ {
		if err := ls[i].Renew(bg()); err != nil {
			t.Fatalf("%s: late renewal: %v", name(i), err)
		}
	}
	evs := ls[10].Events(bg())
	tr1.SetFault(memtransport.Refuse)
	deadline := ls[10].Lease().Deadline
	for i := 10; i < roles; i++ {
		if d := ls[i].Lease().Deadline; d < deadline {
			deadline = d
		}
	}
	e.clock.Advance(time.Duration(deadline-e.clock.NowMs()-1000) * time.Millisecond)
	for i := 10; i < roles; i++ {
		if err := ls[i].Renew(bg()); !errors.Is(err, coord.ErrTransport) {
			t.Fatalf("%s: renewal while refused: %v", name(i), err)
		}
		if ls[i].State() != coord.Active {
			t.Fatalf("%s: %s before its deadline", name(i), ls[i].State())
		}
	}
	var last int64
	for i := 10; i < roles; i++ {
		last = max(last, ls[i].Lease().Deadline)
	}
	e.clock.Advance(time.Duration(last-e.clock.NowMs()) * time.Millisecond)
	for i := 10; i < roles; i++ {
		if !closedWithin(ls[i].Done(), 30*time.Second) {
			t.Fatalf("%s: not ended at its deadline %d (clock %d)", name(i), ls[i].Lease().Deadline, e.clock.NowMs())
		}
		if ls[i].State() != coord.Expired || !errors.Is(ls[i].Err(), coord.ErrLeaseExpired) {
			t.Fatalf("%s: %s %v (want Expired)", name(i), ls[i].State(), ls[i].Err())
		}
	}
	// The at-risk watch of ls[10] (a timer too) warned before the end.
	for _, want := range []coord.LeadershipEventKind{coord.LeadershipAtRisk, coord.LeadershipEnded} {
		select {
		case ev := <-evs:
			if ev.Kind != want || (want == coord.LeadershipEnded && ev.State != coord.Expired) {
				t.Fatalf("event %+v, want %s", ev, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no %s event", want)
		}
	}
}

// Background renewals are jittered: roles acquired at the same instant are
// due at instants spread over the last tenth of the renew interval, never
// after it, and every one of them renews by its renew instant.
func TestBackgroundRenewalsJittered(t *testing.T) {
	const roles = 50
	e := oneBus(t)
	c, _ := e.client("krabka.renew.background", "true")
	ls := make([]*coord.Leadership, roles)
	due := map[int64]bool{}
	for i := range ls {
		var err error
		if ls[i], err = c.Acquire(bg(), core.MustRole(fmt.Sprintf("jit-%02d", i)), ma); err != nil {
			t.Fatal(err)
		}
		at, on := coord.RenewInstant(ls[i])
		renewAt := ls[i].Lease().GrantedAt + 10000 // krabka.renew.interval.ms
		if !on || at > renewAt || at < renewAt-1000 {
			t.Fatalf("%d: renewal due at %d (on %v), want within [%d, %d]", i, at, on, renewAt-1000, renewAt)
		}
		due[at] = true
	}
	if len(due) < 2 {
		t.Fatalf("%d roles acquired together are all due at one instant %v", roles, due)
	}
	// Each renews by its instant: the clock moves to the latest one.
	e.clock.Advance(10 * time.Second)
	for i, l := range ls {
		for deadline := time.Now().Add(30 * time.Second); l.Lease().GrantedAt < t0+9000; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d: not renewed by its renew instant: lease %+v", i, l.Lease())
			}
		}
		if at, _ := coord.RenewInstant(l); at < l.Lease().GrantedAt+9000 {
			t.Fatalf("%d: next renewal due at %d, before the jitter window of the lease granted at %d", i, at, l.Lease().GrantedAt)
		}
	}
}
