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

// recAt is a committed command of writer 1 appended at appended (ms) and
// invoked at at (ms).
func recAt(off int64, member string, t core.FencingToken, seq, at, appended int64) Record {
	r := ParseRecord(0, off, t, fmt.Sprintf("seq=%d member=%s token=%s writer=1 try=1 at=%d", seq, member, t, at))
	r.Appended = time.UnixMilli(appended)
	return r
}

func has(r *Result, property string) bool {
	for _, v := range r.Violations {
		if v.Property == property {
			return true
		}
	}
	return false
}

// The window fencing exists for: b minted 1:1 at 1000; a's command under
// 1:0 was appended at 1500, after that mint and before b's first command
// (appended at 2000). In log order the tokens do not go backwards and no
// command carries a token below one committed before it, so the first
// checker (no mints) passes the log; the real-time check fails it.
func TestRealTimeFindsAStaleWriteBeforeTheSuccessorsFirstCommand(t *testing.T) {
	recs := []Record{
		recAt(0, "a", tok(1, 0), 1, 400, 500),
		recAt(2, "a", tok(1, 0), 2, 1400, 1500), // after b's mint
		recAt(4, "b", tok(1, 1), 1, 1900, 2000),
	}
	acks := []Ack{ack(0, "a", tok(1, 0), 1, 600), ack(2, "a", tok(1, 0), 2, 1600), ack(4, "b", tok(1, 1), 1, 2100)}
	if old := Check(recs, acks, time.Second); !old.OK() {
		t.Fatalf("the first checker was to pass this log (it cannot see the window): %v", old.Violations)
	}
	mints := []Mint{{Member: "a", Token: tok(1, 0), At: time.UnixMilli(100)}, {Member: "b", Token: tok(1, 1), At: time.UnixMilli(1000)}}
	r := CheckAll(Input{Records: recs, Acks: acks, Mints: mints, Slack: time.Second})
	if r.RealTime != 1 || !has(r, "real-time") {
		t.Fatalf("real-time: %d, violations %v", r.RealTime, r.Violations)
	}
	if !strings.Contains(r.Violations[0].Detail, "token 1:1 was minted") || !strings.HasPrefix(r.Violations[0].Records[1], "0/2 ") {
		t.Fatalf("the violation names the mint and the record: %v", r.Violations[0])
	}
	// Appended before the mint (or in the same millisecond): no violation.
	recs[1].Appended = time.UnixMilli(1000)
	if r := CheckAll(Input{Records: recs, Acks: acks, Mints: mints, Slack: time.Second}); !r.OK() {
		t.Fatalf("appended at the mint's millisecond: %v", r.Violations)
	}
	// A later mint of a lower token does not count; nor does a mint of the
	// same token.
	recs[1].Appended = time.UnixMilli(1500)
	later := []Mint{{Member: "a", Token: tok(1, 0), At: time.UnixMilli(1200)}, {Member: "b", Token: tok(1, 1), At: time.UnixMilli(1800)}}
	if r := CheckAll(Input{Records: recs, Acks: acks, Mints: later, Slack: time.Second}); !r.OK() {
		t.Fatalf("mints after the append: %v", r.Violations)
	}
}

func TestResentCopiesAndSequenceGaps(t *testing.T) {
	a1 := tok(3, 0)
	recs := []Record{
		recAt(0, "a", a1, 1, 10, 11),
		recAt(1, "a", a1, 2, 20, 21), // first attempt of 2 committed after all ...
		ParseRecord(0, 2, a1, "seq=2 member=a token=3:0 writer=1 try=2 at=30"), // ... the re-send is acknowledged
		recAt(3, "a", a1, 5, 40, 41), // 3 and 4 missing
	}
	acks := []Ack{ack(0, "a", a1, 1, 12), ack(2, "a", a1, 2, 31), ack(3, "a", a1, 5, 42)}
	in := Input{Records: recs, Acks: acks, Acquired: map[string]bool{"a|3:0": true}, Slack: time.Second}
	r := CheckAll(in)
	if !r.OK() || r.Resent != 1 || r.ResentOfAcked != 1 || r.ResentAfterAck != 0 || r.SeqGaps != 2 || r.GapTerms != 1 || r.Unacked != 1 {
		t.Fatalf("%+v %v", r, r.Violations)
	}
	// A copy committed after the acknowledged one: a violation.
	recs = append(recs, ParseRecord(0, 4, a1, "seq=1 member=a token=3:0 writer=1 try=2 at=50"))
	r = CheckAll(Input{Records: recs, Acks: acks, Slack: time.Second})
	if r.ResentAfterAck != 1 || !has(r, "resent-after-ack") {
		t.Fatalf("%+v %v", r, r.Violations)
	}
	// Without the ACQUIRED token the gaps count from the lowest number:
	// seq 1 is there, so still 3 and 4.
	if r.SeqGaps != 2 {
		t.Fatalf("gaps without the acquired token: %d", r.SeqGaps)
	}
}

// A command appended after two brokers were killed cannot be acknowledged
// before one of them is back (min.insync.replicas=2).
func TestNothingAcknowledgedWhileTwoBrokersAreDown(t *testing.T) {
	recs := []Record{recAt(0, "a", tok(1, 0), 1, 900, 1000), recAt(2, "a", tok(1, 0), 2, 2900, 3000)}
	acks := []Ack{ack(0, "a", tok(1, 0), 1, 2500), ack(2, "a", tok(1, 0), 2, 3500)}
	w := []Window{{Start: time.UnixMilli(2000), End: time.UnixMilli(5000), What: "brokers 1,2"}}
	r := CheckAll(Input{Records: recs, Acks: acks, TwoDown: w, Slack: time.Second})
	// The first was appended before the window (its ack in the window is an
	// answer in flight); the second was appended and acknowledged inside it.
	if r.TwoDownAcked != 1 || !has(r, "acked-two-down") || !strings.Contains(r.Violations[0].Records[0], "seq=2") {
		t.Fatalf("%+v %v", r, r.Violations)
	}
	// Acknowledged after the restart: fine.
	acks[1].At = time.UnixMilli(5000)
	if r := CheckAll(Input{Records: recs, Acks: acks, TwoDown: w, Slack: time.Second}); !r.OK() {
		t.Fatal(r.Violations)
	}
}

// Two writers of one leader: the command at offset 2 was acknowledged at
// 150, the one at offset 4 invoked at 200 (after it); the log has them the
// other way round. Every other check passes this log; porcupine does not.
func TestLinearizabilityFindsALogOrderAgainstRealTime(t *testing.T) {
	a := tok(1, 0)
	recs := []Record{
		recAt(0, "a", a, 1, 10, 20),
		recAt(2, "a", a, 3, 200, 220), // invoked after seq 2 was acknowledged, but before it in the log
		recAt(4, "a", a, 2, 100, 110),
	}
	acks := []Ack{ack(0, "a", a, 1, 30), ack(2, "a", a, 3, 230), ack(4, "a", a, 2, 150)}
	for i := range acks {
		acks[i].Writer = 1
	}
	r := CheckAll(Input{Records: recs, Acks: acks, Slack: time.Second})
	if r.Linearizable != "NO" || !has(r, "linearizability") || len(r.Violations) != 1 {
		t.Fatalf("%s %v", r.Linearizable, r.Violations)
	}
	// In the right order it is linearizable, in two segments (quiescent at 31-99).
	recs[1], recs[2] = recAt(2, "a", a, 2, 100, 110), recAt(4, "a", a, 3, 200, 220)
	acks[1], acks[2] = ack(2, "a", a, 2, 150), ack(4, "a", a, 3, 230)
	r = CheckAll(Input{Records: recs, Acks: acks, Slack: time.Second})
	if r.Linearizable != "yes" || !r.OK() || r.LinOps != 3 || r.LinSegments != 3 {
		t.Fatalf("%s ops=%d segments=%d %v", r.Linearizable, r.LinOps, r.LinSegments, r.Violations)
	}
}

// Concurrent writers: overlapping intervals in any log order are fine; an
// unacknowledged entry may sit anywhere before the next acknowledged one.
func TestLinearizabilityOfConcurrentWriters(t *testing.T) {
	a := tok(1, 0)
	var recs []Record
	var acks []Ack
	// 8 writers invoke at 100..107 and are acknowledged together at 200;
	// the log has them in reverse order of invocation.
	for w := 0; w < 8; w++ {
		recs = append(recs, recAt(int64(w), "a", a, int64(8-w), int64(107-w), 150))
		acks = append(acks, ack(int64(w), "a", a, int64(8-w), 200))
	}
	// An attempt that committed without an acknowledgement, invoked at 300,
	// before a command invoked at 310 and acknowledged at 400.
	recs = append(recs, recAt(8, "a", a, 9, 300, 320), recAt(9, "a", a, 10, 310, 330))
	acks = append(acks, ack(9, "a", a, 10, 400))
	r := CheckAll(Input{Records: recs, Acks: acks, Slack: time.Second})
	if r.Linearizable != "yes" || !r.OK() || r.LinOps != 10 || r.LinSegments != 2 {
		t.Fatalf("%s ops=%d segments=%d %v", r.Linearizable, r.LinOps, r.LinSegments, r.Violations)
	}
	// The unacknowledged entry invoked after the later entry was acknowledged.
	recs[8].At = 450
	r = CheckAll(Input{Records: recs, Acks: acks, Slack: time.Second})
	if r.Linearizable != "NO" {
		t.Fatalf("%s %v", r.Linearizable, r.Violations)
	}
}

// The baseline writer's records share the partition under another
// producer id: they are not the role's (no order, token or real-time check
// on them), its acknowledgements are checked for loss, and its
// availability is the ratio's denominator.
func TestBaselineIsCheckedApart(t *testing.T) {
	base := tok(900, 0)
	recs := []Record{
		recAt(0, "a", tok(1, 0), 1, 10, 20),
		ParseRecord(0, 1, base, "seq=1 member=baseline token=900:0 writer=1 try=1 at=15"),
		recAt(2, "a", tok(1, 0), 2, 1010, 1020),
		ParseRecord(0, 3, base, "seq=2 member=baseline token=900:0 writer=1 try=1 at=1015"),
		ParseRecord(0, 5, base, "seq=3 member=baseline token=900:0 writer=1 try=1 at=9000"),
	}
	acks := []Ack{ack(0, "a", tok(1, 0), 1, 30), ack(2, "a", tok(1, 0), 2, 5030)}
	backs := []Ack{ack(1, "baseline", base, 1, 30), ack(3, "baseline", base, 2, 1030), ack(5, "baseline", base, 3, 5030), ack(7, "baseline", base, 4, 5100)}
	r := CheckAll(Input{Records: recs, Acks: acks, Baseline: "baseline", BaseAcks: backs, Slack: time.Second,
		Mints: []Mint{{Member: "a", Token: tok(1, 0), At: time.UnixMilli(1)}}})
	if r.Records != 2 || r.Tokens != 1 || r.Baseline == nil || r.Baseline.Records != 3 || r.Baseline.Found != 3 || r.Baseline.Lost != 1 || r.Lost != 1 {
		t.Fatalf("%+v %+v %v", r, r.Baseline, r.Violations)
	}
	if len(r.Violations) != 1 || r.Violations[0].Property != "lost" || !strings.Contains(r.Violations[0].Detail, "baseline") {
		t.Fatalf("only the baseline's lost command: %v", r.Violations)
	}
	// Members: one gap of 5 s in a 5 s span (4 s down): 20%; baseline: gap
	// 4 s in 5.07 s (3 s down).
	m, b := r.Availability.Fraction, r.Baseline.Availability.Fraction
	if len(r.Availability.Gaps) != 1 || len(r.Baseline.Availability.Gaps) != 1 || r.Ratio != m/b || r.Ratio >= 1 {
		t.Fatalf("availability %v / %v = %v", m, b, r.Ratio)
	}
}

func TestExclusiveDown(t *testing.T) {
	at := func(s float64) time.Time { return time.UnixMilli(int64(s * 1000)) }
	a := []Gap{{From: at(10), To: at(20)}, {From: at(30), To: at(31.5)}}
	b := []Gap{{From: at(12), To: at(15)}, {From: at(17), To: at(40)}}
	// a shortened by 1 s: [11,20], [31,31.5]; b: [13,15], [18,40].
	// a outside b: [11,13] + [15,18] = 5 s; the second gap is inside b.
	if got := exclusive(a, b, time.Second); got != 5*time.Second {
		t.Fatalf("a outside b: %s", got)
	}
	// b outside a: [13,15] is inside [11,20]; [18,40] minus [18,20] and [31,31.5] = 19.5 s.
	if got := exclusive(b, a, time.Second); got != 19500*time.Millisecond {
		t.Fatalf("b outside a: %s", got)
	}
}
