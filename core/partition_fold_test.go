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
