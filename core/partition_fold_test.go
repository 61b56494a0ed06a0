package core

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

// A PartitionFolder answers every role exactly as a Folder of that role fed
// the whole partition would: random partitions mixing several roles,
// tombstones, re-registrations, undecodable keys and values.
func TestPartitionFolderMatchesFoldRaw(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	roles := []Role{MustRole("a"), MustRole("b"), MustRole("controller"), MustRole("z")}
	members := []MemberID{MustMemberID("m1"), MustMemberID("m2"), MustMemberID("m3")}
	for round := 0; round < 300; round++ {
		var recs []RawRecord
		for off := int64(0); off < int64(rng.IntN(60)); off++ {
			r := roles[rng.IntN(len(roles))]
			m := members[rng.IntN(len(members))]
			rec := RawRecord{Offset: off}
			switch rng.IntN(8) {
			case 0:
				rec.Key = EncodeKey(RegistrationKey(r, m)) // deregistration
			case 1:
				rec.Key = EncodeKey(LeaseKey(r)) // lease tombstone
			case 2:
				rec.Key, rec.Value = []byte{0, 9}, []byte{1} // undecodable key
			case 3:
				rec.Key, rec.Value = EncodeKey(LeaseKey(r)), []byte{0, 0, 1} // undecodable value
			case 4, 5:
				tok := FencingToken{ProducerID: int64(rng.IntN(3)), ProducerEpoch: int16(rng.IntN(5))}
				rec.Key = EncodeKey(LeaseKey(r))
				rec.Value = EncodeLease(Lease{Member: m, Token: tok, GrantedAt: off, Deadline: off + 10})
			default:
				rec.Key = EncodeKey(RegistrationKey(r, m))
				rec.Value = EncodeRegistration(Registration{Member: m, RegisteredAt: off * 7})
			}
			recs = append(recs, rec)
		}
		pf := NewPartitionFolder()
		for _, rec := range recs {
			pf.AddRaw(rec)
		}
		for _, r := range roles {
			want, got := FoldRaw(r, recs), pf.State(r)
			if !reflect.DeepEqual(want, got) {
				t.Fatalf("round %d role %s:\nFoldRaw          %+v\nPartitionFolder  %+v", round, r, want, got)
			}
		}
		seen := map[Role]bool{}
		for _, r := range pf.Roles() {
			seen[r] = true
		}
		for _, rec := range recs {
			if k, err := DecodeKey(rec.Key); err == nil && !seen[k.Role] {
				t.Fatalf("round %d: Roles() misses %s", round, k.Role)
			}
		}
	}
}

// Removed counts members whose latest registration record is a tombstone;
// a re-registration brings the member back.
func TestStateRemovedCountsDeregisteredMembers(t *testing.T) {
	r := MustRole("r")
	reg := func(off int64, m string) RawRecord {
		return RawRecord{Offset: off, Key: EncodeKey(RegistrationKey(r, MustMemberID(m))), Value: EncodeRegistration(Registration{Member: MustMemberID(m), RegisteredAt: off})}
	}
	tomb := func(off int64, m string) RawRecord {
		return RawRecord{Offset: off, Key: EncodeKey(RegistrationKey(r, MustMemberID(m)))}
	}
	st := FoldRaw(r, []RawRecord{reg(0, "a"), reg(1, "b"), reg(2, "c"), tomb(3, "a"), tomb(4, "b"), reg(5, "b")})
	if st.Removed != 1 || len(st.Roster) != 2 || st.Roster[0].Member.String() != "c" || st.Roster[1].Member.String() != "b" {
		t.Fatalf("got removed %d roster %+v, want 1 and [c b]", st.Removed, st.Roster)
	}
}

// AddRawRole names the role each record was folded into (false for a key
// that does not decode), and Skipped, counted as the records are folded,
// equals the skips of every role's own fold.
func TestPartitionFolderAddRawRoleAndSkipped(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	roles := []Role{MustRole("a"), MustRole("b"), MustRole("c")}
	m := MustMemberID("m1")
	for round := 0; round < 200; round++ {
		pf := NewPartitionFolder()
		var recs []RawRecord
		badKeys := 0
		for off := int64(0); off < int64(rng.IntN(50)); off++ {
			r := roles[rng.IntN(len(roles))]
			rec := RawRecord{Offset: off}
			switch rng.IntN(5) {
			case 0:
				rec.Key, rec.Value = []byte{0, 9}, []byte{1} // undecodable key
				badKeys++
			case 1:
				rec.Key, rec.Value = EncodeKey(LeaseKey(r)), []byte{0, 0, 1} // undecodable value
			case 2:
				rec.Key = nil // no key
				badKeys++
			default:
				rec.Key = EncodeKey(RegistrationKey(r, m))
				rec.Value = EncodeRegistration(Registration{Member: m, RegisteredAt: off})
			}
			recs = append(recs, rec)
			got, ok := pf.AddRawRole(rec)
			k, err := DecodeKey(rec.Key)
			if rec.Key == nil {
				err = errNilKeyForTest
			}
			if ok != (err == nil) || (ok && got != k.Role) {
				t.Fatalf("round %d offset %d: AddRawRole = %s, %v; the key decodes to %+v, %v", round, off, got, ok, k, err)
			}
		}
		want := badKeys
		for _, r := range roles {
			want += FoldRaw(r, recs).Skipped - badKeys
		}
		if pf.Skipped() != want {
			t.Fatalf("round %d: Skipped() = %d, want %d", round, pf.Skipped(), want)
		}
	}
}

var errNilKeyForTest = errorString("nil key")

type errorString string

func (e errorString) Error() string { return string(e) }
