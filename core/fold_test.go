package core

import (
	"reflect"
	"testing"
)

var (
	ctl        = MustRole("controller")
	n1, n2, n3 = MustMemberID("node-1"), MustMemberID("node-2"), MustMemberID("node-3")
)

func reg(off int64, m MemberID, at int64) DecodedRecord {
	return DecodedRecord{Offset: off, Key: RegistrationKey(ctl, m), Registration: &Registration{Member: m, RegisteredAt: at}}
}

func dereg(off int64, m MemberID) DecodedRecord {
	return DecodedRecord{Offset: off, Key: RegistrationKey(ctl, m)}
}

func leaseRec(off int64, m MemberID, deadline int64) DecodedRecord {
	return DecodedRecord{Offset: off, Key: LeaseKey(ctl), Lease: &Lease{Member: m, Token: FencingToken{1, 0}, Deadline: deadline}}
}

func rosterOf(s State) []string {
	var out []string
	for _, e := range s.Roster {
		out = append(out, e.Member.String())
	}
	return out
}

func TestFoldSortsTheRosterByOffsetWhateverTheInputOrder(t *testing.T) {
	s := Fold(ctl, []DecodedRecord{reg(30, n3, 3), reg(10, n1, 1), reg(20, n2, 2)})
	if got := rosterOf(s); len(got) != 3 || got[0] != "node-1" || got[1] != "node-2" || got[2] != "node-3" {
		t.Fatalf("roster %v", got)
	}
}

func TestATombstoneKeepsItsSlotSoAnOlderRegistrationCannotRevive(t *testing.T) {
	s := Fold(ctl, []DecodedRecord{dereg(20, n1), reg(10, n1, 1)})
	if len(s.Roster) != 0 {
		t.Fatalf("older registration revived a deregistered member: %v", rosterOf(s))
	}
}

func TestReRegisteringMovesAMemberToTheTail(t *testing.T) {
	s := Fold(ctl, []DecodedRecord{reg(10, n1, 1), reg(20, n2, 2), reg(30, n1, 3)})
	if got := rosterOf(s); got[0] != "node-2" || got[1] != "node-1" || s.Roster[1].RegisteredAt != 3 {
		t.Fatalf("roster %+v", s.Roster)
	}
}

func TestTheLeaseSlotKeepsTheGreatestOffsetAndATombstoneClearsIt(t *testing.T) {
	s := Fold(ctl, []DecodedRecord{leaseRec(50, n2, 2000), leaseRec(40, n1, 1000)})
	if s.Lease == nil || s.Lease.Member != n2 {
		t.Fatalf("lease %+v, want node-2's", s.Lease)
	}
	s = Fold(ctl, []DecodedRecord{leaseRec(40, n1, 1000), {Offset: 60, Key: LeaseKey(ctl)}, leaseRec(50, n2, 2000)})
	if s.Lease != nil {
		t.Fatalf("lease %+v survived a newer tombstone", *s.Lease)
	}
}

func TestTheLeaseIsKeptWhenItsMemberIsNoLongerRegistered(t *testing.T) {
	s := Fold(ctl, []DecodedRecord{reg(10, n1, 1), leaseRec(20, n1, 1000), dereg(30, n1)})
	if h, ok := s.Holder(); !ok || h != n1 || len(s.Roster) != 0 {
		t.Fatalf("holder %v %v roster %v", h, ok, rosterOf(s))
	}
	if _, ok := s.Rank(n1); ok {
		t.Fatal("an unregistered holder has no rank")
	}
}

func TestRankLeavesTheHolderOutAndGivesItZero(t *testing.T) {
	s := Fold(ctl, []DecodedRecord{reg(10, n1, 1), reg(20, n2, 2), reg(30, n3, 3), leaseRec(40, n2, 1000)})
	want := map[MemberID]int{n2: 0, n1: 0, n3: 1}
	for m, w := range want {
		if r, ok := s.Rank(m); !ok || r != w {
			t.Errorf("rank of %v = %d %v, want %d", m, r, ok, w)
		}
	}
	if _, ok := s.Rank(MustMemberID("node-9")); ok {
		t.Error("an unknown member has a rank")
	}
}

func TestFoldRawSkipsAndCountsUndecodableRecordsButIgnoresOtherRoles(t *testing.T) {
	other := MustRole("scheduler")
	regKey := EncodeKey(RegistrationKey(ctl, n1))
	recs := []RawRecord{
		{Offset: 0, Key: nil, Value: []byte{1}},                                   // null key: skipped
		{Offset: 1, Key: []byte{0, 9}, Value: []byte{1}},                          // bad key: skipped
		{Offset: 2, Key: regKey, Value: []byte{0, 0, 0}},                          // bad value of this role: skipped
		{Offset: 3, Key: EncodeKey(RegistrationKey(other, n2)), Value: []byte{9}}, // other role: ignored
		{Offset: 4, Key: regKey, Value: EncodeRegistration(Registration{Member: n1, RegisteredAt: 7})},
		{Offset: 5, Key: EncodeKey(RegistrationKey(ctl, n2)), Value: []byte{}}, // empty value: tombstone
	}
	s := FoldRaw(ctl, recs)
	if s.Skipped != 3 {
		t.Errorf("skipped %d, want 3", s.Skipped)
	}
	if got := rosterOf(s); len(got) != 1 || got[0] != "node-1" || s.Roster[0].RegisteredAt != 7 {
		t.Errorf("roster %+v", s.Roster)
	}
}

func TestFolderAddRawAndAddAgree(t *testing.T) {
	dec := []DecodedRecord{reg(10, n1, 1), reg(20, n2, 2), leaseRec(30, n1, 99), dereg(40, n2), reg(50, n3, 5)}
	var raw []RawRecord
	for _, d := range dec {
		r := RawRecord{Offset: d.Offset, Key: EncodeKey(d.Key)}
		if d.Registration != nil {
			r.Value = EncodeRegistration(*d.Registration)
		}
		if d.Lease != nil {
			r.Value = EncodeLease(*d.Lease)
		}
		raw = append(raw, r)
	}
	a, b := Fold(ctl, dec), FoldRaw(ctl, raw)
	if len(a.Roster) != len(b.Roster) || *a.Lease != *b.Lease {
		t.Fatalf("Fold %+v, FoldRaw %+v", a, b)
	}
	for i := range a.Roster {
		if !reflect.DeepEqual(a.Roster[i], b.Roster[i]) {
			t.Fatalf("roster[%d]: %+v vs %+v", i, a.Roster[i], b.Roster[i])
		}
	}
}
