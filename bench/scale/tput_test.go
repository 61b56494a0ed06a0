package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/memtransport"
)

// The closed loop on the in-memory transport: every live role is renewed
// (round-robin reaches each), a leadership that ended is counted once as
// ended and once as failed and never tried again, and the latencies are
// the renewals that succeeded, as the client's own counter says. (The
// only assumption on speed: ten in-memory renewals fit in the 2 s window.)
func TestRenewLoopRoundRobinSkipsEndedRoles(t *testing.T) {
	cluster := memtransport.NewCluster(4)
	cfg := coord.DefaultConfig()
	for k, v := range map[string]string{"bootstrap.servers": "mem:9092", "krabka.renew.background": "false"} {
		if err := cfg.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	cl, err := coord.NewClient(cfg, cluster.Transport(cfg.Topic), core.NewManualClock(1_800_000_000_000))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const n = 10
	ls := make([]*coord.Leadership, n)
	for i := range ls {
		l, err := cl.Acquire(context.Background(), core.MustRole(fmt.Sprintf("tput-%d", i)), core.MustMemberID("m"))
		if err != nil {
			t.Fatal(err)
		}
		ls[i] = l
	}
	ls[3].Close() // ends: its renewals fail with ErrNotLeader
	before := cl.Stats().RenewalsOK
	dead := make([]atomic.Bool, n)
	// No warm-up: the ended role's one failure falls in the window. The
	// manual clock never moves, so no lease runs out meanwhile; the window
	// only bounds how long the loop runs.
	r := renewLoop(cl, ls, dead, 3, 0, 2*time.Second)
	if r.Ended != 1 || r.Live != n-1 || !dead[3].Load() || r.Failed != 1 {
		t.Fatalf("ended %d, live %d, failed %d, role 3 dead %v: want the closed role ended and failed once", r.Ended, r.Live, r.Failed, dead[3].Load())
	}
	if !strings.Contains(r.FailMsg, "tput-3") {
		t.Errorf("first failure %q does not name the closed role", r.FailMsg)
	}
	// The client also counts the renewals in flight when the window ended
	// (at most one a renewer), which completed after it.
	if got := cl.Stats().RenewalsOK - before; got < int64(len(r.LatMs)) || got > int64(len(r.LatMs))+3 {
		t.Errorf("%d latencies for %d renewals the client counted (3 renewers)", len(r.LatMs), got)
	}
	// Round-robin reached every live role, and never renewed the closed one
	// (whose one try failed before it was sent: the client counts no
	// failure for it).
	st := cl.Stats()
	for i := range ls {
		rs := st.Roles[fmt.Sprintf("tput-%d", i)]
		switch {
		case i == 3 && rs.RenewalsOK != 0:
			t.Errorf("closed role: renewed %d times", rs.RenewalsOK)
		case i != 3 && (rs.RenewalsOK == 0 || rs.RenewalsFailed != 0 || ls[i].State() != coord.Active):
			t.Errorf("role %d: %d renewed, %d failed, %v: want renewed, none failed, active", i, rs.RenewalsOK, rs.RenewalsFailed, ls[i].State())
		}
	}
}

func TestShare(t *testing.T) {
	for _, c := range []struct{ total, procs int }{{2000, 1}, {2000, 3}, {7, 7}, {256, 3}} {
		sum, lo, hi := 0, c.total, 0
		for k := 0; k < c.procs; k++ {
			s := share(c.total, c.procs, k)
			sum += s
			lo, hi = min(lo, s), max(hi, s)
		}
		if sum != c.total || hi-lo > 1 {
			t.Errorf("share(%d, %d): sum %d, spread %d..%d", c.total, c.procs, sum, lo, hi)
		}
	}
}

func TestParseInts(t *testing.T) {
	got, err := parseInts("renewers", " 64, 256,")
	if err != nil || len(got) != 2 || got[0] != 64 || got[1] != 256 {
		t.Fatalf("got %v, %v", got, err)
	}
	for _, bad := range []string{"64,x", "0", "-3"} {
		if _, err := parseInts("renewers", bad); err == nil || !strings.Contains(err.Error(), "-renewers") {
			t.Errorf("%q: %v, want an error naming -renewers", bad, err)
		}
	}
}

// brokerCPUMs reads a process's CPU from /proc: this test process's own
// grows with work, and a pid that does not exist is an error naming it.
func TestBrokerCPUMs(t *testing.T) {
	a, err := brokerCPUMs(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// Burn CPU until the reading moves (one clock tick is 10 ms).
	b := a
	for x := 0; b == a; x++ {
		for i := 0; i < 1e6; i++ {
			x ^= i
		}
		if b, err = brokerCPUMs(os.Getpid()); err != nil {
			t.Fatal(err)
		}
	}
	if b < a {
		t.Fatalf("CPU went back from %v to %v ms", a, b)
	}
	if _, err := brokerCPUMs(1 << 30); err == nil || !strings.Contains(err.Error(), "1073741824") {
		t.Fatalf("a pid that does not exist: %v", err)
	}
}

// The machine's busy time grows with this test's own work; steal never
// goes back.
func TestMachineCPUMs(t *testing.T) {
	a := machineCPUMs()
	b := a
	for x := 0; b.busy == a.busy; x++ {
		for i := 0; i < 1e6; i++ {
			x ^= i
		}
		b = machineCPUMs()
	}
	if b.busy < a.busy || b.steal < a.steal {
		t.Fatalf("went back: %+v then %+v", a, b)
	}
}
