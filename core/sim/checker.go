package sim

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/krabka/krabka-coord/core"
)

// The checker watches the run as it happens and judges it against the
// contract, with its own code: its own fold of the partition (docs/PROTOCOL.md
// section 5), its own succession rule (section 6 with 11.3) and its own
// pruning rule (10.3 with 11.6). It uses core's record codec to read keys and
// values (the codec has its own golden vectors) and nothing else of the code
// under test. What it is fed: every append, produce, decision and mint of the
// cluster (the ground truth), and every decision, registration, win attempt
// and acknowledgement of the members (what they did and on which view).
//
// What a view at offset n should hold: read past the last stable offset
// (the default), the records below n written outside transactions and the
// records of the transactions whose COMMIT marker is below n; read_committed
// (Bugs.ReadCommitted), the committed records below n (n never passes the
// last stable offset). Either way each key keeps its record of the greatest
// offset.
//
// Properties (Violation.Property):
//
//	log            offsets are handed out one after another, from 0
//	order          in each partition, in log order, committed transactional
//	               records of a role never carry a lower token than one of
//	               the role before them
//	stale-append   the cluster accepted a produce whose token was superseded
//	               by a token of its role minted before it arrived (the
//	               real-time property)
//	stale-commit   the same for a commit (EndTxn)
//	mint-order     a mint that does not supersede every earlier token of its
//	               role
//	token-owner    a produce under a token that was not minted for (or
//	               recovered by) the incarnation that sent it
//	token-mismatch a command whose text claims another token than its batch's
//	lost           an acknowledged command not committed where acknowledged
//	duplicate      a command value committed twice
//	fold           a member's view of the role differs from what the records
//	               it had read fold to
//	succession     a member decided otherwise than the rules say on its view
//	stale-view     a member minted on a view short of the offset its sync
//	               listed after it decided to act (the high watermark; the
//	               last stable offset with Bugs.ReadCommitted)
//	register       a registration against the at-most-once rule (section 6)
//	prune          a winner's first lease transaction removed other members
//	               than 10.3/11.6 say
//	lease-record   a lease, renewal or resign transaction of the wrong shape
//	handover       in a quiet handover (no fault since before the holder left)
//	               the role went to another member than the next eligible
//	               registration, or later than that member's turn allows
//	healthy-holder-deposed
//	               a member minted for a role on a challenge (not an
//	               administrative fence, not an own recovery) while the
//	               role's holder was healthy: running, not paused, not cut
//	               off, its last renewal not failed, and its last committed
//	               lease live for every clock within the skew bound and
//	               committed before the challenger's sync listed its offsets
//	               (so that any view synced then holds it). A needless
//	               failover, not a safety violation: the run goes on and the
//	               cases are counted (Result.Deposed).
type checker struct {
	sim *Sim
	cfg Config

	hist    [][]*entry // every offset as appended (before compaction), per partition
	pending [][]int64  // offsets of undecided transactional records
	lso     []int64

	roles []*roleChk
	mints map[core.FencingToken]mintRec

	failovers   int
	handovers   int // failovers to another member
	recoveries  int // own epoch recoveries seen in the command log
	retokened   int // commands whose text claims the token before an own recovery
	recoveredOf map[core.FencingToken]core.FencingToken
	commands    int
	acked       int
	ackWatch    map[*entry]ackRec
	cmdValues   map[string]int
	wins        map[core.FencingToken]winRec
	fences      map[core.FencingToken]core.MemberID
	termMeta    map[*incarnation]string // the metadata of the incarnation's current term
	regs        map[regKey]int64        // the last acknowledged registration of an acquire call
	regCount    map[regKey]int
	expect      *handover
	judged      int
	unjudged    int
	decisions   int
	deposed     int
	violations  []Violation
}

// roleChk is the checker's record of one role.
type roleChk struct {
	rs    *roleSim
	fold  specFold
	snaps []snapshot

	minted    bool
	maxMinted core.FencingToken

	lastCmd   core.FencingToken
	lastCmdBy core.MemberID
	haveCmd   bool

	expect *handover
	lease  leaseRec // the role's last committed lease
}

// leaseRec is a committed lease of a term (nil inc: an expired lease of a
// resign or a fence).
type leaseRec struct {
	inc      *incarnation
	token    core.FencingToken
	deadline int64
	marker   int64 // the offset of its transaction's marker
}

// Violation is one broken property.
type Violation struct {
	Property string
	At       int64 // simulated time
	Detail   string
}

func (v Violation) String() string {
	return fmt.Sprintf("%s at %d ms: %s", v.Property, v.At, v.Detail)
}

type mintKind uint8

const (
	mintFresh        mintKind = iota // InitProducerId of an acquire (or a fence)
	mintRecovery                     // KIP-360: a producer's own next epoch
	mintFenceOngoing                 // the bump that aborts an ongoing transaction
	mintTimeout                      // the bump of a transaction timeout
)

type mintRec struct {
	kind mintKind
	to   *incarnation
}

type ackRec struct {
	inc   *incarnation
	token core.FencingToken
	seq   int64
	value []byte
}

type winRec struct {
	inc      *incarnation
	viewNext int64
	now      int64
}

type regKey struct {
	inc  *incarnation
	call int
}

func newChecker(s *Sim) *checker {
	n := 1 + len(s.roles)
	c := &checker{
		sim: s, cfg: s.cfg,
		hist:        make([][]*entry, n),
		pending:     make([][]int64, n),
		lso:         make([]int64, n),
		mints:       map[core.FencingToken]mintRec{},
		ackWatch:    map[*entry]ackRec{},
		cmdValues:   map[string]int{},
		wins:        map[core.FencingToken]winRec{},
		fences:      map[core.FencingToken]core.MemberID{},
		termMeta:    map[*incarnation]string{},
		recoveredOf: map[core.FencingToken]core.FencingToken{},
		regs:        map[regKey]int64{},
		regCount:    map[regKey]int{},
	}
	for _, rs := range s.roles {
		c.roles = append(c.roles, &roleChk{rs: rs, fold: specFold{slots: map[string]*specSlot{}}})
	}
	return c
}

func (c *checker) violate(prop, format string, args ...any) {
	c.note(prop, format, args...)
	c.sim.stopped = true
}

// note records a violation and lets the run go on.
func (c *checker) note(prop, format string, args ...any) {
	v := Violation{Property: prop, At: c.sim.s.now, Detail: fmt.Sprintf(format, args...)}
	c.violations = append(c.violations, v)
	c.sim.tracef("VIOLATION %s", v)
}

// ---- the checker's own fold of the role's partition (section 5) ----

type specSlot struct {
	member       string
	off          int64
	registeredAt int64
	rejoin       bool
	meta         string // krabka.meta (11.2), "" none
	removed      bool
}

type specLease struct {
	member    string
	token     core.FencingToken
	granted   int64
	deadline  int64
	successor string // a valid member id or ""
	fencedBy  string
	meta      string // krabka.meta (11.1), "" none
}

type specFold struct {
	slots    map[string]*specSlot
	lease    *specLease
	leaseOff int64 // the offset of the lease record folded last (-1 none)
	leaseSet bool
}

// specState is the role state after a prefix of the partition.
type specState struct {
	roster []specSlot // live registrations in offset order
	lease  *specLease
}

type snapshot struct {
	off int64 // the state after the record at off
	st  specState
}

// add folds one committed data record of the role (key k); false when it
// changes nothing (its value does not decode, or the key already holds a
// record of a greater offset: records may come out of offset order, and
// folding them in offset order leaves each key with its last one).
func (f *specFold) add(k core.Key, e *entry) bool {
	tomb := len(e.value) == 0
	switch k.Kind {
	case core.KindRegistration:
		m := k.Member.String()
		if s, ok := f.slots[m]; ok && s.off >= e.off {
			return false
		}
		if tomb {
			if s, ok := f.slots[m]; ok {
				s.removed, s.off = true, e.off
			} else {
				f.slots[m] = &specSlot{member: m, off: e.off, removed: true}
			}
			return true
		}
		r, err := core.DecodeRegistration(e.value)
		if err != nil {
			return false
		}
		s := &specSlot{member: m, off: e.off, registeredAt: r.RegisteredAt}
		for _, h := range e.headers {
			switch h.Key {
			case core.HeaderRejoin:
				s.rejoin = string(h.Value) == "1"
			case core.HeaderMeta:
				s.meta = string(h.Value)
			}
		}
		f.slots[m] = s
	case core.KindLease:
		if f.leaseSet && f.leaseOff >= e.off {
			return false
		}
		if tomb {
			f.lease, f.leaseOff, f.leaseSet = nil, e.off, true
			return true
		}
		l, err := core.DecodeLease(e.value)
		if err != nil {
			return false
		}
		f.leaseOff, f.leaseSet = e.off, true
		sl := &specLease{member: l.Member.String(), token: l.Token, granted: l.GrantedAt, deadline: l.Deadline}
		for _, h := range e.headers {
			switch h.Key {
			case core.HeaderSuccessor:
				if _, err := core.NewMemberID(string(h.Value)); err == nil {
					sl.successor = string(h.Value)
				}
			case core.HeaderFencedBy:
				sl.fencedBy = string(h.Value)
			case core.HeaderMeta:
				sl.meta = string(h.Value)
			}
		}
		f.lease = sl
	}
	return true
}

func (f *specFold) state() specState {
	st := specState{lease: f.lease}
	for _, s := range f.slots {
		if !s.removed {
			st.roster = append(st.roster, *s)
		}
	}
	slices.SortFunc(st.roster, func(a, b specSlot) int { return int(a.off - b.off) })
	return st
}

// stateAt is role ri's state in a view that has read the partition below
// next.
func (c *checker) stateAt(ri int, next int64) specState {
	snaps := c.roles[ri].snaps
	i, _ := slices.BinarySearchFunc(snaps, next, func(s snapshot, n int64) int {
		switch {
		case s.off < n:
			return -1
		case s.off > n:
			return 1
		}
		return 0
	})
	if i == 0 {
		return specState{}
	}
	return snaps[i-1].st
}

// visibleTo is the offset a view synced now reaches: the high watermark,
// or the last stable offset with Bugs.ReadCommitted.
func (c *checker) visibleTo() int64 {
	if c.sim.oldRead {
		return c.lso[topicCoord]
	}
	return int64(len(c.hist[topicCoord]))
}

// syncTarget is the offset a sync that listed now would be bound to reach
// (Bugs.SkipSync's sync pretends it reached it).
func (c *checker) syncTarget() int64 { return c.visibleTo() }

// foldRecs folds committed records of the coordination partition that
// become visible at offset at (a view reaches them once it has read the
// entry at at) and takes a snapshot of each role they changed.
func (c *checker) foldRecs(at int64, es ...*entry) {
	var changed uint64
	for _, e := range es {
		if e.topic != topicCoord || e.marker || e.state != stateCommitted {
			continue
		}
		k, err := core.DecodeKey(e.key)
		if err != nil {
			continue
		}
		ri, ok := c.sim.byName[k.Role.String()]
		if !ok {
			continue
		}
		if c.roles[ri].fold.add(k, e) {
			changed |= 1 << ri
		}
	}
	for ri, rc := range c.roles {
		if changed&(1<<ri) != 0 {
			rc.snaps = append(rc.snaps, snapshot{off: at, st: rc.fold.state()})
		}
	}
}

func (st *specState) index(m string) int {
	for i, e := range st.roster {
		if e.member == m {
			return i
		}
	}
	return -1
}

// rank is section 5.7.
func (st *specState) rank(m string) int {
	r := 0
	for _, e := range st.roster {
		if e.member == m {
			if st.lease != nil && st.lease.member == m {
				return 0
			}
			return r
		}
		if st.lease == nil || e.member != st.lease.member {
			r++
		}
	}
	return -1
}

// named is the member an expired lease hands over to (11.3), or "".
func (st *specState) named() string {
	l := st.lease
	if l == nil || l.successor == "" || l.granted != l.deadline || l.successor == l.member || st.index(l.successor) < 0 {
		return ""
	}
	return l.successor
}

// anchor is when m may challenge (rules 3-4 with 11.3); ok false when m is
// not registered.
func (st *specState) anchor(m string, stagger int64, honourSuccessor bool) (int64, bool) {
	i := st.index(m)
	if i < 0 {
		return 0, false
	}
	rank := int64(st.rank(m))
	base := st.roster[i].registeredAt
	if st.lease != nil {
		base = st.lease.deadline
	}
	if n := st.named(); honourSuccessor && n != "" {
		if n == m {
			rank = 0
		} else {
			rank++
		}
	}
	return base + rank*stagger, true
}

// decide is the succession rule of section 6.
func (st *specState) decide(m string, now, stagger int64, honourSuccessor bool) core.Decision {
	a, ok := st.anchor(m, stagger, honourSuccessor)
	if !ok {
		return core.Decision{Kind: core.NotRegistered}
	}
	if st.lease != nil && st.lease.member == m && now < st.lease.deadline {
		return core.Decision{Kind: core.Hold}
	}
	if now >= a {
		return core.Decision{Kind: core.Challenge}
	}
	return core.Decision{Kind: core.Wait, WaitUntil: a}
}

// prune is 10.3 with 11.6: the expired holder (still registered), and the
// members ranked ahead of the winner that carry krabka.rejoin, unless the
// winner was named successor.
func (st *specState) prune(me string, now int64) []string {
	var out []string
	l := st.lease
	if l != nil && l.member != me && now >= l.deadline && st.index(l.member) >= 0 {
		out = append(out, l.member)
	}
	if st.named() == me {
		return out
	}
	mine := st.rank(me)
	if mine < 0 {
		return out
	}
	for _, e := range st.roster {
		if e.member == me || (l != nil && e.member == l.member) || !e.rejoin {
			continue
		}
		if st.rank(e.member) < mine {
			out = append(out, e.member)
		}
	}
	return out
}

func (st *specState) String() string {
	var b strings.Builder
	b.WriteString("roster[")
	for i, e := range st.roster {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s@%d", e.member, e.off)
	}
	b.WriteString("]")
	if l := st.lease; l != nil {
		fmt.Fprintf(&b, " lease(%s %s %d..%d", l.member, l.token, l.granted, l.deadline)
		if l.successor != "" {
			fmt.Fprintf(&b, " successor=%s", l.successor)
		}
		if l.meta != "" {
			fmt.Fprintf(&b, " meta=%q", l.meta)
		}
		b.WriteString(")")
	} else {
		b.WriteString(" no lease")
	}
	return b.String()
}

// sameAs compares a member's folded state with the checker's.
func (st *specState) sameAs(cs core.State) bool {
	if len(cs.Roster) != len(st.roster) {
		return false
	}
	for i, e := range cs.Roster {
		x := st.roster[i]
		if e.Member.String() != x.member || e.Offset != x.off || e.RegisteredAt != x.registeredAt || e.Rejoins != x.rejoin || string(e.Metadata) != x.meta {
			return false
		}
	}
	if (cs.Lease == nil) != (st.lease == nil) {
		return false
	}
	if l := cs.Lease; l != nil {
		x := st.lease
		if l.Member.String() != x.member || l.Token != x.token || l.GrantedAt != x.granted || l.Deadline != x.deadline ||
			cs.Successor.String() != x.successor || cs.FencedBy != x.fencedBy || string(cs.Metadata) != x.meta {
			return false
		}
	}
	return true
}

func coreStateString(cs core.State) string {
	var b strings.Builder
	b.WriteString("roster[")
	for i, e := range cs.Roster {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s@%d", e.Member, e.Offset)
	}
	b.WriteString("]")
	if l := cs.Lease; l != nil {
		fmt.Fprintf(&b, " lease(%s %s %d..%d", l.Member, l.Token, l.GrantedAt, l.Deadline)
		if !cs.Successor.IsZero() {
			fmt.Fprintf(&b, " successor=%s", cs.Successor)
		}
		if cs.Metadata != nil {
			fmt.Fprintf(&b, " meta=%q", cs.Metadata)
		}
		b.WriteString(")")
	} else {
		b.WriteString(" no lease")
	}
	return b.String()
}

// ---- the cluster's reports ----

func (c *checker) onAppend(e *entry) {
	h := &c.hist[e.topic]
	if int64(len(*h)) != e.off {
		c.violate("log", "%s offset %d appended after %d offsets", e.topic, e.off, len(*h))
	}
	*h = append(*h, e)
	if e.txn != nil && !e.marker {
		c.pending[e.topic] = append(c.pending[e.topic], e.off)
	}
	if e.topic == topicCoord && !c.sim.oldRead {
		// Read past the last stable offset: a record written outside a
		// transaction counts at once, a transaction's records at its
		// COMMIT marker.
		switch {
		case e.txn == nil:
			c.foldRecs(e.off, e)
		case e.marker && e.state == stateCommitted:
			c.foldRecs(e.off, e.txn.entries...)
		}
	}
	c.advance(e.topic)
}

func (c *checker) onListOffsets(lso, hwm int64) {
	if lso != c.lso[topicCoord] || hwm != int64(len(c.hist[topicCoord])) {
		c.violate("stale-view", "ListOffsets answered %d/%d, the last stable offset is %d and the high watermark %d", lso, hwm, c.lso[topicCoord], len(c.hist[topicCoord]))
	}
}

// advance moves the checker's last stable offset of topic t and, with
// Bugs.ReadCommitted, folds the newly decided committed records.
func (c *checker) advance(t topicID) {
	lso := int64(len(c.hist[t]))
	if len(c.pending[t]) > 0 {
		lso = c.pending[t][0]
	}
	if lso == c.lso[t] {
		return
	}
	from := c.lso[t]
	c.lso[t] = lso
	if t != topicCoord || !c.sim.oldRead {
		return
	}
	for off := from; off < lso; off++ {
		c.foldRecs(off, c.hist[t][off])
	}
}

func (c *checker) onMint(co int, t core.FencingToken, to *incarnation, kind mintKind) {
	rc := c.roles[co]
	if rc.minted && !t.Supersedes(rc.maxMinted) {
		c.violate("mint-order", "minted %s after %s", t, rc.maxMinted)
	}
	rc.minted, rc.maxMinted = true, t
	c.mints[t] = mintRec{kind: kind, to: to}
	if c.sim.tracing() {
		c.sim.tracef("coordinator %d: minted %s (%s) for %v", co, t, [...]string{"fresh", "own recovery", "fence of the ongoing transaction", "transaction timeout"}[kind], to)
	}
}

// onChallengeMint judges a fresh InitProducerId of a member's challenge
// (role co) as it arrives, listed being the high watermark when the sync
// before the challenge listed its offsets: a healthy holder deposed is a
// needless failover (see healthy-holder-deposed above).
func (c *checker) onChallengeMint(co int, to *incarnation, listed int64) {
	rc := c.roles[co]
	l := rc.lease
	h := l.inc
	now := c.sim.s.now
	if h == nil || h == to || h.dead || h.pausedUntil > now || h.m.cutUntil > now {
		return
	}
	lead := h.lead
	if lead == nil || lead.state != active || lead.renewFailing || lead.prod.token != l.token {
		return
	}
	if l.deadline <= now+c.cfg.SkewBound || l.marker < 0 || l.marker >= listed {
		return
	}
	c.deposed++
	c.note("healthy-holder-deposed", "%s minted for %s while its holder %s was healthy: its lease under %s (committed at offset %d, below the high watermark %d when %s synced) runs to %d, past now %d plus the skew bound %d, and its renewals commit",
		to, rc.rs.role, h, l.token, l.marker, listed, to, l.deadline, now, c.cfg.SkewBound)
}

func (c *checker) onProduce(co int, from *incarnation, tok core.FencingToken, tag txnTag, t *txn) {
	if rc := c.roles[co]; rc.minted && rc.maxMinted.Supersedes(tok) {
		c.violate("stale-append", "%s's %s produce under %s accepted after %s was minted", from, tag, tok, rc.maxMinted)
	}
	if r, ok := c.mints[tok]; !ok || r.to != from {
		c.violate("token-owner", "%s produced under %s, which was minted for %v", from, tok, r.to)
	}
}

func (c *checker) onEndAccepted(co int, tok core.FencingToken, commit bool) {
	if rc := c.roles[co]; commit && rc.minted && rc.maxMinted.Supersedes(tok) {
		c.violate("stale-commit", "a commit under %s accepted after %s was minted", tok, rc.maxMinted)
	}
}

func (c *checker) onDecide(t *txn, commit bool) {
	for _, e := range t.entries {
		c.pending[e.topic] = slices.DeleteFunc(c.pending[e.topic], func(o int64) bool { return o == e.off })
	}
	c.advance(topicCoord)
	c.advance(cmdsOf(t.co))
	for _, e := range t.entries {
		if a, ok := c.ackWatch[e]; ok {
			delete(c.ackWatch, e)
			if !commit {
				c.violate("lost", "%s's acknowledged command %q (token %s) was aborted", a.inc, a.value, a.token)
			}
		}
	}
	if c.sim.tracing() {
		what := "aborted"
		if commit {
			what = "committed"
		}
		c.sim.tracef("coordinator %d: transaction %d (%s of %v under %s, %d records) %s", t.co, t.id, t.tag, t.from, t.token, len(t.entries), what)
	}
	if commit {
		c.committed(t)
	}
}

// committed applies the rules of the transaction's kind.
func (c *checker) committed(t *txn) {
	var coordRecs, cmdRecs []*entry
	for _, e := range t.entries {
		if e.topic == topicCoord {
			coordRecs = append(coordRecs, e)
		} else {
			cmdRecs = append(cmdRecs, e)
		}
	}
	me := t.from.m.id.String()
	D := c.cfg.Lease.DurationMs
	rc := c.roles[t.co]
	role := rc.rs.role
	leaseOf := func(e *entry) (core.Lease, bool) {
		k, err := core.DecodeKey(e.key)
		if err != nil || k.Kind != core.KindLease || k.Role != role || len(e.value) == 0 {
			return core.Lease{}, false
		}
		l, err := core.DecodeLease(e.value)
		return l, err == nil
	}
	tombOf := func(e *entry) (string, bool) {
		k, err := core.DecodeKey(e.key)
		if err != nil || k.Kind != core.KindRegistration || k.Role != role || len(e.value) != 0 {
			return "", false
		}
		return k.Member.String(), true
	}
	switch t.tag {
	case tagCommand:
		if len(coordRecs) > 0 {
			c.violate("lease-record", "%s's guarded write wrote into the coordination topic", t.from)
		}
		for _, e := range cmdRecs {
			c.command(t, e)
		}
	case tagWin, tagRenew:
		if len(cmdRecs) > 0 || len(coordRecs) == 0 {
			c.violate("lease-record", "%s's %s transaction holds %d coordination and %d command records", t.from, t.tag, len(coordRecs), len(cmdRecs))
			return
		}
		l, ok := leaseOf(coordRecs[0])
		if !ok || l.Member.String() != me || l.Token != t.token || l.Deadline-l.GrantedAt != D {
			c.violate("lease-record", "%s's %s under %s wrote lease %+v", t.from, t.tag, t.token, l)
			return
		}
		rc.lease = leaseRec{inc: t.from, token: t.token, deadline: l.Deadline, marker: t.coordMarker}
		// Every lease record of a term carries the term's metadata (11.1),
		// across own epoch recoveries too.
		meta := headerValue(coordRecs[0], core.HeaderMeta)
		if t.tag == tagWin {
			c.termMeta[t.from] = meta
		} else if want := c.termMeta[t.from]; meta != want {
			c.violate("lease-record", "%s's renewal under %s carries metadata %q, its term's is %q", t.from, t.token, meta, want)
		}
		if t.tag == tagRenew {
			if len(coordRecs) != 1 {
				c.violate("lease-record", "%s's renewal holds %d records", t.from, len(coordRecs))
			}
			return
		}
		var got []string
		for _, e := range coordRecs[1:] {
			m, ok := tombOf(e)
			if !ok {
				c.violate("lease-record", "%s's first lease transaction holds a record that is no registration tombstone", t.from)
				return
			}
			got = append(got, m)
		}
		w, ok := c.wins[t.token]
		if !ok || w.inc != t.from {
			c.violate("lease-record", "%s committed a first lease under %s without a decision to challenge", t.from, t.token)
			return
		}
		delete(c.wins, t.token)
		st := c.stateAt(t.co, w.viewNext)
		var want []string
		if !t.from.m.reference {
			want = st.prune(me, w.now)
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			c.violate("prune", "%s won on %s at %d and pruned %v; the rules prune %v", t.from, st.String(), w.now, got, want)
		}
		c.judgeHandover(t, coordRecs[0])
	case tagResign:
		rc.lease = leaseRec{}
		if len(cmdRecs) > 0 || len(coordRecs) != 2 {
			c.violate("lease-record", "%s's resign holds %d coordination and %d command records", t.from, len(coordRecs), len(cmdRecs))
			return
		}
		l, ok := leaseOf(coordRecs[0])
		m, tok := tombOf(coordRecs[1])
		if !ok || l.Member.String() != me || l.Token != t.token || l.GrantedAt != l.Deadline || !tok || m != me || headerValue(coordRecs[0], core.HeaderMeta) != "" {
			c.violate("lease-record", "%s's resign under %s wrote lease %+v (metadata %q) and a tombstone of %q", t.from, t.token, l, headerValue(coordRecs[0], core.HeaderMeta), m)
			return
		}
		c.expectHandover("resign", t.from.m)
	case tagFence:
		rc.lease = leaseRec{}
		deposed, ok := c.fences[t.token]
		delete(c.fences, t.token)
		if len(cmdRecs) > 0 || len(coordRecs) != 2 || !ok {
			c.violate("lease-record", "the fence under %s holds %d coordination and %d command records", t.token, len(coordRecs), len(cmdRecs))
			return
		}
		l, lok := leaseOf(coordRecs[0])
		m, tok := tombOf(coordRecs[1])
		by := false
		for _, h := range coordRecs[0].headers {
			by = by || h.Key == core.HeaderFencedBy
		}
		if !lok || l.Member != deposed || l.Token != t.token || l.GrantedAt != l.Deadline || !by || !tok || m != deposed.String() {
			c.violate("lease-record", "the fence of %s under %s wrote lease %+v and a tombstone of %q", deposed, t.token, l, m)
			return
		}
		for _, x := range rc.rs.members {
			if x.id == deposed {
				c.expectHandover("fence", x)
			}
		}
	}
}

func (c *checker) command(t *txn, e *entry) {
	c.commands++
	v := string(e.value)
	c.cmdValues[v]++
	if c.cmdValues[v] > 1 {
		c.violate("duplicate", "command %q committed %d times", v, c.cmdValues[v])
	}
	var member string
	var claimed core.FencingToken
	claimedOK := false
	for f := range strings.FieldsSeq(v) {
		k, val, _ := strings.Cut(f, "=")
		switch k {
		case "member":
			member = val
		case "token":
			if tok, err := core.ParseFencingToken(val); err == nil {
				claimed, claimedOK = tok, true
			}
		}
	}
	stamp := ""
	for _, h := range e.headers {
		if h.Key == core.HeaderToken {
			stamp = string(h.Value)
		}
	}
	if stamp != t.token.String() || member != t.from.m.id.String() || !claimedOK {
		c.violate("token-mismatch", "command %q (krabka.token %q) committed by %s in a batch of %s", v, stamp, t.from, t.token)
	} else if claimed != t.token {
		// The host wrote the token it read before the call; a renewal
		// ahead of it in the operation slot failed and its settlement
		// continued the leadership under the next epoch (10.5). Allowed
		// only along the leadership's own recoveries.
		if !c.recoveredFrom(t.token, claimed, t.from) {
			c.violate("token-mismatch", "command %q committed by %s in a batch of %s, which is no own recovery of %s", v, t.from, t.token, claimed)
		}
		c.retokened++
	}
	if rc := c.roles[t.co]; !rc.haveCmd || t.token != rc.lastCmd {
		if rc.haveCmd {
			switch c.mints[t.token].kind {
			case mintFresh:
				c.failovers++
				if t.from.m.id != rc.lastCmdBy {
					c.handovers++
				}
			default:
				c.recoveries++
			}
		}
		rc.haveCmd, rc.lastCmd, rc.lastCmdBy = true, t.token, t.from.m.id
	}
}

func headerValue(e *entry, key string) string {
	for _, h := range e.headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// recoveredFrom: tok was reached from old by own epoch recoveries of inc.
func (c *checker) recoveredFrom(tok, old core.FencingToken, inc *incarnation) bool {
	for tok.Supersedes(old) {
		r, ok := c.mints[tok]
		if !ok || r.kind != mintRecovery || r.to != inc {
			return false
		}
		prev, ok := c.recoveredOf[tok]
		if !ok {
			return false
		}
		tok = prev
	}
	return tok == old
}

// ---- the members' reports ----

// onDecision judges a decision of inc on its view below viewNext; target is
// the offset the sync before it was bound to reach (-1: no sync).
func (c *checker) onDecision(inc *incarnation, call int, viewNext, now int64, cs core.State, d core.Decision, target int64) {
	c.decisions++
	st := c.stateAt(inc.m.rs.idx, viewNext)
	if !st.sameAs(cs) {
		c.violate("fold", "%s's view below offset %d is %s; the committed records fold to %s", inc, viewNext, coreStateString(cs), st.String())
		return
	}
	want := st.decide(inc.m.id.String(), now, c.cfg.Lease.ChallengeStaggerMs, !inc.m.reference)
	if want.Kind != d.Kind || (want.Kind == core.Wait && want.WaitUntil != d.WaitUntil) {
		c.violate("succession", "%s at %d on %s decided %v (until %d); the rules say %v (until %d)", inc, now, st.String(), d.Kind, d.WaitUntil, want.Kind, want.WaitUntil)
		return
	}
	if target >= 0 && (d.Kind == core.Hold || d.Kind == core.Challenge) && viewNext < target {
		c.violate("stale-view", "%s decided %v on a view to offset %d, short of the offset %d listed after it decided to act", inc, d.Kind, viewNext, target)
	}
	if c.sim.tracing() {
		c.sim.tracef("%s: call %d view<%d %s now=%d: %v %d", inc, call, viewNext, st.String(), now, d.Kind, d.WaitUntil)
	}
}

func (c *checker) onRegister(inc *incarnation, call int, viewNext, _ int64) {
	k := regKey{inc, call}
	if n := c.regCount[k]; n > 0 && inc.m.reference {
		c.violate("register", "reference member %s registers a second time in acquire call %d", inc, call)
	}
	if last, ok := c.regs[k]; ok && viewNext <= last {
		c.violate("register", "%s registers again in acquire call %d on a view to %d that does not reach its registration at %d", inc, call, viewNext, last)
	}
	if c.sim.tracing() {
		c.sim.tracef("%s: registers (call %d)", inc, call)
	}
}

func (c *checker) onRegistered(inc *incarnation, call int, off int64) {
	k := regKey{inc, call}
	c.regs[k] = off
	c.regCount[k]++
}

func (c *checker) onWinAttempt(inc *incarnation, tok core.FencingToken, viewNext, now int64) {
	c.wins[tok] = winRec{inc: inc, viewNext: viewNext, now: now}
	if c.sim.tracing() {
		c.sim.tracef("%s: minted %s, writes its first lease", inc, tok)
	}
}

func (c *checker) onFenceAttempt(inc *incarnation, tok core.FencingToken, deposed core.MemberID) {
	c.fences[tok] = deposed
}

func (c *checker) onAck(inc *incarnation, tok core.FencingToken, seq, off int64, value []byte) {
	c.acked++
	if c.sim.tracing() {
		c.sim.tracef("%s: acknowledged %q at offset %d", inc, value, off)
	}
	h := c.hist[inc.m.rs.cmds]
	if off < 0 || off >= int64(len(h)) || !bytes.Equal(h[off].value, value) {
		c.violate("lost", "%s's acknowledged command %q is not at offset %d", inc, value, off)
		return
	}
	switch e := h[off]; e.state {
	case stateCommitted:
	case stateAborted:
		c.violate("lost", "%s's acknowledged command %q (offset %d) was aborted", inc, value, off)
	default:
		c.ackWatch[e] = ackRec{inc: inc, token: tok, seq: seq, value: value}
	}
}

// finish runs the checks on the whole log.
func (c *checker) finish() {
	for e, a := range c.ackWatch {
		c.violate("lost", "%s's acknowledged command %q (offset %d) never committed", a.inc, a.value, e.off)
	}
	for t := range c.hist {
		last := make([]core.FencingToken, len(c.roles))
		have := make([]bool, len(c.roles))
		for _, e := range c.hist[t] {
			if e.marker || e.txn == nil || e.state != stateCommitted {
				continue
			}
			co := e.txn.co
			if have[co] && e.txn.token.Compare(last[co]) < 0 {
				c.violate("order", "%s offset %d: token %s after %s", topicID(t), e.off, e.txn.token, last[co])
				return
			}
			last[co], have[co] = e.txn.token, true
		}
	}
}

// ---- quiet handovers ----

// handover is a holder leaving (resign, crash) while nothing else went
// wrong: the next lease must go to the next eligible registration, in its
// turn.
type handover struct {
	kind        string
	holder      *member
	at          int64 // when the holder left (the resign committed, the crash)
	quietBefore int64 // the quiet mark before it
	ready       bool  // every other running member was campaigning
	st          specState
}

func (c *checker) expectHandover(kind string, holder *member) {
	rs := holder.rs
	rc := c.roles[rs.idx]
	// Judged only when every other running member is campaigning and none
	// is already acting on an earlier decision to challenge (a mint on its
	// way), and no earlier handover is still open.
	h := &handover{kind: kind, holder: holder, at: c.sim.s.now, quietBefore: rs.quietFrom, ready: rc.expect == nil, st: c.stateAt(rs.idx, c.visibleTo())}
	for _, m := range rs.members {
		if m != holder && m.inc != nil && (!m.inc.campaigning() || m.inc.acting) {
			h.ready = false
		}
	}
	rc.expect = h
}

// judgeHandover judges the first lease after an expected handover.
func (c *checker) judgeHandover(t *txn, lease *entry) {
	rc := c.roles[t.co]
	rs := rc.rs
	h := rc.expect
	rc.expect = nil
	if h == nil {
		return
	}
	s := c.sim
	lmax := s.cfg.LatencyMax
	settle := s.cfg.Timeout + 2*s.cfg.Poll
	if !h.ready || h.quietBefore > h.at-settle || rs.quietFrom > h.at {
		c.unjudged++
		return
	}
	st := c.stateAt(rs.idx, lease.off)
	type cand struct {
		m     *member
		at    int64 // true time of its turn
		ready int64 // when it can act on it: it saw the holder leave, or registered since
	}
	var cands []cand
	for _, m := range rs.members {
		if m.inc == nil || m.inc.pausedUntil > s.s.now {
			continue
		}
		i := st.index(m.id.String())
		if i < 0 {
			continue
		}
		a, _ := st.anchor(m.id.String(), s.cfg.Lease.ChallengeStaggerMs, !m.reference)
		if a0, ok := h.st.anchor(m.id.String(), s.cfg.Lease.ChallengeStaggerMs, !m.reference); ok && a0 != a {
			// A registration since the holder left moved this member's
			// turn (a named successor that registered late, say): it may
			// have acted on either.
			c.unjudged++
			return
		}
		ready := h.at + lmax
		if reg := c.hist[topicCoord][st.roster[i].off]; reg.at > h.at {
			ready = reg.at + 3*lmax // its registration was answered, then it synced
		}
		cands = append(cands, cand{m, a - m.inc.skew, ready})
	}
	turn := func(x cand) int64 { return max(x.at, x.ready) }
	slices.SortFunc(cands, func(a, b cand) int { return int(turn(a) - turn(b)) })
	if len(cands) == 0 || (len(cands) > 1 && turn(cands[1])-turn(cands[0]) <= 12*lmax+2) {
		c.unjudged++ // no candidate, or two turns too close to call
		return
	}
	c.judged++
	want := cands[0]
	if t.from.m != want.m {
		c.violate("handover", "after the %s of %s at %d the role went to %s; the next eligible registration is %s (turn at %d) on %s",
			h.kind, h.holder.id, h.at, t.from.m.id, want.m.id, want.at, st.String())
		return
	}
	// Its turn comes at want.at; it sees the holder leave one latency
	// after that was committed; then a sync, a mint, a produce and a
	// commit: seven messages.
	due := turn(want) + 8*lmax + 1
	if s.s.now > due {
		c.violate("handover", "after the %s of %s at %d, %s took over at %d, later than its turn allows (%d, turn at %d)",
			h.kind, h.holder.id, h.at, want.m.id, s.s.now, due, want.at)
	}
}

func (c *checker) summary() string {
	return "failovers=" + strconv.Itoa(c.failovers) + " handovers=" + strconv.Itoa(c.handovers) +
		" commands=" + strconv.Itoa(c.commands) + " acked=" + strconv.Itoa(c.acked) +
		" judged=" + strconv.Itoa(c.judged) + " decisions=" + strconv.Itoa(c.decisions)
}
