package chaos

import (
	"strings"
	"testing"
	"time"
)

// sec is an instant of the synthetic logs, in seconds.
func sec(s float64) time.Time { return time.UnixMilli(int64(s * 1000)) }

// lease is a lease record of role r by member m under token t, granted at
// g seconds (its record written then) with a 3 s lease.
func lease(r, m string, t int16, g float64) LeaseRecord {
	return LeaseRecord{Role: r, Member: m, Token: tok(7, t), Granted: sec(g).UnixMilli(), Deadline: sec(g + 3).UnixMilli(), At: sec(g)}
}

// ended is the expired lease of a resign (same token) or of a fence (a
// newer token and krabka.fenced-by).
func ended(r, m string, t int16, at float64, fencedBy string) LeaseRecord {
	l := LeaseRecord{Role: r, Member: m, Token: tok(7, t), Granted: sec(at).UnixMilli(), Deadline: sec(at).UnixMilli(), At: sec(at), FencedBy: fencedBy}
	return l
}

// atReal sets the record's timestamp (the shared system clock) apart from
// its grant (the writer's lease clock, skewed or not).
func atReal(l LeaseRecord, s float64) LeaseRecord { l.At = sec(s); return l }

func withOffsets(ls ...LeaseRecord) []LeaseRecord {
	for i := range ls {
		ls[i].Offset = int64(i)
	}
	return ls
}

// The case the figure exists for: a holds role r and its renewals commit
// (the last one granted at 12 s, deadline 15 s); b takes the role with a
// grant at 13.5 s, 1.5 s before that deadline, while nothing ended a's term
// and a was under no fault. One healthy holder deposed.
func TestDeposedCountsATakeoverBeforeTheCommittedDeadline(t *testing.T) {
	in := DeposeInput{Leases: withOffsets(lease("r", "a", 1, 10), lease("r", "a", 1, 11), lease("r", "a", 1, 12),
		lease("r", "b", 2, 13.5)), SkewBound: 8 * time.Second}
	res := HealthyDeposed(in)
	if res.Count != 1 || res.Takeovers != 1 || len(res.Deposed) != 1 || res.ByRole["r"] != 1 {
		t.Fatalf("%+v", res)
	}
	d := res.Deposed[0]
	if d.Prev.Granted != sec(12).UnixMilli() || d.Next.Member != "b" || d.Early != "1.5s" || !strings.Contains(d.Text, "role r: b took over") {
		t.Fatalf("%+v", d)
	}
	// The same with a fault of another member, or of a only before its last
	// committed lease: still counted.
	in.Faults = []MemberFault{{Member: "b", Kind: "member-kill", From: sec(11), To: sec(14)},
		{Member: "a", Kind: "member-pause", From: sec(5), To: sec(9)}}
	if res := HealthyDeposed(in); res.Count != 1 {
		t.Fatalf("faults of others: %+v", res)
	}
}

// Takeovers that must not count: after a resign, after a fence, after the
// lease expired, while the holder was under a member fault, and early by no
// more than the clock-skew tolerance.
func TestDeposedLeavesOutWhatIsNotAHealthyHolderDeposed(t *testing.T) {
	cases := map[string]struct {
		in    DeposeInput
		field func(DeposeResult) int
	}{
		"resign": {DeposeInput{Leases: withOffsets(lease("r", "a", 1, 10), lease("r", "a", 1, 11),
			ended("r", "a", 1, 11.5, ""), lease("r", "b", 2, 11.6))},
			func(r DeposeResult) int { return r.AfterResign }},
		"fence": {DeposeInput{Leases: withOffsets(lease("r", "a", 1, 10), lease("r", "a", 1, 11),
			ended("r", "a", 2, 11.5, "operator"), lease("r", "b", 3, 11.6))},
			func(r DeposeResult) int { return r.AfterFence }},
		"fence without the header (a newer token)": {DeposeInput{Leases: withOffsets(lease("r", "a", 1, 10),
			ended("r", "a", 2, 10.5, ""), lease("r", "b", 3, 10.6))},
			func(r DeposeResult) int { return r.AfterFence }},
		"expired lease": {DeposeInput{Leases: withOffsets(lease("r", "a", 1, 10), lease("r", "a", 1, 11),
			lease("r", "b", 2, 14))},
			func(r DeposeResult) int { return r.AfterDeadline }},
		"expired lease, later": {DeposeInput{Leases: withOffsets(lease("r", "a", 1, 10), lease("r", "b", 2, 20))},
			func(r DeposeResult) int { return r.AfterDeadline }},
		"holder killed": {DeposeInput{Leases: withOffsets(lease("r", "a", 1, 10), lease("r", "a", 1, 11), lease("r", "b", 2, 12)),
			Faults: []MemberFault{{Member: "a", Kind: "midtxn-kill", From: sec(11.9), To: sec(13)}}},
			func(r DeposeResult) int { return r.UnderFault }},
		"holder paused before the takeover, resumed after it": {DeposeInput{Leases: withOffsets(lease("r", "a", 1, 10), lease("r", "b", 2, 11)),
			Faults: []MemberFault{{Member: "a", Kind: "member-pause", From: sec(10.5), To: sec(20)}}},
			func(r DeposeResult) int { return r.UnderFault }},
		"skewed clock within the bound (the new holder)": {DeposeInput{Leases: withOffsets(lease("r", "a", 1, 10), atReal(lease("r", "b", 2, 7), 13)),
			Skews: []SkewSpan{{Member: "b", OffsetMs: -6000, From: sec(5), To: sec(30)}}, SkewBound: 8 * time.Second},
			func(r DeposeResult) int { return r.WithinSkew }},
		"skewed clock within the bound (the holder)": {DeposeInput{Leases: withOffsets(atReal(lease("r", "a", 1, 10), 5), lease("r", "b", 2, 7.5)),
			Skews: []SkewSpan{{Member: "a", OffsetMs: 5000, From: sec(1), To: sec(6)}}, SkewBound: 8 * time.Second},
			func(r DeposeResult) int { return r.WithinSkew }},
		"both skewed, within twice the bound": {DeposeInput{Leases: withOffsets(atReal(lease("r", "a", 1, 10), 3), atReal(lease("r", "b", 2, 0), 7)),
			Skews:     []SkewSpan{{Member: "a", OffsetMs: 7000, From: sec(1), To: sec(30)}, {Member: "b", OffsetMs: -7000, From: sec(1), To: sec(30)}},
			SkewBound: 8 * time.Second},
			func(r DeposeResult) int { return r.WithinSkew }},
		"the same member's next incarnation": {DeposeInput{Leases: withOffsets(lease("r", "a", 1, 10), lease("r", "a", 2, 10.5))},
			func(r DeposeResult) int { return 1 - r.Takeovers }},
	}
	for name, c := range cases {
		res := HealthyDeposed(c.in)
		if res.Count != 0 || c.field(res) != 1 {
			t.Errorf("%s: %+v", name, res)
		}
	}
}

// A skewed clock widens the tolerance by the bound only: a takeover earlier
// than that still counts, and a skew span that does not touch the two
// members around the takeover widens nothing.
func TestDeposedSkewBeyondTheBoundCounts(t *testing.T) {
	in := DeposeInput{Leases: withOffsets(lease("r", "a", 1, 20), atReal(lease("r", "b", 2, 13), 21)),
		Skews: []SkewSpan{{Member: "b", OffsetMs: -8000, From: sec(5), To: sec(30)}}, SkewBound: 8 * time.Second}
	if res := HealthyDeposed(in); res.Count != 1 || res.Deposed[0].Tolerance != "8s" {
		t.Fatalf("beyond the bound: %+v", res)
	}
	in = DeposeInput{Leases: withOffsets(lease("r", "a", 1, 20), lease("r", "b", 2, 21)),
		Skews:     []SkewSpan{{Member: "b", OffsetMs: -8000, From: sec(1), To: sec(10)}, {Member: "c", OffsetMs: 8000, From: sec(1), To: sec(30)}},
		SkewBound: 8 * time.Second}
	if res := HealthyDeposed(in); res.Count != 1 || res.Deposed[0].Tolerance != "" {
		t.Fatalf("skew elsewhere: %+v", res)
	}
}

// Roles sharing a partition are judged apart: interleaved records of two
// roles, one of them deposed, the other handed over after a resign.
func TestDeposedRolesOfOnePartitionApart(t *testing.T) {
	in := DeposeInput{Leases: withOffsets(
		lease("x", "a", 1, 10), lease("y", "b", 5, 10.2),
		lease("x", "a", 1, 11), lease("y", "b", 5, 11.2),
		lease("x", "a", 1, 12), ended("y", "b", 5, 11.9, ""),
		lease("y", "a", 6, 12.0), lease("x", "c", 2, 13), lease("y", "a", 6, 13))}
	res := HealthyDeposed(in)
	if res.Count != 1 || res.Takeovers != 2 || res.AfterResign != 1 || res.ByRole["x"] != 1 || res.ByRole["y"] != 0 {
		t.Fatalf("%+v", res)
	}
}

// committed sets when the record's transaction committed (its marker).
func committed(l LeaseRecord, s float64) LeaseRecord { l.Committed = sec(s); return l }

// Two members of rank 0 challenge at once: b decided before a's first lease
// committed (a committed 0.3 s before b's lease was written). And a
// renewal still committing (its EndTxn slow) when the standby decided.
// Both are the race of any lease protocol: raced, not deposed. The same
// takeover with a's lease committed well before counts.
func TestDeposedTellsARaceFromALeaseLeftUnseen(t *testing.T) {
	duel := DeposeInput{Leases: withOffsets(lease("r", "a", 1, 10), committed(lease("r", "a", 2, 10.1), 10.3), lease("r", "b", 3, 10.6))}
	res := HealthyDeposed(duel)
	if res.Count != 0 || res.Raced != 1 || len(res.RacedList) != 1 || res.RacedList[0].Stop.Token != tok(7, 2) {
		t.Fatalf("duel: %+v", res)
	}
	slow := DeposeInput{Leases: withOffsets(committed(lease("r", "a", 1, 10), 10.05),
		committed(lease("r", "a", 1, 11), 12.9), lease("r", "b", 2, 13.2))}
	if res := HealthyDeposed(slow); res.Count != 0 || res.Raced != 1 {
		t.Fatalf("slow renewal: %+v", res)
	}
	unseen := DeposeInput{Leases: withOffsets(committed(lease("r", "a", 1, 10), 10.05),
		committed(lease("r", "a", 1, 11), 11.05), committed(lease("r", "a", 1, 12), 12.9), lease("r", "b", 2, 13.2))}
	res = HealthyDeposed(unseen)
	if res.Count != 1 || res.Raced != 0 || res.Deposed[0].Stop.Granted != sec(11).UnixMilli() || res.Deposed[0].Prev.Granted != sec(12).UnixMilli() {
		t.Fatalf("unseen: %+v", res)
	}
	// Visible 0.5 s after its commit (held by another transaction), 2.65 s
	// before the takeover's record: the challenger, which reads up to the
	// last stable offset before it decides, decided before 11.55 and took
	// over 1 s to write its lease: a slow challenge, not counted. Visible
	// only 0.5 s before the takeover's record: deposed.
	unseen.Leases[1].Visible = sec(11.55)
	if res := HealthyDeposed(unseen); res.Count != 0 || res.Slow != 1 || len(res.SlowList) != 1 {
		t.Fatalf("visible long before: %+v", res)
	}
	unseen.Leases[1].Visible = sec(12.7)
	if res := HealthyDeposed(unseen); res.Count != 1 || res.Slow != 0 {
		t.Fatalf("visible just before: %+v", res)
	}
	// A wider race window takes it as a race too.
	unseen.RaceWindow = 3 * time.Second
	if res := HealthyDeposed(unseen); res.Count != 0 || res.Raced != 1 {
		t.Fatalf("window 3 s: %+v", res)
	}
}
