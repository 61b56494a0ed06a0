package coord

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/krabka/krabka-coord/core"
)

// groupView is the fold of one group's records in the group log: the
// newest heartbeat of each member and the newest plan (committed records
// only; the newest is the one of the highest offset).
type groupView struct {
	group     string
	next      int64
	started   bool
	txn       *core.TxnFolder
	members   map[string]memberRecord
	memberOff map[string]int64
	plan      *planRecord
	planOff   int64
	skipped   int
}

func newGroupView(group string) *groupView {
	v := &groupView{group: group}
	v.reset()
	return v
}

func (v *groupView) reset() {
	v.members, v.memberOff, v.plan, v.planOff, v.skipped = map[string]memberRecord{}, map[string]int64{}, nil, -1, 0
	v.txn = core.NewTxnFolder(v.add)
}

// add folds one committed record (any order: a record only replaces one of
// a lower offset).
func (v *groupView) add(r core.RawRecord) {
	kind, group, member, ok := decodeGroupKey(r.Key)
	if !ok || group != v.group {
		return
	}
	switch kind {
	case groupKindMember:
		if off, seen := v.memberOff[member]; seen && off >= r.Offset {
			return
		}
		v.memberOff[member] = r.Offset
		if core.IsTombstone(r.Value) {
			delete(v.members, member)
			return
		}
		var m memberRecord
		if err := json.Unmarshal(r.Value, &m); err != nil {
			v.skipped++
			delete(v.members, member)
			return
		}
		v.members[member] = m
	case groupKindPlan:
		if r.Offset <= v.planOff || core.IsTombstone(r.Value) {
			return
		}
		p, err := decodePlan(r.Value)
		if err != nil {
			v.skipped++
			return
		}
		v.plan, v.planOff = p, r.Offset
	}
}

// apply folds one Fetch answer.
func (v *groupView) apply(f Fetched) {
	if f.Reset {
		v.reset()
	}
	for _, r := range f.Records {
		v.add(r)
	}
	for _, b := range f.Batches {
		v.txn.Add(b)
	}
	v.next = f.Next
}

// copyView returns a snapshot safe to read while the original goes on.
func (v *groupView) snapshot() groupView {
	s := groupView{group: v.group, next: v.next, plan: v.plan, planOff: v.planOff, skipped: v.skipped,
		members: make(map[string]memberRecord, len(v.members))}
	for k, m := range v.members {
		s.members[k] = m
	}
	return s
}

// GroupMember is one member of a group as its newest heartbeat says.
type GroupMember struct {
	Member   string
	Weight   int
	Eligible bool
	// Live: the heartbeat's deadline has not passed (by the reader's clock).
	Live     bool
	Deadline time.Time
	Held     []int // the shards it reports holding
	Owned    int   // the shards the plan gives it now
	Target   int   // the shards the balance wants it to have
	Moves    int64 // shards it took over so far (its own count)
}

// GroupStatus is a group's state read from the group log.
type GroupStatus struct {
	Group   string
	Kind    string // "shards" or "slots" ("" before the first plan)
	Shards  int    // from the plan (0 before the first plan)
	Seq     int64  // the plan's sequence number
	Leader  string // the member that wrote the plan
	Token   string // the leader role's token the plan was written under
	PlanAt  time.Time
	Members []GroupMember // sorted by id
	// Owner and Holder are per shard: the member the plan gives it to and
	// the live member that reports holding it ("" none).
	Owner, Holder []string
	// MovesInFlight counts the shards handed over between live members
	// now: the owner is live, and another live member reports holding
	// the shard (the count WithMaxMoves bounds).
	MovesInFlight int
	// Unheld counts the shards no live member reports holding.
	Unheld int
	// Orphaned counts the shards held by a live member while their owner
	// is not live (its heartbeat expired) or the plan gives them to
	// nobody: no handover is under way; the leader's next plan gives each
	// to its holder or moves it, or the holder resigns it. A broker
	// that stalls past the member ttl makes members' heartbeats expire
	// and their shards orphaned until they heartbeat again.
	Orphaned int
	// Pending counts the shards whose owner is not yet their target (moves
	// the bound holds back).
	Pending int
	// Converged: every shard is held by its owner and every owner is the
	// target.
	Converged bool
	// Moves is the leaders' running count of owner changes.
	Moves int64
	// Skipped counts the group's records that did not decode.
	Skipped int
}

// status builds a GroupStatus at now.
func (v *groupView) status(now int64) *GroupStatus {
	s := &GroupStatus{Group: v.group, Skipped: v.skipped}
	var owners, targets []string
	if p := v.plan; p != nil {
		s.Kind, s.Shards, s.Seq, s.Leader, s.Token, s.PlanAt, s.Moves = p.Kind, p.Shards, p.Seq, p.Leader, p.Token, time.UnixMilli(p.At), p.Moves
		owners, targets = p.owners(), p.targets()
	}
	s.Holder = v.holders(s.Shards, now)
	s.Owner = owners
	if s.Owner == nil {
		s.Owner = make([]string, s.Shards)
	}
	owned, target := map[string]int{}, map[string]int{}
	live := map[string]bool{}
	for name, m := range v.members {
		live[name] = m.Deadline > now
	}
	s.Converged = s.Shards > 0
	for k := 0; k < s.Shards; k++ {
		owned[owners[k]]++
		target[targets[k]]++
		if owners[k] != targets[k] {
			s.Pending++
			s.Converged = false
		}
		switch {
		case s.Holder[k] == "":
			s.Unheld++
			s.Converged = false
		case s.Holder[k] != owners[k] && !live[owners[k]]:
			s.Orphaned++
			s.Converged = false
		case s.Holder[k] != owners[k]:
			s.MovesInFlight++
			s.Converged = false
		}
	}
	for name, m := range v.members {
		s.Members = append(s.Members, GroupMember{Member: name, Weight: m.Weight, Eligible: m.Eligible, Live: m.Deadline > now,
			Deadline: time.UnixMilli(m.Deadline), Held: slices.Clone(m.Held), Owned: owned[name], Target: target[name], Moves: m.Moves})
	}
	sort.Slice(s.Members, func(i, j int) bool { return s.Members[i].Member < s.Members[j].Member })
	return s
}

// planMembers returns, at now, the members the balance gives shards to
// (live, eligible, weight above 0; sorted by id) and the live members
// (heartbeat before its deadline, eligible or not). A shard keeps its
// owner while the owner is live, so that an ineligible member's shards
// move away within the bound: its shards that nobody held for a moment (a
// term that lapsed while it was giving them up; the member wins them back
// as long as the plan it read names it) were once placed at once, outside
// the bound, and 25 moves were in flight against a bound of 8 when the
// 1,024-shard bench's broker stalled during the "ineligible" event.
func (v *groupView) planMembers(now int64) ([]liveMember, map[string]bool) {
	var members []liveMember
	live := map[string]bool{}
	for name, m := range v.members {
		if m.Deadline <= now {
			continue
		}
		live[name] = true
		if m.Eligible && m.Weight > 0 {
			members = append(members, liveMember{name, m.Weight})
		}
	}
	slices.SortFunc(members, func(a, b liveMember) int { return strings.Compare(a.Name, b.Name) })
	return members, live
}

// holders returns each shard's live holder as the heartbeats report it; of
// two live members reporting one shard the newer heartbeat counts.
func (v *groupView) holders(n int, now int64) []string {
	out := make([]string, n)
	at := make([]int64, n)
	for name, m := range v.members {
		if m.Deadline <= now {
			continue
		}
		for _, k := range m.Held {
			if k >= 0 && k < n && (out[k] == "" || m.At > at[k]) {
				out[k], at[k] = name, m.At
			}
		}
	}
	return out
}

// groupLogPartition is the partition of the group log a group's records go
// to: docs/PROTOCOL.md 4's formula on the group's name.
func groupLogPartition(ctx context.Context, log GroupLog, group string) (int32, error) {
	n, err := log.Transport.Partitions(ctx)
	if err != nil {
		return 0, err
	}
	if n < 1 {
		return 0, WrapError(ErrTransport, nil, "the group log has %d partitions", n)
	}
	// Section 4's formula on the group name (not a role of the
	// coordination topic: no krabka.role.prefix).
	return (core.Murmur2([]byte(group)) & 0x7fffffff) % n, nil
}

// DescribeGroup reads group's records from the group log (committed, to the
// end at the time of the call) and returns its members, plan and holders.
// A group nobody joined has no members and Shards 0. Blocks for the read;
// errors are the transport's (ErrTransport, ErrTimeout, ErrAuthorization)
// or ErrInvalidArgument for a bad group name.
func DescribeGroup(ctx context.Context, log GroupLog, group string, clock core.Clock) (*GroupStatus, error) {
	if err := checkGroupName(group); err != nil {
		return nil, err
	}
	if log.Transport == nil {
		return nil, WrapError(ErrInvalidArgument, nil, "group %q: no group log", group)
	}
	if clock == nil {
		clock = core.SystemClock
	}
	p, err := groupLogPartition(ctx, log, group)
	if err != nil {
		return nil, err
	}
	// Liveness is judged at the instant the read began: the records are
	// the log up to its end then, and a read that took longer than the
	// member ttl (a long group log on a loaded broker) judged at its end
	// found every member's last heartbeat in it expired, and the shards
	// they took since "held" by their old holders' stale heartbeats (the
	// 1,024-shard bench saw 40 moves in flight that way, with a bound of
	// 8).
	at := clock.NowMs()
	recs, err := log.Transport.Read(ctx, p)
	if err != nil {
		return nil, err
	}
	v := newGroupView(group)
	for _, r := range recs {
		v.add(r)
	}
	return v.status(at), nil
}

// Status returns the group's state as this member's view of the group log
// has it now (no I/O).
func (g *Group) Status() *GroupStatus {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.view.status(g.c.clock.NowMs())
}
