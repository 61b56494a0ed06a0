package chaos

import (
	"strings"
	"testing"
	"time"
)

// A long gap is explained by the faults active during it or ended up to
// 10 s before, the baseline's own gaps inside it, and the members' errors.
func TestExplainGaps(t *testing.T) {
	at := func(s float64) time.Time { return time.UnixMilli(int64(s * 1000)) }
	gap := Gap{From: at(100), To: at(120)}
	faults := []FaultRecord{
		{Kind: "broker-kill(controller)", Target: "broker 3", Start: at(98), End: at(105)},
		{Kind: "member-pause", Target: "c-host", Start: at(85), End: at(89)},    // ended 11 s before: not listed
		{Kind: "link-delay", Target: "node-host", Start: at(121), End: at(125)}, // after: not listed
	}
	events := []hostEvent{
		{At: at(101), Member: "c-host", Kind: "ERROR", Op: "acquire", Code: "TIMEOUT", Msg: "InitProducerId timed out"},
		{At: at(102), Member: "c-host", Kind: "ERROR", Op: "acquire", Code: "TIMEOUT", Msg: "again"},
		{At: at(119), Member: "node-host", Kind: "ACQUIRED"},
		{At: at(130), Member: "node-host", Kind: "ERROR", Op: "dispatch", Code: "TRANSPORT"}, // after the gap
	}
	base := &BaselineResult{Availability: Availability{All: []Gap{{From: at(95), To: at(110)}, {From: at(115), To: at(117)}}}}
	got := explainGaps([]Gap{gap}, faults, events, base, at(90))
	if len(got) != 1 {
		t.Fatal(got)
	}
	g := got[0]
	if len(g.Faults) != 1 || !strings.HasPrefix(g.Faults[0], "broker-kill(controller) broker 3 [-2.0s, +5.0s]") {
		t.Fatalf("faults %q", g.Faults)
	}
	if g.BaselineDown != "12s of 20s" || g.Waits["c-host ERROR acquire TIMEOUT"] != 2 || len(g.Waits) != 1 ||
		len(g.Acquired) != 1 || g.Acquired[0] != "node-host at +19.0s" {
		t.Fatalf("%+v", g)
	}
	if !strings.Contains(g.Text, "(campaign time 10.0s)") || !strings.Contains(g.Text, "baseline down 12s of 20s") || !strings.Contains(g.Text, "c-host ERROR acquire TIMEOUT x2") {
		t.Fatal(g.Text)
	}
}

// Group commit seen from the log: consecutive offsets of one producer
// with one append time are one transaction's batch.
func TestGroupStats(t *testing.T) {
	a := tok(1, 0)
	mk := func(off int64, w int, app int64) Record {
		r := recAt(off, "a", a, off, app, app)
		r.Writer = w
		return r
	}
	recs := []Record{mk(0, 1, 100), mk(1, 2, 100), mk(2, 3, 100), mk(4, 1, 200), mk(6, 4, 300), mk(7, 5, 300)}
	faults := []FaultRecord{{Start: time.UnixMilli(250), End: time.UnixMilli(350)}}
	gs := groupStats(recs, faults)
	if gs.Transactions != 3 || gs.Shared != 2 || gs.MaxWriters != 3 || gs.UnderFaults != 1 || gs.MeanRecords != 2 {
		t.Fatalf("%+v", gs)
	}
}
