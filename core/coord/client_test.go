package coord_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/memtransport"
)

const t0 = 1_700_000_000_000

type env struct {
	t       *testing.T
	cluster *memtransport.Cluster
	clock   *core.ManualClock
}

func newEnv(t *testing.T) *env {
	return &env{t: t, cluster: memtransport.NewCluster(16), clock: core.NewManualClock(t0)}
}

func (e *env) config(kv ...string) coord.Config {
	cfg := coord.DefaultConfig()
	if err := cfg.Set("bootstrap.servers", "mem:9092"); err != nil {
		e.t.Fatal(err)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if err := cfg.Set(kv[i], kv[i+1]); err != nil {
			e.t.Fatal(err)
		}
	}
	return cfg
}

func (e *env) client(kv ...string) (*coord.Client, *memtransport.Transport) {
	cfg := e.config(kv...)
	tr := e.cluster.Transport(cfg.Topic)
	c, err := coord.NewClient(cfg, tr, e.clock)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { c.Close() })
	return c, tr
}

// advanceUntil moves the manual clock in steps until cond holds.
func (e *env) advanceUntil(step time.Duration, max time.Duration, cond func() bool) {
	e.t.Helper()
	for moved := time.Duration(0); ; moved += step {
		time.Sleep(2 * time.Millisecond) // let sleepers re-arm
		if cond() {
			return
		}
		if moved > max {
			e.t.Fatalf("condition not met after advancing %v", moved)
		}
		e.clock.Advance(step)
	}
}

var (
	role = core.MustRole("controller")
	ma   = core.MustMemberID("node-a")
	mb   = core.MustMemberID("node-b")
	mc   = core.MustMemberID("node-c")
)

func bg() context.Context { return context.Background() }

type result struct {
	l   *coord.Leadership
	err error
}

func acquireAsync(c *coord.Client, ctx context.Context, m core.MemberID) <-chan result {
	ch := make(chan result, 1)
	go func() {
		l, err := c.Acquire(ctx, role, m)
		ch <- result{l, err}
	}()
	return ch
}

func ready(ch <-chan result) func() bool {
	return func() bool { return len(ch) > 0 }
}

func TestAcquireUncontendedWritesLeaseUnderMintedToken(t *testing.T) {
	e := newEnv(t)
	c, _ := e.client()
	l, err := c.Acquire(bg(), role, ma)
	if err != nil {
		t.Fatal(err)
	}
	if l.Token() != e.cluster.Token("controller") || l.Token().ProducerEpoch != 0 {
		t.Fatalf("token %s, coordinator %s", l.Token(), e.cluster.Token("controller"))
	}
	want := core.Lease{Member: ma, Token: l.Token(), GrantedAt: t0, Deadline: t0 + 30000}
	if l.Lease() != want {
		t.Fatalf("lease %+v want %+v", l.Lease(), want)
	}
	st, err := c.Describe(bg(), role)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Current || st.Holder != ma || st.Token != l.Token() || len(st.Roster) != 1 || st.Roster[0].Rank != 0 {
		t.Fatalf("describe %+v", st)
	}
	if e.cluster.Appends() != 1 || e.cluster.Mints() != 1 {
		t.Fatalf("appends %d mints %d", e.cluster.Appends(), e.cluster.Mints())
	}
}

func TestStandbyWaitsUntilDeadlineThenChallenges(t *testing.T) {
	e := newEnv(t)
	ca, _ := e.client()
	cb, _ := e.client()
	a, err := ca.Acquire(bg(), role, ma)
	if err != nil {
		t.Fatal(err)
	}
	l, at, err := cb.TryAcquire(bg(), role, mb)
	if err != nil || l != nil || at.UnixMilli() != a.Lease().Deadline {
		t.Fatalf("try: %v %v %v (deadline %d)", l, at.UnixMilli(), err, a.Lease().Deadline)
	}
	ch := acquireAsync(cb, bg(), mb)
	e.advanceUntil(250*time.Millisecond, 40*time.Second, ready(ch))
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	if now := e.clock.NowMs(); now < a.Lease().Deadline || now > a.Lease().Deadline+1000 {
		t.Fatalf("took over at %d, deadline %d", now, a.Lease().Deadline)
	}
	if !r.l.Token().Supersedes(a.Token()) {
		t.Fatal("new token does not supersede")
	}
	// The old holder wrote nothing, yet its view of the log shows the
	// newer token: it ends FENCED at once (docs/PROTOCOL.md 10), and the
	// cluster refuses its writes as well.
	select {
	case <-a.Done():
	case <-time.After(10 * time.Second):
		t.Fatalf("old holder not told by its view: %s", a.State())
	}
	if a.State() != coord.Fenced || !errors.Is(a.Err(), coord.ErrFenced) || !strings.Contains(a.Err().Error(), "the log shows a lease of node-b") {
		t.Fatalf("old holder %s %v", a.State(), a.Err())
	}
	if _, err := a.Produce(bg(), coord.Message{Topic: "cmds", Partition: 0}); !errors.Is(err, coord.ErrFenced) {
		t.Fatalf("produce of the deposed holder: %v", err)
	}
	if err := a.Renew(bg()); !errors.Is(err, coord.ErrFenced) {
		t.Fatalf("renew after the fence: %v", err)
	}
}

// A holder that is late to renew but was not superseded keeps the role: the
// late renewal reaches the cluster and succeeds (the lease is a liveness
// device, the token is the fence).
func TestLateRenewalWithoutChallengerKeepsTheRole(t *testing.T) {
	e := newEnv(t)
	c, _ := e.client()
	l, err := c.Acquire(bg(), role, ma)
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(45 * time.Second) // well past the 30 s deadline
	if l.State() != coord.Active {
		t.Fatalf("ended without a failed renewal: %s %v", l.State(), l.Err())
	}
	if err := l.Renew(bg()); err != nil {
		t.Fatalf("late renewal: %v", err)
	}
	if got := l.Lease(); got.GrantedAt != e.clock.NowMs() || got.Token != l.Token() {
		t.Fatalf("lease after the late renewal %+v", got)
	}
	if _, err := l.Produce(bg(), coord.Message{Topic: "cmds", Partition: 0}); err != nil {
		t.Fatalf("produce after the late renewal: %v", err)
	}
}

func TestRankOrderStaggersChallenges(t *testing.T) {
	e := newEnv(t)
	ca, _ := e.client()
	a, _ := ca.Acquire(bg(), role, ma)
	cb, _ := e.client()
	cc, _ := e.client()
	if _, _, err := cb.TryAcquire(bg(), role, mb); err != nil {
		t.Fatal(err)
	}
	_, atC, err := cc.TryAcquire(bg(), role, mc)
	if err != nil {
		t.Fatal(err)
	}
	if atC.UnixMilli() != a.Lease().Deadline+5000 {
		t.Fatalf("rank 1 retries at %d, want deadline + stagger %d", atC.UnixMilli(), a.Lease().Deadline+5000)
	}
	chB := acquireAsync(cb, bg(), mb)
	chC := acquireAsync(cc, bg(), mc)
	e.advanceUntil(250*time.Millisecond, 40*time.Second, ready(chB))
	if len(chC) != 0 {
		t.Fatal("rank 1 won too")
	}
	b := (<-chB).l
	// b stops renewing; c (now rank 0) takes over at b's deadline.
	e.advanceUntil(250*time.Millisecond, 40*time.Second, ready(chC))
	c := <-chC
	if c.err != nil || e.clock.NowMs() < b.Lease().Deadline {
		t.Fatalf("c: %v at %d (b's deadline %d)", c.err, e.clock.NowMs(), b.Lease().Deadline)
	}
}

func TestHoldSeenByFreshAcquireMintsAndFencesEarlierIncarnation(t *testing.T) {
	e := newEnv(t)
	c1, _ := e.client()
	old, _ := c1.Acquire(bg(), role, ma)
	c2, _ := e.client() // the same member, restarted
	nu, err := c2.Acquire(bg(), role, ma)
	if err != nil {
		t.Fatal(err)
	}
	if !nu.Token().Supersedes(old.Token()) {
		t.Fatal("no new epoch")
	}
	_, err = old.Produce(bg(), coord.Message{Topic: "cmds", Partition: 0, Value: []byte("x")})
	if !errors.Is(err, coord.ErrFenced) || old.State() != coord.Fenced {
		t.Fatalf("old incarnation: %v %s", err, old.State())
	}
	if err := old.Renew(bg()); !errors.Is(err, coord.ErrFenced) {
		t.Fatalf("renew after fence: %v", err)
	}
	select {
	case <-old.Done():
	default:
		t.Fatal("Done not closed")
	}
	if _, err := nu.Produce(bg(), coord.Message{Topic: "cmds", Partition: -1, Key: []byte("k"), Value: []byte("y")}); err != nil {
		t.Fatal(err)
	}
}

func TestAtMostOneRegistrationPerAcquireDespiteLaggingReads(t *testing.T) {
	e := newEnv(t)
	c, _ := e.client("krabka.poll.interval.ms", "100")
	e.cluster.HideReads()
	ctx, cancel := context.WithCancel(bg())
	defer cancel()
	ch := acquireAsync(c, ctx, ma)
	for i := 0; i < 20; i++ {
		time.Sleep(2 * time.Millisecond)
		e.clock.Advance(100 * time.Millisecond)
	}
	if n := e.cluster.Appends(); n != 1 {
		t.Fatalf("%d registrations in one acquire call", n)
	}
	e.cluster.ShowReads()
	e.advanceUntil(100*time.Millisecond, 10*time.Second, ready(ch))
	if r := <-ch; r.err != nil || e.cluster.Appends() != 1 {
		t.Fatalf("%v, %d appends", r.err, e.cluster.Appends())
	}
}

func TestRenewKeepsTokenAndMovesDeadline(t *testing.T) {
	e := newEnv(t)
	c, _ := e.client()
	l, _ := c.Acquire(bg(), role, ma)
	if l.RenewDue() {
		t.Fatal("due at once")
	}
	e.clock.Advance(10 * time.Second)
	if !l.RenewDue() {
		t.Fatal("not due after the renew interval")
	}
	if err := l.Renew(bg()); err != nil {
		t.Fatal(err)
	}
	if l.Lease().GrantedAt != t0+10000 || l.Lease().Deadline != t0+40000 || l.Lease().Token != l.Token() || l.RenewDue() {
		t.Fatalf("lease after renew %+v", l.Lease())
	}
}

func TestCutOffLeaderEndsExpiredByItsDeadline(t *testing.T) {
	e := newEnv(t)
	c, tr := e.client()
	l, _ := c.Acquire(bg(), role, ma)
	tr.SetFault(memtransport.Refuse)
	e.clock.Advance(10 * time.Second)
	if err := l.Renew(bg()); !errors.Is(err, coord.ErrTransport) || l.State() != coord.Active {
		t.Fatalf("renew while refused: %v %s", err, l.State())
	}
	e.clock.Advance(20 * time.Second) // exactly the deadline
	select {
	case <-l.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("not ended at the deadline")
	}
	if l.State() != coord.Expired {
		t.Fatalf("state %s", l.State())
	}
	if _, err := l.Produce(bg(), coord.Message{Topic: "cmds", Partition: 0}); !errors.Is(err, coord.ErrLeaseExpired) {
		t.Fatalf("produce after the deadline: %v", err)
	}
}

func TestRenewNeverRunsPastTheDeadline(t *testing.T) {
	e := newEnv(t)
	c, tr := e.client()
	l, _ := c.Acquire(bg(), role, ma)
	tr.SetFault(memtransport.BlackHole)
	done := make(chan error, 1)
	go func() { done <- l.Renew(bg()) }()
	time.Sleep(5 * time.Millisecond)
	e.clock.Advance(30 * time.Second)
	select {
	case err := <-done:
		if !errors.Is(err, coord.ErrLeaseExpired) {
			t.Fatalf("renew: %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("renew ran past the deadline")
	}
}

func TestBackgroundRenewal(t *testing.T) {
	e := newEnv(t)
	c, _ := e.client("krabka.renew.background", "true")
	l, _ := c.Acquire(bg(), role, ma)
	e.advanceUntil(time.Second, 60*time.Second, func() bool { return l.Lease().GrantedAt >= t0+30000 })
	if l.State() != coord.Active {
		t.Fatalf("state %s: %v", l.State(), l.Err())
	}
}

func TestResignStepsAsideSoTheFirstStandbyChallengesAtOnce(t *testing.T) {
	e := newEnv(t)
	ca, _ := e.client()
	cb, _ := e.client()
	cc, _ := e.client()
	a, _ := ca.Acquire(bg(), role, ma)
	for _, x := range []struct {
		c *coord.Client
		m core.MemberID
	}{{cb, mb}, {cc, mc}} {
		if _, _, err := x.c.TryAcquire(bg(), role, x.m); err != nil {
			t.Fatal(err)
		}
	}
	// No time passes: without the amended resign, b would wait for its own
	// registered_at + 1 stagger (it ranks 1 behind the resigner).
	if err := a.Resign(bg()); err != nil {
		t.Fatal(err)
	}
	if a.State() != coord.Resigned || !errors.Is(a.Err(), coord.ErrNotLeader) {
		t.Fatalf("%s %v", a.State(), a.Err())
	}
	st, _ := cb.Describe(bg(), role)
	if st.Lease == nil || st.Lease.Member != ma || st.Lease.Token != a.Token() || st.Lease.Deadline != st.Lease.GrantedAt ||
		st.Removed != 1 || len(st.Roster) != 2 || st.Roster[0].Member != mb || st.Roster[0].Rank != 0 || st.Roster[1].Rank != 1 {
		t.Fatalf("after resign: expired lease of a, a deregistered, b rank 0, c rank 1; got %+v lease %+v", st, st.Lease)
	}
	b, _, err := cb.TryAcquire(bg(), role, mb)
	if err != nil || b == nil {
		t.Fatalf("first standby after resign: %v %v", b, err)
	}
	if l, at, err := cc.TryAcquire(bg(), role, mc); err != nil || l != nil || at.UnixMilli() != b.Lease().Deadline {
		t.Fatalf("second standby: %v %v %v, want to wait for b's deadline %d", l, at.UnixMilli(), err, b.Lease().Deadline)
	}
	if e.cluster.Token("controller") != b.Token() || b.Token().ProducerEpoch != a.Token().ProducerEpoch+1 {
		t.Fatalf("one mint after the resign: coordinator %s, a %s, b %s", e.cluster.Token("controller"), a.Token(), b.Token())
	}
}

// The winner prunes the members that let their turn pass: the expired
// holder and every member ranked ahead of it (docs/PROTOCOL.md 10.3).
func TestWinnerPrunesDeadMembersAheadOfIt(t *testing.T) {
	e := newEnv(t)
	ca, _ := e.client("krabka.leave.on.close", "false")
	a, _ := ca.Acquire(bg(), role, ma)
	var dead []*coord.Client
	for i := 0; i < 3; i++ {
		c, _ := e.client("krabka.leave.on.close", "false")
		if _, _, err := c.TryAcquire(bg(), role, core.MustMemberID(fmt.Sprintf("dead-%d", i))); err != nil {
			t.Fatal(err)
		}
		dead = append(dead, c)
	}
	cb, _ := e.client()
	if _, _, err := cb.TryAcquire(bg(), role, mb); err != nil {
		t.Fatal(err)
	}
	for _, c := range dead {
		c.Close() // crashed: never leave
	}
	ca.Close()
	st, _ := cb.Describe(bg(), role)
	if r := st.Roster[len(st.Roster)-1]; r.Member != mb || r.Rank != 3 {
		t.Fatalf("b should rank 3 behind the dead: %+v", st.Roster)
	}
	ch := acquireAsync(cb, bg(), mb)
	e.advanceUntil(250*time.Millisecond, 60*time.Second, ready(ch))
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	// b waited for the three dead turns once: deadline + 3 staggers.
	if now := e.clock.NowMs(); now < a.Lease().Deadline+3*5000 {
		t.Fatalf("b took over at %d, before deadline + 3 staggers %d", now, a.Lease().Deadline+3*5000)
	}
	st, _ = cb.Describe(bg(), role)
	if len(st.Roster) != 1 || st.Roster[0].Member != mb || st.Removed != 4 {
		t.Fatalf("after the win the roster is b alone with 4 removed: %+v", st)
	}
}

// A pruned member that is alive registers again, at the tail, once.
func TestPrunedMemberRegistersAgainAtTheTail(t *testing.T) {
	e := newEnv(t)
	ca, _ := e.client()
	cb, _ := e.client()
	cc, _ := e.client()
	a, _ := ca.Acquire(bg(), role, ma)
	if _, _, err := cb.TryAcquire(bg(), role, mb); err != nil {
		t.Fatal(err)
	}
	if _, _, err := cc.TryAcquire(bg(), role, mc); err != nil {
		t.Fatal(err)
	}
	// b is "paused": it does not acquire; c waits a deadline + 1 stagger and wins.
	e.clock.Set(a.Lease().Deadline + 5000)
	l, _, err := cc.TryAcquire(bg(), role, mc)
	if err != nil || l == nil {
		t.Fatalf("c: %v %v", l, err)
	}
	st, _ := cc.Describe(bg(), role)
	if len(st.Roster) != 1 || st.Roster[0].Member != mc {
		t.Fatalf("a (expired holder) and b (ranked ahead) are pruned: %+v", st.Roster)
	}
	appends := e.cluster.Appends()
	if l, _, err := cb.TryAcquire(bg(), role, mb); err != nil || l != nil {
		t.Fatalf("b resumed: %v %v", l, err)
	}
	st, _ = cc.Describe(bg(), role)
	if len(st.Roster) != 2 || st.Roster[1].Member != mb || st.Roster[1].Offset <= st.Roster[0].Offset || e.cluster.Appends() != appends+1 {
		t.Fatalf("b registers again once, at the tail: %+v (appends %d -> %d)", st.Roster, appends, e.cluster.Appends())
	}
	// The old holder was deposed: its writes are refused.
	if _, err := a.Produce(bg(), coord.Message{Topic: "cmds", Partition: 0}); !errors.Is(err, coord.ErrFenced) {
		t.Fatalf("old holder: %v", err)
	}
}

func TestLeaveAndCloseWithLeaveRemoveTheMember(t *testing.T) {
	e := newEnv(t)
	ca, _ := e.client()
	cb, _ := e.client()
	cc, _ := e.client()
	a, _ := ca.Acquire(bg(), role, ma)
	for _, x := range []struct {
		c *coord.Client
		m core.MemberID
	}{{cb, mb}, {cc, mc}} {
		if _, _, err := x.c.TryAcquire(bg(), role, x.m); err != nil {
			t.Fatal(err)
		}
	}
	if err := cb.Leave(bg(), role, mb); err != nil {
		t.Fatal(err)
	}
	cc.Close() // krabka.leave.on.close defaults to true
	ca.Close() // a holds the role: closing does not leave
	if a.State() != coord.Closed {
		t.Fatalf("a: %s", a.State())
	}
	cd, _ := e.client()
	st, err := cd.Describe(bg(), role)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Roster) != 1 || st.Roster[0].Member != ma || st.Removed != 2 || st.Holder != ma {
		t.Fatalf("only the holder stays registered: %+v", st)
	}
}

func TestWatchReportsHolderChangesRosterAndFreeRole(t *testing.T) {
	e := newEnv(t)
	ca, _ := e.client()
	cb, _ := e.client()
	cw, _ := e.client()
	a, _ := ca.Acquire(bg(), role, ma)
	w, err := cw.Watch(bg(), role)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	next := func(want coord.EventKind) coord.Event {
		t.Helper()
		ctx, cancel := context.WithTimeout(bg(), 10*time.Second)
		defer cancel()
		ev, err := w.Next(ctx)
		if err != nil || ev.Kind != want {
			t.Fatalf("next event: %v %v, want %s", ev.Kind, err, want)
		}
		return ev
	}
	ev := next(coord.EventHolderChanged)
	if ev.Holder != ma || ev.Token != a.Token() || ev.HasPrevHolder {
		t.Fatalf("initial holder: %+v", ev)
	}
	next(coord.EventRosterChanged)
	if _, _, err := cb.TryAcquire(bg(), role, mb); err != nil {
		t.Fatal(err)
	}
	if ev := next(coord.EventRosterChanged); len(ev.Roster) != 2 || ev.Roster[1].Member != mb {
		t.Fatalf("b joined: %+v", ev.Roster)
	}
	e.clock.Set(a.Lease().Deadline)
	if ev := next(coord.EventRoleFree); ev.Offset != -1 || ev.Holder != ma {
		t.Fatalf("free by the clock: %+v", ev)
	}
	b, _, err := cb.TryAcquire(bg(), role, mb)
	if err != nil || b == nil {
		t.Fatalf("b: %v %v", b, err)
	}
	ev = next(coord.EventHolderChanged)
	if ev.Holder != mb || ev.PrevHolder != ma || ev.PrevToken != a.Token() || !ev.Token.Supersedes(a.Token()) {
		t.Fatalf("takeover: %+v", ev)
	}
	if ev := next(coord.EventRosterChanged); len(ev.Roster) != 1 || ev.Roster[0].Member != mb {
		t.Fatalf("a pruned: %+v", ev.Roster)
	}
	if err := b.Resign(bg()); err != nil {
		t.Fatal(err)
	}
	next(coord.EventRoleFree)
	if ev := next(coord.EventRosterChanged); len(ev.Roster) != 0 {
		t.Fatalf("b resigned and left the roster: %+v", ev.Roster)
	}
	w.Close()
	if ev, err := w.Next(bg()); !errors.Is(err, coord.ErrClosed) {
		t.Fatalf("after close: %+v %v", ev, err)
	}
}

func TestCurrentFalseOnceChallengerMints(t *testing.T) {
	e := newEnv(t)
	c, tr := e.client()
	l, _ := c.Acquire(bg(), role, ma)
	p, err := tr.Mint(bg(), "controller", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := c.Describe(bg(), role)
	if st.Current || st.Token != p.Token() || st.Holder != ma {
		t.Fatalf("%+v", st)
	}
	if err := l.Renew(bg()); !errors.Is(err, coord.ErrFenced) {
		t.Fatalf("renew: %v", err)
	}
}

func TestPoisonedRecordIsSkippedAndCounted(t *testing.T) {
	e := newEnv(t)
	p, _ := core.RolePartition(role, 16)
	e.cluster.AppendRaw(coord.DefaultTopic, p, core.EncodeKey(core.RegistrationKey(role, mc)), []byte{0, 9})
	c, _ := e.client()
	if _, err := c.Acquire(bg(), role, ma); err != nil {
		t.Fatal(err)
	}
	st, _ := c.Describe(bg(), role)
	if st.Skipped != 1 || st.Holder != ma {
		t.Fatalf("%+v", st)
	}
}

func TestCloseCancelsBlockedCallsAndEndsLeaderships(t *testing.T) {
	e := newEnv(t)
	ca, _ := e.client()
	cb, _ := e.client()
	a, _ := ca.Acquire(bg(), role, ma)
	ch := acquireAsync(cb, bg(), mb)
	time.Sleep(10 * time.Millisecond)
	cb.Close()
	select {
	case r := <-ch:
		if !errors.Is(r.err, coord.ErrClosed) {
			t.Fatalf("blocked acquire: %v", r.err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("close did not cancel the blocked acquire")
	}
	ca.Close()
	if a.State() != coord.Closed || !errors.Is(a.Err(), coord.ErrClosed) {
		t.Fatalf("%s %v", a.State(), a.Err())
	}
	if err := a.Renew(bg()); !errors.Is(err, coord.ErrClosed) {
		t.Fatalf("renew after close: %v", err)
	}
	if _, err := ca.Describe(bg(), role); !errors.Is(err, coord.ErrClosed) {
		t.Fatalf("describe after close: %v", err)
	}
	if err := ca.Close(); err != nil {
		t.Fatal("close twice:", err)
	}
}

func TestTimeoutMatchesErrTimeoutAndDeadlineExceeded(t *testing.T) {
	e := newEnv(t)
	ca, _ := e.client()
	cb, trb := e.client()
	if _, err := ca.Acquire(bg(), role, ma); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(bg(), 20*time.Millisecond)
	defer cancel()
	_, err := cb.Acquire(ctx, role, mb) // waits on the manual clock
	if !errors.Is(err, coord.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%v", err)
	}
	trb.SetFault(memtransport.BlackHole)
	ctx2, cancel2 := context.WithTimeout(bg(), 20*time.Millisecond)
	defer cancel2()
	if _, err := cb.Describe(ctx2, role); !errors.Is(err, coord.ErrTimeout) {
		t.Fatalf("describe: %v", err)
	}
}

func TestBadInputFailsBeforeAnyCall(t *testing.T) {
	e := newEnv(t)
	c, tr := e.client()
	tr.SetFault(memtransport.BlackHole) // any transport call would hang
	if _, err := c.Acquire(bg(), core.Role{}, ma); !errors.Is(err, core.ErrEmptyRole) {
		t.Fatal(err)
	}
	if _, err := c.Acquire(bg(), role, core.MemberID{}); !errors.Is(err, core.ErrEmptyMember) {
		t.Fatal(err)
	}
	if _, err := c.Describe(bg(), core.Role{}); !errors.Is(err, core.ErrEmptyRole) {
		t.Fatal(err)
	}
	if _, err := coord.NewClient(coord.DefaultConfig(), tr, e.clock); !errors.Is(err, coord.ErrInvalidConfig) {
		t.Fatalf("no bootstrap: %v", err)
	}
	tr.SetFault(memtransport.Healthy)
	l, _ := c.Acquire(bg(), role, ma)
	tr.SetFault(memtransport.BlackHole)
	for _, m := range []coord.Message{{Topic: "", Partition: 0}, {Topic: "bad topic", Partition: 0}, {Topic: "t", Partition: -2}} {
		if _, err := l.Produce(bg(), m); !errors.Is(err, coord.ErrInvalidArgument) {
			t.Fatalf("%+v: %v", m, err)
		}
	}
}

func TestLeadershipCloseReleasesWithoutResigning(t *testing.T) {
	e := newEnv(t)
	c, _ := e.client()
	l, _ := c.Acquire(bg(), role, ma)
	l.Close()
	if l.State() != coord.Closed || !errors.Is(l.Err(), coord.ErrNotLeader) {
		t.Fatalf("%s %v", l.State(), l.Err())
	}
	st, _ := c.Describe(bg(), role)
	if st.Lease == nil || st.Holder != ma {
		t.Fatal("close wrote a tombstone")
	}
	l.Close()
}
