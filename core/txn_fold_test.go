package core

import (
	"slices"
	"testing"
)

func txRec(off int64, role string) RawRecord {
	return RawRecord{Offset: off, Key: EncodeKey(LeaseKey(MustRole(role))), Value: []byte{0}}
}

func offsets(rs []RawRecord) []int64 {
	var out []int64
	for _, r := range rs {
		out = append(out, r.Offset)
	}
	return out
}

// Per producer: a transaction's records are handed on at its COMMIT marker,
// dropped at its ABORT marker, and records outside transactions at once; a
// transaction left open does not hold back another producer's.
func TestTxnFolderCommitsPerProducer(t *testing.T) {
	var got []RawRecord
	f := NewTxnFolder(func(r RawRecord) { got = append(got, r) })
	f.Add(Batch{ProducerID: 7, Transactional: true, Records: []RawRecord{txRec(0, "a")}}) // left open
	f.Add(Batch{ProducerID: -1, Records: []RawRecord{txRec(1, "b")}})                     // a registration
	f.Add(Batch{ProducerID: 8, Transactional: true, Records: []RawRecord{txRec(2, "b"), txRec(3, "b")}})
	f.Add(Batch{ProducerID: 9, Transactional: true, Records: []RawRecord{txRec(4, "c")}})
	if f.Open() != 3 || f.Stable() != 0 || !f.OpenHolds(MustRole("a")) || !f.OpenHolds(MustRole("b")) || f.OpenHolds(MustRole("d")) {
		t.Fatalf("open %d stable %d", f.Open(), f.Stable())
	}
	f.Add(Batch{ProducerID: 8, Transactional: true, Control: ControlCommit})
	f.Add(Batch{ProducerID: 9, Transactional: true, Control: ControlAbort})
	f.Add(Batch{ProducerID: 5, Transactional: true, Control: ControlCommit}) // nothing open: ignored
	if want := []int64{1, 2, 3}; !slices.Equal(offsets(got), want) {
		t.Fatalf("handed on %v, want %v", offsets(got), want)
	}
	if f.Open() != 1 || f.Stable() != 0 || f.OpenHolds(MustRole("b")) || f.OpenHolds(MustRole("c")) {
		t.Fatalf("after the markers: open %d stable %d", f.Open(), f.Stable())
	}
	// The producer's next transaction after its marker is a new one.
	f.Add(Batch{ProducerID: 8, Transactional: true, Records: []RawRecord{txRec(7, "b")}})
	f.Add(Batch{ProducerID: 7, Transactional: true, Control: ControlCommit})
	if want := []int64{1, 2, 3, 0}; !slices.Equal(offsets(got), want) {
		t.Fatalf("handed on %v, want %v", offsets(got), want)
	}
	if f.Open() != 1 || f.Stable() != 7 {
		t.Fatalf("open %d stable %d", f.Open(), f.Stable())
	}
}

// The fold of what a TxnFolder hands on equals the fold of the committed
// records alone: the renewal committed after an open transaction counts.
func TestTxnFolderFeedsThePartitionFold(t *testing.T) {
	pf := NewPartitionFolder()
	f := NewTxnFolder(pf.AddRaw)
	r := MustRole("controller")
	lease := func(off, deadline int64) RawRecord {
		return RawRecord{Offset: off, Key: EncodeKey(LeaseKey(r)), Value: EncodeLease(Lease{Member: MustMemberID("a"), Token: FencingToken{ProducerID: 1}, GrantedAt: deadline - 30000, Deadline: deadline})}
	}
	f.Add(Batch{ProducerID: 1, Transactional: true, Records: []RawRecord{lease(0, 1000)}})
	f.Add(Batch{ProducerID: 1, Transactional: true, Control: ControlCommit})
	f.Add(Batch{ProducerID: 2, Transactional: true, Records: []RawRecord{txRec(2, "other")}}) // abandoned
	f.Add(Batch{ProducerID: 1, Transactional: true, Records: []RawRecord{lease(3, 2000)}})
	f.Add(Batch{ProducerID: 1, Transactional: true, Control: ControlCommit})
	if st := pf.State(r); st.Lease == nil || st.Lease.Deadline != 2000 {
		t.Fatalf("lease %+v, want the renewal past the open transaction", st.Lease)
	}
}

// OpenLease: the latest deadline of the role's leases in open transactions,
// the caller's own member left out; committed, aborted, other roles' and
// tombstones' records do not count.
func TestTxnFolderOpenLease(t *testing.T) {
	lease := func(off int64, role, member string, deadline int64) RawRecord {
		v := EncodeLease(Lease{Member: MustMemberID(member), Token: FencingToken{ProducerID: 1}, GrantedAt: deadline - 1000, Deadline: deadline})
		return RawRecord{Offset: off, Key: EncodeKey(LeaseKey(MustRole(role))), Value: v}
	}
	f := NewTxnFolder(func(RawRecord) {})
	a, me := MustRole("a"), MustMemberID("me")
	if _, ok := f.OpenLease(a, me); ok {
		t.Fatal("nothing open, yet an open lease")
	}
	f.Add(Batch{ProducerID: 1, Transactional: true, Records: []RawRecord{lease(0, "a", "h", 5000)}})
	f.Add(Batch{ProducerID: 2, Transactional: true, Records: []RawRecord{lease(1, "a", "h", 9000)}})
	f.Add(Batch{ProducerID: 3, Transactional: true, Records: []RawRecord{lease(2, "a", "me", 20000), lease(3, "b", "h", 30000)}})
	f.Add(Batch{ProducerID: 4, Transactional: true, Records: []RawRecord{{Offset: 4, Key: EncodeKey(LeaseKey(a))}}}) // a tombstone
	if d, ok := f.OpenLease(a, me); !ok || d != 9000 {
		t.Fatalf("open lease of a: %d %v, want 9000 (me's 20000 and b's 30000 left out)", d, ok)
	}
	f.Add(Batch{ProducerID: 2, Transactional: true, Control: ControlAbort})
	if d, ok := f.OpenLease(a, me); !ok || d != 5000 {
		t.Fatalf("after the abort: %d %v, want 5000", d, ok)
	}
	f.Add(Batch{ProducerID: 1, Transactional: true, Control: ControlCommit})
	if d, ok := f.OpenLease(a, me); ok {
		t.Fatalf("after the commit: open lease %d", d)
	}
	if d, ok := f.OpenLease(a, MustMemberID("other")); !ok || d != 20000 {
		t.Fatalf("another caller sees me's open lease: %d %v", d, ok)
	}
}
