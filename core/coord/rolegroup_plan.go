package coord

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"

	"github.com/krabka/krabka-coord/core"
)

// The pure side of role groups (docs/GROUPS.md): shard names, the records
// of the group log and the assignment. Nothing here does I/O.

// MaxGroupShards is the largest shard (or slot) count of a group.
const MaxGroupShards = 4096

// The key kinds of the group log. They reuse the layout of a section 3 key
// (docs/PROTOCOL.md 3) with kinds a section 3 decoder refuses
// (unknown_kind), so that a reference reader pointed at the group log skips
// every record instead of misreading it.
const (
	groupKindMember int16 = 16 // one member's heartbeat (tombstone: it left)
	groupKindPlan   int16 = 17 // the group's plan, a guarded write of the group leader
)

// ShardRole returns the role of shard k of group: "<group>/shard/<k>" (k in
// decimal, no padding; docs/PROTOCOL.md 14). Errors (ErrInvalidArgument or
// core's role_too_long) name the group and the problem.
func ShardRole(group string, k int) (core.Role, error) { return memberRole(group, "shard", k) }

// SlotRole returns the role of slot k of a semaphore: "<group>/slot/<k>".
func SlotRole(group string, k int) (core.Role, error) { return memberRole(group, "slot", k) }

// GroupLeaderRole returns the role whose holder publishes the group's plan:
// "<group>/leader".
func GroupLeaderRole(group string) (core.Role, error) {
	if err := checkGroupName(group); err != nil {
		return core.Role{}, err
	}
	return groupRoleName(group, group+"/leader")
}

func memberRole(group, kind string, k int) (core.Role, error) {
	if err := checkGroupName(group); err != nil {
		return core.Role{}, err
	}
	if k < 0 || k >= MaxGroupShards {
		return core.Role{}, WrapError(ErrInvalidArgument, nil, "group %q: %s index %d out of range [0, %d)", group, kind, k, MaxGroupShards)
	}
	return groupRoleName(group, group+"/"+kind+"/"+strconv.Itoa(k))
}

func groupRoleName(group, name string) (core.Role, error) {
	r, err := core.NewRole(name)
	if err != nil {
		return core.Role{}, core.NewError(core.PartRole, core.CatRoleTooLong, "group",
			fmt.Sprintf("group name %q is too long for its role %q (%d bytes, at most %d)", group, name, len(name), core.MaxNameBytes))
	}
	return r, nil
}

func checkGroupName(group string) error {
	if group == "" {
		return WrapError(ErrInvalidArgument, nil, "the group name is empty")
	}
	if _, err := core.NewRole(group); err != nil {
		return WrapError(ErrInvalidArgument, err, "group name %q", group)
	}
	return nil
}

// groupKey encodes the key of a group log record: version 0, kind, the
// group as the role string and the member (empty for the plan).
func groupKey(kind int16, group string, member string) []byte {
	b := make([]byte, 0, 8+len(group)+len(member))
	b = binary.BigEndian.AppendUint16(b, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(kind))
	b = binary.BigEndian.AppendUint16(b, uint16(len(group)))
	b = append(b, group...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(member)))
	return append(b, member...)
}

// decodeGroupKey is the inverse of groupKey; ok false for any other key.
func decodeGroupKey(b []byte) (kind int16, group, member string, ok bool) {
	if len(b) < 8 || binary.BigEndian.Uint16(b) != 0 {
		return 0, "", "", false
	}
	kind = int16(binary.BigEndian.Uint16(b[2:]))
	if kind != groupKindMember && kind != groupKindPlan {
		return 0, "", "", false
	}
	g := int(binary.BigEndian.Uint16(b[4:]))
	if 6+g+2 > len(b) {
		return 0, "", "", false
	}
	group = string(b[6 : 6+g])
	m := int(binary.BigEndian.Uint16(b[6+g:]))
	if 8+g+m != len(b) {
		return 0, "", "", false
	}
	return kind, group, string(b[8+g:]), true
}

// memberRecord is the value of a member's heartbeat (JSON).
type memberRecord struct {
	V        int   `json:"v"`
	Weight   int   `json:"weight"`
	Eligible bool  `json:"eligible"`
	At       int64 `json:"at"`       // written at, epoch ms (the writer's clock)
	Deadline int64 `json:"deadline"` // the member counts as gone after this instant
	Held     []int `json:"held"`     // the shards it holds, ascending
	Moves    int64 `json:"moves"`    // shards it took over so far (a counter)
}

// planRecord is the value of a plan (JSON), written under the leader
// role's token.
type planRecord struct {
	V       int      `json:"v"`
	Kind    string   `json:"kind"` // "shards" or "slots"
	Shards  int      `json:"shards"`
	Seq     int64    `json:"seq"` // one more than the plan it replaces
	Leader  string   `json:"leader"`
	Token   string   `json:"token"`
	At      int64    `json:"at"`
	Members []string `json:"members"` // the names owner and target index
	Owner   []int    `json:"owner"`   // shard -> index into Members, -1 none: who should hold it now
	Target  []int    `json:"target"`  // shard -> index into Members: where the balance wants it
	// Moves counts the shards whose owner changed over the group's plans
	// (a running total the exporter reports).
	Moves int64 `json:"moves"`
	// Moving lists the shards whose move is in flight (groupStep): moved
	// by a plan, not yet reported held by their new owner. Absent in
	// plans of earlier versions (then only shards another live member
	// holds count).
	Moving []int `json:"moving,omitempty"`
}

// moving returns Moving as a per-shard flag.
func (p *planRecord) moving() []bool {
	out := make([]bool, p.Shards)
	for _, k := range p.Moving {
		if k >= 0 && k < p.Shards {
			out[k] = true
		}
	}
	return out
}

// movingList is the inverse of moving.
func movingList(m []bool) []int {
	var out []int
	for k, on := range m {
		if on {
			out = append(out, k)
		}
	}
	return out
}

func (p *planRecord) owners() []string  { return p.names(p.Owner) }
func (p *planRecord) targets() []string { return p.names(p.Target) }

func (p *planRecord) names(idx []int) []string {
	out := make([]string, p.Shards)
	for k := range out {
		if k < len(idx) && idx[k] >= 0 && idx[k] < len(p.Members) {
			out[k] = p.Members[idx[k]]
		}
	}
	return out
}

func decodePlan(b []byte) (*planRecord, error) {
	var p planRecord
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, err
	}
	if p.Shards < 1 || p.Shards > MaxGroupShards || len(p.Owner) != p.Shards || len(p.Target) != p.Shards {
		return nil, fmt.Errorf("plan of %d shards with %d owners and %d targets", p.Shards, len(p.Owner), len(p.Target))
	}
	return &p, nil
}

// encodePlan builds a plan record from owners and targets by name.
func encodePlan(p planRecord, owner, target []string) []byte {
	idx := map[string]int{}
	p.Members = p.Members[:0]
	add := func(m string) int {
		if m == "" {
			return -1
		}
		i, ok := idx[m]
		if !ok {
			i = len(p.Members)
			idx[m] = i
			p.Members = append(p.Members, m)
		}
		return i
	}
	p.Owner = make([]int, len(owner))
	p.Target = make([]int, len(target))
	for k := range owner {
		p.Owner[k] = add(owner[k])
		p.Target[k] = add(target[k])
	}
	b, _ := json.Marshal(p)
	return b
}

// liveMember is a member as the assignment sees it.
type liveMember struct {
	Name   string
	Weight int
}

// groupQuotas gives each member its weighted share of n shards, within one:
// floor(n*w/W), the remainder going to the largest fractions, then to the
// members holding more already (sticky: no member gains a shard only because
// of a tie), then by name. perMax > 0 caps every quota (a semaphore: 1); the
// excess goes to the members below the cap.
func groupQuotas(n int, members []liveMember, current map[string]int, perMax int) map[string]int {
	q := map[string]int{}
	open := slices.Clone(members)
	left := n
	for len(open) > 0 && left > 0 {
		w := 0
		for _, m := range open {
			w += m.Weight
		}
		type share struct {
			m    liveMember
			base int
			frac int64 // numerator of the fraction, over w
		}
		sh := make([]share, len(open))
		given := 0
		for i, m := range open {
			num := int64(left) * int64(m.Weight)
			sh[i] = share{m, int(num / int64(w)), num % int64(w)}
			given += sh[i].base
		}
		sort.SliceStable(sh, func(i, j int) bool {
			if sh[i].frac != sh[j].frac {
				return sh[i].frac > sh[j].frac
			}
			if current[sh[i].m.Name] != current[sh[j].m.Name] {
				return current[sh[i].m.Name] > current[sh[j].m.Name]
			}
			return sh[i].m.Name < sh[j].m.Name
		})
		for i := 0; i < left-given; i++ {
			sh[i].base++
		}
		capped := false
		var next []liveMember
		for _, s := range sh {
			if perMax > 0 && q[s.m.Name]+s.base >= perMax {
				if q[s.m.Name]+s.base > perMax {
					capped = true
				}
				left -= perMax - q[s.m.Name]
				q[s.m.Name] = perMax
				continue
			}
			next = append(next, s.m)
		}
		if !capped {
			for _, s := range sh {
				if perMax <= 0 || q[s.m.Name] < perMax {
					q[s.m.Name] += s.base
				}
			}
			return q
		}
		sort.Slice(next, func(i, j int) bool { return next[i].Name < next[j].Name })
		open = next
	}
	return q
}

// groupTarget computes where the balance wants each shard, starting from
// base (the previous target; "" where none): a shard stays with its member
// while that member is live, eligible and within its quota; the shards of
// gone members and a member's shards above its quota (the highest indices)
// go to the members below their quota, the largest deficit first. So a
// member that joins takes its quota from the others and a member that
// leaves gives up only its own shards.
func groupTarget(n int, members []liveMember, base []string, perMax int) []string {
	live := map[string]bool{}
	for _, m := range members {
		live[m.Name] = true
	}
	target := make([]string, n)
	count := map[string]int{}
	for k := 0; k < n && k < len(base); k++ {
		if live[base[k]] {
			target[k] = base[k]
			count[base[k]]++
		}
	}
	q := groupQuotas(n, members, count, perMax)
	for k := n - 1; k >= 0; k-- { // over quota: give up the highest shards
		if m := target[k]; m != "" && count[m] > q[m] {
			target[k] = ""
			count[m]--
		}
	}
	names := make([]string, 0, len(members))
	for _, m := range members {
		names = append(names, m.Name)
	}
	sort.Strings(names)
	for k := 0; k < n; k++ {
		if target[k] != "" {
			continue
		}
		best, deficit := "", 0
		for _, m := range names {
			if d := q[m] - count[m]; d > deficit {
				best, deficit = m, d
			}
		}
		if best == "" {
			continue // more shards than quotas (no members)
		}
		target[k] = best
		count[best]++
	}
	return target
}

// groupStep moves the plan's owners one step towards target. holder is each
// shard's live holder as the members report it ("" none); moving marks the
// shards an earlier plan moved (planRecord.Moving; nil: none). A shard
// whose owner is gone falls back to its live holder. Then a shard with
// neither a live owner nor a live holder is placed at once (nobody to hand
// over from); a shard the target gives to nobody (no live eligible member
// is left, or a semaphore has more slots than members) is released at once
// (nobody to hand over to: its holder only resigns); a shard its target
// holds already goes to it at once; any other change of a live owner is a
// move, started only while fewer than maxMoves moves are in flight. A move
// is in flight from the plan that starts it until its new owner reports
// holding the shard (or the owner is gone); a shard that a live member
// other than its live owner holds counts too. It returns the new owners,
// the shards in flight after the step and how many shards changed from one
// owner to another (placements from none are not moves).
//
// A live owner's shard that nobody reports holding (its term ended and the
// owner is taking it again) moves only within the bound: it was once placed
// at once, and its old owner, winning it back before it read the plan,
// handed it over outside the bound (the 1,024-shard bench saw 10 moves in
// flight against a bound of 8). And a move counts until its new owner
// holds the shard, not only while the old owner does: between the old
// owner's release and the new owner's heartbeat it once looked finished.
//
// Releases to nobody were once bounded like handovers: the last member of a
// group of 256 shards that left (Close) then gave its shards up 8 per plan,
// one plan per tick, and its Close timed out.
func groupStep(owner, target, holder []string, live map[string]bool, moving []bool, maxMoves int) ([]string, []bool, int) {
	out := slices.Clone(owner)
	transit := make([]bool, len(out))
	inflight := 0
	for k := range out {
		if !live[out[k]] {
			out[k] = holder[k]
		}
		transit[k] = out[k] != "" && out[k] != holder[k] && (holder[k] != "" || (k < len(moving) && moving[k]))
		if transit[k] {
			inflight++
		}
	}
	for k := range out {
		switch {
		case out[k] == target[k]:
		case out[k] == "" || target[k] == "" || holder[k] == target[k]:
			// Nobody live to hand over from, nobody to hand over to, or
			// the target holds it already: no handover to bound.
			if transit[k] {
				transit[k] = false
				inflight--
			}
			out[k] = target[k]
		case transit[k]:
			out[k] = target[k] // in flight already: redirect it
		case inflight < maxMoves:
			out[k] = target[k]
			transit[k] = true
			inflight++
		}
	}
	moves := 0
	for k := range out {
		if out[k] != owner[k] && owner[k] != "" {
			moves++
		}
	}
	return out, transit, moves
}
