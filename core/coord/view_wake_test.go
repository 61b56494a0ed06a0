package coord_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/memtransport"
)

// Issue 35, item 2: a fetch answer wakes the waiters of the roles whose
// records it folded, and no other.

// oneBus is an env whose coordination topic has one partition: every role
// shares one view.
func oneBus(t *testing.T) *env {
	return &env{t: t, cluster: memtransport.NewCluster(1), clock: core.NewManualClock(t0)}
}

// closedWithin reports whether ch is closed within d.
func closedWithin(ch <-chan struct{}, d time.Duration) bool {
	select {
	case <-ch:
		return true
	case <-time.After(d):
		return false
	}
}

func TestViewWakesOnlyTheTouchedRole(t *testing.T) {
	e := oneBus(t)
	ra, rb := core.MustRole("wake-a"), core.MustRole("wake-b")
	c1, _ := e.client()
	c2, _ := e.client()
	la, err := c1.Acquire(bg(), ra, ma) // c1 follows the partition
	if err != nil {
		t.Fatal(err)
	}
	lb, err := c2.Acquire(bg(), rb, mb)
	if err != nil {
		t.Fatal(err)
	}
	if err := coord.ViewSync(bg(), c1, rb); err != nil {
		t.Fatal(err)
	}

	// A waiter of B in c1, and eight waiters of A.
	chB, ok := coord.ViewWaiter(c1, rb)
	if !ok {
		t.Fatal("c1 follows no view of the partition")
	}
	wakesB := coord.ViewWakes(c1, rb)
	wakesA := coord.ViewWakes(c1, ra)
	chA, _ := coord.ViewWaiter(c1, ra)
	var woke sync.WaitGroup
	for i := 0; i < 8; i++ {
		woke.Add(1)
		go func() { defer woke.Done(); <-chA }()
	}
	allWoke := make(chan struct{})
	go func() { woke.Wait(); close(allWoke) }()

	// Twenty renewals of A, folded by c1's view.
	for i := 0; i < 20; i++ {
		if err := la.Renew(bg()); err != nil {
			t.Fatal(err)
		}
	}
	if err := coord.ViewSync(bg(), c1, ra); err != nil {
		t.Fatal(err)
	}
	if !closedWithin(allWoke, 30*time.Second) {
		t.Fatal("a waiter of A was not woken by A's renewals")
	}
	if got := coord.ViewWakes(c1, ra); got <= wakesA {
		t.Fatalf("wake-ups of A: %d before the renewals, %d after", wakesA, got)
	}
	select {
	case <-chB:
		t.Fatal("A's renewals woke a waiter of B")
	default:
	}
	if got := coord.ViewWakes(c1, rb); got != wakesB {
		t.Fatalf("wake-ups of B: %d before A's renewals, %d after", wakesB, got)
	}

	// One renewal of B (by the other client) wakes B's waiter once.
	if err := lb.Renew(bg()); err != nil {
		t.Fatal(err)
	}
	if err := coord.ViewSync(bg(), c1, rb); err != nil {
		t.Fatal(err)
	}
	if !closedWithin(chB, 30*time.Second) {
		t.Fatal("B's renewal did not wake B's waiter")
	}
	if got := coord.ViewWakes(c1, rb); got != wakesB+1 {
		t.Fatalf("wake-ups of B: %d before B's renewal, %d after (want one more)", wakesB, got)
	}
}

// A standby waiting in Acquire for B is woken by B's records alone and
// misses none of them: while A renews, it keeps waiting; when B's holder
// resigns, it wins without the clock moving.
func TestStandbyWokenByItsRoleOnly(t *testing.T) {
	e := oneBus(t)
	ra, rb := core.MustRole("wake-a"), core.MustRole("wake-b")
	c1, _ := e.client()
	c2, _ := e.client()
	la, err := c1.Acquire(bg(), ra, ma)
	if err != nil {
		t.Fatal(err)
	}
	lb, err := c2.Acquire(bg(), rb, mb)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(bg(), time.Minute)
	defer cancel()
	won := make(chan error, 1)
	go func() {
		l, err := c1.Acquire(ctx, rb, mc)
		if err == nil && l.Member() != mc {
			err = coord.WrapError(coord.ErrTransport, nil, "won as %s", l.Member())
		}
		won <- err
	}()
	// The standby registered: its registration is a record of B.
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := c2.Describe(bg(), rb)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Roster) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the standby never registered: %+v", st.Roster)
		}
		time.Sleep(time.Millisecond)
	}
	if err := coord.ViewSync(bg(), c1, rb); err != nil {
		t.Fatal(err)
	}
	before := coord.ViewWakes(c1, rb)
	wakesA, waits := coord.ViewWakes(c1, ra), c1.Stats().ViewWaits
	for i := 0; i < 20; i++ {
		if err := la.Renew(bg()); err != nil {
			t.Fatal(err)
		}
	}
	if err := coord.ViewSync(bg(), c1, ra); err != nil {
		t.Fatal(err)
	}
	if got := coord.ViewWakes(c1, rb); got != before {
		t.Fatalf("A's renewals woke B's standby: wake-ups of B %d -> %d", before, got)
	}
	// Stats.ViewWaits: A's leadership watcher reads its state again after
	// each wake-up of A (the manual clock fires no poll timer); B's standby
	// reads nothing, so the waits grow by at most A's wake-ups.
	for deadline := time.Now().Add(30 * time.Second); c1.Stats().ViewWaits == waits; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("view_waits stayed at %d through A's renewals", waits)
		}
	}
	if got, woken := c1.Stats().ViewWaits-waits, coord.ViewWakes(c1, ra)-wakesA; got > woken {
		t.Fatalf("view_waits grew by %d over A's renewals, which woke A's waiters %d times", got, woken)
	}
	select {
	case err := <-won:
		t.Fatalf("the standby returned while B was held: %v", err)
	default:
	}
	if err := lb.Resign(bg()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-won:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the standby missed the resignation of B's holder")
	}
	if got := coord.ViewWakes(c1, rb); got <= before {
		t.Fatalf("wake-ups of B: %d before the resignation, %d after", before, got)
	}
}

// A standby waiting behind a live lease is woken by the role's records and
// by its WAIT instant, not by the poll interval: eight seconds of the
// client's clock without a record (less than the renew interval, so the
// holder writes none) cost the waiting Acquire no re-read. With the WAIT
// bounded by krabka.poll.interval.ms (1 s) it re-read the role once a
// second: at 10,000 standby roles, 10,000 wake-ups a second (issue 35's
// scale bench). The standby still takes over once the lease ran out.
func TestStandbyWaitIsNotPolled(t *testing.T) {
	e := newEnv(t)
	c1, _ := e.client("krabka.renew.background", "false")
	c2, _ := e.client()
	l, err := c1.Acquire(bg(), role, ma)
	if err != nil {
		t.Fatal(err)
	}
	won := make(chan result, 1)
	go func() {
		l2, err := c2.Acquire(bg(), role, mb)
		won <- result{l2, err}
	}()
	waitFor(t, "the standby's registration", func() bool { return len(describe(t, c1).Roster) == 2 })
	// The standby read its registration back and sleeps in WAIT once its
	// view waits stop moving (200 ms of real time without one).
	last := c2.Stats().ViewWaits
	for still := time.Now(); time.Since(still) < 200*time.Millisecond; {
		time.Sleep(10 * time.Millisecond)
		if n := c2.Stats().ViewWaits; n != last {
			last, still = n, time.Now()
		}
	}
	for i := 0; i < 16; i++ {
		e.clock.Advance(500 * time.Millisecond)
		time.Sleep(10 * time.Millisecond) // a timer that fired runs its Acquire step
	}
	if got := c2.Stats().ViewWaits - last; got > 1 {
		t.Fatalf("the waiting standby re-read the role %d times in 8 s of its clock without a record of the role (want 0; the poll interval is 1 s)", got)
	}
	select {
	case r := <-won:
		t.Fatalf("the standby returned behind a live lease: %v %v", r.l, r.err)
	default:
	}
	// The holder stops renewing: the standby challenges once the lease
	// (30 s) and its stagger passed.
	e.advanceUntil(time.Second, 60*time.Second, func() bool { return len(won) == 1 })
	r := <-won
	if r.err != nil {
		t.Fatal(r.err)
	}
	if !r.l.Token().Supersedes(l.Token()) {
		t.Fatalf("the standby's token %s does not supersede the holder's %s", r.l.Token(), l.Token())
	}
}
