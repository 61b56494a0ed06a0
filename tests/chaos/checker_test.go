package chaos

import (
	"fmt"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core"
)

func tok(id int64, ep int16) core.FencingToken {
	return core.FencingToken{ProducerID: id, ProducerEpoch: ep}
}

func rec(off int64, member string, t core.FencingToken, seq int64, at int64) Record {
	return ParseRecord(0, off, t, fmt.Sprintf("seq=%d member=%s token=%s at=%d", seq, member, t, at))
}

func ack(off int64, member string, t core.FencingToken, seq int64, ms int64) Ack {
	return Ack{Member: member, Token: t, Seq: seq, Partition: 0, Offset: off, At: time.UnixMilli(ms)}
}

func TestCheckCleanLog(t *testing.T) {
	recs := []Record{rec(0, "a", tok(1, 0), 1, 10), rec(2, "a", tok(1, 0), 2, 20), rec(4, "b", tok(1, 1), 1, 30)}
	acks := []Ack{ack(0, "a", tok(1, 0), 1, 1000), ack(2, "a", tok(1, 0), 2, 1100), ack(4, "b", tok(1, 1), 1, 4100)}
	r := Check(recs, acks, time.Second)
	if !r.OK() || r.Found != 3 || r.Lost != 0 || r.Tokens != 2 || r.Unacked != 0 {
		t.Fatalf("%+v", r)
	}
	if len(r.Availability.Gaps) != 1 || r.Availability.Gaps[0] != 3*time.Second || r.Availability.Down != 2*time.Second {
		t.Fatalf("availability %+v", r.Availability)
	}
}

func TestCheckFindsEachViolation(t *testing.T) {
	cases := map[string]struct {
		recs []Record
		acks []Ack
	}{
		"lost": {[]Record{rec(0, "a", tok(1, 0), 1, 10)},
			[]Ack{ack(0, "a", tok(1, 0), 1, 1), ack(2, "a", tok(1, 0), 2, 2)}},
		"order": {[]Record{rec(0, "a", tok(1, 1), 1, 10), rec(2, "b", tok(1, 0), 1, 20)}, nil},
		"stale-token": {[]Record{rec(0, "a", tok(1, 2), 1, 10), rec(2, "b", tok(1, 3), 1, 20),
			ParseRecord(0, 4, tok(1, 3), "seq=2 member=b token=1:1 at=30")}, nil},
		"token-mismatch": {[]Record{ParseRecord(0, 0, tok(1, 3), "seq=1 member=b token=1:4 at=30")}, nil},
		"duplicate": {[]Record{rec(0, "a", tok(1, 0), 1, 10), rec(2, "a", tok(1, 0), 1, 10)},
			[]Ack{ack(0, "a", tok(1, 0), 1, 1)}},
	}
	for want, c := range cases {
		r := Check(c.recs, c.acks, time.Second)
		found := false
		for _, v := range r.Violations {
			found = found || v.Property == want
		}
		if !found {
			t.Errorf("%s: not reported: %+v", want, r.Violations)
		}
	}
}

// A member that re-sends a sequence number after an unacknowledged attempt
// (ambiguous outcome) leaves two copies with different values: counted as
// re-sent, not a violation; the acknowledged one is found.
func TestCheckResentIsNotDuplicate(t *testing.T) {
	recs := []Record{rec(0, "a", tok(1, 0), 1, 10), rec(2, "a", tok(1, 0), 1, 11)}
	r := Check(recs, []Ack{ack(2, "a", tok(1, 0), 1, 1)}, time.Second)
	if !r.OK() || r.Resent != 1 || r.Unacked != 1 || r.Found != 1 {
		t.Fatalf("%+v", r)
	}
}
