package coord_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/coord/healthz"
	"github.com/krabka/krabka-coord/core/memtransport"
)

// Broker-free tests of the lease-at-risk events and of the elector, on the
// in-memory transport with a manual clock (lease 30 s, renew 10 s: the
// default risk margin is (30 - 10) / 2 = 10 s).

func TestRiskMarginConfig(t *testing.T) {
	c := coord.DefaultConfig()
	if got := c.RiskMargin(); got != 10*time.Second {
		t.Fatalf("default risk margin %v, want (30 s - 10 s) / 2", got)
	}
	if err := c.Set("krabka.lease.ms", "6000"); err != nil {
		t.Fatal(err)
	}
	if err := c.Set("krabka.renew.interval.ms", "2000"); err != nil {
		t.Fatal(err)
	}
	if got := c.RiskMargin(); got != 2*time.Second {
		t.Fatalf("risk margin of a 6 s lease renewed at 2 s: %v", got)
	}
	if err := c.Set("krabka.lease.risk.margin.ms", "1500"); err != nil || c.RiskMargin() != 1500*time.Millisecond {
		t.Fatalf("set 1500: %v %v", err, c.RiskMargin())
	}
	setRefused(t, &c, "krabka.lease.risk.margin.ms", "-1", "soon", "1.5")
	// A margin that reaches back to the renewal instant would put every
	// renewal at risk: refused, naming the key and the bound.
	_, err := coord.ConfigFromMap(map[string]string{"bootstrap.servers": "h:1", "krabka.lease.ms": "6000",
		"krabka.renew.interval.ms": "2000", "krabka.lease.risk.margin.ms": "4000"})
	if !errors.Is(err, coord.ErrInvalidConfig) || !strings.Contains(err.Error(), "krabka.lease.risk.margin.ms") || !strings.Contains(err.Error(), "4000") {
		t.Fatalf("margin = lease - renew: %v", err)
	}
	if _, err := coord.ConfigFromMap(map[string]string{"bootstrap.servers": "h:1", "krabka.lease.ms": "6000",
		"krabka.renew.interval.ms": "2000", "krabka.lease.risk.margin.ms": "3999"}); err != nil {
		t.Fatalf("margin just below lease - renew: %v", err)
	}
}

// setRefused checks that c refuses every bad value of key, naming the key.
func setRefused(t *testing.T, c *coord.Config, key string, bad ...string) {
	t.Helper()
	for _, v := range bad {
		if err := c.Set(key, v); !errors.Is(err, coord.ErrInvalidConfig) || !strings.Contains(err.Error(), key) {
			t.Errorf("%q: %v", v, err)
		}
	}
}

// nextEvent reads one leadership event or fails.
func nextEvent(t *testing.T, ch <-chan coord.LeadershipEvent, what string) coord.LeadershipEvent {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatalf("%s: the subscription closed", what)
		}
		return ev
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: no event", what)
	}
	panic("unreachable")
}

// Refused renewals: AT_RISK when the deadline is 10 s away, RECOVERED when a
// renewal gets through, and nothing ends.
func TestLeaseAtRiskThenRecovered(t *testing.T) {
	e := newEnv(t)
	c, tr := e.client("krabka.renew.background", "true")
	t.Cleanup(func() { tr.SetFault(memtransport.Healthy) }) // before the client closes
	l, err := c.Acquire(bg(), role, ma)
	if err != nil {
		t.Fatal(err)
	}
	evs := l.Events(bg())
	tr.SetFault(memtransport.Refuse)
	// Renewals fall due at +10 s and fail; the lease is at risk from +20 s.
	e.advanceUntil(500*time.Millisecond, 25*time.Second, func() bool { return l.AtRisk() })
	if now := e.clock.NowMs(); now < t0+20000 {
		t.Fatalf("at risk at +%d ms, before deadline - margin", now-t0)
	}
	ev := nextEvent(t, evs, "at risk")
	if ev.Kind != coord.LeadershipAtRisk || ev.Deadline.UnixMilli() != t0+30000 || ev.At.UnixMilli() < t0+20000 {
		t.Fatalf("event %+v", ev)
	}
	// A late subscriber starts with the current level.
	late := l.Events(bg())
	if ev := nextEvent(t, late, "late subscriber"); ev.Kind != coord.LeadershipAtRisk || ev.Deadline.UnixMilli() != t0+30000 {
		t.Fatalf("late subscriber's first event %+v", ev)
	}
	tr.SetFault(memtransport.Healthy)
	e.advanceUntil(100*time.Millisecond, 5*time.Second, func() bool { return !l.AtRisk() })
	ev = nextEvent(t, evs, "recovered")
	if ev.Kind != coord.LeadershipRecovered || ev.Deadline.UnixMilli() <= t0+30000 || ev.Deadline != time.UnixMilli(l.Lease().Deadline) {
		t.Fatalf("event %+v (lease %+v)", ev, l.Lease())
	}
	if l.State() != coord.Active {
		t.Fatalf("state %s", l.State())
	}
	l.Close()
	ev = nextEvent(t, evs, "ended")
	if ev.Kind != coord.LeadershipEnded || ev.State != coord.Closed || !errors.Is(ev.Err, coord.ErrNotLeader) {
		t.Fatalf("event %+v", ev)
	}
	if _, ok := <-evs; ok {
		t.Fatal("the subscription stays open after ENDED")
	}
	// The late one got RECOVERED and ENDED too.
	if a, b := nextEvent(t, late, "late recovered"), nextEvent(t, late, "late ended"); a.Kind != coord.LeadershipRecovered || b.Kind != coord.LeadershipEnded {
		t.Fatalf("late subscriber: %s, %s", a.Kind, b.Kind)
	}
	// After the end: ENDED only, then closed.
	after := l.Events(bg())
	if ev := nextEvent(t, after, "after the end"); ev.Kind != coord.LeadershipEnded || ev.State != coord.Closed {
		t.Fatalf("after the end: %+v", ev)
	}
	if _, ok := <-after; ok {
		t.Fatal("open after ENDED")
	}
}

// A black-holed renewal hangs until the deadline: AT_RISK comes the margin
// before it, then the leadership ends EXPIRED.
func TestLeaseAtRiskBeforeExpired(t *testing.T) {
	e := newEnv(t)
	c, tr := e.client("krabka.renew.background", "true")
	t.Cleanup(func() { tr.SetFault(memtransport.Healthy) }) // before the client closes
	l, err := c.Acquire(bg(), role, ma)
	if err != nil {
		t.Fatal(err)
	}
	evs := l.Events(bg())
	tr.SetFault(memtransport.BlackHole)
	e.advanceUntil(500*time.Millisecond, 40*time.Second, func() bool { return l.State() != coord.Active })
	a, b := nextEvent(t, evs, "at risk"), nextEvent(t, evs, "ended")
	if a.Kind != coord.LeadershipAtRisk || b.Kind != coord.LeadershipEnded || b.State != coord.Expired {
		t.Fatalf("events %s, %s (%s)", a.Kind, b.Kind, b.State)
	}
	lead := a.Deadline.Sub(a.At)
	t.Logf("at risk %v before the deadline (margin 10 s, clock steps of 500 ms)", lead)
	if lead <= 0 || lead > 10*time.Second || !a.At.Before(b.At) {
		t.Fatalf("at risk at %v, deadline %v, ended at %v", a.At, a.Deadline, b.At)
	}
}

// A subscription whose context ends is closed without ENDED; the others go on.
func TestLeadershipEventsContextEndsSubscription(t *testing.T) {
	e := newEnv(t)
	c, _ := e.client()
	l, _ := c.Acquire(bg(), role, ma)
	ctx, cancel := context.WithCancel(bg())
	sub := l.Events(ctx)
	keep := l.Events(bg())
	cancel()
	select {
	case _, ok := <-sub:
		if ok {
			t.Fatal("an event after the subscription's context ended")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("subscription not closed when its context ended")
	}
	l.Close()
	if ev := nextEvent(t, keep, "other subscription"); ev.Kind != coord.LeadershipEnded {
		t.Fatalf("%+v", ev)
	}
}

// ---- the elector ----

// recorder runs an elector in the event form and keeps its events.
type recorder struct {
	t    *testing.T
	name string
	e    *coord.Elector
	mu   sync.Mutex
	evs  []coord.TermEvent
	run  chan error
	read chan struct{} // closed when the events are exhausted
}

func runElector(t *testing.T, name string, c *coord.Client, ctx context.Context, m core.MemberID, opts ...coord.ElectOption) *recorder {
	t.Helper()
	el, err := coord.NewElector(c, role, m, opts...)
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{t: t, name: name, e: el, run: make(chan error, 1), read: make(chan struct{})}
	go func() { r.run <- el.Run(ctx) }()
	go func() {
		defer close(r.read)
		for {
			ev, err := el.Next(bg())
			if err != nil {
				return
			}
			r.mu.Lock()
			r.evs = append(r.evs, ev)
			r.mu.Unlock()
		}
	}()
	return r
}

func (r *recorder) events() []coord.TermEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]coord.TermEvent(nil), r.evs...)
}

// count returns how many events of kind k were seen.
func (r *recorder) count(k coord.TermEventKind) int {
	n := 0
	for _, ev := range r.events() {
		if ev.Kind == k {
			n++
		}
	}
	return n
}

func (r *recorder) last(k coord.TermEventKind) coord.TermEvent {
	evs := r.events()
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Kind == k {
			return evs[i]
		}
	}
	return coord.TermEvent{}
}

// checkPairing asserts the guarantees on a recorded event log: terms
// numbered 1, 2, ... in order, each STARTED followed by exactly one STOPPED
// of the same term before the next STARTED, AT_RISK and RECOVERED only
// inside a term, and the term context done when STOPPED is seen.
func checkPairing(t *testing.T, name string, evs []coord.TermEvent, wantClosed bool) {
	t.Helper()
	var open uint64
	var last uint64
	for i, ev := range evs {
		switch ev.Kind {
		case coord.TermStarted:
			if open != 0 {
				t.Fatalf("%s: event %d: STARTED of term %d while term %d is open", name, i, ev.Term, open)
			}
			if ev.Term != last+1 || ev.Leadership == nil || ev.Context == nil {
				t.Fatalf("%s: event %d: STARTED %+v after term %d", name, i, ev, last)
			}
			open, last = ev.Term, ev.Term
		case coord.TermStopped:
			if ev.Term != open || ev.Term == 0 {
				t.Fatalf("%s: event %d: STOPPED of term %d, open %d", name, i, ev.Term, open)
			}
			if ev.Context.Err() == nil {
				t.Fatalf("%s: event %d: the term context of term %d is not done at STOPPED", name, i, ev.Term)
			}
			if ev.Reason < coord.StopFenced || ev.Reason > coord.StopLostAtRisk || ev.Err == nil {
				t.Fatalf("%s: event %d: STOPPED without a reason or error: %+v", name, i, ev)
			}
			open = 0
		case coord.TermElectorStopped:
			if open != 0 || i != len(evs)-1 {
				t.Fatalf("%s: event %d of %d: ELECTOR_STOPPED with term %d open or not last", name, i, len(evs), open)
			}
		case coord.TermAtRisk, coord.TermRecovered, coord.TermSuspended:
			if ev.Term != open || open == 0 {
				t.Fatalf("%s: event %d: %s of term %d outside it (open %d)", name, i, ev.Kind, ev.Term, open)
			}
		case coord.TermNewLeader:
			if ev.Term != 0 || ev.Holder.IsZero() {
				t.Fatalf("%s: event %d: %+v", name, i, ev)
			}
		default:
			t.Fatalf("%s: event %d: kind %v", name, i, ev.Kind)
		}
	}
	if wantClosed && open != 0 {
		t.Fatalf("%s: term %d never stopped", name, open)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func describe(t *testing.T, c *coord.Client) *coord.Status {
	t.Helper()
	st, err := c.Describe(bg(), role)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func rosterNames(st *coord.Status) []string {
	var out []string
	for _, r := range st.Roster {
		out = append(out, r.Member.String())
	}
	return out
}

// Two electors: one leads, the other waits; cancelling the leader's context
// resigns (STOPPED RESIGNED, Run returns nil) and the standby takes over
// without the clock moving.
func TestElectorCancelResignsAndStandbyTakesOver(t *testing.T) {
	e := newEnv(t)
	ca, _ := e.client()
	cb, _ := e.client()
	ctxA, cancelA := context.WithCancel(bg())
	defer cancelA()
	a := runElector(t, "a", ca, ctxA, ma)
	waitFor(t, "a's term", func() bool { return a.count(coord.TermStarted) == 1 })
	b := runElector(t, "b", cb, bg(), mb)
	waitFor(t, "b registered", func() bool { return len(describe(t, cb).Roster) == 2 })
	if h := b.e.Healthy(); h != nil {
		t.Fatalf("a standby is healthy: %v", h)
	}
	if h := a.e.Healthy(); h != nil {
		t.Fatalf("a holder renewing on time is healthy: %v", h)
	}
	now := e.clock.NowMs()
	cancelA()
	if err := <-a.run; err != nil {
		t.Fatalf("Run after its context ended: %v", err)
	}
	<-a.read
	stop := a.last(coord.TermStopped)
	if stop.Reason != coord.StopResigned || !errors.Is(stop.Err, coord.ErrNotLeader) {
		t.Fatalf("a stopped %s %v", stop.Reason, stop.Err)
	}
	// RESIGNED, or FENCED when b's lease reached a's view before the
	// leadership recorded its own resignation (memtransport is instant).
	if st := a.last(coord.TermStarted).Leadership.State(); st != coord.Resigned && st != coord.Fenced {
		t.Fatalf("a's leadership %s", st)
	}
	checkPairing(t, "a", a.events(), true)
	waitFor(t, "b's term", func() bool { return b.count(coord.TermStarted) == 1 })
	if e.clock.NowMs() != now {
		t.Fatal("the clock moved")
	}
	if a.e.Healthy() == nil {
		t.Fatal("a stopped elector is healthy")
	}
	waitFor(t, "b sees itself as the new leader", func() bool {
		nl := b.last(coord.TermNewLeader)
		return nl.Holder == mb && nl.Token == b.last(coord.TermStarted).Token
	})
	checkPairing(t, "b", b.events(), false)
}

// Closing the holder's client (a kill): its term stops CLOSED, its Run ends
// ErrClosed, and the standby takes over at the lease deadline.
func TestElectorClientCloseStopsTermAndStandbyWinsAtDeadline(t *testing.T) {
	e := newEnv(t)
	ca, _ := e.client()
	cb, _ := e.client()
	a := runElector(t, "a", ca, bg(), ma)
	waitFor(t, "a's term", func() bool { return a.count(coord.TermStarted) == 1 })
	b := runElector(t, "b", cb, bg(), mb)
	waitFor(t, "b registered", func() bool { return len(describe(t, cb).Roster) == 2 })
	deadline := a.last(coord.TermStarted).Deadline.UnixMilli()
	ca.Close()
	if err := <-a.run; !errors.Is(err, coord.ErrClosed) {
		t.Fatalf("Run after the client closed: %v", err)
	}
	<-a.read
	if stop := a.last(coord.TermStopped); stop.Reason != coord.StopClosed || !errors.Is(stop.Err, coord.ErrClosed) {
		t.Fatalf("a stopped %s %v", stop.Reason, stop.Err)
	}
	checkPairing(t, "a", a.events(), true)
	e.advanceUntil(250*time.Millisecond, 40*time.Second, func() bool { return b.count(coord.TermStarted) == 1 })
	if now := e.clock.NowMs(); now < deadline {
		t.Fatalf("b won at %d, before a's deadline %d", now, deadline)
	}
}

// A black-holed holder: AT_RISK at deadline - 10 s, its term stops
// LOST_AT_RISK at deadline - 5 s (the default stop margin, half the risk
// margin) with the leadership closed, before the deadline; healed, it
// campaigns again and, nobody else being there, wins term 2.
func TestElectorLostAtRiskBeforeDeadlineThenCampaignsAgain(t *testing.T) {
	e := newEnv(t)
	c, tr := e.client()
	t.Cleanup(func() { tr.SetFault(memtransport.Healthy) }) // before the client closes
	a := runElector(t, "a", c, bg(), ma)
	waitFor(t, "a's term", func() bool { return a.count(coord.TermStarted) == 1 })
	deadline := a.last(coord.TermStarted).Deadline.UnixMilli()
	tr.SetFault(memtransport.BlackHole)
	e.advanceUntil(250*time.Millisecond, 40*time.Second, func() bool { return a.count(coord.TermStopped) == 1 })
	risk, stop := a.last(coord.TermAtRisk), a.last(coord.TermStopped)
	if risk.Term != 1 || risk.Deadline.UnixMilli() != deadline {
		t.Fatalf("at risk %+v (deadline %d)", risk, deadline)
	}
	if stop.Reason != coord.StopLostAtRisk || !errors.Is(stop.Err, coord.ErrLeaseExpired) || !strings.Contains(stop.Err.Error(), "at risk") {
		t.Fatalf("stopped %s %v", stop.Reason, stop.Err)
	}
	if at := stop.At.UnixMilli(); at < deadline-5000 || at >= deadline {
		t.Fatalf("stopped at deadline%+d ms, want within the last 5 s before it", at-deadline)
	}
	if got := risk.At.UnixMilli(); got < deadline-10000 || got > stop.At.UnixMilli() {
		t.Fatalf("at risk at deadline%+d ms", got-deadline)
	}
	if st := stop.Leadership.State(); st != coord.Closed {
		t.Fatalf("leadership after a loss at risk: %s", st)
	}
	if cause := context.Cause(stop.Context); !errors.Is(cause, coord.ErrLeaseExpired) {
		t.Fatalf("term context cause %v", cause)
	}
	tr.SetFault(memtransport.Healthy)
	e.advanceUntil(250*time.Millisecond, 40*time.Second, func() bool { return a.count(coord.TermStarted) == 2 })
	if tok := a.last(coord.TermStarted).Token; !tok.Supersedes(stop.Token) {
		t.Fatalf("term 2 token %s does not supersede %s", tok, stop.Token)
	}
	checkPairing(t, "a", a.events(), false)
}

// expiredWithoutRecampaign runs "a"'s elector with ElectStopMargin(0) and
// ElectRecampaign(false), cuts its links (a black hole) once it holds, and
// advances the clock until Run returns, which must be with ErrLeaseExpired.
// Every event is read when it returns.
func expiredWithoutRecampaign(t *testing.T) *recorder {
	t.Helper()
	e := newEnv(t)
	c, tr := e.client()
	t.Cleanup(func() { tr.SetFault(memtransport.Healthy) }) // before the client closes
	a := runElector(t, "a", c, bg(), ma, coord.ElectStopMargin(0), coord.ElectRecampaign(false))
	waitFor(t, "a's term", func() bool { return a.count(coord.TermStarted) == 1 })
	tr.SetFault(memtransport.BlackHole)
	e.advanceUntil(250*time.Millisecond, 40*time.Second, func() bool { return len(a.run) > 0 })
	if err := <-a.run; !errors.Is(err, coord.ErrLeaseExpired) {
		t.Fatalf("Run: %v", err)
	}
	<-a.read
	return a
}

// With ElectStopMargin(0) the term lasts until the leadership ends EXPIRED,
// after AT_RISK; with ElectRecampaign(false) Run then returns that error.
func TestElectorStopMarginZeroEndsExpiredAndNoRecampaign(t *testing.T) {
	a := expiredWithoutRecampaign(t)
	kinds := []string{}
	for _, ev := range a.events() {
		if ev.Kind != coord.TermNewLeader {
			kinds = append(kinds, ev.Kind.String())
		}
	}
	if strings.Join(kinds, ",") != "STARTED,AT_RISK,STOPPED,ELECTOR_STOPPED" || a.last(coord.TermStopped).Reason != coord.StopExpired {
		t.Fatalf("events %v, stopped %s", kinds, a.last(coord.TermStopped).Reason)
	}
}

// A fence: the holder's term stops FENCED, it campaigns again and lands at
// the tail behind the standby, which takes over at once.
func TestElectorRecampaignsAfterFence(t *testing.T) {
	e := newEnv(t)
	ca, _ := e.client()
	cb, _ := e.client()
	cf, _ := e.client()
	a := runElector(t, "a", ca, bg(), ma)
	waitFor(t, "a's term", func() bool { return a.count(coord.TermStarted) == 1 })
	b := runElector(t, "b", cb, bg(), mb)
	waitFor(t, "b registered", func() bool { return len(describe(t, cb).Roster) == 2 })
	if _, err := cf.Fence(bg(), role, "unit test", nil); err != nil {
		t.Fatal(err)
	}
	e.advanceUntil(50*time.Millisecond, 10*time.Second, func() bool {
		return a.count(coord.TermStopped) == 1 && b.count(coord.TermStarted) == 1 && len(describe(t, cf).Roster) == 2
	})
	if stop := a.last(coord.TermStopped); stop.Reason != coord.StopFenced || !errors.Is(stop.Err, coord.ErrFenced) {
		t.Fatalf("a stopped %s %v", stop.Reason, stop.Err)
	}
	if got := rosterNames(describe(t, cf)); strings.Join(got, ",") != "node-b,node-a" {
		t.Fatalf("roster after the fence %v, want b then a (a at the tail)", got)
	}
	checkPairing(t, "a", a.events(), false)
	checkPairing(t, "b", b.events(), false)
}

// A term fenced by a blind successor (a mint without a lease) stops FENCED
// and the elector waits out its backoff on the manual clock; closing the
// client then ends Run with ErrClosed at once, though nobody advances the
// clock (before the fix the backoff held the loop until the clock moved).
func TestElectorClientCloseEndsBackoffOnAStoppedClock(t *testing.T) {
	e := newEnv(t)
	ca, _ := e.client()
	a := runElector(t, "a", ca, bg(), ma, coord.ElectBackoff(time.Minute, time.Minute))
	waitFor(t, "a's term", func() bool { return a.count(coord.TermStarted) == 1 })
	l := a.last(coord.TermStarted).Leadership
	if _, err := e.cluster.Transport(e.config().Topic).Mint(bg(), ca.TransactionalID(role), time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Produce(bg(), coord.Message{Topic: "commands", Partition: 0, Value: []byte("x")}); !errors.Is(err, coord.ErrFenced) {
		t.Fatalf("produce after the blind mint: %v", err)
	}
	waitFor(t, "a's term stopped", func() bool { return a.count(coord.TermStopped) == 1 })
	ca.Close()
	select {
	case err := <-a.run:
		if !errors.Is(err, coord.ErrClosed) {
			t.Fatalf("Run after the client closed: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after Client.Close while the elector backed off on a stopped manual clock")
	}
}

// Eligibility: a standby withdrawn leaves the roster, restored it comes
// back at the tail; a holder withdrawn resigns and the standby takes over.
func TestElectorEligibility(t *testing.T) {
	e := newEnv(t)
	ca, _ := e.client()
	cb, _ := e.client()
	cc, _ := e.client()
	a := runElector(t, "a", ca, bg(), ma)
	waitFor(t, "a's term", func() bool { return a.count(coord.TermStarted) == 1 })
	b := runElector(t, "b", cb, bg(), mb)
	waitFor(t, "b registered", func() bool { return len(describe(t, cb).Roster) == 2 })
	c := runElector(t, "c", cc, bg(), mc)
	waitFor(t, "c registered", func() bool { return len(describe(t, cc).Roster) == 3 })

	if err := b.e.SetEligible(bg(), false); err != nil {
		t.Fatal(err)
	}
	if got := rosterNames(describe(t, ca)); strings.Join(got, ",") != "node-a,node-c" {
		t.Fatalf("roster with b withdrawn: %v", got)
	}
	if b.e.Eligible() || b.e.Healthy() != nil {
		t.Fatalf("withdrawn b: eligible %v, healthy %v", b.e.Eligible(), b.e.Healthy())
	}
	if err := b.e.SetEligible(bg(), true); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "b back", func() bool { return len(describe(t, ca).Roster) == 3 })
	if got := rosterNames(describe(t, ca)); strings.Join(got, ",") != "node-a,node-c,node-b" {
		t.Fatalf("roster with b back: %v, want b at the tail", got)
	}
	// The holder withdraws: it resigns, c (first standby now) takes over at
	// once, a is out of the roster.
	if err := a.e.SetEligible(bg(), false); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a's STOPPED", func() bool { return a.count(coord.TermStopped) == 1 })
	if stop := a.last(coord.TermStopped); stop.Reason != coord.StopResigned {
		t.Fatalf("a stopped %s %v", stop.Reason, stop.Err)
	}
	waitFor(t, "c's term", func() bool { return c.count(coord.TermStarted) == 1 })
	if got := rosterNames(describe(t, ca)); strings.Join(got, ",") != "node-c,node-b" {
		t.Fatalf("roster after a withdrew: %v", got)
	}
	if b.count(coord.TermStarted) != 0 {
		t.Fatal("b won although c ranked ahead")
	}
	if err := a.e.SetEligible(bg(), true); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a back", func() bool { return len(describe(t, ca).Roster) == 3 })
	if got := rosterNames(describe(t, ca)); strings.Join(got, ",") != "node-c,node-b,node-a" {
		t.Fatalf("roster with a back: %v", got)
	}
	if a.count(coord.TermStarted) != 1 {
		t.Fatal("a took the role back")
	}
	checkPairing(t, "a", a.events(), false)
}

// The elector waits with its next campaign until the last STOPPED was
// taken.
func TestElectorWaitsForStoppedToBeTaken(t *testing.T) {
	e := newEnv(t)
	c, _ := e.client()
	el, err := coord.NewElector(c, role, ma)
	if err != nil {
		t.Fatal(err)
	}
	go el.Run(bg())
	var ev coord.TermEvent
	for ev.Kind != coord.TermStarted {
		if ev, err = el.Next(bg()); err != nil {
			t.Fatal(err)
		}
	}
	ev.Leadership.Close() // the owner closes it: a loss, the elector campaigns again
	for ev.Kind != coord.TermStopped {
		if ev, err = el.Next(bg()); err != nil {
			t.Fatal(err)
		}
	}
	if ev.Reason != coord.StopClosed || !errors.Is(ev.Err, coord.ErrNotLeader) {
		t.Fatalf("stopped %s %v", ev.Reason, ev.Err)
	}
	// STOPPED was taken: term 2 follows (after the 100 ms backoff).
	e.advanceUntil(50*time.Millisecond, 5*time.Second, func() bool { return el.Term() == 2 })
	// Do not take term 2's STOPPED: no term 3 however long we wait.
	for ev.Kind != coord.TermStarted {
		if ev, err = el.Next(bg()); err != nil {
			t.Fatal(err)
		}
	}
	ev.Leadership.Close()
	for i := 0; i < 20; i++ {
		e.clock.Advance(time.Second)
		time.Sleep(2 * time.Millisecond)
	}
	if el.Term() != 2 {
		t.Fatalf("term %d began before term 2's STOPPED was taken", el.Term())
	}
}

// With ElectManualRelease, taking STOPPED is not enough: the next term
// waits for Release.
func TestElectorManualRelease(t *testing.T) {
	e := newEnv(t)
	c, _ := e.client()
	el, err := coord.NewElector(c, role, ma, coord.ElectManualRelease(), coord.ElectBackoff(time.Millisecond, time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	go el.Run(bg())
	var ev coord.TermEvent
	for ev.Kind != coord.TermStarted {
		if ev, err = el.Next(bg()); err != nil {
			t.Fatal(err)
		}
	}
	ev.Leadership.Close()
	for ev.Kind != coord.TermStopped {
		if ev, err = el.Next(bg()); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 20; i++ {
		e.clock.Advance(time.Second)
		time.Sleep(2 * time.Millisecond)
	}
	if el.Term() != 1 {
		t.Fatalf("term %d began before Release(1)", el.Term())
	}
	el.Release(ev.Term)
	e.advanceUntil(10*time.Millisecond, 5*time.Second, func() bool { return el.Term() == 2 })
}

// callbackLog records the callbacks of one RunWithCallbacks, checking
// that OnStopped never overlaps OnStarted.
type callbackLog struct {
	mu      sync.Mutex
	lines   []string
	inStart int
	bad     []string
}

func (c *callbackLog) add(s string) {
	c.mu.Lock()
	c.lines = append(c.lines, s)
	c.mu.Unlock()
}

func (c *callbackLog) get() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.lines...)
}

// The callbacks pair up: OnStopped after OnStarted returned, never
// concurrently, and the next OnStarted only after OnStopped returned (a
// slow OnStopped holds the next term back).
func TestElectCallbacksPairAndDoNotOverlap(t *testing.T) {
	e := newEnv(t)
	c, _ := e.client()
	log := &callbackLog{}
	ctx, cancel := context.WithCancel(bg())
	defer cancel()
	var terms sync.WaitGroup
	terms.Add(3)
	res := make(chan error, 1)
	go func() {
		res <- coord.Elect(ctx, c, role, ma, coord.Callbacks{
			OnStarted: func(tctx context.Context, l *coord.Leadership) {
				log.mu.Lock()
				log.inStart++
				log.lines = append(log.lines, "started "+l.Token().String())
				log.mu.Unlock()
				l.Close() // lose the term at once
				<-tctx.Done()
				time.Sleep(20 * time.Millisecond) // slow to stop
				log.mu.Lock()
				log.inStart--
				log.lines = append(log.lines, "started returned")
				log.mu.Unlock()
			},
			OnStopped: func(reason coord.StopReason, err error) {
				log.mu.Lock()
				if log.inStart != 0 {
					log.bad = append(log.bad, "OnStopped while OnStarted runs")
				}
				log.mu.Unlock()
				log.add("stopped " + reason.String())
				time.Sleep(30 * time.Millisecond) // slow OnStopped
				log.add("stopped returned")
				terms.Done()
			},
			OnNewLeader: func(holder core.MemberID, token core.FencingToken) {},
		}, coord.ElectBackoff(time.Millisecond, time.Millisecond))
	}()
	done := make(chan struct{})
	go func() { terms.Wait(); close(done) }()
	for stop := false; !stop; {
		select {
		case <-done:
			stop = true
		case <-time.After(5 * time.Millisecond):
			e.clock.Advance(10 * time.Millisecond)
		}
	}
	cancel()
	if err := <-res; err != nil {
		t.Fatal(err)
	}
	lines := log.get()
	if len(log.bad) > 0 {
		t.Fatalf("%v in %v", log.bad, lines)
	}
	// started, started returned, stopped, stopped returned, per term.
	for i := 0; i+3 < len(lines) && i < 12; i += 4 {
		if !strings.HasPrefix(lines[i], "started ") || lines[i+1] != "started returned" || lines[i+2] != "stopped CLOSED" || lines[i+3] != "stopped returned" {
			t.Fatalf("callback order at %d: %v", i, lines)
		}
	}
	if len(lines) < 12 || len(lines)%4 != 0 {
		t.Fatalf("callbacks %v", lines)
	}
}

// A panic in a callback: the role is resigned (the standby takes over at
// once), OnStopped pairs the started term with RESIGNED and the
// *CallbackPanic, and Elect panics with it on the caller's goroutine.
func TestElectPanicResignsThenRepanics(t *testing.T) {
	for _, where := range []string{"OnStarted", "OnNewLeader", "OnStopped"} {
		t.Run(where, func(t *testing.T) {
			e := newEnv(t)
			ca, _ := e.client()
			cb, _ := e.client()
			started := make(chan *coord.Leadership, 1)
			var stops []string
			var stopErr error
			boom := fmt.Errorf("boom in %s", where)
			res := make(chan any, 1)
			go func() {
				defer func() { res <- recover() }()
				_ = coord.Elect(bg(), ca, role, ma, coord.Callbacks{
					OnStarted: func(tctx context.Context, l *coord.Leadership) {
						started <- l
						if where == "OnStarted" {
							panic(boom)
						}
						<-tctx.Done()
					},
					OnStopped: func(reason coord.StopReason, err error) {
						stops = append(stops, reason.String())
						stopErr = err
						if where == "OnStopped" {
							panic(boom)
						}
					},
					OnNewLeader: func(holder core.MemberID, token core.FencingToken) {
						if where == "OnNewLeader" && holder == ma {
							panic(boom)
						}
					},
				})
			}()
			var l *coord.Leadership
			if where != "OnNewLeader" {
				// (OnNewLeader naming a may come before its STARTED: then
				// the term is never announced.)
				select {
				case l = <-started:
				case <-time.After(5 * time.Second):
					t.Fatal("a never started")
				}
			}
			if where == "OnStopped" {
				l.Close() // end the term: OnStopped panics
			}
			var got any
			select {
			case got = <-res:
			case <-time.After(10 * time.Second):
				t.Fatal("Elect did not return or panic")
			}
			p, ok := got.(*coord.CallbackPanic)
			if !ok || p.Callback != where || !errors.Is(p, boom) || len(p.Stack) == 0 {
				t.Fatalf("Elect panicked with %#v", got)
			}
			nStarted := 0
			if l != nil {
				nStarted = 1
			}
			if len(started) > 0 {
				l = <-started
				nStarted++
			}
			if l != nil && l.State() == coord.Active {
				t.Fatal("the leadership is left running after the panic")
			}
			if len(stops) != nStarted {
				t.Fatalf("OnStarted called %d times, OnStopped %d", nStarted, len(stops))
			}
			if where == "OnStopped" {
				b := runElector(t, "b", cb, bg(), mb)
				if stops[0] != "CLOSED" {
					t.Fatalf("stopped %v", stops)
				}
				// a closed without resigning: b takes over at a's deadline.
				e.advanceUntil(250*time.Millisecond, 40*time.Second, func() bool { return b.count(coord.TermStarted) == 1 })
				return
			}
			var sp *coord.CallbackPanic
			if nStarted == 1 && (stops[0] != "RESIGNED" || !errors.As(stopErr, &sp) || sp != p) {
				t.Fatalf("stopped %v %v, leadership %s", stops, stopErr, l.State())
			}
			// Resigned (announced or not): the lease is no longer live (read
			// before b starts, which would take it over at once) and b takes
			// over without the clock moving.
			if st := describe(t, ca); st.Lease == nil || st.Lease.LiveAt(e.clock.NowMs()) {
				t.Fatalf("a's lease after the panic: %+v", st.Lease)
			}
			b := runElector(t, "b", cb, bg(), mb)
			waitFor(t, "b's term", func() bool { return b.count(coord.TermStarted) == 1 })
		})
	}
}

func TestElectorBadInput(t *testing.T) {
	e := newEnv(t)
	c, _ := e.client()
	for name, opts := range map[string][]coord.ElectOption{
		"backoff":           {coord.ElectBackoff(0, time.Second)},
		"backoff order":     {coord.ElectBackoff(time.Second, time.Millisecond)},
		"negative margin":   {coord.ElectStopMargin(-time.Second)},
		"margin above risk": {coord.ElectStopMargin(11 * time.Second)},
		"too much metadata": {coord.ElectAcquireOptions(coord.WithMetadata(make([]byte, core.MaxMetadataBytes+1)))},
	} {
		if _, err := coord.NewElector(c, role, ma, opts...); !errors.Is(err, coord.ErrInvalidArgument) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := coord.NewElector(c, core.Role{}, ma); err == nil {
		t.Error("zero role accepted")
	}
	if _, err := coord.NewElector(nil, role, ma); !errors.Is(err, coord.ErrInvalidArgument) {
		t.Errorf("nil client: %v", err)
	}
	if err := coord.Elect(bg(), c, role, ma, coord.Callbacks{}); !errors.Is(err, coord.ErrInvalidArgument) || !strings.Contains(err.Error(), "OnStarted") {
		t.Errorf("no OnStarted: %v", err)
	}
	el, _ := coord.NewElector(c, role, ma)
	if el.Healthy() == nil {
		t.Error("healthy before Run")
	}
	ctx, cancel := context.WithCancel(bg())
	done := make(chan error, 1)
	go func() { done <- el.Run(ctx) }()
	waitFor(t, "running", func() bool { return el.Healthy() == nil })
	if err := el.Run(bg()); !errors.Is(err, coord.ErrInvalidArgument) {
		t.Errorf("second Run: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// The health endpoint: 200 while healthy, 503 with the reason while the
// held lease is at risk.
func TestHealthzHandler(t *testing.T) {
	e := newEnv(t)
	c, tr := e.client()
	t.Cleanup(func() { tr.SetFault(memtransport.Healthy) }) // before the client closes
	a := runElector(t, "a", c, bg(), ma, coord.ElectStopMargin(0))
	waitFor(t, "a's term", func() bool { return a.count(coord.TermStarted) == 1 })
	h := healthz.Handler(a.e)
	get := func() (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		return rec.Code, rec.Body.String()
	}
	if code, body := get(); code != 200 || body != "ok\n" {
		t.Fatalf("healthy: %d %q", code, body)
	}
	tr.SetFault(memtransport.Refuse)
	e.advanceUntil(250*time.Millisecond, 25*time.Second, func() bool { return a.count(coord.TermAtRisk) == 1 })
	if code, body := get(); code != 503 || !strings.Contains(body, "at risk") {
		t.Fatalf("at risk: %d %q", code, body)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/healthz", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Fatalf("POST: %d", rec.Code)
	}
	tr.SetFault(memtransport.Healthy)
	e.advanceUntil(100*time.Millisecond, 5*time.Second, func() bool { return a.count(coord.TermRecovered) == 1 })
	if code, _ := get(); code != 200 {
		t.Fatalf("recovered: %d", code)
	}
}
