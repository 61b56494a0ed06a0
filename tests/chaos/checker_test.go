package chaos

import (
	"fmt"
	"strings"
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

// A run that saw nothing fails: each missed minimum is named.
func TestShortfallsOfAnEmptyRun(t *testing.T) {
	m := MinimumsFor(90 * time.Second)
	if m != MinimumsPer90s {
		t.Fatalf("minimums of 90 s %+v, want %+v", m, MinimumsPer90s)
	}
	got := Shortfalls(m, 90*time.Second, 0, 0, map[string]int{}, map[string]int{})
	if len(got) != 3 {
		t.Fatalf("an empty run: %q, want the acknowledged, takeover and fault minimums", got)
	}
	for i, want := range []string{"acknowledged", "takeovers", "faults took effect"} {
		if !strings.Contains(got[i], want) || !strings.HasPrefix(got[i], "minimum missed: ") {
			t.Errorf("shortfall %d %q does not name %q", i, got[i], want)
		}
	}
}

func TestShortfallsPerDrawnKind(t *testing.T) {
	m := MinimumsPer90s
	drawn := map[string]int{"member-kill": 2, "broker-kill(random)": 1, "link-delay": 1}
	injected := map[string]int{"member-kill": 1, "link-delay": 1, "clock-skew": 2}
	got := Shortfalls(m, 90*time.Second, m.Acked, m.Takeovers+1, drawn, injected)
	if len(got) != 1 || !strings.Contains(got[0], "broker-kill(random) drawn 1 times but took effect 0 times") {
		t.Fatalf("%q", got)
	}
	// Exactly the minimums: no shortfall.
	injected["broker-kill(random)"] = 1
	if got := Shortfalls(m, 90*time.Second, m.Acked, m.Takeovers+1, drawn, injected); len(got) != 0 {
		t.Fatalf("at the minimums: %q", got)
	}
	// One below each: each named.
	if got := Shortfalls(m, 90*time.Second, m.Acked-1, m.Takeovers, drawn, map[string]int{"member-kill": 1, "link-delay": 1, "broker-kill(random)": 1}); len(got) != 3 {
		t.Fatalf("one below each of three: %q", got)
	}
}

func TestMinimumsScaleWithTheDuration(t *testing.T) {
	if m := MinimumsFor(10 * time.Minute); m.Acked != MinimumsPer90s.Acked*600/90 || m.Faults != MinimumsPer90s.Faults*600/90 || m.PerKind != 1 {
		t.Fatalf("10 min: %+v", m)
	}
	if m := MinimumsFor(time.Second); m.Acked != 1 || m.Takeovers != 1 || m.Faults != 1 || m.PerKind != 1 {
		t.Fatalf("1 s: %+v", m)
	}
}
