package core

import (
	"fmt"
	"testing"
)

var (
	sinkBytes []byte
	sinkKey   Key
	sinkReg   Registration
	sinkLease Lease
	sinkState State
	sinkDec   Decision
)

func BenchmarkEncodeKey(b *testing.B) {
	k := RegistrationKey(MustRole("controller"), MustMemberID("node-1"))
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendKey(buf[:0], k)
	}
	sinkBytes = buf
}

func BenchmarkDecodeKey(b *testing.B) {
	in := mustHex(b, goldenRegistrationKey)
	b.ReportAllocs()
	for b.Loop() {
		sinkKey, _ = DecodeKey(in)
	}
}

func BenchmarkEncodeRegistration(b *testing.B) {
	v := Registration{Member: MustMemberID("node-1"), RegisteredAt: 1700000000000}
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendRegistration(buf[:0], v)
	}
	sinkBytes = buf
}

func BenchmarkDecodeRegistration(b *testing.B) {
	in := mustHex(b, goldenRegistrationValue)
	b.ReportAllocs()
	for b.Loop() {
		sinkReg, _ = DecodeRegistration(in)
	}
}

func BenchmarkEncodeLease(b *testing.B) {
	v := goldenLease()
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendLease(buf[:0], v)
	}
	sinkBytes = buf
}

func BenchmarkDecodeLease(b *testing.B) {
	in := mustHex(b, goldenLeaseValue)
	b.ReportAllocs()
	for b.Loop() {
		sinkLease, _ = DecodeLease(in)
	}
}

// benchRecords builds n raw records of a busy shared partition: 100 members
// of the role re-registering, lease renewals every few records, some
// deregistrations, and records of another role.
func benchRecords(n int) []RawRecord {
	role, other := MustRole("controller"), MustRole("scheduler")
	recs := make([]RawRecord, 0, n)
	for i := 0; len(recs) < n; i++ {
		off := int64(len(recs))
		m := MustMemberID(fmt.Sprintf("node-%d", i%100))
		var rec RawRecord
		switch i % 10 {
		case 0, 5:
			l := Lease{Member: m, Token: FencingToken{int64(i), 1}, GrantedAt: int64(i), Deadline: int64(i) + 30000}
			rec = RawRecord{Key: EncodeKey(LeaseKey(role)), Value: EncodeLease(l)}
		case 7:
			rec = RawRecord{Key: EncodeKey(RegistrationKey(role, m))} // deregistration
		case 9:
			rec = RawRecord{Key: EncodeKey(RegistrationKey(other, m)), Value: EncodeRegistration(Registration{Member: m, RegisteredAt: int64(i)})}
		default:
			rec = RawRecord{Key: EncodeKey(RegistrationKey(role, m)), Value: EncodeRegistration(Registration{Member: m, RegisteredAt: int64(i)})}
		}
		rec.Offset = off
		recs = append(recs, rec)
	}
	return recs
}

func BenchmarkFoldRaw100k(b *testing.B) {
	recs := benchRecords(100000)
	role := MustRole("controller")
	b.ReportAllocs()
	for b.Loop() {
		sinkState = FoldRaw(role, recs)
	}
	b.ReportMetric(float64(b.N)*float64(len(recs))/b.Elapsed().Seconds(), "records/s")
}

func BenchmarkEvaluate(b *testing.B) {
	recs := benchRecords(1000)
	s := FoldRaw(MustRole("controller"), recs)
	me := s.Roster[len(s.Roster)-1].Member
	cfg := DefaultLeaseConfig()
	b.ReportAllocs()
	for b.Loop() {
		sinkDec = Evaluate(s, me, 1000, cfg)
	}
}
