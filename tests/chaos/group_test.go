package chaos

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core"
)

// shardRec is a command of shard k on partition k written by producer t.
func shardRec(k int32, off int64, member string, t core.FencingToken, seq int64) Record {
	return ParseRecord(k, off, t, fmt.Sprintf("seq=%d member=%s token=%s writer=1 try=1 shard=%d at=%d", seq, member, t, k, 1000+off))
}

func shardAck(r Record) Ack {
	return Ack{Member: r.Member, Token: r.Token, Seq: r.Seq, Writer: 1, Partition: r.Partition, Offset: r.Offset, At: time.UnixMilli(2000 + r.Offset)}
}

func shardRoleName(k int) string { return fmt.Sprintf("fleet/shard/%d", k) }

// groupLog is three shards: shard 0 written by grp-1 (token 10:0), shard 1
// moved from grp-1 (11:0) to grp-2 (11:1), shard 2 by grp-3 (12:0); every
// command acknowledged.
func groupLog() GroupInput {
	recs := []Record{
		shardRec(0, 0, "grp-1", tok(10, 0), 1), shardRec(0, 1, "grp-1", tok(10, 0), 2),
		shardRec(1, 0, "grp-1", tok(11, 0), 1), shardRec(1, 1, "grp-2", tok(11, 1), 1), shardRec(1, 2, "grp-2", tok(11, 1), 2),
		shardRec(2, 0, "grp-3", tok(12, 0), 1),
	}
	in := GroupInput{Shards: 3, Role: shardRoleName, Records: recs, Acks: map[string][]Ack{}, Mints: map[string][]Mint{},
		Acquired: map[string]map[string]bool{}, Slack: time.Second}
	for _, r := range recs {
		role := shardRoleName(int(r.Partition))
		in.Acks[role] = append(in.Acks[role], shardAck(r))
	}
	return in
}

func TestCheckGroupCleanLog(t *testing.T) {
	g := CheckGroup(groupLog())
	if !g.OK() || g.Acked != 6 || g.Found != 6 || g.Lost != 0 || g.OrderBreaks != 0 || g.Terms != 4 || g.ShardsEmpty != 0 ||
		fmt.Sprint(g.ByShard) != "[2 3 1]" {
		t.Fatalf("a clean log of three shards: %+v", g)
	}
}

// An interleaving on one shard's partition (the old holder writes again
// after the new holder's first command) is found and named by its shard;
// the other shards stay clean.
func TestCheckGroupFindsAnInterleaving(t *testing.T) {
	in := groupLog()
	late := shardRec(1, 3, "grp-1", tok(11, 0), 2)
	in.Records = append(in.Records[:5], append([]Record{late}, in.Records[5:]...)...)
	in.Acks[shardRoleName(1)] = append(in.Acks[shardRoleName(1)], shardAck(late))
	g := CheckGroup(in)
	if g.OK() || g.OrderBreaks != 1 || g.StaleTokens != 1 {
		t.Fatalf("the interleaving on shard 1 not found: %+v", g)
	}
	for _, v := range g.Violations {
		if !strings.HasPrefix(v, "shard 1 (fleet/shard/1): ") {
			t.Errorf("a violation not of shard 1: %s", v)
		}
	}
}

// The same tokens interleaved across two shards are no violation: each
// shard is judged on its own partition.
func TestCheckGroupJudgesEachShardAlone(t *testing.T) {
	in := groupLog()
	// Shard 2's producer (12:0) is higher than shard 1's new holder (11:1)
	// and comes first in the read order: fine, another shard.
	in.Records = append([]Record{in.Records[5]}, in.Records[:5]...)
	if g := CheckGroup(in); !g.OK() {
		t.Fatalf("shards judged together: %v", g.Violations)
	}
}

func TestCheckGroupFindsLostAndMisplacedCommands(t *testing.T) {
	in := groupLog()
	role := shardRoleName(2)
	in.Acks[role] = append(in.Acks[role], Ack{Member: "grp-3", Token: tok(12, 0), Seq: 2, Partition: 2, Offset: 1, At: time.UnixMilli(3000)})
	g := CheckGroup(in)
	if g.Lost != 1 || g.OK() || !strings.Contains(strings.Join(g.Violations, "\n"), "shard 2 (fleet/shard/2): lost") {
		t.Fatalf("an acknowledged command missing from shard 2 not found: %+v", g)
	}
	in = groupLog()
	in.Records[5] = ParseRecord(2, 0, tok(12, 0), "seq=1 member=grp-3 token=12:0 writer=1 try=1 shard=1 at=1000")
	if g := CheckGroup(in); g.WrongShard != 1 || g.OK() {
		t.Fatalf("shard 1's command on partition 2 not found: %+v", g)
	}
}

func at(s float64) time.Time {
	return time.Unix(1_800_000_000, 0).Add(time.Duration(s * float64(time.Second)))
}

// The tracker: converged needs a plan with nothing pending, every shard
// held by its owner, the owners live and balanced within one; a kill opens
// a change that converges when the plan gave the dead member's shards to
// the others and they acquired them; the moves are the acquisitions in
// between (shards acquired by another member than their last one).
func TestGroupTrackerMeasuresAKill(t *testing.T) {
	tr := NewGroupTracker(4, []string{"a", "b"}, at(0))
	tr.Plan(1, []string{"a", "a", "b", "b"}, 0, 4, at(1))
	if tr.Converged() {
		t.Fatal("converged with nothing held")
	}
	for k, m := range []string{"a", "a", "b"} {
		tr.Acquired(m, k, at(2))
	}
	if tr.Converged() {
		t.Fatal("converged with shard 3 unheld")
	}
	tr.Acquired("b", 3, at(3))
	if !tr.Converged() {
		t.Fatal("not converged: every shard held by its owner, 2 and 2")
	}
	tr.Down("a", "kill", at(10))
	if tr.Converged() {
		t.Fatal("converged right after a member holding shards was killed")
	}
	tr.Plan(2, []string{"b", "b", "b", "b"}, 0, 6, at(13))
	if !tr.PlanConverged() || tr.Converged() {
		t.Fatal("the plan gives b everything but b holds two: the plan converged, the group not")
	}
	tr.Acquired("b", 0, at(14))
	if tr.Converged() {
		t.Fatal("converged with shard 1 still unheld")
	}
	tr.Acquired("b", 1, at(15.5))
	if !tr.Converged() {
		t.Fatal("not converged: b holds all four, the only live member")
	}
	f := tr.Figures()
	if f.StartMs != 3000 || f.Measured != 1 || f.ConvergeMaxMs != 5500 || f.MovesMax != 2 || f.Unconverged != 0 ||
		f.Acquisitions != 6 || f.Moves != 2 || f.PlanMoves != 6 || f.Planned != 1 || f.PlanMaxMs != 3000 || f.HeldAtEnd["b"] != 4 || f.Spread != 0 || !f.ConvergedAtEnd {
		t.Fatalf("figures %+v", f)
	}
}

// A member that comes back is no convergence until it got its share; an
// older plan printed late is ignored; a change before the previous one
// converged marks it overlapped; what did not converge by Freeze is
// counted.
func TestGroupTrackerRestartOverlapAndFreeze(t *testing.T) {
	tr := NewGroupTracker(4, []string{"a", "b"}, at(0))
	tr.Plan(5, []string{"b", "b", "b", "b"}, 0, 10, at(0))
	tr.Down("a", "kill", at(0))
	for k := 0; k < 4; k++ {
		tr.Acquired("b", k, at(1))
	}
	if !tr.Converged() {
		t.Fatal("b alone holds everything: converged")
	}
	tr.Up("a", "restart", at(5))
	if tr.Converged() {
		t.Fatal("converged with a back and holding nothing")
	}
	tr.Plan(4, []string{"a", "a", "b", "b"}, 0, 12, at(6)) // older: ignored
	tr.Plan(6, []string{"a", "a", "b", "b"}, 2, 12, at(6)) // two moves held back by the bound
	tr.Revoked("b", 0, at(7))
	tr.Acquired("a", 0, at(7))
	tr.Revoked("b", 1, at(7))
	tr.Acquired("a", 1, at(8))
	if tr.Converged() {
		t.Fatal("converged with moves pending")
	}
	tr.Down("b", "pause", at(9))
	tr.Up("a", "restart", at(9.5)) // a was not down: no change
	tr.Freeze()
	tr.Plan(7, []string{"a", "a", "b", "b"}, 0, 12, at(10)) // after Freeze: ignored
	f := tr.Figures()
	if len(f.Changes) != 4 || f.Changes[2].Kind != "restart" || !f.Changes[2].Overlapped || f.Changes[2].Converged ||
		f.Changes[3].Kind != "pause" || f.Unconverged != 2 || f.Measured != 1 || f.PlanSeq != 6 || f.ConvergedAtEnd {
		t.Fatalf("changes %+v figures %+v", f.Changes, f)
	}
	// b is paused, still holding its two (as far as its events say).
	if fmt.Sprint(f.HeldAtEnd) != "map[a:2 b:2]" || f.Spread != 0 {
		t.Fatalf("held at the end: %v, spread %d", f.HeldAtEnd, f.Spread)
	}
}
