package coord

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/krabka/krabka-coord/core"
)

// Role groups (docs/GROUPS.md): N shards, each an ordinary role of the
// coordination topic, spread over the members of a group by weight. A
// member that holds a shard holds that shard's Leadership: its own token,
// its own lease, its guarded writes fenced by the broker. The membership
// and the plan live in a second compacted topic, the group log (GroupLog).

// GroupLog is where a group's membership and plan live: a transport whose
// coordination topic is the group log topic, and that topic's name (the
// plan is a guarded write to it under the leader role's token). With
// core/kafka: kafka.NewGroupLog; in memory: memtransport's Transport of
// another topic.
type GroupLog struct {
	Transport Transport
	Topic     string
}

// GroupEventKind says what happened to one of a member's shards. Its
// numbers are the header's krabka_group_event_kind_t (0 is no kind).
//
//krabka:enum krabka_group_event_kind_t prefix=Shard
type GroupEventKind int

// The kinds of a GroupEvent.
const (
	// ShardAssigned: the member won the shard's role; Leadership is its
	// term (write under it until it ends).
	ShardAssigned GroupEventKind = iota + 1
	// ShardRevoked: the member's term of the shard ends. Either the plan
	// moved the shard away (or the member leaves): the event comes first
	// and the group then resigns the term to the new owner (ResignTo), so
	// the shard's work stops before the successor can start; or the
	// leadership ended by itself (Fenced: another member minted; Expired:
	// renewals failed until the deadline). Err says which (ErrNotLeader
	// for a move). Stop the shard's work: its guarded writes fail once the
	// term ended, at the latest when the broker sees the successor's token.
	ShardRevoked
)

// GroupEvent is one change of the member's shards.
type GroupEvent struct {
	Kind  GroupEventKind
	Shard int       // the shard (or slot) index
	Role  core.Role // the shard's role
	// Leadership is the shard's term (ShardAssigned), or the term that
	// ended (ShardRevoked).
	Leadership *Leadership
	// Err is why the term ended (ShardRevoked): ErrNotLeader when the plan
	// moved the shard and the group resigned it, ErrFenced, ErrLeaseExpired,
	// ErrClosed.
	Err error
}

// GroupOption changes one setting of NewGroup or NewSemaphore.
type GroupOption func(*groupOptions)

type groupOptions struct {
	weight    int
	eligible  bool
	maxMoves  int
	heartbeat time.Duration
	ttl       time.Duration
	tick      time.Duration
}

// WithWeight sets the member's weight (default 1): its share of the shards
// is weight / the sum of the eligible members' weights. A weight <= 0 is an
// error of NewGroup (ErrInvalidArgument naming it).
func WithWeight(w int) GroupOption { return func(o *groupOptions) { o.weight = w } }

// WithEligible sets whether the member starts eligible for shards (default
// true). A member that is not eligible is a member (and may lead the
// group) but is assigned no shard.
func WithEligible(on bool) GroupOption { return func(o *groupOptions) { o.eligible = on } }

// WithMaxMoves bounds the handovers in flight (a shard whose live holder is
// not its owner in the plan; default 16). The leader's setting counts.
func WithMaxMoves(n int) GroupOption { return func(o *groupOptions) { o.maxMoves = n } }

// WithMemberTTL sets how long a member's heartbeat keeps it in the group
// (default: the lease duration) and how often it writes one (default: a
// third of that).
func WithMemberTTL(ttl time.Duration) GroupOption { return func(o *groupOptions) { o.ttl = ttl } }

// Group is one member's part in a role group: it heartbeats into the group
// log, campaigns for the group's leader role (whose holder publishes the
// plan), and campaigns for, holds, renews and hands over the shards the
// plan gives it. Events says what it won and lost. Safe for concurrent use.
type Group struct {
	c      *Client
	log    GroupLog
	name   string
	kind   string // "shards" or "slots"
	n      int
	member core.MemberID
	perMax int // 1 for a semaphore
	opt    groupOptions
	roles  []core.Role
	leader core.Role
	part   int32 // the group log partition (set by run before it closes partReady)

	partReady chan struct{}
	slots     chan struct{} // campaign slots (groupCampaigns)
	resigns   chan struct{} // resignation slots (groupResigns)

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	done   chan struct{}

	mu       sync.Mutex
	weight   int
	eligible bool
	shards   map[int]*groupShard // shards the plan gives us, or that we still hold
	held     map[int]*Leadership
	moves    int64 // shards taken over (a counter for the exporter)
	view     *groupView
	hbDirty  bool // held changed since the last heartbeat
	queue    []GroupEvent
	wake     chan struct{}
	err      error // set when the group stopped
	kick     chan struct{}
	closing  bool
	leaderL  *Leadership
	// lastPlan is the newest plan this member wrote as the leader (only
	// the lead goroutine touches it).
	lastPlan *planRecord
}

// NewGroup joins member to group, a group of shards roles
// ("<group>/shard/<k>", k < shards). It returns at once; the member's work
// runs in the background until Close. The client renews the shards' leases.
//
// Errors (nothing started): ErrInvalidArgument naming the problem for a
// shard count of 0 or above MaxGroupShards, a weight <= 0, an empty group
// name or a nil transport; core's role_too_long naming the group when the
// group name (with krabka.role.prefix) is too long for its shards' roles.
func NewGroup(c *Client, log GroupLog, group string, shards int, member core.MemberID, opts ...GroupOption) (*Group, error) {
	return newGroup(c, log, group, "shards", shards, 0, member, opts)
}

// NewSemaphore joins member to a semaphore of slots slots: a group whose
// shards are slots ("<group>/slot/<k>") and whose members hold at most one
// slot each, so at most slots members hold one at a time, each under its
// own token. The errors of NewGroup, for slots in place of shards.
func NewSemaphore(c *Client, log GroupLog, group string, slots int, member core.MemberID, opts ...GroupOption) (*Group, error) {
	return newGroup(c, log, group, "slots", slots, 1, member, opts)
}

func newGroup(c *Client, log GroupLog, group, kind string, n, perMax int, member core.MemberID, opts []GroupOption) (*Group, error) {
	if c == nil {
		return nil, WrapError(ErrInvalidArgument, nil, "group %q: no client", group)
	}
	if log.Transport == nil || log.Topic == "" {
		return nil, WrapError(ErrInvalidArgument, nil, "group %q: no group log (GroupLog.Transport and Topic)", group)
	}
	if err := checkGroupName(group); err != nil {
		return nil, err
	}
	if n < 1 || n > MaxGroupShards {
		return nil, WrapError(ErrInvalidArgument, nil, "group %q: %s count %d out of range [1, %d]", group, kind, n, MaxGroupShards)
	}
	if member.IsZero() {
		return nil, WrapError(ErrInvalidArgument, nil, "group %q: the member id is empty", group)
	}
	o := groupOptions{weight: 1, eligible: true, maxMoves: 16, ttl: time.Duration(c.cfg.Lease.DurationMs) * time.Millisecond}
	for _, f := range opts {
		f(&o)
	}
	if o.weight <= 0 {
		return nil, WrapError(ErrInvalidArgument, nil, "group %q: weight %d (must be at least 1)", group, o.weight)
	}
	if o.maxMoves < 1 {
		return nil, WrapError(ErrInvalidArgument, nil, "group %q: max moves %d (must be at least 1)", group, o.maxMoves)
	}
	if o.ttl <= 0 {
		return nil, WrapError(ErrInvalidArgument, nil, "group %q: member ttl %v (must be positive)", group, o.ttl)
	}
	o.heartbeat = o.ttl / 3
	o.tick = o.heartbeat / 4
	if o.tick < 20*time.Millisecond {
		o.tick = 20 * time.Millisecond
	}
	g := &Group{c: c, log: log, name: group, kind: kind, n: n, member: member, perMax: perMax, opt: o,
		weight: o.weight, eligible: o.eligible, shards: map[int]*groupShard{}, held: map[int]*Leadership{},
		wake: make(chan struct{}), kick: make(chan struct{}, 1), done: make(chan struct{}), view: newGroupView(group), partReady: make(chan struct{}),
		slots: make(chan struct{}, groupCampaigns), resigns: make(chan struct{}, groupResigns)}
	var err error
	if g.leader, err = GroupLeaderRole(group); err != nil {
		return nil, err
	}
	g.roles = make([]core.Role, n)
	for k := range g.roles {
		if g.roles[k], err = memberRole(group, kindWord(kind), k); err != nil {
			return nil, err
		}
	}
	// The longest role (the last index) with the client's prefix.
	if _, err := c.wire(g.roles[n-1]); err != nil {
		return nil, core.NewError(core.PartRole, core.CatRoleTooLong, "group",
			fmt.Sprintf("group name %q is too long for its %s' roles with krabka.role.prefix %q (%q: %d bytes, at most %d)",
				group, kind, c.cfg.RolePrefix, g.roles[n-1].String(), len(c.cfg.RolePrefix)+len(g.roles[n-1].String()), core.MaxNameBytes))
	}
	if err := c.checkOpen(); err != nil {
		return nil, err
	}
	g.ctx, g.cancel = context.WithCancel(c.root)
	g.wg.Add(2)
	go g.run()
	go g.lead()
	go func() { // the client's Close ends the group too
		select {
		case <-c.root.Done():
			g.stop(context.Background())
		case <-g.done:
		}
	}()
	return g, nil
}

func kindWord(kind string) string {
	if kind == "slots" {
		return "slot"
	}
	return "shard"
}

// Name returns the group's name.
func (g *Group) Name() string { return g.name }

// Member returns the member's id.
func (g *Group) Member() core.MemberID { return g.member }

// Shards returns the number of shards (or slots).
func (g *Group) Shards() int { return g.n }

// ShardRole returns the role of shard k (Shards() > k >= 0).
func (g *Group) ShardRole(k int) core.Role { return g.roles[k] }

// Held returns the shards the member holds now and their leaderships.
func (g *Group) Held() map[int]*Leadership {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[int]*Leadership, len(g.held))
	for k, l := range g.held {
		out[k] = l
	}
	return out
}

// Done is closed when the group stopped (Close, or its client closed).
func (g *Group) Done() <-chan struct{} { return g.done }

// SetEligible makes the member eligible for shards or not; the next
// heartbeat says so and the leader's next plan moves its shards (handed
// over, at most max moves at a time) or gives it its share. Never blocks
// on the cluster.
func (g *Group) SetEligible(on bool) {
	g.mu.Lock()
	g.eligible = on
	g.hbDirty = true
	g.mu.Unlock()
	g.nudge()
}

// Eligible reports whether the member is eligible for shards.
func (g *Group) Eligible() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.eligible
}

// SetWeight changes the member's weight (ErrInvalidArgument for w <= 0).
func (g *Group) SetWeight(w int) error {
	if w <= 0 {
		return WrapError(ErrInvalidArgument, nil, "group %q: weight %d (must be at least 1)", g.name, w)
	}
	g.mu.Lock()
	g.weight = w
	g.hbDirty = true
	g.mu.Unlock()
	g.nudge()
	return nil
}

// Next returns the next event, blocking until there is one, ctx ends (its
// error; ErrTimeout on a deadline) or the group stopped and every queued
// event was returned (ErrClosed).
func (g *Group) Next(ctx context.Context) (GroupEvent, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	for {
		// g.err is set when the group starts stopping, before its shards
		// are given up (each pushes its ShardRevoked); only once g.done is
		// closed has every event been queued. Look at g.done before the
		// queue, so that an empty queue seen after it is the last word.
		stopped := false
		select {
		case <-g.done:
			stopped = true
		default:
		}
		g.mu.Lock()
		if len(g.queue) > 0 {
			e := g.queue[0]
			g.queue[0] = GroupEvent{}
			g.queue = g.queue[1:]
			g.mu.Unlock()
			return e, nil
		}
		err, wake := g.err, g.wake
		g.mu.Unlock()
		if err != nil && stopped {
			return GroupEvent{}, err
		}
		select {
		case <-wake:
		case <-g.done:
		case <-ctx.Done():
			return GroupEvent{}, g.c.fail(ctx, ctx.Err())
		}
	}
}

// Close leaves the group: the member turns ineligible so that the plan
// hands its shards over (ResignTo their new owners, at most max moves at a
// time), and waits for that for at most one heartbeat interval (a third of
// the member ttl), not at all when no other live eligible member is there to
// take them. Then it resigns every shard it still holds at once (at most
// groupResigns transactions in flight, each naming the shard's owner or
// target in the plan as its successor, so that a member already campaigning
// takes it at once), ends its campaigns, resigns the leader role if it holds
// it and writes its heartbeat's tombstone. So the time Close takes does not
// grow with the shards held: the handover through the plan, one bounded
// step after the other, is cut short and the rest resigned in parallel.
// Blocks until then; the error is ctx's when ctx ended first (what was
// left is resigned anyway). Idempotent.
func (g *Group) Close(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	g.mu.Lock()
	first := !g.closing
	g.closing = true
	g.eligible = false
	g.hbDirty = true
	g.mu.Unlock()
	g.nudge()
	var werr error
	if first {
		werr = g.drain(ctx)
	}
	g.stop(ctx)
	return werr
}

// drain waits, for at most one heartbeat interval, until the plan handed
// over every shard the member holds; at once when no other live eligible
// member is there to hand over to. ctx's error when it ended first.
func (g *Group) drain(ctx context.Context) error {
	budget := time.NewTimer(g.opt.heartbeat)
	defer budget.Stop()
	for {
		g.mu.Lock()
		n, others := len(g.held), g.othersLocked()
		g.mu.Unlock()
		if n == 0 || !others {
			return nil
		}
		select {
		case <-ctx.Done():
			return g.c.fail(ctx, ctx.Err())
		case <-g.done:
			return nil
		case <-budget.C:
			return nil
		case <-time.After(g.opt.tick):
		}
	}
}

// othersLocked reports whether the view has a live eligible member other
// than this one (one the plan can hand shards to). g.mu held.
func (g *Group) othersLocked() bool {
	now := g.c.clock.NowMs()
	for name, m := range g.view.members {
		if name != g.member.String() && m.Deadline > now && m.Eligible && m.Weight > 0 {
			return true
		}
	}
	return false
}

func (g *Group) nudge() {
	select {
	case g.kick <- struct{}{}:
	default:
	}
}

func (g *Group) push(e GroupEvent) {
	g.mu.Lock()
	g.queue = append(g.queue, e)
	close(g.wake)
	g.wake = make(chan struct{})
	g.mu.Unlock()
}
