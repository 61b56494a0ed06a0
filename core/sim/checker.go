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
// Properties (Violation.Property):
//
//	log            offsets are handed out one after another, from 0
//	order          in each partition, in log order, committed transactional
//	               records never carry a lower token than one before them
//	stale-append   the cluster accepted a produce whose token was superseded
//	               by a token minted before it arrived (the real-time property)
//	stale-commit   the same for a commit (EndTxn)
//	mint-order     a mint that does not supersede every earlier token
//	token-owner    a produce under a token that was not minted for (or
//	               recovered by) the incarnation that sent it
//	token-mismatch a command whose text claims another token than its batch's
//	lost           an acknowledged command not committed where acknowledged
//	duplicate      a command value committed twice
//	fold           a member's view of the role differs from the fold of the
//	               committed prefix it had read
//	succession     a member decided otherwise than the rules say on its view
//	stale-view     a member minted on a view short of the last stable offset
//	               listed after it decided to act
//	register       a registration against the at-most-once rule (section 6)
//	prune          a winner's first lease transaction removed other members
//	               than 10.3/11.6 say
//	lease-record   a lease, renewal or resign transaction of the wrong shape
//	handover       in a quiet handover (no fault since before the holder left)
//	               the role went to another member than the next eligible
//	               registration, or later than that member's turn allows
type checker struct {
	sim *Sim
	cfg Config

	hist    [2][]*entry // every offset as appended (before compaction)
	pending [2][]int64  // offsets of undecided transactional records
	lso     [2]int64
	// lsoHist[v] is the coordination partition's last stable offset at
	// version v (a new version on every move); ListOffsets answers carry
	// their version.
	lsoHist []int64

	fold  specFold
	snaps []snapshot

	minted    bool
	maxMinted core.FencingToken
	mints     map[core.FencingToken]mintRec

	lastCmd     core.FencingToken
	lastCmdBy   core.MemberID
	haveCmd     bool
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
	violations  []Violation
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
	return &checker{
		sim: s, cfg: s.cfg, lsoHist: []int64{0},
		fold:        specFold{slots: map[string]*specSlot{}},
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
}

func (c *checker) violate(prop, format string, args ...any) {
	v := Violation{Property: prop, At: c.sim.s.now, Detail: fmt.Sprintf(format, args...)}
	c.violations = append(c.violations, v)
	c.sim.tracef("VIOLATION %s", v)
	c.sim.stopped = true
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
	slots map[string]*specSlot
	lease *specLease
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

// add folds one committed data record in offset order; false when it is
// not a record of the role (or does not decode).
func (f *specFold) add(role core.Role, e *entry) bool {
	k, err := core.DecodeKey(e.key)
	if err != nil || k.Role != role {
		return false
	}
	tomb := len(e.value) == 0
	switch k.Kind {
	case core.KindRegistration:
		m := k.Member.String()
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
		if tomb {
			f.lease = nil
			return true
		}
		l, err := core.DecodeLease(e.value)
		if err != nil {
			return false
		}
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

// stateAt is the state after every committed record below next.
func (c *checker) stateAt(next int64) specState {
	i, _ := slices.BinarySearchFunc(c.snaps, next, func(s snapshot, n int64) int {
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
	return c.snaps[i-1].st
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
	c.advance(e.topic)
}

func (c *checker) onListOffsets(lso int64) {
	if lso != c.lso[topicCoord] {
		c.violate("stale-view", "ListOffsets answered %d, the last stable offset is %d", lso, c.lso[topicCoord])
	}
}

// lsoVersion is the version of the coordination partition's last stable
// offset now (a member that decides records it with its sync).
func (c *checker) lsoVersion() int { return len(c.lsoHist) - 1 }

// advance moves the checker's last stable offset of topic t and folds the
// newly decided committed records.
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
	if t != topicCoord {
		return
	}
	c.lsoHist = append(c.lsoHist, lso)
	for off := from; off < lso; off++ {
		e := c.hist[t][off]
		if e.marker || e.state != stateCommitted {
			continue
		}
		if c.fold.add(c.sim.role, e) {
			c.snaps = append(c.snaps, snapshot{off: off, st: c.fold.state()})
		}
	}
}

func (c *checker) onMint(t core.FencingToken, to *incarnation, kind mintKind) {
	if c.minted && !t.Supersedes(c.maxMinted) {
		c.violate("mint-order", "minted %s after %s", t, c.maxMinted)
	}
	c.minted, c.maxMinted = true, t
	c.mints[t] = mintRec{kind: kind, to: to}
	if c.sim.tracing() {
		c.sim.tracef("coordinator: minted %s (%s) for %v", t, [...]string{"fresh", "own recovery", "fence of the ongoing transaction", "transaction timeout"}[kind], to)
	}
}

func (c *checker) onProduce(from *incarnation, tok core.FencingToken, tag txnTag, t *txn) {
	if c.minted && c.maxMinted.Supersedes(tok) {
		c.violate("stale-append", "%s's %s produce under %s accepted after %s was minted", from, tag, tok, c.maxMinted)
	}
	if r, ok := c.mints[tok]; !ok || r.to != from {
		c.violate("token-owner", "%s produced under %s, which was minted for %v", from, tok, r.to)
	}
}

func (c *checker) onEndAccepted(tok core.FencingToken, commit bool) {
	if commit && c.minted && c.maxMinted.Supersedes(tok) {
		c.violate("stale-commit", "a commit under %s accepted after %s was minted", tok, c.maxMinted)
	}
}

func (c *checker) onDecide(t *txn, commit bool) {
	for _, e := range t.entries {
		c.pending[e.topic] = slices.DeleteFunc(c.pending[e.topic], func(o int64) bool { return o == e.off })
	}
	c.advance(topicCoord)
	c.advance(topicCmds)
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
		c.sim.tracef("coordinator: transaction %d (%s of %v under %s, %d records) %s", t.id, t.tag, t.from, t.token, len(t.entries), what)
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
	leaseOf := func(e *entry) (core.Lease, bool) {
		k, err := core.DecodeKey(e.key)
		if err != nil || k.Kind != core.KindLease || k.Role != c.sim.role || len(e.value) == 0 {
			return core.Lease{}, false
		}
		l, err := core.DecodeLease(e.value)
		return l, err == nil
	}
	tombOf := func(e *entry) (string, bool) {
		k, err := core.DecodeKey(e.key)
		if err != nil || k.Kind != core.KindRegistration || k.Role != c.sim.role || len(e.value) != 0 {
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
		st := c.stateAt(w.viewNext)
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
		for _, x := range c.sim.members {
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
	if !c.haveCmd || t.token != c.lastCmd {
		if c.haveCmd {
			switch c.mints[t.token].kind {
			case mintFresh:
				c.failovers++
				if t.from.m.id != c.lastCmdBy {
					c.handovers++
				}
			default:
				c.recoveries++
			}
		}
		c.haveCmd, c.lastCmd, c.lastCmdBy = true, t.token, t.from.m.id
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

func (c *checker) onDecision(inc *incarnation, call int, viewNext, now int64, cs core.State, d core.Decision, syncVer int) {
	c.decisions++
	st := c.stateAt(viewNext)
	if !st.sameAs(cs) {
		c.violate("fold", "%s's view below offset %d is %s; the committed records fold to %s", inc, viewNext, coreStateString(cs), st.String())
		return
	}
	want := st.decide(inc.m.id.String(), now, c.cfg.Lease.ChallengeStaggerMs, !inc.m.reference)
	if want.Kind != d.Kind || (want.Kind == core.Wait && want.WaitUntil != d.WaitUntil) {
		c.violate("succession", "%s at %d on %s decided %v (until %d); the rules say %v (until %d)", inc, now, st.String(), d.Kind, d.WaitUntil, want.Kind, want.WaitUntil)
		return
	}
	if syncVer >= 0 && (d.Kind == core.Hold || d.Kind == core.Challenge) {
		if lso := c.lsoHist[syncVer]; viewNext < lso {
			c.violate("stale-view", "%s decided %v on a view to offset %d, short of the last stable offset %d listed after it decided to act", inc, d.Kind, viewNext, lso)
		}
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
	h := c.hist[topicCmds]
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
		var last core.FencingToken
		have := false
		for _, e := range c.hist[t] {
			if e.marker || e.txn == nil || e.state != stateCommitted {
				continue
			}
			if have && e.txn.token.Compare(last) < 0 {
				c.violate("order", "%s offset %d: token %s after %s", topicID(t), e.off, e.txn.token, last)
				return
			}
			last, have = e.txn.token, true
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
	s := c.sim
	// Judged only when every other running member is campaigning and none
	// is already acting on an earlier decision to challenge (a mint on its
	// way), and no earlier handover is still open.
	h := &handover{kind: kind, holder: holder, at: s.s.now, quietBefore: s.quietFrom, ready: c.expect == nil, st: c.stateAt(c.lso[topicCoord])}
	for _, m := range s.members {
		if m != holder && m.inc != nil && (!m.inc.campaigning() || m.inc.acting) {
			h.ready = false
		}
	}
	c.expect = h
}

// judgeHandover judges the first lease after an expected handover.
func (c *checker) judgeHandover(t *txn, leaseRec *entry) {
	h := c.expect
	c.expect = nil
	if h == nil {
		return
	}
	s := c.sim
	lmax := s.cfg.LatencyMax
	settle := s.cfg.Timeout + 2*s.cfg.Poll
	if !h.ready || h.quietBefore > h.at-settle || s.quietFrom > h.at {
		c.unjudged++
		return
	}
	st := c.stateAt(leaseRec.off)
	type cand struct {
		m     *member
		at    int64 // true time of its turn
		ready int64 // when it can act on it: it saw the holder leave, or registered since
	}
	var cands []cand
	for _, m := range s.members {
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
