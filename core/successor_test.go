package core

import "testing"

// The krabka.successor header of an expired lease (docs/PROTOCOL.md 11.3):
// the named member challenges at once, every other member one stagger
// later than its rank alone; the header is ignored when the named member is
// not registered, on a live lease, or when unknown headers come with it.
func TestNamedSuccessorChallengesAtOnceOthersOneStaggerLater(t *testing.T) {
	role := MustRole("r")
	c := DefaultLeaseConfig()
	reg := func(off int64, m string) RawRecord {
		return RawRecord{Offset: off, Key: EncodeKey(RegistrationKey(role, MustMemberID(m))), Value: EncodeRegistration(Registration{Member: MustMemberID(m), RegisteredAt: 1000})}
	}
	const at = int64(50_000)
	lease := func(off int64, granted int64, hdrs ...RecordHeader) RawRecord {
		l := Lease{Member: MustMemberID("a"), Token: FencingToken{ProducerID: 7, ProducerEpoch: 3}, GrantedAt: granted, Deadline: at}
		return RawRecord{Offset: off, Key: EncodeKey(LeaseKey(role)), Value: EncodeLease(l), Headers: hdrs}
	}
	base := []RawRecord{reg(0, "a"), reg(1, "b"), reg(2, "c")}
	succ := RecordHeader{Key: HeaderSuccessor, Value: []byte("c")}
	unknown := RecordHeader{Key: "x-other", Value: []byte("whatever")}
	cases := []struct {
		name         string
		lease        RawRecord
		bAt, cAt     int64 // when b and c may challenge
		successor    string
		hasSuccessor bool
	}{
		{"no header", lease(3, at), at, at + c.ChallengeStaggerMs, "", false},
		{"named c", lease(3, at, unknown, succ), at + c.ChallengeStaggerMs, at, "c", true},
		{"named member not registered", lease(3, at, RecordHeader{Key: HeaderSuccessor, Value: []byte("zed")}), at, at + c.ChallengeStaggerMs, "", false},
		{"on a live lease", lease(3, at-5000, succ), at, at + c.ChallengeStaggerMs, "", false},
		{"not a member id", lease(3, at, RecordHeader{Key: HeaderSuccessor, Value: []byte{0xff, 0xfe}}), at, at + c.ChallengeStaggerMs, "", false},
	}
	for _, tc := range cases {
		st := FoldRaw(role, append(append([]RawRecord(nil), base...), tc.lease))
		got, ok := st.NamedSuccessor()
		if ok != tc.hasSuccessor || (ok && got.String() != tc.successor) {
			t.Fatalf("%s: NamedSuccessor %v %v", tc.name, got, ok)
		}
		for _, m := range []struct {
			name string
			at   int64
		}{{"b", tc.bAt}, {"c", tc.cAt}} {
			if d := Evaluate(st, MustMemberID(m.name), m.at-1, c); d.Kind != Wait || d.WaitUntil != m.at {
				t.Fatalf("%s: %s just before %d: %+v", tc.name, m.name, m.at, d)
			}
			if d := Evaluate(st, MustMemberID(m.name), m.at, c); d.Kind != Challenge {
				t.Fatalf("%s: %s at %d: %+v", tc.name, m.name, m.at, d)
			}
		}
	}
	// A later lease record without the header clears it.
	st := FoldRaw(role, append(append([]RawRecord(nil), base...), lease(3, at, succ), lease(4, at)))
	if _, ok := st.NamedSuccessor(); ok || !st.Successor.IsZero() {
		t.Fatalf("the successor of an older lease record survived: %+v", st)
	}
	// The fence's header is reported.
	st = FoldRaw(role, append(append([]RawRecord(nil), base...), lease(3, at, RecordHeader{Key: HeaderFencedBy, Value: []byte("ops@host")})))
	if st.FencedBy != "ops@host" {
		t.Fatalf("FencedBy %q", st.FencedBy)
	}
}
