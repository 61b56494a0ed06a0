package kafka_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/kafka"
	"github.com/krabka/krabka-coord/tests/kafka/kafkatest"
)

// A coord.Leadership on real brokers, without an elector: acquire, renew,
// describe, a standby's wait and its takeover at the deadline, fencing of
// a deposed holder, resign, succession in rank order, a poisoned record, an
// unreachable cluster and a failed guarded write. The elector and the
// lease-at-risk events are in elect_test.go.

// An uncontended member takes the role at once; its token stays the same
// across renewals under both transaction versions, and Describe reports it
// as the current holder with the coordinator's token equal to it.
func TestUncontendedAcquireKeepsOneToken(t *testing.T) {
	eachTV(t, func(t *testing.T, c *kafkatest.Cluster) {
		cl := newClient(t, c.Bootstrap)
		role := core.MustRole(uniq("it-solo-"))
		l := acquire(t, cl, role, "m1")
		tok := l.Token()
		if tok.ProducerID < 0 || tok.ProducerEpoch < 0 {
			t.Fatalf("token %s", tok)
		}
		if got := l.Lease(); got.Member != core.MustMemberID("m1") || got.Token != tok {
			t.Fatalf("lease %+v", got)
		}
		topic, read := dataTopic(t, c.Bootstrap)
		for i := 0; i < 3; i++ {
			if err := l.Renew(ctxFor(t, 5*time.Second)); err != nil {
				t.Fatalf("renew %d: %v", i, err)
			}
			res, err := l.Produce(ctxFor(t, 5*time.Second), coord.Message{Topic: topic, Partition: -1, Key: []byte("k"), Value: []byte{byte('a' + i)}})
			if err != nil || len(res) != 1 || res[0].Offset < 0 {
				t.Fatalf("produce %d: %v %v", i, res, err)
			}
			if l.Token() != tok || l.Lease().Token != tok {
				t.Fatalf("token moved: %s -> %s", tok, l.Lease().Token)
			}
			st, err := cl.Describe(ctxFor(t, 5*time.Second), role)
			if err != nil {
				t.Fatal(err)
			}
			if !st.Current || st.Token != tok || !st.HasHolder || st.Holder.String() != "m1" {
				t.Fatalf("describe after %d renewals: current=%v token=%s (leadership %s) holder=%v", i+1, st.Current, st.Token, tok, st.Holder)
			}
			if len(st.Roster) != 1 || st.Roster[0].Rank != 0 {
				t.Fatalf("roster %+v", st.Roster)
			}
		}
		if got := values(read()); len(got) != 3 || got[0] != "a" || got[2] != "c" {
			t.Fatalf("guarded writes read back: %q", got)
		}
		if l.State() != coord.Active || l.Err() != nil {
			t.Fatalf("state %s err %v", l.State(), l.Err())
		}
	})
}

// Two members: one wins, the other waits (TryAcquire says until when; a
// bounded Acquire times out while the holder renews).
func TestSecondMemberWaits(t *testing.T) {
	eachTV(t, func(t *testing.T, c *kafkatest.Cluster) {
		role := core.MustRole(uniq("it-two-"))
		a := acquire(t, newClient(t, c.Bootstrap, "krabka.renew.background", "true"), role, "a")
		cb := newClient(t, c.Bootstrap)
		l, at, err := cb.TryAcquire(ctxFor(t, 10*time.Second), role, core.MustMemberID("b"))
		if err != nil || l != nil {
			t.Fatalf("try: %v %v", l, err)
		}
		if at.UnixMilli() < a.Lease().GrantedAt {
			t.Fatalf("retry at %v before the holder's grant", at)
		}
		_, err = cb.Acquire(ctxFor(t, 2500*time.Millisecond), role, core.MustMemberID("b"))
		wantErr(t, err, coord.ErrTimeout, "bounded acquire of the standby")
		if a.State() != coord.Active {
			t.Fatalf("holder state %s: %v", a.State(), a.Err())
		}
		st, err := cb.Describe(ctxFor(t, 5*time.Second), role)
		if err != nil {
			t.Fatal(err)
		}
		if st.Holder.String() != "a" || len(st.Roster) != 2 || st.Roster[1].Member.String() != "b" || st.Roster[1].Rank != 0 {
			t.Fatalf("describe: %+v", st)
		}
	})
}

// The holder stops renewing: the standby takes over no earlier than the
// deadline and no later than deadline + rank*stagger + 2 s. The deposed
// holder did not try to renew, so nothing ended it locally: its late Renew
// and Produce reach the broker and are rejected there (ErrFenced).
func TestStandbyTakesOverAtDeadline(t *testing.T) {
	eachTV(t, func(t *testing.T, c *kafkatest.Cluster) {
		role := core.MustRole(uniq("it-takeover-"))
		a := acquire(t, newClient(t, c.Bootstrap), role, "a")
		cb := newClient(t, c.Bootstrap)
		if _, _, err := cb.TryAcquire(ctxFor(t, 10*time.Second), role, core.MustMemberID("b")); err != nil {
			t.Fatal(err)
		}
		deadline := a.Lease().Deadline
		got := <-acquireAsync(ctxFor(t, 20*time.Second), cb, role, "b")
		if got.err != nil {
			t.Fatal(got.err)
		}
		if got.at < deadline || got.at > deadline+2000 {
			t.Fatalf("takeover at %d, deadline %d (want within [deadline, deadline+2s])", got.at, deadline)
		}
		if got.l.Lease().GrantedAt < deadline {
			t.Fatalf("new lease granted at %d before the deadline %d", got.l.Lease().GrantedAt, deadline)
		}
		// The deposed holder learns it from its view of the log, without a
		// write. Its later Renew and Produce are answered FENCED by the
		// ended leadership itself: no request leaves the process.
		// TestBlindHolderIsRefusedByTheBroker shows the broker's own
		// refusal, with a successor the holder's view cannot see.
		select {
		case <-a.Done():
		case <-time.After(20 * time.Second):
			t.Fatalf("the deposed holder was not told: %s", a.State())
		}
		wantErr(t, a.Err(), coord.ErrFenced, "the deposed holder's end")
		wantErr(t, a.Renew(ctxFor(t, 5*time.Second)), coord.ErrFenced, "late renew of the deposed holder")
		_, err := a.Produce(ctxFor(t, 5*time.Second), coord.Message{Topic: "x", Partition: 0})
		wantErr(t, err, coord.ErrFenced, "produce of the deposed holder")
		if a.State() != coord.Fenced {
			t.Fatalf("deposed holder state %s", a.State())
		}
		if !got.l.Token().Supersedes(a.Token()) {
			t.Fatalf("new token %s does not supersede %s", got.l.Token(), a.Token())
		}
	})
}

// A deposed holder that still believes it leads (the challenger's clock runs
// ahead) is fenced by the broker: Produce and Renew fail with ErrFenced,
// and nothing it writes after the takeover is visible to a read_committed
// reader.
func TestDeposedHolderIsFenced(t *testing.T) {
	eachTV(t, func(t *testing.T, c *kafkatest.Cluster) {
		topic, read := dataTopic(t, c.Bootstrap)
		ca := newClient(t, c.Bootstrap)
		cb := newSkewedClient(t, c.Bootstrap, 10*time.Second)
		for i, firstProduce := range []bool{true, false} {
			role := core.MustRole(uniq("it-fenced-"))
			a := acquire(t, ca, role, "a")
			if _, err := a.Produce(ctxFor(t, 5*time.Second), coord.Message{Topic: topic, Partition: 0, Key: []byte("a1"), Value: []byte("a-before")}); err != nil {
				t.Fatal(err)
			}
			b := acquire(t, cb, role, "b") // a's lease is over on b's clock
			// a learns the fence from the broker's answer to its write, or
			// (when its view of the log saw b's lease first) before sending
			// it; either way nothing of a's lands after b's lease.
			msg := coord.Message{Topic: topic, Partition: 0, Key: []byte("a2"), Value: []byte("a-after")}
			if firstProduce {
				_, err := a.Produce(ctxFor(t, 5*time.Second), msg)
				wantErr(t, err, coord.ErrFenced, "produce of the deposed holder")
				wantErr(t, a.Renew(ctxFor(t, 5*time.Second)), coord.ErrFenced, "renew after the fence")
			} else {
				wantErr(t, a.Renew(ctxFor(t, 5*time.Second)), coord.ErrFenced, "renew of the deposed holder")
				_, err := a.Produce(ctxFor(t, 5*time.Second), msg)
				wantErr(t, err, coord.ErrFenced, "produce after the fence")
			}
			if a.State() != coord.Fenced || !errors.Is(a.Err(), coord.ErrFenced) {
				t.Fatalf("case %d: a is %s (%v)", i, a.State(), a.Err())
			}
			if _, err := b.Produce(ctxFor(t, 5*time.Second), coord.Message{Topic: topic, Partition: 0, Key: []byte("b"), Value: []byte("b")}); err != nil {
				t.Fatal(err)
			}
			b.Close()
		}
		for _, v := range values(read()) {
			if v == "a-after" {
				t.Fatalf("a write of the deposed holder is visible: %q", values(read()))
			}
		}
		if got := values(read()); len(got) != 4 {
			t.Fatalf("read back %q, want a-before, b twice", got)
		}
	})
}

// Resign: the standby takes over at once (well before the old deadline); the
// resigned member that comes back registers at the tail and does not take
// the role back (no failback).
func TestResignHandsOverAtOnceWithoutFailback(t *testing.T) {
	eachTV(t, func(t *testing.T, c *kafkatest.Cluster) {
		role := core.MustRole(uniq("it-resign-"))
		ca := newClient(t, c.Bootstrap)
		a := acquire(t, ca, role, "a")
		cb := newClient(t, c.Bootstrap, "krabka.renew.background", "true")
		if _, _, err := cb.TryAcquire(ctxFor(t, 10*time.Second), role, core.MustMemberID("b")); err != nil {
			t.Fatal(err)
		}
		ch := acquireAsync(ctxFor(t, 20*time.Second), cb, role, "b")
		time.Sleep(200 * time.Millisecond)
		deadline := a.Lease().Deadline
		if err := a.Resign(ctxFor(t, 5*time.Second)); err != nil {
			t.Fatal(err)
		}
		if a.State() != coord.Resigned || !errors.Is(a.Err(), coord.ErrNotLeader) {
			t.Fatalf("a: %s %v", a.State(), a.Err())
		}
		got := <-ch
		if got.err != nil {
			t.Fatal(got.err)
		}
		if got.at >= deadline {
			t.Fatalf("takeover at %d, not before the resigned deadline %d", got.at, deadline)
		}
		// a comes back while b holds the role: it waits for b's deadline
		// (no failback), however it ranks.
		l, retryAt, err := ca.TryAcquire(ctxFor(t, 10*time.Second), role, core.MustMemberID("a"))
		if err != nil || l != nil {
			t.Fatalf("recovered member: %v %v", l, err)
		}
		if retryAt.UnixMilli() < got.l.Lease().Deadline-renewMs {
			t.Fatalf("recovered member may retry at %v, before the new holder's deadline %d", retryAt, got.l.Lease().Deadline)
		}
		st, err := ca.Describe(ctxFor(t, 5*time.Second), role)
		if err != nil {
			t.Fatal(err)
		}
		if st.Holder.String() != "b" || !st.Current || len(st.Roster) != 2 || st.Roster[0].Rank != 0 {
			t.Fatalf("describe after failback attempt: %+v", st)
		}
		if got.l.State() != coord.Active {
			t.Fatalf("b lost the role: %v", got.l.Err())
		}
	})
}

// Three standbys take over in rank order as each holder goes away.
func TestStandbysTakeOverInRankOrder(t *testing.T) {
	eachTV(t, func(t *testing.T, c *kafkatest.Cluster) {
		role := core.MustRole(uniq("it-rank-"))
		h := acquire(t, newClient(t, c.Bootstrap), role, "h")
		names := []string{"s1", "s2", "s3"}
		ctx := ctxFor(t, 40*time.Second)
		wins := make(chan acquired, 3)
		for _, n := range names {
			cl := newClient(t, c.Bootstrap)
			if _, _, err := cl.TryAcquire(ctx, role, core.MustMemberID(n)); err != nil {
				t.Fatal(err)
			}
			go func() { wins <- <-acquireAsync(ctx, cl, role, n) }()
		}
		h.Close()
		for i, want := range names {
			got := <-wins
			if got.err != nil {
				t.Fatal(got.err)
			}
			if got.l.Member().String() != want {
				t.Fatalf("takeover %d by %s, want %s", i, got.l.Member(), want)
			}
			got.l.Close() // the next one takes over at this lease's deadline
		}
	})
}

// Describe's current turns false as soon as a challenger mints, before it
// writes its lease.
func TestCurrentTurnsFalseWhenChallengerMints(t *testing.T) {
	eachTV(t, func(t *testing.T, c *kafkatest.Cluster) {
		role := core.MustRole(uniq("it-current-"))
		cl := newClient(t, c.Bootstrap)
		a := acquire(t, cl, role, "a")
		st, err := cl.Describe(ctxFor(t, 5*time.Second), role)
		if err != nil || !st.Current {
			time.Sleep(500 * time.Millisecond)
			st2, err2 := cl.Describe(ctxFor(t, 5*time.Second), role)
			t.Fatalf("describe before: %+v %v; 500 ms later: %+v %v", st, err, st2, err2)
		}
		tr, err := kafka.New(testConfig(t, c.Bootstrap))
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		p, err := tr.Mint(ctxFor(t, 10*time.Second), cl.TransactionalID(role), 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		st, err = cl.Describe(ctxFor(t, 5*time.Second), role)
		if err != nil {
			t.Fatal(err)
		}
		if st.Current || st.Token != p.Token() || st.Holder.String() != "a" || st.Lease.Token != a.Token() {
			t.Fatalf("describe after mint: current=%v token=%s (minted %s) lease=%+v", st.Current, st.Token, p.Token(), st.Lease)
		}
		wantErr(t, a.Renew(ctxFor(t, 5*time.Second)), coord.ErrFenced, "renew after the challenger minted")
	})
}

// A poisoned (undecodable) record in the role's partition does not stop the
// election; Describe counts it.
func TestPoisonedRecordIsSkipped(t *testing.T) {
	eachTV(t, func(t *testing.T, c *kafkatest.Cluster) {
		role := core.MustRole(uniq("it-poison-"))
		cfg := testConfig(t, c.Bootstrap)
		tr, err := kafka.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		n, err := tr.Partitions(ctxFor(t, 10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		p, _ := core.RolePartition(role, n)
		key := core.EncodeKey(core.RegistrationKey(role, core.MustMemberID("ghost")))
		if _, err := tr.Append(ctxFor(t, 5*time.Second), p, key, []byte{0, 7, 0xff}, nil); err != nil {
			t.Fatal(err)
		}
		cl := newClient(t, c.Bootstrap)
		l := acquire(t, cl, role, "a")
		st, err := cl.Describe(ctxFor(t, 5*time.Second), role)
		if err != nil {
			t.Fatal(err)
		}
		if st.Skipped < 1 || !st.Current || st.Holder != l.Member() {
			t.Fatalf("describe: %+v", st)
		}
	})
}

// A broker nobody listens on gives a transport error or a timeout within
// request.timeout.ms, never a hang; bad names fail before any network call.
func TestUnreachableClusterRetriesUntilTimeoutOrClose(t *testing.T) {
	cl := newClient(t, "127.0.0.1:1", "request.timeout.ms", "1500")
	// Nothing listens: acquire rides through (retries with backoff) until
	// its own timeout, then answers TIMEOUT with the reason (issue 16.5).
	_, err := cl.Acquire(ctxFor(t, 2*time.Second), core.MustRole("r"), core.MustMemberID("m"))
	if !errors.Is(err, coord.ErrTimeout) || errors.Is(err, coord.ErrTransport) == false {
		t.Fatalf("got %v, want TIMEOUT carrying the transport reason", err)
	}
	// Without a timeout it retries the same way until the client is closed:
	// CLOSED, not TRANSPORT.
	done := make(chan error, 1)
	go func() {
		_, err := cl.Acquire(context.Background(), core.MustRole("r"), core.MustMemberID("m"))
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("an acquire without a timeout gave up by itself: %v", err)
	case <-time.After(2 * time.Second):
	}
	cl.Close()
	if err := <-done; !errors.Is(err, coord.ErrClosed) || errors.Is(err, coord.ErrTransport) {
		t.Fatalf("acquire under Close: %v", err)
	}
	cl = newClient(t, "127.0.0.1:1", "request.timeout.ms", "1500")
	start := time.Now()
	_, err = cl.Acquire(context.Background(), core.Role{}, core.MustMemberID("m"))
	wantErr(t, err, core.ErrEmptyRole, "zero role")
	if time.Since(start) > 50*time.Millisecond {
		t.Fatal("a bad name touched the network")
	}
	if _, err := kafka.NewClient(coord.DefaultConfig()); !errors.Is(err, coord.ErrInvalidConfig) {
		t.Fatalf("no bootstrap: %v", err)
	}
}

// A guarded write that fails for an ordinary reason (a missing topic) is
// aborted and leaves the leadership active under the same token.
func TestFailedGuardedWriteKeepsTheToken(t *testing.T) {
	eachTV(t, func(t *testing.T, c *kafkatest.Cluster) {
		cl := newClient(t, c.Bootstrap)
		role := core.MustRole(uniq("it-failwrite-"))
		l := acquire(t, cl, role, "a")
		_, err := l.Produce(ctxFor(t, 10*time.Second), coord.Message{Topic: uniq("it-missing-"), Partition: 0, Key: []byte("k")})
		wantErr(t, err, coord.ErrUnknownTopicOrPartition, "guarded write to a missing topic")
		if l.State() != coord.Active {
			t.Fatalf("state %s", l.State())
		}
		if err := l.Renew(ctxFor(t, 5*time.Second)); err != nil {
			t.Fatal(err)
		}
		st, err := cl.Describe(ctxFor(t, 5*time.Second), role)
		if err != nil || !st.Current || st.Token != l.Token() {
			t.Fatalf("%+v %v", st, err)
		}
	})
}
