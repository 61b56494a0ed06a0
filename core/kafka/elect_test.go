package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/kafka"
	"github.com/krabka/krabka-coord/tests/kafka/faultproxy"
	"github.com/krabka/krabka-coord/tests/kafka/kafkatest"
)

// The elector and the lease-at-risk events on real brokers. Every client of
// these tests reaches the brokers through fault proxies of its own
// (tests/kafka/faultproxy, one per broker address, put in by a dialer), so
// that a test can cut one member's links (silent, nothing closed: a pulled
// cable) while the others keep theirs.

// links is one client's set of fault proxies: the dialer routes every
// connection to broker address X through a proxy listening on a loopback
// port of its own and forwarding to X.
type links struct {
	mu      sync.Mutex
	proxies map[string]*faultproxy.Proxy
	cut     bool
}

func newLinks(t testing.TB) *links {
	l := &links{proxies: map[string]*faultproxy.Proxy{}}
	t.Cleanup(l.Close)
	return l
}

// Dial is a kgo dialer through the proxy of host (made on first use; a
// proxy made while the links are cut starts cut).
func (l *links) Dial(ctx context.Context, network, host string) (net.Conn, error) {
	l.mu.Lock()
	p, ok := l.proxies[host]
	if !ok {
		var err error
		if p, err = faultproxy.Listen("127.0.0.1:0", host); err != nil {
			l.mu.Unlock()
			return nil, err
		}
		if l.cut {
			p.Cut()
		}
		l.proxies[host] = p
	}
	l.mu.Unlock()
	var d net.Dialer
	return d.DialContext(ctx, network, p.Addr)
}

func (l *links) each(f func(*faultproxy.Proxy)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range l.proxies {
		f(p)
	}
}

// Cut stops forwarding on every link (connections stay open and silent).
func (l *links) Cut() {
	l.mu.Lock()
	l.cut = true
	l.mu.Unlock()
	l.each((*faultproxy.Proxy).Cut)
}

// Heal resumes forwarding.
func (l *links) Heal() {
	l.mu.Lock()
	l.cut = false
	l.mu.Unlock()
	l.each((*faultproxy.Proxy).Heal)
}

func (l *links) Close() { l.each(func(p *faultproxy.Proxy) { p.Close() }) }

// linkedClient is a client whose every connection goes through px.
func linkedClient(t testing.TB, bootstrap string, px *links, kv ...string) *coord.Client {
	t.Helper()
	c, err := kafka.NewClient(testConfig(t, bootstrap, kv...), kafka.WithDialer(px.Dial))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		px.Heal() // a client closes quickly only when it can reach the brokers
		c.Close()
	})
	return c
}

// loadAverage returns /proc/loadavg's first three figures.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// percentiles formats n, min, p50, p90 and max of ms.
func percentiles(ms []int64) string {
	if len(ms) == 0 {
		return "n=0"
	}
	s := slices.Clone(ms)
	slices.Sort(s)
	at := func(q float64) int64 { return s[int(q*float64(len(s)-1)+0.5)] }
	return fmt.Sprintf("n=%d min=%d p50=%d p90=%d max=%d ms", len(s), s[0], at(0.5), at(0.9), s[len(s)-1])
}

// With the link cut, the holder's renewals hang: AT_RISK comes before the
// leadership ends EXPIRED, the risk margin before the deadline. The lead
// time (deadline - AT_RISK instant) is measured over several runs.
func TestLeaseAtRiskBeforeExpiredOnCutLink(t *testing.T) {
	const runs = 8
	margin := time.Duration(leaseMs-renewMs) / 2 * time.Millisecond
	eachTV(t, func(t *testing.T, c *kafkatest.Cluster) {
		var leads, ends []int64
		kv := []string{"krabka.renew.background", "true"}
		for i := 0; i < runs; i++ {
			px := newLinks(t)
			cl := linkedClient(t, c.Bootstrap, px, kv...)
			if m := cl.Config().RiskMargin(); m != margin {
				t.Fatalf("risk margin %v, want (%d - %d) / 2 ms", m, leaseMs, renewMs)
			}
			role := core.MustRole(uniq("it-risk-"))
			l := acquire(t, cl, role, "m1")
			evs := l.Events(ctxFor(t, 30*time.Second))
			// Cut just after a renewal, as a link would fail at any time.
			renewed := l.Lease().Deadline
			for l.Lease().Deadline == renewed {
				time.Sleep(5 * time.Millisecond)
			}
			px.Cut()
			var risk, end coord.LeadershipEvent
			for ev := range evs {
				switch ev.Kind {
				case coord.LeadershipAtRisk:
					risk = ev
				case coord.LeadershipRecovered:
					t.Fatalf("run %d: RECOVERED with the link cut: %+v", i, ev)
				case coord.LeadershipEnded:
					end = ev
				}
			}
			if risk.Kind != coord.LeadershipAtRisk || end.Kind != coord.LeadershipEnded {
				t.Fatalf("run %d: at risk %+v, end %+v", i, risk, end)
			}
			if end.State != coord.Expired || !errors.Is(end.Err, coord.ErrLeaseExpired) {
				t.Fatalf("run %d: ended %s %v, want EXPIRED", i, end.State, end.Err)
			}
			if !risk.At.Before(end.At) || !risk.At.Before(risk.Deadline) || risk.Deadline != end.Deadline {
				t.Fatalf("run %d: AT_RISK at %v, ENDED at %v, deadline %v (ended with %v)", i, risk.At, end.At, risk.Deadline, end.Deadline)
			}
			leads = append(leads, risk.Deadline.Sub(risk.At).Milliseconds())
			ends = append(ends, end.At.Sub(end.Deadline).Milliseconds())
			px.Heal()
		}
		t.Logf("tv%d: AT_RISK before the deadline (lease %d ms, renew %d ms, margin %v, link cut): %s; EXPIRED after the deadline: %s; load %s",
			c.TxnVersion, leaseMs, renewMs, margin, percentiles(leads), percentiles(ends), loadAverage())
	})
}

// termLog is the recorded event log of every elector of a test.
type termLog struct {
	mu   sync.Mutex
	recs []termRec
}

type termRec struct {
	who  string // the elector instance ("a1", "b2", ...)
	ev   coord.TermEvent
	wall time.Time // when the consumer took it
	done time.Time // STARTED: when the term context was done (filled later)
}

func (g *termLog) add(who string, ev coord.TermEvent) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.recs = append(g.recs, termRec{who: who, ev: ev, wall: time.Now()})
	return len(g.recs) - 1
}

func (g *termLog) setDone(i int, at time.Time) {
	g.mu.Lock()
	g.recs[i].done = at
	g.mu.Unlock()
}

func (g *termLog) all() []termRec {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.recs)
}

// candidate is one elector instance with its client.
type candidate struct {
	who    string
	member string
	px     *links
	c      *coord.Client
	e      *coord.Elector
	cancel context.CancelFunc
	run    chan error
	read   chan struct{}
	log    *termLog
}

func startCandidate(t *testing.T, log *termLog, who, member, bootstrap string, px *links, c *coord.Client, role core.Role, opts ...coord.ElectOption) *candidate {
	t.Helper()
	if c == nil {
		c = linkedClient(t, bootstrap, px)
	}
	e, err := coord.NewElector(c, role, core.MustMemberID(member), opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	k := &candidate{who: who, member: member, px: px, c: c, e: e, cancel: cancel, run: make(chan error, 1), read: make(chan struct{}), log: log}
	t.Cleanup(func() {
		cancel()
		<-k.read
	})
	go func() { k.run <- e.Run(ctx) }()
	go func() {
		defer close(k.read)
		for {
			ev, err := e.Next(context.Background())
			if err != nil {
				return
			}
			i := log.add(who, ev)
			if ev.Kind == coord.TermStarted {
				context.AfterFunc(ev.Context, func() { log.setDone(i, time.Now()) })
			}
		}
	}()
	return k
}

// count returns how many events of kind the instance logged.
func (k *candidate) count(kind coord.TermEventKind) int {
	n := 0
	for _, r := range k.log.all() {
		if r.who == k.who && r.ev.Kind == kind {
			n++
		}
	}
	return n
}

func (k *candidate) last(kind coord.TermEventKind) (termRec, bool) {
	recs := k.log.all()
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].who == k.who && recs[i].ev.Kind == kind {
			return recs[i], true
		}
	}
	return termRec{}, false
}

// holding reports whether the instance's last term is open.
func (k *candidate) holding() bool {
	return k.count(coord.TermStarted) > k.count(coord.TermStopped)
}

func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// roster returns the role's roster in succession order (describe).
func roster(t *testing.T, c *coord.Client, role core.Role) []string {
	t.Helper()
	_, names := rosterOf(t, c, role)
	return names
}

// checkTermLog asserts the elector's guarantees on the recorded log: per
// instance, terms numbered 1, 2, ... with one STOPPED after every STARTED
// before the next STARTED, AT_RISK/RECOVERED only inside a term, and the
// term context done at STOPPED; across instances, every STARTED token
// supersedes the one before it. It returns how many terms it saw.
func checkTermLog(t *testing.T, recs []termRec) int {
	t.Helper()
	open := map[string]uint64{}
	last := map[string]uint64{}
	var prevTok core.FencingToken
	prevTokSet := false
	terms := 0
	for i, r := range recs {
		ev := r.ev
		switch ev.Kind {
		case coord.TermStarted:
			if open[r.who] != 0 || ev.Term != last[r.who]+1 {
				t.Fatalf("log %d: %s STARTED term %d (open %d, last %d)", i, r.who, ev.Term, open[r.who], last[r.who])
			}
			if prevTokSet && !ev.Token.Supersedes(prevTok) {
				t.Fatalf("log %d: %s STARTED with token %s, not above the previous term's %s", i, r.who, ev.Token, prevTok)
			}
			prevTok, prevTokSet = ev.Token, true
			open[r.who], last[r.who] = ev.Term, ev.Term
			terms++
		case coord.TermStopped:
			if open[r.who] != ev.Term || ev.Err == nil || ev.Context.Err() == nil {
				t.Fatalf("log %d: %s STOPPED term %d (open %d) err %v ctx %v", i, r.who, ev.Term, open[r.who], ev.Err, ev.Context.Err())
			}
			open[r.who] = 0
		case coord.TermAtRisk, coord.TermRecovered:
			if open[r.who] != ev.Term || ev.Term == 0 {
				t.Fatalf("log %d: %s %s of term %d outside it", i, r.who, ev.Kind, ev.Term)
			}
		}
	}
	return terms
}

// 20 forced failovers between two electors: kills (the holder's client
// closed abruptly, without resigning), pauses (the holder's links cut past
// its lease deadline, then healed) and resigns (the holder's Run context
// cancelled). Checked from the recorded log: the pairing of every
// instance's terms, rising tokens, and that the deposed term's context was
// done before the next term started; the takeover times are printed.
func TestElectorFailovers(t *testing.T) {
	const failovers = 20
	eachTV(t, func(t *testing.T, c *kafkatest.Cluster) {
		role := core.MustRole(uniq("it-elect-"))
		log := &termLog{}
		gen := map[string]int{}
		start := func(member string, px *links, cl *coord.Client) *candidate {
			gen[member]++
			return startCandidate(t, log, fmt.Sprintf("%s%d", member, gen[member]), member, c.Bootstrap, px, cl, role)
		}
		obs := newClient(t, c.Bootstrap)
		cands := map[string]*candidate{}
		cands["a"] = start("a", newLinks(t), nil)
		waitUntil(t, 30*time.Second, "a's first term", cands["a"].holding)
		cands["b"] = start("b", newLinks(t), nil)
		waitUntil(t, 30*time.Second, "b registered", func() bool { return len(roster(t, obs, role)) == 2 })

		kinds := []string{"kill", "pause", "resign"}
		took := map[string][]int64{}   // ms from the fault to the standby's STARTED
		gaps := map[string][]int64{}   // ms from the deposed term's context done to the next STARTED
		before := map[string][]int64{} // pause: ms the deposed term stopped before its lease deadline
		reasons := map[string]map[string]int{}
		for i := 0; i < failovers; i++ {
			kind := kinds[i%len(kinds)]
			var h, o *candidate
			waitUntil(t, 30*time.Second, "a holder", func() bool {
				h, o = nil, nil
				for _, k := range cands {
					if k.holding() {
						h = k
					} else {
						o = k
					}
				}
				return h != nil && o != nil
			})
			waitUntil(t, 30*time.Second, "the standby registered", func() bool { return len(roster(t, obs, role)) == 2 })
			started := o.count(coord.TermStarted)
			hs, _ := h.last(coord.TermStarted)
			at := time.Now()
			switch kind {
			case "kill":
				h.c.Close()
				if err := <-h.run; !errors.Is(err, coord.ErrClosed) {
					t.Fatalf("failover %d: the killed elector's Run: %v", i, err)
				}
			case "pause":
				h.px.Cut()
			case "resign":
				h.cancel()
				if err := <-h.run; err != nil {
					t.Fatalf("failover %d: the resigned elector's Run: %v", i, err)
				}
			}
			waitUntil(t, 30*time.Second, "the standby's term", func() bool { return o.count(coord.TermStarted) > started })
			ns, _ := o.last(coord.TermStarted)
			took[kind] = append(took[kind], ns.ev.At.Sub(at).Milliseconds())
			waitUntil(t, 30*time.Second, "the deposed term's STOPPED", func() bool { return !h.holding() })
			hstop, _ := h.last(coord.TermStopped)
			if reasons[kind] == nil {
				reasons[kind] = map[string]int{}
			}
			reasons[kind][hstop.ev.Reason.String()]++
			// When the deposed term's context was done, against the next
			// term's start (and, for a pause, the lease deadline).
			var ctxDone time.Time
			for _, r := range log.all() {
				if r.who == h.who && r.ev.Kind == coord.TermStarted && r.ev.Term == hs.ev.Term {
					ctxDone = r.done
				}
			}
			if ctxDone.IsZero() {
				t.Fatalf("failover %d (%s): the deposed term's context is not done at its STOPPED", i, kind)
			}
			gaps[kind] = append(gaps[kind], ns.ev.At.Sub(ctxDone).Milliseconds())
			switch kind {
			case "kill":
				if hstop.ev.Reason != coord.StopClosed {
					t.Fatalf("failover %d: killed holder stopped %s %v", i, hstop.ev.Reason, hstop.ev.Err)
				}
				cands[h.member] = start(h.member, newLinks(t), nil)
			case "pause":
				// LOST_AT_RISK, before the deadline, unless the machine was
				// so slow that the lease ran out first (EXPIRED) or the
				// standby's lease reached the view (FENCED).
				before["ctx"] = append(before["ctx"], hstop.ev.Deadline.Sub(ctxDone).Milliseconds())
				before["stopped"] = append(before["stopped"], hstop.ev.Deadline.Sub(hstop.ev.At).Milliseconds())
				if r := hstop.ev.Reason; r != coord.StopLostAtRisk && r != coord.StopExpired && r != coord.StopFenced {
					t.Fatalf("failover %d: paused holder stopped %s %v", i, r, hstop.ev.Err)
				}
				h.px.Heal() // it campaigns again by itself and queues behind o
			case "resign":
				if hstop.ev.Reason != coord.StopResigned {
					t.Fatalf("failover %d: resigned holder stopped %s %v", i, hstop.ev.Reason, hstop.ev.Err)
				}
				cands[h.member] = start(h.member, h.px, h.c) // the same client campaigns again
			}
		}
		recs := log.all()
		terms := checkTermLog(t, recs)
		if terms < failovers+1 {
			t.Fatalf("%d terms for %d failovers", terms, failovers)
		}
		for _, kind := range kinds {
			t.Logf("tv%d %s (%d): standby STARTED after the fault: %s; after the deposed term's context ended: %s; deposed term stopped: %v",
				c.TxnVersion, kind, len(took[kind]), percentiles(took[kind]), percentiles(gaps[kind]), reasons[kind])
		}
		t.Logf("tv%d pause: before the deposed lease's deadline, its term context was done by %s, its STOPPED came by %s (lease %d ms, renew %d ms, risk margin %d ms, stop margin %d ms); load %s",
			c.TxnVersion, percentiles(before["ctx"]), percentiles(before["stopped"]), leaseMs, renewMs, (leaseMs-renewMs)/2, (leaseMs-renewMs)/4, loadAverage())
		for _, g := range gaps["pause"] {
			if g < 0 {
				t.Logf("tv%d pause: a term started %d ms before the deposed term's context ended (the broker still fenced the deposed token)", c.TxnVersion, -g)
			}
		}
	})
}

// A fenced holder (Client.Fence) stops FENCED, campaigns again and is back
// in the roster behind the standby that took over; its elector keeps
// running.
func TestElectorRecampaignsAfterFenced(t *testing.T) {
	eachTV(t, func(t *testing.T, c *kafkatest.Cluster) {
		role := core.MustRole(uniq("it-fenced-"))
		log := &termLog{}
		obs := newClient(t, c.Bootstrap)
		a := startCandidate(t, log, "a1", "a", c.Bootstrap, newLinks(t), nil, role)
		waitUntil(t, 30*time.Second, "a's term", a.holding)
		b := startCandidate(t, log, "b1", "b", c.Bootstrap, newLinks(t), nil, role)
		waitUntil(t, 30*time.Second, "b registered", func() bool { return len(roster(t, obs, role)) == 2 })
		res, err := obs.Fence(ctxFor(t, 20*time.Second), role, "elector test", nil)
		if err != nil {
			t.Fatal(err)
		}
		waitUntil(t, 30*time.Second, "b's term", b.holding)
		waitUntil(t, 30*time.Second, "a's STOPPED", func() bool { return !a.holding() })
		stop, _ := a.last(coord.TermStopped)
		if stop.ev.Reason != coord.StopFenced || !errors.Is(stop.ev.Err, coord.ErrFenced) {
			t.Fatalf("a stopped %s %v", stop.ev.Reason, stop.ev.Err)
		}
		waitUntil(t, 30*time.Second, "a back in the roster", func() bool { return len(roster(t, obs, role)) == 2 })
		if got := roster(t, obs, role); strings.Join(got, ",") != "b,a" {
			t.Fatalf("roster %v, want b then a", got)
		}
		bs, _ := b.last(coord.TermStarted)
		if !bs.ev.Token.Supersedes(res.NewToken) {
			t.Fatalf("b's token %s, fence minted %s", bs.ev.Token, res.NewToken)
		}
		select {
		case err := <-a.run:
			t.Fatalf("a's elector stopped: %v", err)
		default:
		}
		if err := a.e.Healthy(); err != nil {
			t.Fatalf("a standby again: %v", err)
		}
		checkTermLog(t, log.all())
	})
}

// Cancelling the holder's context resigns: the standby takes over in
// milliseconds (measured over several handovers, printed).
func TestElectorCancelResignsStandbyTakesOver(t *testing.T) {
	const runs = 5
	eachTV(t, func(t *testing.T, c *kafkatest.Cluster) {
		role := core.MustRole(uniq("it-cancel-"))
		log := &termLog{}
		obs := newClient(t, c.Bootstrap)
		clients := map[string]*coord.Client{"a": newClient(t, c.Bootstrap), "b": newClient(t, c.Bootstrap)}
		n := map[string]int{}
		start := func(m string) *candidate {
			n[m]++
			return startCandidate(t, log, fmt.Sprintf("%s%d", m, n[m]), m, c.Bootstrap, nil, clients[m], role)
		}
		h := start("a")
		waitUntil(t, 30*time.Second, "a's term", h.holding)
		o := start("b")
		var ms []int64
		for i := 0; i < runs; i++ {
			waitUntil(t, 30*time.Second, "the standby registered", func() bool { return len(roster(t, obs, role)) == 2 })
			at := time.Now()
			h.cancel()
			if err := <-h.run; err != nil {
				t.Fatalf("run %d: Run after cancel: %v", i, err)
			}
			waitUntil(t, 30*time.Second, "the standby's term", o.holding)
			ns, _ := o.last(coord.TermStarted)
			// Run returned after it queued the TermStopped; the reader
			// goroutine logs it in its own time (a CI at load took longer
			// than the standby's takeover and saw no event yet).
			waitUntil(t, 30*time.Second, "the cancelled holder's STOPPED", func() bool { return !h.holding() })
			if hs, _ := h.last(coord.TermStopped); hs.ev.Reason != coord.StopResigned {
				t.Fatalf("run %d: the cancelled holder stopped %s %v", i, hs.ev.Reason, hs.ev.Err)
			}
			ms = append(ms, ns.ev.At.Sub(at).Milliseconds())
			// The old standby holds now; the cancelled member campaigns
			// again on its client, at the tail.
			h, o = o, start(h.member)
		}
		checkTermLog(t, log.all())
		t.Logf("tv%d: context cancelled -> the standby's STARTED: %s (lease %d ms; one resign transaction, then the standby's mint and lease transaction); load %s",
			c.TxnVersion, percentiles(ms), leaseMs, loadAverage())
	})
}

// Eligibility: a standby withdrawn leaves the roster and, restored, comes
// back at its tail; a holder withdrawn resigns and the first standby takes
// over; restored, it queues at the tail and does not take the role back.
func TestElectorEligibilityMovesMemberToTail(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{})
	role := core.MustRole(uniq("it-elig-"))
	log := &termLog{}
	obs := newClient(t, c.Bootstrap)
	a := startCandidate(t, log, "a1", "a", c.Bootstrap, nil, newClient(t, c.Bootstrap), role)
	waitUntil(t, 30*time.Second, "a's term", a.holding)
	b := startCandidate(t, log, "b1", "b", c.Bootstrap, nil, newClient(t, c.Bootstrap), role)
	waitUntil(t, 30*time.Second, "b registered", func() bool { return len(roster(t, obs, role)) == 2 })
	cc := startCandidate(t, log, "c1", "c", c.Bootstrap, nil, newClient(t, c.Bootstrap), role)
	waitUntil(t, 30*time.Second, "c registered", func() bool { return len(roster(t, obs, role)) == 3 })
	if got := roster(t, obs, role); strings.Join(got, ",") != "a,b,c" {
		t.Fatalf("roster %v", got)
	}
	if err := b.e.SetEligible(ctxFor(t, 20*time.Second), false); err != nil {
		t.Fatal(err)
	}
	if got := roster(t, obs, role); strings.Join(got, ",") != "a,c" {
		t.Fatalf("roster with b withdrawn: %v", got)
	}
	if err := b.e.SetEligible(ctxFor(t, 20*time.Second), true); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, "b back", func() bool { return len(roster(t, obs, role)) == 3 })
	if got := roster(t, obs, role); strings.Join(got, ",") != "a,c,b" {
		t.Fatalf("roster with b back: %v, want b at the tail", got)
	}
	at := time.Now()
	if err := a.e.SetEligible(ctxFor(t, 20*time.Second), false); err != nil {
		t.Fatal(err)
	}
	// Bounded at 60 s (not a timing check): once, in a full make test beside
	// a fault campaign at load 50, c had no term after 30 s; the roster and
	// the holder are printed if it happens again.
	deadline := time.Now().Add(60 * time.Second)
	for !cc.holding() {
		if time.Now().After(deadline) {
			st, err := obs.Describe(ctxFor(t, 10*time.Second), role)
			t.Fatalf("timed out after 60s waiting for c's term; roster %v, describe %+v %v", roster(t, obs, role), st, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cs, _ := cc.last(coord.TermStarted)
	took := cs.ev.At.Sub(at).Milliseconds()
	waitUntil(t, 30*time.Second, "a's STOPPED", func() bool { return !a.holding() })
	if as, _ := a.last(coord.TermStopped); as.ev.Reason != coord.StopResigned {
		t.Fatalf("a stopped %s %v", as.ev.Reason, as.ev.Err)
	}
	if got := roster(t, obs, role); strings.Join(got, ",") != "c,b" {
		t.Fatalf("roster after the holder withdrew: %v", got)
	}
	if err := a.e.SetEligible(ctxFor(t, 20*time.Second), true); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, "a back", func() bool { return len(roster(t, obs, role)) == 3 })
	if got := roster(t, obs, role); strings.Join(got, ",") != "c,b,a" {
		t.Fatalf("roster with a back: %v", got)
	}
	if a.holding() || b.holding() {
		t.Fatal("a withdrawn-and-restored member took the role")
	}
	checkTermLog(t, log.all())
	t.Logf("holder withdrew -> next standby's STARTED: %d ms", took)
}
