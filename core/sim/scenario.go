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
		role:   core.MustRole("controller"),
		faults: map[string]int{},
		s:      &sched{},
	}
	if cfg.Bug != "" {
		set, ok := BugNames[cfg.Bug]
		if !ok {
			panic("sim: no test-only switch named " + strconv.Quote(cfg.Bug))
		}
		set(&s.bugs)
	}
	if trace {
		s.trace = &strings.Builder{}
		s.verbose = verbose
	}
	s.chk = newChecker(s)
	s.cl = newCluster(s, 4000+int64(cfg.Seed%1000), cfg.FirstEpoch)
	s.tracef("scenario %s", cfg)
	for i := range cfg.Members {
		m := &member{sim: s, id: core.MustMemberID("m" + strconv.Itoa(i+1)),
			reference: i >= cfg.Members-cfg.Reference}
		m.skew = s.drawSkew()
		s.members = append(s.members, m)
		s.s.at(s.rng.Int64N(20), func() { s.start(m) })
	}
	// The operator's tool: an incarnation that runs only the fences.
	s.admin = &member{sim: s, id: core.MustMemberID("ops")}
	s.admin.inc = &incarnation{sim: s, m: s.admin, n: 1, name: "ops"}
	s.s.at(cfg.FaultMin+s.rng.Int64N(cfg.FaultMax-cfg.FaultMin+1), s.injectFault)
	s.s.at(tickEvery, s.cl.tick)
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
		Config: cfg, Failovers: s.chk.failovers, Handovers: s.chk.handovers, Recoveries: s.chk.recoveries, Retokened: s.chk.retokened,
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

func (s *Sim) drawSkew() int64 {
	b := s.cfg.SkewBound
	return s.rng.Int64N(2*b+1) - b
}

// leader is the incarnation whose active leadership has the newest token
// (nil: none).
func (s *Sim) leader() *incarnation {
	var best *incarnation
	for _, m := range s.members {
		if inc := m.inc; inc != nil && inc.lead != nil && inc.lead.state == active {
			if best == nil || inc.lead.prod.token.Supersedes(best.lead.prod.token) {
				best = inc
			}
		}
	}
	return best
}

// target picks the leader (usually) or a random running member.
func (s *Sim) target(leaderBias int) *incarnation {
	if l := s.leader(); l != nil && s.rng.IntN(100) < leaderBias {
		return l
	}
	var up []*incarnation
	for _, m := range s.members {
		if m.inc != nil {
			up = append(up, m.inc)
		}
	}
	if len(up) == 0 {
		return nil
	}
	return up[s.rng.IntN(len(up))]
}

// injectFault draws the next member fault.
func (s *Sim) injectFault() {
	c := s.cfg
	s.s.after(c.FaultMin+s.rng.Int64N(c.FaultMax-c.FaultMin+1), s.injectFault)
	now := s.s.now
	D := c.Lease.DurationMs
	r := s.rng.IntN(100)
	switch {
	case r < 25: // crash, restart later (same id)
		inc := s.target(80)
		if inc == nil {
			return
		}
		if inc.lead != nil && inc.lead.state == active && inc == s.leader() {
			s.chk.expectHandover("crash", inc.m)
		}
		s.fault("member-crash", now)
		s.tracef("FAULT crash %s", inc)
		inc.crash()
		m := inc.m
		newSkew := s.rng.IntN(3) == 0
		s.s.after(100+s.rng.Int64N(2000), func() {
			if newSkew {
				m.skew = s.drawSkew()
			}
			s.fault("member-restart", s.s.now+s.settle())
			s.start(m)
		})
	case r < 42: // pause (SIGSTOP): mostly past the lease
		inc := s.target(75)
		if inc == nil || inc.pausedUntil > now {
			return
		}
		d := D + 100 + s.rng.Int64N(2000)
		if s.rng.IntN(4) == 0 {
			d = 50 + s.rng.Int64N(D/2)
		}
		inc.pausedUntil = now + d
		s.fault("member-pause", now+d+s.settle())
		s.tracef("FAULT pause %s for %d ms", inc, d)
	case r < 62: // planned resign, with a named successor half the time
		inc := s.leader()
		if inc == nil || inc.resignTo != nil || inc.pausedUntil > now {
			return
		}
		var to core.MemberID
		if s.rng.IntN(2) == 0 {
			o := s.members[s.rng.IntN(len(s.members))]
			if o != inc.m {
				to = o.id
			}
		}
		inc.resignTo = &to
		s.faults["resign"]++
		s.tracef("PLAN %s resigns (successor %q)", inc, to.String())
	case r < 75: // link cut: messages held until it heals
		inc := s.target(75)
		if inc == nil {
			return
		}
		d := 300 + s.rng.Int64N(D+2000)
		inc.m.cutUntil = now + d
		s.fault("link-cut", now+d+s.settle())
		s.tracef("FAULT link of %s cut for %d ms", inc.m.id, d)
	case r < 85: // administrative fence
		if s.leader() == nil {
			return
		}
		s.faults["fence"]++
		s.admin.inc.spawn("fence", s.adminFence)
	default: // a standby crashes or pauses
		inc := s.target(0)
		if inc == nil || inc == s.leader() {
			return
		}
		if s.rng.IntN(2) == 0 {
			s.fault("standby-crash", now)
			s.tracef("FAULT crash %s (standby)", inc)
			inc.crash()
			m := inc.m
			s.s.after(100+s.rng.Int64N(3000), func() {
				s.fault("member-restart", s.s.now+s.settle())
				s.start(m)
			})
		} else if inc.pausedUntil <= now {
			d := 100 + s.rng.Int64N(D)
			inc.pausedUntil = now + d
			s.fault("standby-pause", now+d+s.settle())
			s.tracef("FAULT pause %s (standby) for %d ms", inc, d)
		}
	}
}

// adminFence is Client.Fence (docs/PROTOCOL.md 11.4) run by an operator:
// read the role, mint, then one transaction with an expired lease of the
// deposed holder under the new token (krabka.fenced-by, and
// krabka.successor half the time) and the tombstone of its registration.
func (s *Sim) adminFence(p *proc) {
	r := p.call(&request{kind: reqFetch, offset: 0, maxWait: 0}, s.cfg.Timeout)
	if r.err != errOK {
		return
	}
	st := core.FoldRaw(s.role, r.recs)
	if st.Lease == nil {
		return
	}
	deposed := st.Lease.Member
	m := p.call(&request{kind: reqInitPID}, s.cfg.Timeout)
	if m.err != errOK {
		return
	}
	prod := &producer{inc: p.inc, token: m.token}
	now := p.inc.now()
	hdrs := []core.RecordHeader{{Key: core.HeaderFencedBy, Value: []byte("ops@sim")}}
	if s.rng.IntN(2) == 0 && len(st.Roster) > 0 {
		if e := st.Roster[s.rng.IntN(len(st.Roster))]; e.Member != deposed {
			hdrs = append(hdrs, core.RecordHeader{Key: core.HeaderSuccessor, Value: []byte(e.Member.String())})
		}
	}
	expiredLease := core.Lease{Member: deposed, Token: m.token, GrantedAt: now, Deadline: now}
	s.tracef("ops: fences %s with %s", deposed, m.token)
	s.chk.onFenceAttempt(p.inc, m.token, deposed)
	prod.transact(p, []outRecord{s.leaseRecord(expiredLease, hdrs), s.tombstone(deposed)}, tagFence)
	prod.close()
}

func (s *Sim) compactNow() {
	s.cl.compact(30000)
	s.s.after(5000+s.rng.Int64N(10000), s.compactNow)
}

// noise appends a record of another role, or one that does not decode, to
// the role's partition (the fold must skip both without stopping).
func (s *Sim) noise() {
	s.s.after(1000+s.rng.Int64N(5000), s.noise)
	e := &entry{topic: topicCoord, state: stateCommitted}
	switch s.rng.IntN(4) {
	case 0:
		other := core.MustRole("other-role")
		e.key = core.EncodeKey(core.RegistrationKey(other, s.members[0].id))
		e.value = core.EncodeRegistration(core.Registration{Member: s.members[0].id, RegisteredAt: s.s.now})
	case 1:
		e.key = []byte{0, 9, 9, 9}
		e.value = []byte("not a record")
	case 2: // a lease key of another role with a value that does not decode
		e.key = core.EncodeKey(core.LeaseKey(core.MustRole("other-role")))
		e.value = []byte{0, 0, 1}
	default:
		// A registration key of the role with a value that does not
		// decode. Not under a key that holds a good record: compaction
		// keeps only the last record of a key, so it would remove the good
		// one and the compacted partition would fold otherwise than the
		// log did (a limit of the skip rule, not something to simulate).
		e.key = core.EncodeKey(core.RegistrationKey(s.role, core.MustMemberID("ghost")))
		e.value = []byte{0, 7}
	}
	s.cl.appendEntry(e)
	s.cl.stableMoved(topicCoord)
}
