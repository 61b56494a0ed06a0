package core

import (
	"testing"
	"time"
)

// memLog is an in-memory stand-in for the role's partition: records get
// consecutive offsets, and every read folds the whole log.
type memLog struct {
	role Role
	recs []RawRecord
}

func (l *memLog) append(key, value []byte) int64 {
	off := int64(len(l.recs))
	l.recs = append(l.recs, RawRecord{Offset: off, Key: key, Value: value})
	return off
}

func (l *memLog) state() State { return FoldRaw(l.role, l.recs) }

// node is one member driven only by the pure rules.
type node struct {
	id  MemberID
	log *memLog
	cfg LeaseConfig
	clk *ManualClock
}

func (n *node) register() int64 {
	return n.log.append(EncodeKey(RegistrationKey(n.log.role, n.id)),
		EncodeRegistration(Registration{Member: n.id, RegisteredAt: n.clk.NowMs()}))
}

func (n *node) writeLease(t FencingToken) Lease {
	l := n.cfg.Grant(n.id, t, n.clk.NowMs())
	n.log.append(EncodeKey(LeaseKey(n.log.role)), EncodeLease(l))
	return l
}

func (n *node) decide() Decision { return Evaluate(n.log.state(), n.id, n.clk.NowMs(), n.cfg) }

// coordinator mints tokens the way the transaction coordinator does: one
// producer id, a new epoch per mint.
type coordinator struct{ last FencingToken }

func (c *coordinator) mint() FencingToken {
	if c.last == NoEpoch {
		c.last = FencingToken{ProducerID: 1000, ProducerEpoch: 0}
	} else {
		c.last.ProducerEpoch++
	}
	return c.last
}

func expectDecision(t *testing.T, who string, n *node, want DecisionKind, until int64) {
	t.Helper()
	d := n.decide()
	if d.Kind != want || (want == Wait && d.WaitUntil != until) {
		t.Fatalf("at %d %s decided %v (until %d), want %v (until %d)", n.clk.NowMs(), who, d.Kind, d.WaitUntil, want, until)
	}
}

func TestWholeFailoverWithManualClockAndNoFailback(t *testing.T) {
	cfg := DefaultLeaseConfig() // 30 s lease, 10 s renew, 5 s stagger
	clk := NewManualClock(0)
	log := &memLog{role: MustRole("controller")}
	mk := func(id string) *node { return &node{id: MustMemberID(id), log: log, cfg: cfg, clk: clk} }
	n1, n2, n3 := mk("node-1"), mk("node-2"), mk("node-3")
	coord := &coordinator{last: NoEpoch}

	// Before registering, nobody may do anything but register.
	expectDecision(t, "node-1", n1, NotRegistered, 0)

	// Three members register in order: their offsets are their ranks.
	n1.register()
	n2.register()
	n3.register()

	// No lease yet: rank 0 challenges at once, the others are staggered
	// from their own registration instant.
	expectDecision(t, "node-1", n1, Challenge, 0)
	expectDecision(t, "node-2", n2, Wait, 5000)
	expectDecision(t, "node-3", n3, Wait, 10000)

	tok1 := coord.mint()
	lease := n1.writeLease(tok1)
	if lease.Deadline != 30000 {
		t.Fatalf("first lease deadline %d, want 30000", lease.Deadline)
	}
	expectDecision(t, "node-1", n1, Hold, 0)
	expectDecision(t, "node-2", n2, Wait, 30000)
	expectDecision(t, "node-3", n3, Wait, 35000)

	// The holder renews whenever renewal is due, for two intervals.
	for range 2 {
		due := cfg.RenewAt(lease)
		clk.Set(due - 1)
		if cfg.RenewDueAt(lease, clk.NowMs()) {
			t.Fatalf("renewal due at %d, before %d", clk.NowMs(), due)
		}
		clk.Advance(time.Millisecond)
		if !cfg.RenewDueAt(lease, clk.NowMs()) {
			t.Fatalf("renewal not due at %d", clk.NowMs())
		}
		expectDecision(t, "node-1", n1, Hold, 0)
		lease = n1.writeLease(tok1)
	}
	if lease.Deadline != 50000 {
		t.Fatalf("renewed deadline %d, want 50000", lease.Deadline)
	}
	expectDecision(t, "node-2", n2, Wait, 50000)
	expectDecision(t, "node-3", n3, Wait, 55000)

	// The holder stops at 25000 and never renews again. One millisecond
	// before the deadline the first standby still waits; at the deadline it
	// challenges. The second standby challenges one stagger later.
	clk.Set(49999)
	expectDecision(t, "node-2", n2, Wait, 50000)
	expectDecision(t, "node-3", n3, Wait, 55000)
	clk.Advance(time.Millisecond)
	expectDecision(t, "node-2", n2, Challenge, 0)
	expectDecision(t, "node-3", n3, Wait, 55000)
	clk.Set(54999)
	expectDecision(t, "node-3", n3, Wait, 55000)
	clk.Set(55000)
	expectDecision(t, "node-3", n3, Challenge, 0)
	// The expired holder itself would also challenge (rank 0) if it were
	// running: an expired lease is no hold.
	expectDecision(t, "node-1", n1, Challenge, 0)

	// node-2 (the first standby) takes the role at 50000 with a new epoch
	// that supersedes node-1's token.
	clk.Set(50000)
	tok2 := coord.mint()
	if !tok2.Supersedes(tok1) {
		t.Fatalf("new token %v does not supersede %v", tok2, tok1)
	}
	lease = n2.writeLease(tok2)
	expectDecision(t, "node-2", n2, Hold, 0)
	// node-1 is still registered at its old offset; it now ranks 0 among
	// the standbys and waits for node-2's deadline, node-3 one stagger more.
	expectDecision(t, "node-1", n1, Wait, 80000)
	expectDecision(t, "node-3", n3, Wait, 85000)

	// node-1 comes back at 60000, registers again and lands at the tail.
	clk.Set(60000)
	off := n1.register()
	st := log.state()
	if last := st.Roster[len(st.Roster)-1]; last.Member != n1.id || last.Offset != off || last.RegisteredAt != 60000 {
		t.Fatalf("re-registered node-1 is not at the tail: %+v", st.Roster)
	}
	if r, _ := st.Rank(n3.id); r != 0 {
		t.Fatalf("node-3 rank %d, want 0", r)
	}
	if r, _ := st.Rank(n1.id); r != 1 {
		t.Fatalf("recovered node-1 rank %d, want 1", r)
	}
	expectDecision(t, "node-1", n1, Wait, 85000)
	expectDecision(t, "node-3", n3, Wait, 80000)

	// No failback: while node-2 renews, node-1 never challenges.
	for now := int64(60000); now <= 200000; now += 1000 {
		clk.Set(now)
		if cfg.RenewDueAt(lease, now) {
			lease = n2.writeLease(tok2)
		}
		expectDecision(t, "node-2", n2, Hold, 0)
		if d := n1.decide(); d.Kind != Wait {
			t.Fatalf("at %d recovered node-1 decided %v while node-2 renews", now, d.Kind)
		}
		if d := n3.decide(); d.Kind != Wait {
			t.Fatalf("at %d node-3 decided %v while node-2 renews", now, d.Kind)
		}
	}
	if h, _ := log.state().Holder(); h != n2.id {
		t.Fatalf("holder %v, want node-2", h)
	}
}
