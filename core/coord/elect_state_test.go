package coord_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/memtransport"
)

// Broker-free tests of the elector's typed lifecycle (State, the state
// sentinels, Err, the ELECTOR_STOPPED event) and of riding out an outage
// (ElectRideOutage, krabka.elector.ride.outage). Lease 30 s, renew 10 s,
// risk margin 10 s, stop margin 5 s.

// The states a term goes through, each matched with errors.Is on Healthy,
// and the end of the loop as a state, an error and a last event.
func TestElectorStateFollowsTheLoop(t *testing.T) {
	e := newEnv(t)
	c, tr := e.client()
	t.Cleanup(func() { tr.SetFault(memtransport.Healthy) }) // before the client closes
	ctx, cancel := context.WithCancel(bg())
	defer cancel()
	el, err := coord.NewElector(c, role, ma, coord.ElectStopMargin(0))
	if err != nil {
		t.Fatal(err)
	}
	if st := el.State(); st != coord.ElectorNotStarted || !errors.Is(el.Healthy(), coord.ElectorNotStarted) || el.Err() != nil {
		t.Fatalf("before Run: state %s, healthy %v, err %v", st, el.Healthy(), el.Err())
	}
	if err := el.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if st := el.State(); st == coord.ElectorNotStarted {
		t.Fatal("Start returned before the loop counts as running")
	}
	if err := el.Start(ctx); !errors.Is(err, coord.ErrInvalidArgument) {
		t.Fatalf("a second Start: %v", err)
	}
	var evs []coord.TermEvent
	read := make(chan struct{})
	go func() {
		defer close(read)
		for ev := range el.C() {
			evs = append(evs, ev)
		}
	}()
	waitFor(t, "holding", func() bool { return el.State() == coord.ElectorHolding })
	if h := el.Healthy(); h != nil {
		t.Fatalf("holding, healthy %v", h)
	}
	tr.SetFault(memtransport.Refuse)
	e.advanceUntil(250*time.Millisecond, 25*time.Second, func() bool { return el.State() == coord.ElectorAtRisk })
	if h := el.Healthy(); !errors.Is(h, coord.ElectorAtRisk) || errors.Is(h, coord.ElectorStopped) {
		t.Fatalf("at risk, healthy %v", h)
	}
	tr.SetFault(memtransport.Healthy)
	e.advanceUntil(100*time.Millisecond, 5*time.Second, func() bool { return el.State() == coord.ElectorHolding })
	cancel()
	<-el.Done()
	<-read
	if st := el.State(); st != coord.ElectorStopped {
		t.Fatalf("after the loop: %s", st)
	}
	if err := el.Err(); !errors.Is(err, coord.ElectorStopped) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Err after the caller ended the loop: %v", err)
	}
	if h := el.Healthy(); !errors.Is(h, coord.ElectorStopped) {
		t.Fatalf("healthy after the loop: %v", h)
	}
	last := evs[len(evs)-1]
	if last.Kind != coord.TermElectorStopped || last.Err != nil || last.Term != 1 {
		t.Fatalf("last event %+v", last)
	}
	checkPairing(t, "a", evs, true)
}

// A loop that ends by itself (ElectRecampaign(false) after an expired term):
// Err and the last event carry that term's error.
func TestElectorStoppedEventCarriesWhyTheLoopEnded(t *testing.T) {
	a := expiredWithoutRecampaign(t)
	evs := a.events()
	last := evs[len(evs)-1]
	if last.Kind != coord.TermElectorStopped || !errors.Is(last.Err, coord.ErrLeaseExpired) {
		t.Fatalf("last event %s %v", last.Kind, last.Err)
	}
	if err := a.e.Err(); !errors.Is(err, coord.ElectorStopped) || !errors.Is(err, coord.ErrLeaseExpired) {
		t.Fatalf("Err: %v", err)
	}
	if a.e.State() != coord.ElectorStopped {
		t.Fatalf("state %s", a.e.State())
	}
	checkPairing(t, "a", evs, true)
}

// Every link cut (the holder's requests hang, the standby's are refused)
// well past the lease: with krabka.elector.ride.outage the term is
// SUSPENDED, not stopped, and its leadership outlives its deadline; healed,
// the holder renews under the same token (RECOVERED) and the standby, healed
// after it, finds a live lease and stays a standby.
func TestElectorRidesOutAnOutageUnderTheSameToken(t *testing.T) {
	e := newEnv(t)
	ca, tra := e.client("krabka.elector.ride.outage", "true", "request.timeout.ms", "500")
	cb, trb := e.client()
	t.Cleanup(func() { tra.SetFault(memtransport.Healthy); trb.SetFault(memtransport.Healthy) })
	a := runElector(t, "a", ca, bg(), ma)
	waitFor(t, "a's term", func() bool { return a.count(coord.TermStarted) == 1 })
	b := runElector(t, "b", cb, bg(), mb)
	started := a.last(coord.TermStarted)
	deadline := started.Deadline.UnixMilli()
	tra.SetFault(memtransport.BlackHole)
	trb.SetFault(memtransport.Refuse)
	e.advanceUntil(250*time.Millisecond, 40*time.Second, func() bool { return a.count(coord.TermSuspended) == 1 })
	sus := a.last(coord.TermSuspended)
	if at := sus.At.UnixMilli(); at < deadline-5000 || at >= deadline || sus.Term != 1 || sus.Token != started.Token {
		t.Fatalf("suspended %+v at deadline%+d ms, want term 1 within the stop margin", sus, sus.At.UnixMilli()-deadline)
	}
	if st := a.e.State(); st != coord.ElectorSuspended || !errors.Is(a.e.Healthy(), coord.ElectorSuspended) {
		t.Fatalf("state %s, healthy %v", st, a.e.Healthy())
	}
	// A minute past the deadline: still the same term, nothing stopped.
	e.advanceUntil(time.Second, 90*time.Second, func() bool { return e.clock.NowMs() > deadline+60000 })
	l := sus.Leadership
	if a.count(coord.TermStopped) != 0 || l.State() != coord.Active || !l.Riding() || sus.Context.Err() != nil {
		t.Fatalf("during the outage: stopped %d, leadership %s riding %v, term context %v", a.count(coord.TermStopped), l.State(), l.Riding(), sus.Context.Err())
	}
	tra.SetFault(memtransport.Healthy)
	// The renewal in flight hangs until request.timeout.ms (500 ms, real
	// time) as with a real cut link; the next one gets through.
	waitFor(t, "a renewal after the heal", func() bool {
		e.clock.Advance(100 * time.Millisecond)
		time.Sleep(10 * time.Millisecond)
		return a.count(coord.TermRecovered) == 1
	})
	rec := a.last(coord.TermRecovered)
	if rec.Token != started.Token || l.Token() != started.Token || rec.Deadline.UnixMilli() <= e.clock.NowMs() {
		t.Fatalf("resumed under %s (lease deadline %d, now %d), started under %s", rec.Token, rec.Deadline.UnixMilli(), e.clock.NowMs(), started.Token)
	}
	if st := a.e.State(); st != coord.ElectorHolding || a.e.Healthy() != nil || l.Riding() {
		t.Fatalf("after the outage: %s, %v", st, a.e.Healthy())
	}
	trb.SetFault(memtransport.Healthy)
	e.advanceUntil(500*time.Millisecond, 40*time.Second, func() bool { return e.clock.NowMs() > deadline+80000 })
	if b.count(coord.TermStarted) != 0 || a.count(coord.TermStopped) != 0 {
		t.Fatalf("after healing the standby: b started %d, a stopped %d", b.count(coord.TermStarted), a.count(coord.TermStopped))
	}
	if st := describe(t, cb); st.Holder != ma || st.Token != started.Token || !st.Current {
		t.Fatalf("describe: %+v", st)
	}
	checkPairing(t, "a", a.events(), false)
}

// A standby that could still reach the cluster minted during the holder's
// cut: the suspended term ends FENCED at its first contact, and its guarded
// write is refused.
func TestElectorSuspendedTermEndsFencedWhenAStandbyMinted(t *testing.T) {
	e := newEnv(t)
	ca, tra := e.client()
	cb, _ := e.client()
	t.Cleanup(func() { tra.SetFault(memtransport.Healthy) })
	a := runElector(t, "a", ca, bg(), ma, coord.ElectRideOutage(true))
	waitFor(t, "a's term", func() bool { return a.count(coord.TermStarted) == 1 })
	b := runElector(t, "b", cb, bg(), mb)
	tra.SetFault(memtransport.Refuse)
	e.advanceUntil(250*time.Millisecond, 60*time.Second, func() bool { return b.count(coord.TermStarted) == 1 })
	if a.count(coord.TermSuspended) != 1 || a.count(coord.TermStopped) != 0 {
		t.Fatalf("a while b took over: suspended %d, stopped %d", a.count(coord.TermSuspended), a.count(coord.TermStopped))
	}
	l := a.last(coord.TermStarted).Leadership
	tra.SetFault(memtransport.Healthy)
	_, werr := l.Produce(bg(), coord.Message{Topic: "commands", Partition: 0, Value: []byte("from the suspended term")})
	e.advanceUntil(100*time.Millisecond, 10*time.Second, func() bool { return a.count(coord.TermStopped) == 1 })
	stop := a.last(coord.TermStopped)
	if stop.Reason != coord.StopFenced || !errors.Is(stop.Err, coord.ErrFenced) || !errors.Is(werr, coord.ErrFenced) {
		t.Fatalf("stopped %s %v; the write: %v", stop.Reason, stop.Err, werr)
	}
	if a.count(coord.TermRecovered) != 0 {
		t.Fatal("a fenced term reported RECOVERED")
	}
	checkPairing(t, "a", a.events(), false)
}

// ElectRideOutage(false) overrides the configuration key; the key is a
// bool and refuses anything else, naming itself.
func TestElectRideOutageOptionAndKey(t *testing.T) {
	cfg := coord.DefaultConfig()
	if err := cfg.Set("krabka.elector.ride.outage", "sometimes"); !errors.Is(err, coord.ErrInvalidConfig) || !strings.Contains(err.Error(), "krabka.elector.ride.outage") {
		t.Fatalf("bad value: %v", err)
	}
	e := newEnv(t)
	c, tr := e.client("krabka.elector.ride.outage", "true")
	t.Cleanup(func() { tr.SetFault(memtransport.Healthy) })
	a := runElector(t, "a", c, bg(), ma, coord.ElectRideOutage(false))
	waitFor(t, "a's term", func() bool { return a.count(coord.TermStarted) == 1 })
	tr.SetFault(memtransport.BlackHole)
	e.advanceUntil(250*time.Millisecond, 40*time.Second, func() bool { return a.count(coord.TermStopped) == 1 })
	if stop := a.last(coord.TermStopped); stop.Reason != coord.StopLostAtRisk || a.count(coord.TermSuspended) != 0 {
		t.Fatalf("without riding out: %s, suspended %d", stop.Reason, a.count(coord.TermSuspended))
	}
}

// A standby that rides out the same outage (both members cut off) and is
// back first does not challenge the expired lease for one lease (30 s):
// the holder, back within it, renews under its token and keeps the role.
// A holder that does not come back is taken over when that lease ends.
func TestStandbyBackFromAnOutageGivesTheHolderALease(t *testing.T) {
	for _, holderBack := range []bool{true, false} {
		t.Run(map[bool]string{true: "holder back", false: "holder gone"}[holderBack], func(t *testing.T) {
			e := newEnv(t)
			ca, tra := e.client("request.timeout.ms", "500")
			cb, trb := e.client()
			t.Cleanup(func() { tra.SetFault(memtransport.Healthy); trb.SetFault(memtransport.Healthy) })
			a := runElector(t, "a", ca, bg(), ma, coord.ElectRideOutage(true))
			waitFor(t, "a's term", func() bool { return a.count(coord.TermStarted) == 1 })
			b := runElector(t, "b", cb, bg(), mb, coord.ElectRideOutage(true))
			waitFor(t, "b registered", func() bool { return len(describe(t, ca).Roster) == 2 })
			started := a.last(coord.TermStarted)
			deadline := started.Deadline.UnixMilli()
			tra.SetFault(memtransport.Refuse)
			trb.SetFault(memtransport.Refuse)
			e.advanceUntil(250*time.Millisecond, 60*time.Second, func() bool { return e.clock.NowMs() > deadline+10000 })
			back := e.clock.NowMs()
			trb.SetFault(memtransport.Healthy)
			e.advanceUntil(250*time.Millisecond, 30*time.Second, func() bool { return e.clock.NowMs() > back+20000 })
			if b.count(coord.TermStarted) != 0 {
				t.Fatalf("b challenged %d ms after it was back, within the holder's lease", b.last(coord.TermStarted).At.UnixMilli()-back)
			}
			if !holderBack {
				e.advanceUntil(250*time.Millisecond, 30*time.Second, func() bool { return b.count(coord.TermStarted) == 1 })
				if at := b.last(coord.TermStarted).At.UnixMilli(); at < back+30000 {
					t.Fatalf("b took over %d ms after it was back, before one lease", at-back)
				}
				return
			}
			tra.SetFault(memtransport.Healthy)
			waitFor(t, "a's renewal", func() bool {
				e.clock.Advance(100 * time.Millisecond)
				time.Sleep(10 * time.Millisecond)
				return a.count(coord.TermRecovered) == 1
			})
			if tok := a.last(coord.TermRecovered).Token; tok != started.Token {
				t.Fatalf("a resumed under %s, won under %s", tok, started.Token)
			}
			e.advanceUntil(250*time.Millisecond, 60*time.Second, func() bool { return e.clock.NowMs() > back+60000 })
			if b.count(coord.TermStarted) != 0 || a.count(coord.TermStopped) != 0 {
				t.Fatalf("b started %d, a stopped %d", b.count(coord.TermStarted), a.count(coord.TermStopped))
			}
		})
	}
}
