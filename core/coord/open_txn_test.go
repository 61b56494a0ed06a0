package coord_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/memtransport"
)

// crossRole is several roles on the one partition of a coordination topic,
// each with a holder (renewed by the test on the manual clock) and a
// standby waiting in Acquire, in clients of their own.
type crossRole struct {
	e        *env
	roles    []core.Role
	holders  []*coord.Leadership
	standbys []<-chan result
}

func newCrossRole(t *testing.T, n int, readCommitted bool) *crossRole {
	e := &env{t: t, cluster: memtransport.NewCluster(1), clock: core.NewManualClock(t0)}
	e.cluster.ReadCommitted(readCommitted)
	x := &crossRole{e: e}
	for i := 0; i < n; i++ {
		r := core.MustRole(fmt.Sprintf("shard-%d", i))
		ch, _ := e.client()
		l, err := ch.Acquire(bg(), r, ma)
		if err != nil {
			t.Fatal(err)
		}
		cs, _ := e.client()
		sch := make(chan result, 1)
		go func() {
			l, err := cs.Acquire(bg(), r, mb)
			sch <- result{l, err}
		}()
		x.roles, x.holders, x.standbys = append(x.roles, r), append(x.holders, l), append(x.standbys, sch)
	}
	// Let every standby register and start waiting.
	time.Sleep(50 * time.Millisecond)
	return x
}

// run advances the clock by d in steps of 250 ms, renewing every holder in
// live (by index) when its renewal is due, and returns the roles whose
// standby won. A holder whose renewal fails (it was deposed) is renewed no
// more.
func (x *crossRole) run(d time.Duration, live func(i int) bool) []int {
	for moved := time.Duration(0); moved < d; moved += 250 * time.Millisecond {
		for i, l := range x.holders {
			if live(i) && l.State() == coord.Active && l.RenewDue() {
				_ = l.Renew(bg()) // the holders' states are asserted by the tests
			}
		}
		time.Sleep(2 * time.Millisecond) // let waiters re-arm
		x.e.clock.Advance(250 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	var won []int
	for i, ch := range x.standbys {
		if len(ch) > 0 {
			won = append(won, i)
		}
	}
	return won
}

// A transaction another producer left open on the partition holds its last
// stable offset; the standbys read past it and see their holders' renewals
// (docs/PROTOCOL.md 12.1). Under the read_committed reading of the library
// before that rule, the same run deposes the healthy holders: the test
// shows the difference on the same in-memory cluster.
func TestOpenTransactionOfAnotherProducerDoesNotDeposeHealthyHolders(t *testing.T) {
	for _, old := range []bool{false, true} {
		t.Run(fmt.Sprintf("read_committed=%v", old), func(t *testing.T) {
			x := newCrossRole(t, 3, old)
			lease := core.EncodeLease(core.Lease{Member: core.MustMemberID("ghost"), Token: core.FencingToken{ProducerID: 1, ProducerEpoch: 0}, GrantedAt: t0, Deadline: t0 + 30000})
			open := x.e.cluster.OpenTxn(x.e.config().Topic, 0, core.EncodeKey(core.LeaseKey(core.MustRole("abandoned"))), lease)
			defer open.Abort()
			won := x.run(80*time.Second, func(int) bool { return true })
			if !old {
				if len(won) != 0 {
					t.Fatalf("standbys of roles %v won while their holders renewed", won)
				}
				for i, l := range x.holders {
					if l.State() != coord.Active {
						t.Fatalf("holder of %s: %s %v", x.roles[i], l.State(), l.Err())
					}
				}
				return
			}
			if len(won) != len(x.roles) {
				t.Fatalf("read_committed: standbys of %v won, want every role's (the defect this rule fixes)", won)
			}
		})
	}
}

// A holder that really stops renewing is still replaced at its deadline
// while another producer's transaction holds the stable offset: the
// standby waits for no transaction but one of its own role.
func TestDeadHolderReplacedAtItsDeadlineBesideAnOpenTransaction(t *testing.T) {
	x := newCrossRole(t, 3, false)
	open := x.e.cluster.OpenTxn(x.e.config().Topic, 0, []byte("not a coordination key"), []byte("x"))
	defer open.Abort()
	deadline := x.holders[1].Lease().Deadline
	var won []int
	var at int64
	for moved := time.Duration(0); moved < 60*time.Second && len(won) == 0; moved += 10 * time.Second {
		won = x.run(10*time.Second, func(i int) bool { return i != 1 })
		at = x.e.clock.NowMs()
	}
	if len(won) != 1 || won[0] != 1 {
		t.Fatalf("standbys that won: %v, want only the dead holder's (role 1)", won)
	}
	r := <-x.standbys[1]
	if r.err != nil {
		t.Fatal(r.err)
	}
	if got := r.l.Lease().GrantedAt; got < deadline || got > deadline+1000 || at < got {
		t.Fatalf("dead holder's deadline %d, the standby's lease granted at %d", deadline, got)
	}
}

// An open transaction of the role itself (its holder's renewal whose marker
// is not written yet) is waited for before a challenge: when it commits, the
// standby sees the renewal and keeps waiting.
func TestStandbyWaitsForTheMarkerOfItsOwnRolesOpenTransaction(t *testing.T) {
	x := newCrossRole(t, 1, false)
	l := x.holders[0]
	cfg := x.e.config()
	// The holder's renewal, as the standby's view sees it before the
	// coordinator wrote its COMMIT marker.
	renewed := core.Lease{Member: ma, Token: l.Token(), GrantedAt: l.Lease().Deadline - 1000, Deadline: l.Lease().Deadline + 29000}
	open := x.e.cluster.OpenTxn(cfg.Topic, 0, core.EncodeKey(core.LeaseKey(x.roles[0])), core.EncodeLease(renewed))
	// At the old deadline the standby syncs, sees the open transaction of
	// its role and waits for its marker (at most a second).
	x.e.clock.Set(l.Lease().Deadline)
	time.Sleep(100 * time.Millisecond)
	if len(x.standbys[0]) > 0 {
		t.Fatal("standby challenged while its role's transaction was open")
	}
	open.Commit()
	time.Sleep(100 * time.Millisecond)
	x.e.clock.Advance(2 * time.Second)
	time.Sleep(100 * time.Millisecond)
	if len(x.standbys[0]) > 0 {
		r := <-x.standbys[0]
		t.Fatalf("standby won although the committed renewal moved the deadline: %v %v", r.l, r.err)
	}
}

// A lease of the role in a transaction whose marker does not come within
// the marker wait (a view the marker reaches late: the holder may well have
// committed it) counts until its deadline: the standby does not challenge
// before it, and takes the role after it (its mint would abort the
// transaction if it was abandoned). Without the rule the standby challenged
// a second after the old deadline: the campaign's seed 3601 deposed a
// healthy holder that way (tests/chaos/testdata/issue36-deposed-seed3601*).
func TestStandbyHonoursAnOpenLeaseOfItsRoleUntilItsDeadline(t *testing.T) {
	x := newCrossRole(t, 1, false)
	l := x.holders[0]
	cfg := x.e.config()
	renewed := core.Lease{Member: ma, Token: l.Token(), GrantedAt: l.Lease().Deadline - 1000, Deadline: l.Lease().Deadline + 29000}
	open := x.e.cluster.OpenTxn(cfg.Topic, 0, core.EncodeKey(core.LeaseKey(x.roles[0])), core.EncodeLease(renewed))
	defer open.Abort()
	x.e.clock.Set(l.Lease().Deadline)
	// Well past the marker wait, short of the open lease's deadline.
	for i := 0; i < 20; i++ {
		time.Sleep(20 * time.Millisecond)
		x.e.clock.Advance(time.Second)
	}
	time.Sleep(100 * time.Millisecond)
	if len(x.standbys[0]) > 0 {
		r := <-x.standbys[0]
		t.Fatalf("standby challenged %d ms before the deadline of the open lease: %v %v",
			renewed.Deadline-x.e.clock.NowMs(), r.l, r.err)
	}
	// Past it: the marker wait runs on the clock too, so move it on.
	x.e.clock.Set(renewed.Deadline + 1)
	for i := 0; i < 100 && len(x.standbys[0]) == 0; i++ {
		time.Sleep(20 * time.Millisecond)
		x.e.clock.Advance(500 * time.Millisecond)
	}
	if len(x.standbys[0]) == 0 {
		t.Fatal("standby did not take the role within 50 s after the open lease's deadline")
	}
	r := <-x.standbys[0]
	if r.err != nil {
		t.Fatal(r.err)
	}
	if got := r.l.Lease().GrantedAt; got <= renewed.Deadline {
		t.Fatalf("standby's lease granted at %d, not after the open lease's deadline %d", got, renewed.Deadline)
	}
}
