package chaos

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/demo"
)

// The group mode (issue 36, docs/GROUPS.md, docs/RELIABILITY.md).
//
// GroupMembers Go processes of their own (grp-1, grp-2, ...; each in a
// namespace of its own, reaching the brokers directly like the Go
// processes of the extra roles) join one role group of GroupShards shards
// (cmd/krabka-member's group mode). For each shard k it is given, a member
// writes guarded commands to partition k of the group's command topic
// (one partition per shard), each naming the shard, one writer per shard
// and one command every GroupPaceMs, until the shard is revoked. The group
// members run with a lease of their own (GroupLeaseMs, 10 s: with the 3 s
// of the other roles, on this shared 2-core machine, the shards' renewals
// missed their deadlines so often that the group never converged in the
// first runs), and a pause of a group member lasts that lease and 1-4 s
// more. In group mode the member faults of the schedule (kill, pause,
// link cut, minority, clock skew) strike a group member instead of a
// primary-role member two times in five (drawn), and the group members
// suffer every broker fault.
//
// The checker runs per shard (CheckGroup): partition k's committed records
// (read_committed) with shard k's acknowledged commands, mints and
// acquisitions are judged by CheckAll exactly as a role's command topic,
// so no record of a lower token after a higher one, nothing acknowledged
// lost or duplicated, and no command of a shard written to another shard's
// partition.
//
// Moves and convergence (GroupTracker): every member process change (kill,
// restart, pause, resume, cut, heal; and the start) opens a measurement
// that ends at the first instant the group is converged again: the newest
// plan the members printed has no pending moves, every shard's owner is a
// running member that is not paused or cut off, every shard is held (by
// the members' ACQUIRED and REVOKED events) by its owner, and each such
// member holds N/L shards within one (L of them). A change is measured
// from the campaign's own clock when it acts, the events when the campaign
// reads them. A move is a shard acquired (ACQUIRED) by another member than
// the one that acquired it last; a change's moves are those in its window.
// The acquisitions (every term won, the same member's again after an
// expiry too) and the plan's own running count of owner changes are
// reported too. Separately, each change records when the plan first
// reflected it (PlanConverged: no pending moves, every owner live,
// balanced), whoever held the shards then: the leader's part of the
// convergence.

// groupMemberName is the member id of group member i (from 1).
func groupMemberName(i int) string { return "grp-" + strconv.Itoa(i) }

// GroupChange is one membership change and how long the group took to
// converge after it.
type GroupChange struct {
	Kind        string    `json:"kind"` // start, kill, restart, pause, resume, cut, heal
	Member      string    `json:"member,omitempty"`
	At          time.Time `json:"at"`
	Converged   bool      `json:"converged"`
	ConvergedAt time.Time `json:"converged_at,omitzero"`
	TookMs      int64     `json:"took_ms"`      // At to ConvergedAt (converged only)
	Planned     bool      `json:"planned"`      // the plan reflected the change (PlanConverged) before the faults ended
	PlanTookMs  int64     `json:"plan_took_ms"` // At to the first instant the plan did
	Moves       int       `json:"moves"`        // shards that changed member between At and ConvergedAt (or the end)
	Overlapped  bool      `json:"overlapped"`   // another change came before it converged
}

// GroupTracker follows a group from its members' events and the
// campaign's own faults. Not safe for concurrent use (the campaign calls
// it under its lock).
type GroupTracker struct {
	shards   int
	members  map[string]bool
	down     map[string]string // member -> why it does not count as live
	holder   []string          // per shard, by ACQUIRED / REVOKED
	last     []string          // per shard, the member of its last ACQUIRED
	handed   int               // ACQUIRED by another member than the shard's last one
	owner    []string          // the newest plan's owners
	pending  int
	seq      int64
	plan     bool
	moves    int64 // the newest plan's running count of owner changes
	acquired int   // ACQUIRED events
	converge bool
	frozen   bool
	changes  []GroupChange
	open     []int // indices of changes not converged yet
}

// NewGroupTracker follows a group of shards shards over members; the start
// (at) is its first change.
func NewGroupTracker(shards int, members []string, at time.Time) *GroupTracker {
	t := &GroupTracker{shards: shards, members: map[string]bool{}, down: map[string]string{}, holder: make([]string, shards),
		last: make([]string, shards)}
	for _, m := range members {
		t.members[m] = true
	}
	t.change("start", "", at)
	return t
}

func (t *GroupTracker) change(kind, member string, at time.Time) {
	if t.frozen {
		return
	}
	for _, i := range t.open {
		t.changes[i].Overlapped = true
	}
	t.changes = append(t.changes, GroupChange{Kind: kind, Member: member, At: at})
	t.open = append(t.open, len(t.changes)-1)
	t.converge = false
	t.eval(at)
}

// Down says member stops counting as live (kill, pause, cut) at at; a
// killed member's shards are no longer held.
func (t *GroupTracker) Down(member, why string, at time.Time) {
	if !t.members[member] || t.frozen {
		return
	}
	t.down[member] = why
	if why == "kill" {
		for k, h := range t.holder {
			if h == member {
				t.holder[k] = ""
			}
		}
	}
	t.change(why, member, at)
}

// Up says member counts as live again (restart, resume, heal) at at; a
// member that was not down is no change.
func (t *GroupTracker) Up(member, why string, at time.Time) {
	if !t.members[member] || t.frozen || t.down[member] == "" {
		return
	}
	delete(t.down, member)
	t.change(why, member, at)
}

// Acquired records member's ACQUIRED of shard k.
func (t *GroupTracker) Acquired(member string, k int, at time.Time) {
	if k < 0 || k >= t.shards || t.frozen {
		return
	}
	t.holder[k] = member
	t.acquired++
	if t.last[k] != "" && t.last[k] != member {
		t.handed++
		for _, i := range t.open {
			t.changes[i].Moves++
		}
	}
	t.last[k] = member
	t.eval(at)
}

// Revoked records member's REVOKED of shard k (a shard another member
// acquired since stays with that one).
func (t *GroupTracker) Revoked(member string, k int, at time.Time) {
	if k < 0 || k >= t.shards || t.frozen {
		return
	}
	if t.holder[k] == member {
		t.holder[k] = ""
	}
	t.eval(at)
}

// Plan records a plan a member printed; an older one than the newest seen
// is ignored.
func (t *GroupTracker) Plan(seq int64, owner []string, pending int, moves int64, at time.Time) {
	if t.frozen || (t.plan && seq <= t.seq) || len(owner) != t.shards {
		return
	}
	t.plan, t.seq, t.owner, t.pending, t.moves = true, seq, owner, pending, moves
	t.eval(at)
}

// Converged says whether the group is converged now (see the top of this
// file).
func (t *GroupTracker) Converged() bool { return t.converged(true) }

// PlanConverged says whether the newest plan is what convergence needs (no
// pending moves, every owner live, balanced within one over the live
// members), whoever holds the shards now.
func (t *GroupTracker) PlanConverged() bool { return t.converged(false) }

func (t *GroupTracker) converged(held bool) bool {
	if !t.plan || t.pending > 0 {
		return false
	}
	count := map[string]int{}
	for k := 0; k < t.shards; k++ {
		o := t.owner[k]
		if !t.members[o] || t.down[o] != "" || (held && t.holder[k] != o) {
			return false
		}
		count[o]++
	}
	live := len(t.members) - len(t.down)
	if live == 0 {
		return false
	}
	lo := t.shards / live
	hi := lo
	if t.shards%live != 0 {
		hi++
	}
	for m := range t.members {
		if t.down[m] == "" && (count[m] < lo || count[m] > hi) {
			return false
		}
	}
	return true
}

func (t *GroupTracker) eval(at time.Time) {
	if t.frozen {
		return
	}
	if t.PlanConverged() {
		for _, i := range t.open {
			if c := &t.changes[i]; !c.Planned {
				c.Planned, c.PlanTookMs = true, at.Sub(c.At).Milliseconds()
			}
		}
	}
	t.converge = t.Converged()
	if !t.converge {
		return
	}
	for _, i := range t.open {
		c := &t.changes[i]
		c.Converged, c.ConvergedAt, c.TookMs = true, at, at.Sub(c.At).Milliseconds()
	}
	t.open = t.open[:0]
}

// Freeze ends the measurements (the campaign stops the members next).
func (t *GroupTracker) Freeze() { t.frozen = true }

// GroupFigures are the tracker's figures.
type GroupFigures struct {
	Changes        []GroupChange  `json:"changes"`
	Measured       int            `json:"changes_measured"`    // changes (not the start) that converged
	Unconverged    int            `json:"changes_unconverged"` // changes (not the start) the group had not converged after when the faults ended
	ConvergeP50Ms  int64          `json:"converge_p50_ms"`
	ConvergeP90Ms  int64          `json:"converge_p90_ms"`
	ConvergeMaxMs  int64          `json:"converge_max_ms"`
	Planned        int            `json:"changes_planned"` // changes (not the start) the plan reflected before the faults ended
	PlanP50Ms      int64          `json:"plan_p50_ms"`     // the change to the first plan that reflected it
	PlanMaxMs      int64          `json:"plan_max_ms"`
	StartMs        int64          `json:"start_converge_ms"` // the start to the first convergence (-1: never)
	MovesP50       int            `json:"moves_p50"`         // per measured change
	MovesMax       int            `json:"moves_max"`
	Acquisitions   int            `json:"acquisitions"`     // every ACQUIRED of a shard (a term won, by the same member again too)
	Moves          int            `json:"moves"`            // ACQUIRED by another member than the shard's previous holder
	PlanMoves      int64          `json:"plan_moves"`       // the newest plan's running count of owner changes
	PlanSeq        int64          `json:"plan_seq"`         // the newest plan's sequence number
	ConvergedAtEnd bool           `json:"converged_at_end"` // after the quiet period
	HeldAtEnd      map[string]int `json:"held_at_end"`      // shards held per member after the quiet period
	UnheldAtEnd    int            `json:"unheld_at_end"`
	Spread         int            `json:"spread_at_end"` // most minus fewest shards held among the live members
}

// Figures summarizes the changes and the state now.
func (t *GroupTracker) Figures() GroupFigures {
	f := GroupFigures{Changes: append([]GroupChange(nil), t.changes...), Acquisitions: t.acquired, Moves: t.handed, PlanMoves: t.moves, PlanSeq: t.seq,
		ConvergedAtEnd: t.Converged(), HeldAtEnd: map[string]int{}, StartMs: -1}
	var took, planned []time.Duration
	var moves []int
	for _, c := range t.changes {
		if c.Kind == "start" {
			if c.Converged {
				f.StartMs = c.TookMs
			}
			continue
		}
		if c.Planned {
			f.Planned++
			planned = append(planned, time.Duration(c.PlanTookMs)*time.Millisecond)
		}
		if !c.Converged {
			f.Unconverged++
			continue
		}
		f.Measured++
		took = append(took, time.Duration(c.TookMs)*time.Millisecond)
		moves = append(moves, c.Moves)
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	sort.Ints(moves)
	sort.Slice(planned, func(i, j int) bool { return planned[i] < planned[j] })
	if len(planned) > 0 {
		f.PlanP50Ms, f.PlanMaxMs = pct(planned, 50).Milliseconds(), planned[len(planned)-1].Milliseconds()
	}
	if len(took) > 0 {
		f.ConvergeP50Ms, f.ConvergeP90Ms, f.ConvergeMaxMs = pct(took, 50).Milliseconds(), pct(took, 90).Milliseconds(), took[len(took)-1].Milliseconds()
		f.MovesP50, f.MovesMax = moves[(len(moves)-1)/2], moves[len(moves)-1]
	}
	for m := range t.members {
		if t.down[m] == "" {
			f.HeldAtEnd[m] = 0
		}
	}
	for _, h := range t.holder {
		if h == "" {
			f.UnheldAtEnd++
		} else {
			f.HeldAtEnd[h]++
		}
	}
	lo, hi := -1, 0
	for m, n := range f.HeldAtEnd {
		if t.down[m] != "" {
			continue
		}
		if lo < 0 || n < lo {
			lo = n
		}
		hi = max(hi, n)
	}
	if lo >= 0 {
		f.Spread = hi - lo
	}
	return f
}

// GroupInput is what the per-shard checker judges: the group command
// topic's committed records (every partition), and per shard role the
// acknowledged commands, the mints and the acquisitions.
type GroupInput struct {
	Shards   int
	Role     func(k int) string
	Records  []Record
	Acks     map[string][]Ack
	Mints    map[string][]Mint
	Acquired map[string]map[string]bool
	TwoDown  []Window
	Slack    time.Duration
}

// GroupCheck is the checker's verdict over every shard.
type GroupCheck struct {
	Shards       int      `json:"shards"`
	Records      int      `json:"records"`
	Acked        int      `json:"acked"`
	Found        int      `json:"found"`
	Lost         int      `json:"lost"`
	Duplicated   int      `json:"duplicated"`
	OrderBreaks  int      `json:"order_violations"`
	StaleTokens  int      `json:"stale_tokens"`
	Mismatch     int      `json:"token_mismatches"`
	RealTime     int      `json:"real_time_violations"`
	TwoDownAcked int      `json:"acked_two_down"`
	WrongShard   int      `json:"wrong_shard"` // commands of one shard on another shard's partition (goal 0)
	Terms        int      `json:"terms"`       // distinct producer tokens over every shard
	NotLinear    int      `json:"shards_not_linearizable"`
	Unknown      int      `json:"shards_linearizability_unknown"`
	ShardsEmpty  int      `json:"shards_without_commands"`
	Violations   []string `json:"violations"`
	ByShard      []int    `json:"acked_by_shard"`
}

// OK is true when no shard broke a property.
func (g *GroupCheck) OK() bool { return len(g.Violations) == 0 }

// CheckGroup runs CheckAll per shard over partition k's records with shard
// k's acknowledged commands, mints and acquisitions, and checks that every
// record of partition k names shard k.
func CheckGroup(in GroupInput) *GroupCheck {
	g := &GroupCheck{Shards: in.Shards, ByShard: make([]int, in.Shards)}
	byShard := make([][]Record, in.Shards)
	for _, r := range in.Records {
		if r.Partition < 0 || int(r.Partition) >= in.Shards {
			g.WrongShard++
			g.Violations = append(g.Violations, fmt.Sprintf("wrong-shard: a record on partition %d of a group of %d shards: %s", r.Partition, in.Shards, r))
			continue
		}
		if s, ok := shardOf(r.Value); !ok || s != int(r.Partition) {
			g.WrongShard++
			g.Violations = append(g.Violations, fmt.Sprintf("wrong-shard: partition %d holds a command that does not name shard %d: %s", r.Partition, r.Partition, r))
		}
		byShard[r.Partition] = append(byShard[r.Partition], r)
	}
	for k := 0; k < in.Shards; k++ {
		role := in.Role(k)
		res := CheckAll(Input{Records: byShard[k], Acks: in.Acks[role], Mints: in.Mints[role], Acquired: in.Acquired[role],
			TwoDown: in.TwoDown, Slack: in.Slack})
		g.Records += res.Records
		g.Acked += res.Acked
		g.ByShard[k] = res.Acked
		g.Found += res.Found
		g.Lost += res.Lost
		g.Duplicated += res.Duplicated
		g.OrderBreaks += res.OrderBreaks
		g.StaleTokens += res.StaleTokens
		g.Mismatch += res.TokenMismatch
		g.RealTime += res.RealTime
		g.TwoDownAcked += res.TwoDownAcked
		g.Terms += res.Tokens
		if res.Records == 0 {
			g.ShardsEmpty++
		}
		switch res.Linearizable {
		case "NO":
			g.NotLinear++
		case "unknown":
			g.Unknown++
		}
		for _, v := range res.Violations {
			g.Violations = append(g.Violations, fmt.Sprintf("shard %d (%s): %s", k, role, v))
		}
	}
	return g
}

// shardOf reads shard=<k> from a command.
func shardOf(v string) (int, bool) {
	for _, f := range strings.Fields(v) {
		if s, ok := strings.CutPrefix(f, "shard="); ok {
			k, err := strconv.Atoi(s)
			return k, err == nil
		}
	}
	return 0, false
}

// GroupResult is the group mode's part of the report.
type GroupResult struct {
	Group    string      `json:"group"`
	Shards   int         `json:"shards"`
	Members  []string    `json:"members"`
	Topic    string      `json:"command_topic"`
	MaxMoves int         `json:"max_moves"`
	Check    *GroupCheck `json:"check"`
	GroupFigures
}

// groupRole is shard k's role name.
func (c *campaign) groupRole(k int) string {
	r, err := coord.ShardRole(c.group.Group, k)
	if err != nil {
		return fmt.Sprintf("%s/shard/%d", c.group.Group, k)
	}
	return r.String()
}

// setupGroup names the group, creates its command topic (a partition per
// shard) and adds its member processes.
func (c *campaign) setupGroup(goBin string) {
	o := c.opts
	c.group = &GroupResult{Group: fmt.Sprintf("chaos-%d-fleet", o.Seed), Shards: o.GroupShards, MaxMoves: o.GroupMaxMoves}
	for i := 1; i <= o.GroupMembers; i++ {
		m := &member{name: groupMemberName(i), multi: true, group: true, host: demo.Host{Member: groupMemberName(i), Lang: "Go", Argv: []string{goBin}}}
		c.grp = append(c.grp, m)
		c.gos = append(c.gos, m)
		c.group.Members = append(c.group.Members, m.name)
	}
}

// createGroupTopic creates the group's command topic.
func (c *campaign) createGroupTopic(ctx context.Context) error {
	c.group.Topic = c.topic + "-group"
	if err := c.createTopicN(ctx, c.group.Topic, int32(c.opts.GroupShards)); err != nil {
		return err
	}
	c.say("group %s: %d shards (roles %s ... %s) over %s, at most %d moves in flight; command topic %s (partition k: shard k)",
		c.group.Group, c.group.Shards, c.groupRole(0), c.groupRole(c.group.Shards-1), strings.Join(c.group.Members, ", "), c.group.MaxMoves, c.group.Topic)
	return nil
}

// groupArgs is a group member's command line after the binary.
func (c *campaign) groupArgs(m *member) []string {
	return []string{strings.Join(c.net.brokerBootstrap(), ","), m.name,
		fmt.Sprintf("group:%s:%d=%s", c.group.Group, c.group.Shards, c.group.Topic)}
}

// groupLine handles a group member's event (under c.mu); false for the
// events goLine handles as for any role (DISPATCHED, MINTED, errors).
func (c *campaign) groupLine(m *member, kind, role string, fields map[string]string) bool {
	now := time.Now()
	shard := func() int {
		k, err := strconv.Atoi(fields["shard"])
		if err != nil {
			c.events["group-unparsed"]++
			return -1
		}
		return k
	}
	switch kind {
	case demo.Acquired:
		c.events["group-ACQUIRED"]++
		if c.roleAcquired[role] == nil {
			c.roleAcquired[role] = map[string]bool{}
		}
		c.roleAcquired[role][m.name+"|"+fields["token"]] = true
		c.gtrack.Acquired(m.name, shard(), now)
	case "REVOKED":
		c.events["group-REVOKED-"+fields["code"]]++
		c.gtrack.Revoked(m.name, shard(), now)
	case "PLAN":
		seq, err1 := strconv.ParseInt(fields["seq"], 10, 64)
		pending, err2 := strconv.Atoi(fields["pending"])
		moves, _ := strconv.ParseInt(fields["moves"], 10, 64)
		owner := strings.Split(fields["owner"], ",")
		for i, o := range owner {
			if o == "-" {
				owner[i] = ""
			}
		}
		if err1 != nil || err2 != nil {
			c.events["group-unparsed"]++
			return true
		}
		c.gtrack.Plan(seq, owner, pending, moves, now)
		return true
	case "JOINED", "LEFT":
	default:
		return false
	}
	if c.opts.Verbose || kind != demo.Acquired {
		line := fmt.Sprintf("[%7.1fs]   %s %s role=%s %s", time.Since(c.start).Seconds(), m.name, kind, role,
			strings.TrimSpace(fields["token"]+" "+fields["code"]))
		fmt.Fprintln(c.opts.Out, line)
		if c.evlog != nil {
			fmt.Fprintln(c.evlog, line)
		}
	}
	return true
}

// groupDown and groupUp tell the tracker about a fault on a group member.
func (c *campaign) groupDown(m *member, why string) {
	if !m.group {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gtrack != nil && !c.stopping {
		c.gtrack.Down(m.name, why, time.Now())
	}
}

func (c *campaign) groupUp(m *member, why string) {
	if !m.group {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gtrack != nil && !c.stopping {
		c.gtrack.Up(m.name, why, time.Now())
	}
}

// checkGroup reads the group's command topic back and checks every shard.
func (c *campaign) checkGroup(ctx context.Context) error {
	recs, err := c.commandRecords(ctx, c.group.Topic)
	if err != nil {
		return fmt.Errorf("reading the group's command log: %w", err)
	}
	c.mu.Lock()
	in := GroupInput{Shards: c.group.Shards, Role: c.groupRole, Records: recs, Acks: map[string][]Ack{}, Mints: map[string][]Mint{},
		Acquired: map[string]map[string]bool{}, TwoDown: append([]Window(nil), c.twoDown...),
		Slack: time.Duration(c.opts.GroupPaceMs)*time.Millisecond + time.Second}
	for k := 0; k < c.group.Shards; k++ {
		r := c.groupRole(k)
		in.Acks[r] = append([]Ack(nil), c.roleAcks[r]...)
		in.Mints[r] = append([]Mint(nil), c.roleMints[r]...)
		in.Acquired[r] = c.roleAcquired[r]
	}
	c.mu.Unlock()
	c.group.Check = CheckGroup(in)
	return nil
}

// groupSummary prints the group mode's lines.
func (c *campaign) groupSummary(g *GroupResult) {
	k := g.Check
	c.say("group %s (%d shards over %s, at most %d moves in flight): acknowledged=%d found=%d lost=%d duplicated=%d order=%d stale=%d mismatch=%d real-time=%d acked-two-down=%d wrong-shard=%d terms=%d shards not linearizable=%d (unknown %d), shards without commands=%d",
		g.Group, g.Shards, strings.Join(g.Members, "+"), g.MaxMoves, k.Acked, k.Found, k.Lost, k.Duplicated, k.OrderBreaks, k.StaleTokens, k.Mismatch,
		k.RealTime, k.TwoDownAcked, k.WrongShard, k.Terms, k.NotLinear, k.Unknown, k.ShardsEmpty)
	kinds := map[string]int{}
	for _, ch := range g.Changes {
		kinds[ch.Kind]++
	}
	c.say("group moves and convergence: %d membership changes %v, %d converged (p50 %s, p90 %s, max %s; moves per change p50 %d max %d), %d not converged when the faults ended; first convergence after the start %s; moves=%d, shard terms won=%d, plan owner changes=%d (plan seq %d)",
		len(g.Changes)-1, kinds, g.Measured, time.Duration(g.ConvergeP50Ms)*time.Millisecond, time.Duration(g.ConvergeP90Ms)*time.Millisecond,
		time.Duration(g.ConvergeMaxMs)*time.Millisecond, g.MovesP50, g.MovesMax, g.Unconverged, time.Duration(g.StartMs)*time.Millisecond,
		g.Moves, g.Acquisitions, g.PlanMoves, g.PlanSeq)
	c.say("group plan: %d of the changes reflected by the plan before the faults ended (the change to that plan: p50 %s, max %s)",
		g.Planned, time.Duration(g.PlanP50Ms)*time.Millisecond, time.Duration(g.PlanMaxMs)*time.Millisecond)
	c.say("group balance after the quiet period: converged=%v, held %v, unheld %d, spread %d", g.ConvergedAtEnd, g.HeldAtEnd, g.UnheldAtEnd, g.Spread)
}
