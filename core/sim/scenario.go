package sim

import (
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/krabka/krabka-coord/core"
)

// Result is what one scenario did and found.
type Result struct {
	Config Config
	// Failovers: takeovers visible in the command log: the first committed
	// guarded write under a token that an acquire minted, after a write of
	// an earlier token. Handovers: those to another member.
	Failovers, Handovers int
	// Deposed: healthy holders deposed (a member minted on a challenge
	// while the role's holder was healthy; see the checker). Zero unless
	// the members read as before issue 34 (Bugs.ReadCommitted).
	Deposed int
	// Recoveries: token changes in the command log by an own epoch
	// recovery (not failovers).
	Recoveries int
	// Retokened: commands whose text names the token their host read
	// before the call, the one before an own epoch recovery that a
	// renewal ahead of them in the operation slot made (their
	// krabka.token header and batch carry the new one).
	Retokened int
	Commands  int // committed commands
	Acked     int // acknowledged commands
	// Judged / Unjudged: quiet handovers whose winner and timing were
	// checked, and those left unjudged (a fault too close, a tie).
	Judged, Unjudged int
	Decisions        int // succession decisions checked
	SimTime          int64
	Events           uint64
	Faults           map[string]int
	Violations       []Violation
	Trace            string
}

// Run runs one scenario. With trace, Result.Trace holds its event trace.
func Run(cfg Config, trace bool) Result { return run(cfg, trace, false) }

func run(cfg Config, trace, verbose bool) Result {
	s := &Sim{
		cfg:    cfg,
		rng:    rand.New(rand.NewPCG(cfg.Seed, 0x73696d756c617465)),
		faults: map[string]int{},
		s:      &sched{},
		byName: map[string]int{},
	}
	if cfg.Bug != "" {
		set, ok := BugNames[cfg.Bug]
		if !ok {
			panic("sim: no test-only switch named " + strconv.Quote(cfg.Bug))
		}
		set(&s.bugs)
	}
	s.oldRead = s.bugs.ReadCommitted
	if trace {
		s.trace = &strings.Builder{}
		s.verbose = verbose
	}
	for i := range max(cfg.Roles, 1) {
		rs := &roleSim{idx: i, role: core.MustRole(roleNames[i]), cmds: cmdsOf(i)}
		if i > 0 {
			rs.prefix = roleNames[i] + "/"
		}
		s.roles = append(s.roles, rs)
		s.byName[roleNames[i]] = i
	}
	s.chk = newChecker(s)
	s.cl = newCluster(s, 4000+int64(cfg.Seed%1000), cfg.FirstEpoch)
	s.tracef("scenario %s", cfg)
	for _, rs := range s.roles {
		for i := range cfg.Members {
			m := &member{sim: s, rs: rs, id: core.MustMemberID("m" + strconv.Itoa(i+1)),
				reference: i >= cfg.Members-cfg.Reference}
			m.skew = s.drawSkew()
			rs.members = append(rs.members, m)
			s.members = append(s.members, m)
			s.s.at(s.rng.Int64N(20), func() { s.start(m) })
		}
	}
	// The operator's tool: an incarnation that runs only the fences.
	s.admin = &member{sim: s, id: core.MustMemberID("ops")}
	s.admin.inc = &incarnation{sim: s, m: s.admin, n: 1, name: "ops"}
	for _, rs := range s.roles {
		s.s.at(cfg.FaultMin+s.rng.Int64N(cfg.FaultMax-cfg.FaultMin+1), func() { s.injectFault(rs) })
	}
	s.s.at(tickEvery, s.cl.tick)
	s.s.at(1+s.rng.Int64N(cfg.AbortScan), s.cl.abortScan)
	s.s.at(5000+s.rng.Int64N(10000), s.compactNow)
	s.s.at(1000+s.rng.Int64N(5000), s.noise)

	var events uint64
	for !s.stopped && s.chk.failovers < cfg.Failovers {
		at, ev, ok := s.s.pop()
		if !ok || at > cfg.MaxTime {
			break
		}
		s.s.now = at
		events++
		s.fire(ev)
	}
	if !s.stopped {
		s.chk.finish()
	}
	res := Result{
		Config: cfg, Failovers: s.chk.failovers, Handovers: s.chk.handovers, Deposed: s.chk.deposed, Recoveries: s.chk.recoveries, Retokened: s.chk.retokened,
		Commands: s.chk.commands, Acked: s.chk.acked, Judged: s.chk.judged, Unjudged: s.chk.unjudged,
		Decisions: s.chk.decisions, SimTime: s.s.now, Events: events, Faults: s.faults, Violations: s.chk.violations,
	}
	if trace {
		res.Trace = s.trace.String()
	}
	// Unwind every process still suspended (their goroutines).
	for _, m := range append(s.members, s.admin) {
		if m.inc != nil {
			for _, p := range m.inc.procs {
				p.kill()
			}
		}
	}
	return res
}

// roleNames are the roles of the coordination partition, in order.
var roleNames = [...]string{"controller", "scheduler", "indexer"}

func (s *Sim) drawSkew() int64 {
	b := s.cfg.SkewBound
	return s.rng.Int64N(2*b+1) - b
}

// leader is the incarnation of rs whose active leadership has the newest
// token (nil: none).
func (s *Sim) leader(rs *roleSim) *incarnation {
	var best *incarnation
	for _, m := range rs.members {
		if inc := m.inc; inc != nil && inc.lead != nil && inc.lead.state == active {
			if best == nil || inc.lead.prod.token.Supersedes(best.lead.prod.token) {
				best = inc
			}
		}
	}
	return best
}

// target picks the leader of rs (usually) or a random running member of
// it.
func (s *Sim) target(rs *roleSim, leaderBias int) *incarnation {
	if l := s.leader(rs); l != nil && s.rng.IntN(100) < leaderBias {
		return l
	}
	var up []*incarnation
	for _, m := range rs.members {
		if m.inc != nil {
			up = append(up, m.inc)
		}
	}
	if len(up) == 0 {
		return nil
	}
	return up[s.rng.IntN(len(up))]
}

// trapKind is a fault armed to strike a holder inside its next lease
// transaction: after the broker appended the transaction's records, before
// its EndTxn.
type trapKind uint8

const (
	trapNone  trapKind = iota
	trapCrash          // the process dies
	trapPause          // the process stops, past the lease
	trapCut            // its link is cut
)

func (k trapKind) String() string { return [...]string{"none", "crash", "pause", "cut"}[k] }

// injectFault draws the next member fault of rs.
func (s *Sim) injectFault(rs *roleSim) {
	c := s.cfg
	s.s.after(c.FaultMin+s.rng.Int64N(c.FaultMax-c.FaultMin+1), func() { s.injectFault(rs) })
	now := s.s.now
	D := c.Lease.DurationMs
	if s.rng.IntN(10) == 0 {
		// The holder dies, stops or is cut off inside its next lease
		// transaction, leaving it open until the coordinator aborts it.
		inc := s.leader(rs)
		if inc == nil || inc.trap != trapNone || inc.pausedUntil > now {
			return
		}
		inc.trap = [...]trapKind{trapCrash, trapCrash, trapPause, trapCut}[s.rng.IntN(4)]
		s.tracef("PLAN %s: %s inside its next lease transaction", inc, inc.trap)
		return
	}
	r := s.rng.IntN(100)
	switch {
	case r < 25: // crash, restart later (same id)
		inc := s.target(rs, 80)
		if inc == nil {
			return
		}
		if inc.lead != nil && inc.lead.state == active && inc == s.leader(rs) {
			s.chk.expectHandover("crash", inc.m)
		}
		s.fault(rs, "member-crash", now)
		s.holdsOpen(inc, 0)
		s.tracef("FAULT crash %s", inc)
		s.crashAndRestart(inc, 100+s.rng.Int64N(2000), s.rng.IntN(3) == 0)
	case r < 42: // pause (SIGSTOP): mostly past the lease
		inc := s.target(rs, 75)
		if inc == nil || inc.pausedUntil > now {
			return
		}
		d := D + 100 + s.rng.Int64N(2000)
		if s.rng.IntN(4) == 0 {
			d = 50 + s.rng.Int64N(D/2)
		}
		inc.pausedUntil = now + d
		s.fault(rs, "member-pause", now+d+s.settle())
		s.holdsOpen(inc, d)
		s.tracef("FAULT pause %s for %d ms", inc, d)
	case r < 62: // planned resign, with a named successor half the time
		inc := s.leader(rs)
		if inc == nil || inc.resignTo != nil || inc.pausedUntil > now {
			return
		}
		var to core.MemberID
		if s.rng.IntN(2) == 0 {
			o := rs.members[s.rng.IntN(len(rs.members))]
			if o != inc.m {
				to = o.id
			}
		}
		inc.resignTo = &to
		s.faults["resign"]++
		s.tracef("PLAN %s resigns (successor %q)", inc, to.String())
	case r < 75: // link cut: messages held until it heals
		inc := s.target(rs, 75)
		if inc == nil {
			return
		}
		d := 300 + s.rng.Int64N(D+2000)
		inc.m.cutUntil = now + d
		s.fault(rs, "link-cut", now+d+s.settle())
		s.holdsOpen(inc, d)
		s.tracef("FAULT link of %s cut for %d ms", inc.m.id, d)
	case r < 85: // administrative fence
		if s.leader(rs) == nil {
			return
		}
		s.faults["fence"]++
		s.admin.inc.spawn("fence", func(p *proc) { s.adminFence(p, rs) })
	default: // a standby crashes or pauses
		inc := s.target(rs, 0)
		if inc == nil || inc == s.leader(rs) {
			return
		}
		if s.rng.IntN(2) == 0 {
			s.fault(rs, "standby-crash", now)
			s.holdsOpen(inc, 0)
			s.tracef("FAULT crash %s (standby)", inc)
			s.crashAndRestart(inc, 100+s.rng.Int64N(3000), false)
		} else if inc.pausedUntil <= now {
			d := 100 + s.rng.Int64N(D)
			inc.pausedUntil = now + d
			s.fault(rs, "standby-pause", now+d+s.settle())
			s.holdsOpen(inc, d)
			s.tracef("FAULT pause %s (standby) for %d ms", inc, d)
		}
	}
}

// crashAndRestart crashes inc and starts its member again after d ms
// (with a new clock skew if newSkew).
func (s *Sim) crashAndRestart(inc *incarnation, d int64, newSkew bool) {
	inc.crash()
	m := inc.m
	s.s.after(d, func() {
		if newSkew {
			m.skew = s.drawSkew()
		}
		s.fault(m.rs, "member-restart", s.s.now+s.settle())
		s.start(m)
	})
}

// holdsOpen: a fault that stops inc for d ms (a crash: for good) struck
// while a transaction of its that holds a record of the coordination
// partition is open: the transaction stays open until inc ends it or the
// coordinator aborts it, and a sync of the role waits for its marker (with
// the reading before issue 34, every sync waits for the last stable
// offset): the role is not quiet until then.
func (s *Sim) holdsOpen(inc *incarnation, d int64) {
	t := s.cl.coords[inc.m.rs.idx].ongoing
	if t == nil || t.from != inc {
		return
	}
	for _, e := range t.entries {
		if e.topic == topicCoord {
			until := s.s.now + s.txnTimeout() + s.cfg.AbortScan
			if d > 0 {
				until = min(until, s.s.now+d)
			}
			s.quiet(inc.m.rs, until+s.settle())
			return
		}
	}
}

// springTrap strikes inc inside the lease transaction whose produce the
// cluster just appended: the transaction stays open until the coordinator
// aborts it (its timeout and a scan later) or a fresh InitProducerId of the
// role fences it. Its role is not quiet until then; with the reading
// before issue 34, no role is (every view of the partition stops there:
// see quiet).
func (s *Sim) springTrap(inc *incarnation) {
	now := s.s.now
	D := s.cfg.Lease.DurationMs
	kind := inc.trap
	inc.trap = trapNone
	if inc.dead {
		return // a request of an incarnation that crashed since
	}
	rs := inc.m.rs
	open := now + s.txnTimeout() + s.cfg.AbortScan
	switch kind {
	case trapCrash:
		s.fault(rs, "txn-crash", open+s.settle())
		s.tracef("FAULT crash %s inside its lease transaction", inc)
		s.crashAndRestart(inc, 100+s.rng.Int64N(2000), false)
	case trapPause:
		d := D + 100 + s.rng.Int64N(2000)
		inc.pausedUntil = now + d
		s.fault(rs, "txn-pause", max(open, now+d)+s.settle())
		s.tracef("FAULT pause %s inside its lease transaction for %d ms", inc, d)
	case trapCut:
		d := 300 + s.rng.Int64N(D+2000)
		inc.m.cutUntil = now + d
		s.fault(rs, "txn-cut", max(open, now+d)+s.settle())
		s.tracef("FAULT link of %s cut inside its lease transaction for %d ms", inc, d)
	}
}

// adminFence is Client.Fence (docs/PROTOCOL.md 11.4) run by an operator on
// role rs: read the role, mint, then one transaction with an expired lease
// of the deposed holder under the new token (krabka.fenced-by, and
// krabka.successor half the time) and the tombstone of its registration.
func (s *Sim) adminFence(p *proc, rs *roleSim) {
	r := p.call(&request{kind: reqFetch, offset: 0, maxWait: 0}, s.cfg.Timeout)
	if r.err != errOK {
		return
	}
	recs := r.recs
	if r.batches != nil {
		tf := core.NewTxnFolder(func(rec core.RawRecord) { recs = append(recs, rec) })
		for _, b := range r.batches {
			tf.Add(b)
		}
	}
	st := core.FoldRaw(rs.role, recs)
	if st.Lease == nil {
		return
	}
	deposed := st.Lease.Member
	m := p.call(&request{kind: reqInitPID, co: rs.idx}, s.cfg.Timeout)
	if m.err != errOK {
		return
	}
	prod := &producer{inc: p.inc, co: rs.idx, token: m.token}
	now := p.inc.now()
	hdrs := []core.RecordHeader{{Key: core.HeaderFencedBy, Value: []byte("ops@sim")}}
	if s.rng.IntN(2) == 0 && len(st.Roster) > 0 {
		if e := st.Roster[s.rng.IntN(len(st.Roster))]; e.Member != deposed {
			hdrs = append(hdrs, core.RecordHeader{Key: core.HeaderSuccessor, Value: []byte(e.Member.String())})
		}
	}
	expiredLease := core.Lease{Member: deposed, Token: m.token, GrantedAt: now, Deadline: now}
	s.tracef("ops: fences %s of %s with %s", deposed, rs.role, m.token)
	s.chk.onFenceAttempt(p.inc, m.token, deposed)
	prod.transact(p, []outRecord{leaseRecord(rs.role, expiredLease, hdrs), tombstone(rs.role, deposed)}, tagFence)
	prod.close()
}

func (s *Sim) compactNow() {
	s.cl.compact(30000)
	s.s.after(5000+s.rng.Int64N(10000), s.compactNow)
}

// noise appends a record of a role no member campaigns for, or one that
// does not decode, to the coordination partition (the fold must skip both
// without stopping).
func (s *Sim) noise() {
	s.s.after(1000+s.rng.Int64N(5000), s.noise)
	e := &entry{topic: topicCoord, state: stateCommitted}
	m := s.roles[0].members[0].id
	switch s.rng.IntN(4) {
	case 0:
		other := core.MustRole("other-role")
		e.key = core.EncodeKey(core.RegistrationKey(other, m))
		e.value = core.EncodeRegistration(core.Registration{Member: m, RegisteredAt: s.s.now})
	case 1:
		e.key = []byte{0, 9, 9, 9}
		e.value = []byte("not a record")
	case 2: // a lease key of another role with a value that does not decode
		e.key = core.EncodeKey(core.LeaseKey(core.MustRole("other-role")))
		e.value = []byte{0, 0, 1}
	default:
		// A registration key of a role with a value that does not
		// decode. Not under a key that holds a good record: compaction
		// keeps only the last record of a key, so it would remove the good
		// one and the compacted partition would fold otherwise than the
		// log did (a limit of the skip rule, not something to simulate).
		rs := s.roles[s.rng.IntN(len(s.roles))]
		e.key = core.EncodeKey(core.RegistrationKey(rs.role, core.MustMemberID("ghost")))
		e.value = []byte{0, 7}
	}
	s.cl.appendEntry(e)
	s.cl.moved()
}
