package coord_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/memtransport"
)

// The stop margin is defined once: krabka.lease.stop.margin.ms, 0 = half
// the risk margin. The elector's default is Config.StopMargin; a set value
// above the derived risk margin raises the risk margin with it; above an
// explicit risk margin, or reaching back to the renewal, it is refused
// naming the key.
func TestStopMarginConfig(t *testing.T) {
	c := coord.DefaultConfig()
	if got := c.StopMargin(); got != 5*time.Second {
		t.Fatalf("default stop margin %v, want half the 10 s risk margin", got)
	}
	if err := c.Set("krabka.lease.risk.margin.ms", "3000"); err != nil || c.StopMargin() != 1500*time.Millisecond {
		t.Fatalf("risk margin 3000: stop margin %v (%v)", c.StopMargin(), err)
	}
	c = coord.DefaultConfig()
	if err := c.Set("krabka.lease.stop.margin.ms", "12000"); err != nil {
		t.Fatal(err)
	}
	if c.StopMargin() != 12*time.Second || c.RiskMargin() != 12*time.Second {
		t.Fatalf("stop margin 12 s over the derived 10 s risk margin: stop %v risk %v", c.StopMargin(), c.RiskMargin())
	}
	setRefused(t, &c, "krabka.lease.stop.margin.ms", "-1", "soon")
	for name, kv := range map[string][]string{
		"reaches the renewal":      {"krabka.lease.stop.margin.ms", "20000"},
		"above the explicit risk ": {"krabka.lease.stop.margin.ms", "4000", "krabka.lease.risk.margin.ms", "3000"},
	} {
		m := map[string]string{"bootstrap.servers": "h:1"}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		if _, err := coord.ConfigFromMap(m); !errors.Is(err, coord.ErrInvalidConfig) || !strings.Contains(err.Error(), "krabka.lease.stop.margin.ms") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := coord.ConfigFromMap(map[string]string{"bootstrap.servers": "h:1", "krabka.lease.stop.margin.ms": "19999"}); err != nil {
		t.Fatalf("just below lease - renew: %v", err)
	}
}

// The elector's term stops at deadline - krabka.lease.stop.margin.ms when
// the key is set (no ElectStopMargin).
func TestElectorStopsAtTheConfiguredStopMargin(t *testing.T) {
	e := newEnv(t)
	c, tr := e.client("krabka.lease.stop.margin.ms", "8000")
	t.Cleanup(func() { tr.SetFault(memtransport.Healthy) })
	a := runElector(t, "a", c, bg(), ma)
	waitFor(t, "a's term", func() bool { return a.count(coord.TermStarted) == 1 })
	deadline := a.last(coord.TermStarted).Deadline.UnixMilli()
	tr.SetFault(memtransport.BlackHole)
	e.advanceUntil(250*time.Millisecond, 40*time.Second, func() bool { return a.count(coord.TermStopped) == 1 })
	stop := a.last(coord.TermStopped)
	if stop.Reason != coord.StopLostAtRisk {
		t.Fatalf("stopped %s %v", stop.Reason, stop.Err)
	}
	if at := stop.At.UnixMilli(); at < deadline-8000 || at > deadline-8000+250 {
		t.Fatalf("stopped at deadline%+d ms, want deadline-8000 (one 250 ms clock step allowed)", at-deadline)
	}
}

// ElectOnLease reports every renewal of a term with its new deadline, in
// order, between the term's STARTED and STOPPED, and nothing after the
// term stopped.
func TestElectorLeaseEventsFollowEveryRenewal(t *testing.T) {
	e := newEnv(t)
	c, _ := e.client()
	var (
		mu     sync.Mutex
		leases []coord.LeaseEvent
	)
	a := runElector(t, "a", c, bg(), ma, coord.ElectRecampaign(false), coord.ElectOnLease(func(ev coord.LeaseEvent) {
		mu.Lock()
		leases = append(leases, ev)
		mu.Unlock()
	}))
	got := func() []coord.LeaseEvent {
		mu.Lock()
		defer mu.Unlock()
		return append([]coord.LeaseEvent(nil), leases...)
	}
	waitFor(t, "a's term", func() bool { return a.count(coord.TermStarted) == 1 })
	started := a.last(coord.TermStarted)
	if n := len(got()); n != 0 {
		t.Fatalf("%d lease events before any renewal", n)
	}
	// Three renewals (every 10 s of a 30 s lease).
	e.advanceUntil(time.Second, 40*time.Second, func() bool { return len(got()) >= 3 })
	evs := got()
	prev := started.Deadline
	for i, ev := range evs {
		if ev.Term != 1 || ev.Token != started.Token || !ev.Deadline.After(prev) {
			t.Fatalf("lease event %d: %+v after deadline %v", i, ev, prev)
		}
		if l := started.Leadership.Lease(); i == len(evs)-1 && l.Deadline != ev.Deadline.UnixMilli() {
			t.Fatalf("last lease event deadline %v, leadership's lease %d", ev.Deadline, l.Deadline)
		}
		prev = ev.Deadline
	}
	if err := started.Leadership.Resign(bg()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a's STOPPED", func() bool { return a.count(coord.TermStopped) == 1 })
	n := len(got())
	<-a.run
	for i := 0; i < 12; i++ {
		e.clock.Advance(time.Second)
		time.Sleep(2 * time.Millisecond)
	}
	if len(got()) != n {
		t.Fatalf("lease events after term 1 stopped: %+v", got()[n:])
	}
	checkPairing(t, "a", a.events(), false)
}
