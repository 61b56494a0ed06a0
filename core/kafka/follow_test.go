package kafka_test

// Real-broker tests of docs/PROTOCOL.md section 10: members follow the log,
// resign steps aside, the winner prunes, members leave.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/kafka"
	"github.com/krabka/krabka-coord/tests/kafka/kafkatest"
)

// coordTopic gives a test its own coordination topic (so no other test's
// records share its partitions) and the client settings that name it.
func coordTopic(t *testing.T, c *kafkatest.Cluster, kv ...string) []string {
	t.Helper()
	return append([]string{"krabka.topic", uniq("it_follow_"), "krabka.topic.partitions", "2"}, kv...)
}

func describeRole(t *testing.T, c *coord.Client, role core.Role) *coord.Status {
	t.Helper()
	st, err := c.Describe(ctxFor(t, 20*time.Second), role)
	if err != nil {
		t.Fatalf("describe %s: %v", role, err)
	}
	return st
}

func rosterNames(st *coord.Status) []string {
	var out []string
	for _, r := range st.Roster {
		out = append(out, fmt.Sprintf("%s#%d", r.Member, r.Rank))
	}
	return out
}

// waitRoster waits until Describe shows n registered members.
func waitRoster(t *testing.T, c *coord.Client, role core.Role, n int) *coord.Status {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := describeRole(t, c, role)
		if len(st.Roster) == n {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("roster of %s never reached %d members: %v", role, n, rosterNames(st))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func currentToken(t *testing.T, c *coord.Client, role core.Role) core.FencingToken {
	t.Helper()
	return describeRole(t, c, role).Token
}

// Resign with a 30 s stagger: the first standby's Acquire returns long
// before its registration + stagger would have let it (it ranks 0 after the
// resign), the resigner is no longer in the roster, and the role's epoch
// rose by exactly one.
func TestResignHandsOffToTheFirstStandbyAtOnce(t *testing.T) {
	eachTV(t, func(t *testing.T, c *kafkatest.Cluster) {
		kv := coordTopic(t, c, "krabka.challenge.stagger.ms", "30000", "krabka.lease.ms", "60000",
			"krabka.renew.interval.ms", "20000", "krabka.poll.interval.ms", "60000")
		role := core.MustRole(uniq("handoff-"))
		ca, cb := newClient(t, c.Bootstrap, kv...), newClient(t, c.Bootstrap, kv...)
		a := acquire(t, ca, role, "a")
		ch := acquireAsync(ctxFor(t, 60*time.Second), cb, role, "b")
		st := waitRoster(t, ca, role, 2)
		regB := st.Roster[1].RegisteredAt
		if err := a.Resign(ctxFor(t, 10*time.Second)); err != nil {
			t.Fatal(err)
		}
		r := <-ch
		if r.err != nil {
			t.Fatal(r.err)
		}
		defer r.l.Close()
		if r.at >= regB+30000 {
			t.Fatalf("standby returned at %d, not before its registration + stagger %d", r.at, regB+30000)
		}
		st = describeRole(t, cb, role)
		if len(st.Roster) != 1 || st.Roster[0].Member.String() != "b" || st.Removed != 1 || !st.Current || st.Holder.String() != "b" {
			t.Fatalf("after the handoff: %v removed %d holder %s current %v", rosterNames(st), st.Removed, st.Holder, st.Current)
		}
		if tok := r.l.Token(); tok.ProducerID != a.Token().ProducerID || tok.ProducerEpoch != a.Token().ProducerEpoch+1 || st.Token != tok {
			t.Fatalf("epoch must rise by exactly one: a %s, b %s, coordinator %s", a.Token(), tok, st.Token)
		}
	})
}

// Three standbys that registered long ago (their own anchors long passed),
// then the holder resigns: exactly one mint (epoch + 1), only the rank-0
// standby's Acquire returns, the others keep waiting. Twenty handoffs, each
// resigner rejoining at the tail.
func TestResignWithOldStandbysMintsOnceAndOnlyRankZeroWins(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{})
	kv := coordTopic(t, c, "krabka.lease.ms", "3000", "krabka.renew.interval.ms", "500",
		"krabka.challenge.stagger.ms", "300", "krabka.renew.background", "true", "krabka.poll.interval.ms", "1000")
	role := core.MustRole(uniq("handoffs-"))
	names := []string{"m0", "m1", "m2", "m3"}
	clients := map[string]*coord.Client{}
	for _, n := range names {
		clients[n] = newClient(t, c.Bootstrap, kv...)
	}
	ctx := ctxFor(t, 5*time.Minute)
	holder, holderName := acquire(t, clients["m0"], role, "m0"), "m0"
	pending := map[string]<-chan acquired{}
	for _, n := range names[1:] {
		pending[n] = acquireAsync(ctx, clients[n], role, n)
	}
	obs := newClient(t, c.Bootstrap, kv...)
	for round := 0; round < 20; round++ {
		st := waitRoster(t, obs, role, 4)
		first := st.Roster[1].Member.String() // rank 0 behind the holder
		// Let every standby's own anchor pass: they registered "long ago".
		time.Sleep(4 * 300 * time.Millisecond)
		before := currentToken(t, obs, role)
		if before != holder.Token() {
			t.Fatalf("round %d: coordinator %s, holder %s", round, before, holder.Token())
		}
		if err := holder.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		var won acquired
		select {
		case won = <-pending[first]:
		case <-time.After(30 * time.Second):
			t.Fatalf("round %d: rank-0 standby %s did not take over", round, first)
		}
		if won.err != nil {
			t.Fatalf("round %d: %s: %v", round, first, won.err)
		}
		delete(pending, first)
		if tok := won.l.Token(); tok.ProducerID != before.ProducerID || tok.ProducerEpoch != before.ProducerEpoch+1 {
			t.Fatalf("round %d: %s minted %s after %s: not exactly one mint", round, first, tok, before)
		}
		// The resigner rejoins at the tail; no other standby may win, and
		// nobody mints again while the new holder's lease is live.
		pending[holderName] = acquireAsync(ctx, clients[holderName], role, holderName)
		waitRoster(t, obs, role, 4)
		for n, ch := range pending {
			select {
			case r := <-ch:
				t.Fatalf("round %d: %s also returned (%v, err %v) after %s won", round, n, r.l, r.err, first)
			default:
			}
		}
		if now := currentToken(t, obs, role); now != won.l.Token() {
			t.Fatalf("round %d: coordinator at %s, winner holds %s: someone minted twice", round, now, won.l.Token())
		}
		holder, holderName = won.l, first
	}
}

// A holder learns that it was superseded from its view of the log, while it
// writes nothing: a standby takes over after the holder's lease ran out (the
// holder was not renewing), and the holder ends FENCED without any write.
func TestHolderIsToldFencedByItsViewWithoutWriting(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{})
	kv := coordTopic(t, c)
	role := core.MustRole(uniq("view-fence-"))
	ca, cb := newClient(t, c.Bootstrap, kv...), newClient(t, c.Bootstrap, kv...)
	a := acquire(t, ca, role, "a")
	b := acquire(t, cb, role, "b") // waits for a's deadline + 0 staggers
	defer b.Close()
	select {
	case <-a.Done():
	case <-time.After(20 * time.Second):
		t.Fatalf("holder not told: %s", a.State())
	}
	if a.State() != coord.Fenced || !errors.Is(a.Err(), coord.ErrFenced) || !strings.Contains(a.Err().Error(), "the log shows a lease of b") {
		t.Fatalf("holder: %s %v", a.State(), a.Err())
	}
	if !b.Token().Supersedes(a.Token()) {
		t.Fatalf("b %s does not supersede a %s", b.Token(), a.Token())
	}
}

// A member that writes the first version's resign (a lease tombstone) still
// hands off: readers accept it, and the standby takes over (after its own
// anchor, since the resigner still counts ahead of it).
func TestOldResignWithLeaseTombstoneStillHandsOff(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{})
	kv := coordTopic(t, c)
	role := core.MustRole(uniq("old-resign-"))
	ca, cb := newClient(t, c.Bootstrap, kv...), newClient(t, c.Bootstrap, kv...)
	a := acquire(t, ca, role, "a")
	ch := acquireAsync(ctxFor(t, 60*time.Second), cb, role, "b")
	waitRoster(t, ca, role, 2)
	p := a.Partition()
	topic := ca.Config().Topic
	// The old resign: a lease tombstone in a transaction under the token.
	if _, err := a.Produce(ctxFor(t, 10*time.Second), coord.Message{Topic: topic, Partition: p, Key: core.EncodeKey(core.LeaseKey(role))}); err != nil {
		t.Fatal(err)
	}
	a.Close()
	st := describeRole(t, cb, role)
	if st.Lease != nil || len(st.Roster) != 2 {
		t.Fatalf("after the lease tombstone: lease %+v roster %v", st.Lease, rosterNames(st))
	}
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer r.l.Close()
	if !r.l.Token().Supersedes(a.Token()) {
		t.Fatalf("b %s a %s", r.l.Token(), a.Token())
	}
}

// A standby follows its partition across a restart of the partition's
// leader (three nodes); and when DeleteRecords moves the log start past the
// standby's next offset (the standby was cut off meanwhile) it folds again
// from the start and reaches the state a fresh read gives. The changes it
// must see are registrations of new members (plain writes, so the test does
// not depend on a holder's transactions surviving the restart).
func TestStandbyFollowsAcrossBrokerRestartAndDeleteRecords(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{Nodes: 3})
	kv := coordTopic(t, c, "krabka.lease.ms", "30000", "krabka.renew.interval.ms", "1000", "krabka.renew.background", "true")
	// Kafka refuses DeleteRecords on a compact-only topic: this one also
	// allows deletion (with no retention limit), as an operator may set it.
	resp, err := admin(t, c.Bootstrap).CreateTopic(ctxFor(t, 30*time.Second), 2, 3, map[string]*string{
		"cleanup.policy": kadm.StringPtr("compact,delete"), "retention.ms": kadm.StringPtr("-1"), "min.insync.replicas": kadm.StringPtr("2"),
	}, kv[1])
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	role := core.MustRole(uniq("follow-"))
	ca := newClient(t, c.Bootstrap, kv...)
	a := acquire(t, ca, role, "a")
	px := newProxy()
	defer px.Close()
	cb, err := kafka.NewClient(testConfig(t, c.Bootstrap, kv...), kafka.WithDialer(px.Dial))
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close()
	w, err := cb.Watch(ctxFor(t, 30*time.Second), role)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	joiner := newClient(t, c.Bootstrap, append(kv, "krabka.leave.on.close", "false")...)
	join := func(member string) {
		t.Helper()
		// A bounded Acquire registers and then waits its turn; a broker that
		// is just coming back may need several attempts.
		for deadline := time.Now().Add(90 * time.Second); ; {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			_, err := joiner.Acquire(ctx, role, core.MustMemberID(member))
			cancel()
			if !errors.Is(err, coord.ErrTimeout) {
				t.Fatalf("registering %s: %v", member, err)
			}
			if n, err := registrations(joiner.Config(), role, member); err == nil && n > 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never registered", member)
			}
		}
	}
	seeJoin := func(member string) {
		t.Helper()
		ctx := ctxFor(t, 90*time.Second)
		for {
			ev, err := w.Next(ctx)
			if err != nil {
				t.Fatalf("waiting to see %s join: %v", member, err)
			}
			for _, r := range ev.Roster {
				if ev.Kind == coord.EventRosterChanged && r.Member.String() == member {
					return
				}
			}
		}
	}
	join("before")
	seeJoin("before")

	// Restart the leader of the role's partition.
	topic := ca.Config().Topic
	adm := admin(t, c.Bootstrap)
	md, err := adm.Metadata(ctxFor(t, 20*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	leader := md.Topics[topic].Partitions[a.Partition()].Leader
	c.KillNode(t, int(leader))
	c.StartNode(t, int(leader))
	join("after-restart")
	seeJoin("after-restart")

	// Cut the standby off, write, delete every record up to the end,
	// reconnect: the standby's next offset is below the new log start.
	px.Sever()
	join("while-cut")
	end, err := adm.ListEndOffsets(ctxFor(t, 20*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	o, _ := end.Lookup(topic, a.Partition())
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: topic, Partition: a.Partition(), At: o.Offset})
	dr, err := adm.DeleteRecords(ctxFor(t, 20*time.Second), offs)
	if err == nil {
		err = dr.Error()
	}
	if err != nil {
		t.Fatalf("DeleteRecords to %d: %v", o.Offset, err)
	}
	px.Heal()
	// Wait for the holder's next renewal (the deletion took its lease too),
	// so that the member registering next waits instead of winning.
	obs := newClient(t, c.Bootstrap, kv...)
	for deadline := time.Now().Add(60 * time.Second); describeRole(t, obs, role).Lease == nil; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the holder never renewed after the deletion")
		}
	}
	join("after-delete")
	seeJoin("after-delete")
	fromView := describeRole(t, cb, role)
	fresh := describeRole(t, obs, role)
	if fmt.Sprint(rosterNames(fromView)) != fmt.Sprint(rosterNames(fresh)) || fromView.Holder != fresh.Holder ||
		fromView.Token != fresh.Token || fromView.Current != fresh.Current {
		t.Fatalf("the refolded view differs from a fresh read:\nview  %s %s %v %v\nfresh %s %s %v %v",
			fromView.Holder, fromView.Token, fromView.Current, rosterNames(fromView), fresh.Holder, fresh.Token, fresh.Current, rosterNames(fresh))
	}
	for _, r := range fromView.Roster {
		if r.Member.String() == "while-cut" || r.Member.String() == "before" {
			t.Fatalf("records below the new log start are still in the view: %v", rosterNames(fromView))
		}
	}
}

// Ten dead registrations ahead of a standby: the first failover waits for
// their turns to pass (the standby ranks 10), the winner prunes all ten
// (and the crashed holder), and at the next failover the next standby ranks
// 0: no stagger is spent on the dead any more.
func TestWinnerPrunesTenDeadMembersOnce(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{})
	kv := coordTopic(t, c, "krabka.lease.ms", "1500", "krabka.renew.interval.ms", "400",
		"krabka.challenge.stagger.ms", "200", "krabka.leave.on.close", "false")
	role := core.MustRole(uniq("prune-"))
	obs := newClient(t, c.Bootstrap, kv...)
	ca := newClient(t, c.Bootstrap, kv...)
	a := acquire(t, ca, role, "a")
	for i := 0; i < 10; i++ {
		d := newClient(t, c.Bootstrap, kv...)
		if _, _, err := d.TryAcquire(ctxFor(t, 20*time.Second), role, core.MustMemberID(fmt.Sprintf("dead-%02d", i))); err != nil {
			t.Fatal(err)
		}
		d.Close() // a crash: no leave
	}
	cb := newClient(t, c.Bootstrap, kv...)
	chB := acquireAsync(ctxFor(t, 60*time.Second), cb, role, "b")
	st := waitRoster(t, obs, role, 12)
	if last := st.Roster[11]; last.Member.String() != "b" || last.Rank != 10 {
		t.Fatalf("b should rank 10 behind ten dead members: %v", rosterNames(st))
	}
	crash1 := time.Now()
	ca.Close() // the holder crashes
	rb := <-chB
	if rb.err != nil {
		t.Fatal(rb.err)
	}
	st = describeRole(t, obs, role)
	if len(st.Roster) != 1 || st.Roster[0].Member.String() != "b" || st.Removed != 11 {
		t.Fatalf("after the first failover: %v removed %d (want b alone, 11 removed)", rosterNames(st), st.Removed)
	}
	cc := newClient(t, c.Bootstrap, kv...)
	chC := acquireAsync(ctxFor(t, 60*time.Second), cc, role, "c")
	st = waitRoster(t, obs, role, 2)
	if r := st.Roster[1]; r.Member.String() != "c" || r.Rank != 0 {
		t.Fatalf("c should rank 0 at the second failover: %v", rosterNames(st))
	}
	crash2, deadlineB := time.Now(), rb.l.Lease().Deadline
	cb.Close() // b crashes
	rc := <-chC
	if rc.err != nil {
		t.Fatal(rc.err)
	}
	// Figures for the closing note (not assertions): crash -> next Acquire
	// returned, and how far past the crashed holder's deadline.
	t.Logf("first failover (10 dead members ahead): %v after the crash, %d ms past the deadline (10 staggers = %d ms)",
		time.UnixMilli(rb.at).Sub(crash1).Round(time.Millisecond), rb.at-a.Lease().Deadline, 10*200)
	t.Logf("second failover (the dead pruned): %v after the crash, %d ms past the deadline",
		time.UnixMilli(rc.at).Sub(crash2).Round(time.Millisecond), rc.at-deadlineB)
	rc.l.Close()
}

// A member paused past its turn is pruned by the winner; when it runs again
// its (still running) Acquire registers again exactly once, at the tail. A
// zombie holder that comes back is FENCED and re-acquiring puts it at the
// tail too.
func TestPausedMemberIsPrunedAndRegistersAgainOnceAtTheTail(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{})
	kv := coordTopic(t, c, "krabka.leave.on.close", "false")
	role := core.MustRole(uniq("paused-"))
	obs := newClient(t, c.Bootstrap, kv...)
	ca := newClient(t, c.Bootstrap, kv...)
	a := acquire(t, ca, role, "a")
	// p's clock runs an hour behind: it waits although its turn came (as a
	// paused process would), so the next standby wins and prunes it.
	cp := newSkewedClient(t, c.Bootstrap, -time.Hour, kv...)
	chP := acquireAsync(ctxFor(t, 2*time.Minute), cp, role, "p")
	waitRoster(t, obs, role, 2)
	cw := newClient(t, c.Bootstrap, kv...)
	chW := acquireAsync(ctxFor(t, 60*time.Second), cw, role, "w")
	waitRoster(t, obs, role, 3)
	rw := <-chW // a does not renew: w wins at a's deadline + 1 stagger
	if rw.err != nil {
		t.Fatal(rw.err)
	}
	defer rw.l.Close()
	// p registers again inside its running Acquire: roster w, p.
	st := waitRoster(t, obs, role, 2)
	if st.Roster[0].Member.String() != "w" || st.Roster[1].Member.String() != "p" {
		t.Fatalf("after the prune: %v", rosterNames(st))
	}
	if n := countRegistrations(t, cw, role, "p"); n != 2 {
		t.Fatalf("p registered %d times, want 2 (once, then once after the prune)", n)
	}
	// a is a zombie: its view tells it FENCED; re-acquiring puts it last.
	select {
	case <-a.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("zombie not fenced")
	}
	if a.State() != coord.Fenced {
		t.Fatalf("zombie: %s", a.State())
	}
	if _, err := a.Produce(ctxFor(t, 10*time.Second), coord.Message{Topic: cw.Config().Topic, Partition: 0, Value: []byte("zombie")}); !errors.Is(err, coord.ErrFenced) {
		t.Fatalf("zombie write: %v", err)
	}
	chA := acquireAsync(ctxFor(t, 60*time.Second), ca, role, "a")
	st = waitRoster(t, obs, role, 3)
	if st.Roster[2].Member.String() != "a" {
		t.Fatalf("the zombie should rejoin at the tail: %v", rosterNames(st))
	}
	select {
	case r := <-chP:
		t.Fatalf("p returned: %v %v", r.l, r.err)
	case r := <-chA:
		t.Fatalf("a returned: %v %v", r.l, r.err)
	default:
	}
}

// Leave removes a member; closing a client leaves the roles it registered
// in and does not hold; closing a holder's client does not.
func TestLeaveAndCloseWithLeave(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{})
	kv := coordTopic(t, c)
	role := core.MustRole(uniq("leave-"))
	obs := newClient(t, c.Bootstrap, kv...)
	ca, cb, cc := newClient(t, c.Bootstrap, kv...), newClient(t, c.Bootstrap, kv...), newClient(t, c.Bootstrap, kv...)
	a := acquire(t, ca, role, "a")
	chB := acquireAsync(ctxFor(t, 60*time.Second), cb, role, "b")
	if _, _, err := cc.TryAcquire(ctxFor(t, 20*time.Second), role, core.MustMemberID("c")); err != nil {
		t.Fatal(err)
	}
	waitRoster(t, obs, role, 3)
	if err := obs.Leave(ctxFor(t, 20*time.Second), role, core.MustMemberID("c")); err != nil {
		t.Fatal(err)
	}
	st := waitRoster(t, obs, role, 2)
	if st.Removed != 1 {
		t.Fatalf("after leave: %v removed %d", rosterNames(st), st.Removed)
	}
	cb.Close() // b waits in Acquire and holds nothing: it leaves
	if r := <-chB; !errors.Is(r.err, coord.ErrClosed) {
		t.Fatalf("b's acquire: %v", r.err)
	}
	st = waitRoster(t, obs, role, 1)
	ca.Close() // a holds the role: it stays registered, its lease stays
	if a.State() != coord.Closed {
		t.Fatalf("a: %s", a.State())
	}
	st = describeRole(t, obs, role)
	if len(st.Roster) != 1 || st.Roster[0].Member.String() != "a" || st.Holder.String() != "a" || st.Removed != 2 {
		t.Fatalf("after closing the holder: %v holder %s removed %d", rosterNames(st), st.Holder, st.Removed)
	}
}

// countRegistrations counts the registration records (not tombstones) of
// member in role's partition.
func countRegistrations(t *testing.T, c *coord.Client, role core.Role, member string) int {
	t.Helper()
	n, err := registrations(c.Config(), role, member)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func registrations(cfg coord.Config, role core.Role, member string) (int, error) {
	tr, err := kafka.New(cfg)
	if err != nil {
		return 0, err
	}
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n, err := tr.Partitions(ctx)
	if err != nil {
		return 0, err
	}
	p, _ := core.RolePartition(role, n)
	recs, err := tr.Read(ctx, p)
	if err != nil {
		return 0, err
	}
	count := 0
	for _, r := range recs {
		k, err := core.DecodeKey(r.Key)
		if err == nil && k.Kind == core.KindRegistration && k.Role == role && k.Member.String() == member && !core.IsTombstone(r.Value) {
			count++
		}
	}
	return count, nil
}
