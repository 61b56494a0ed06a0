package kafka_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/tests/kafka/kafkatest"
)

// Riding out an outage of the whole cluster (krabka.elector.ride.outage,
// docs/ELECTOR.md) on real brokers: a holder whose every link is cut, or
// whose only broker is stopped, past its lease deadline keeps its term
// (SUSPENDED) and resumes under the token it won when the cluster answers
// again; a holder cut off while a standby could still reach the cluster
// and minted ends FENCED at its first request, and nothing it tried to
// write is in the log. The timings are logged (t.Logf, -v).

// rideOpts is the elector option of the holder in these tests: the
// configuration key would do the same; the option names what is tested.
var rideOpts = []coord.ElectOption{coord.ElectRideOutage(true)}

// suspendedThenResumed waits for k's SUSPENDED, then for its RECOVERED
// after heal() ran, and returns both records and the heal instant.
func suspendedThenResumed(t *testing.T, k *candidate, outage time.Duration, heal func()) (termRec, termRec, time.Time, time.Time) {
	t.Helper()
	waitUntil(t, 30*time.Second, k.who+"'s SUSPENDED", func() bool { return k.count(coord.TermSuspended) == 1 })
	sus, _ := k.last(coord.TermSuspended)
	if st := k.e.State(); st != coord.ElectorSuspended && k.count(coord.TermRecovered) == 0 {
		t.Fatalf("%s suspended, state %s", k.who, st)
	}
	if h := k.e.Healthy(); !errors.Is(h, coord.ElectorSuspended) {
		t.Fatalf("%s suspended, healthy %v", k.who, h)
	}
	// Keep the outage going well past the lease deadline.
	until := sus.ev.Deadline.Add(outage)
	time.Sleep(time.Until(until))
	if k.count(coord.TermStopped) != 0 {
		r, _ := k.last(coord.TermStopped)
		t.Fatalf("%s's term stopped during the outage: %s %v", k.who, r.ev.Reason, r.ev.Err)
	}
	if l := sus.ev.Leadership; l.State() != coord.Active || sus.ev.Context.Err() != nil {
		t.Fatalf("%s's leadership %s, term context %v %s past the deadline", k.who, l.State(), sus.ev.Context.Err(), outage)
	}
	healed := time.Now()
	heal()
	waitUntil(t, 60*time.Second, k.who+"'s RECOVERED or STOPPED", func() bool {
		return k.count(coord.TermRecovered) > 0 || k.count(coord.TermStopped) > 0
	})
	if k.count(coord.TermStopped) > 0 {
		r, _ := k.last(coord.TermStopped)
		t.Fatalf("%s's suspended term stopped after the heal: %s %v", k.who, r.ev.Reason, r.ev.Err)
	}
	rec, _ := k.last(coord.TermRecovered)
	return sus, rec, healed, rec.wall
}

// rideCut is the start of the tests that cut links: a, riding out outages
// behind the links pa, holds role; b, behind pb, is a standby in its roster.
type rideCut struct {
	role    core.Role
	topic   string
	read    func() []core.RawRecord
	log     *termLog
	obs     *coord.Client
	pa, pb  *links
	a, b    *candidate
	started termRec // a's TermStarted
}

func startRideCut(t *testing.T, c *kafkatest.Cluster, prefix string) *rideCut {
	t.Helper()
	s := &rideCut{role: core.MustRole(uniq(prefix))}
	s.topic, s.read = dataTopic(t, c.Bootstrap)
	s.log = &termLog{}
	s.obs = newClient(t, c.Bootstrap)
	s.pa, s.pb = newLinks(t), newLinks(t)
	s.a = startCandidate(t, s.log, "a1", "a", c.Bootstrap, s.pa, nil, s.role, rideOpts...)
	waitUntil(t, 30*time.Second, "a's term", s.a.holding)
	s.b = startCandidate(t, s.log, "b1", "b", c.Bootstrap, s.pb, nil, s.role)
	waitUntil(t, 30*time.Second, "b registered", func() bool { return len(roster(t, s.obs, s.role)) == 2 })
	s.started, _ = s.a.last(coord.TermStarted)
	return s
}

// Every link of the holder and of the standby cut (silent) for three
// leases past the holder's deadline: the term is SUSPENDED, never stopped;
// the holder's links healed first, it renews under the same token
// (RECOVERED) and writes; the standby's links healed after it, it finds a
// live lease and stays a standby.
func TestElectorRidesOutCutLinksUnderTheSameToken(t *testing.T) {
	eachTV(t, func(t *testing.T, c *kafkatest.Cluster) {
		s := startRideCut(t, c, "it-ride-")
		a, b, pa, pb, started := s.a, s.b, s.pa, s.pb, s.started
		topic, read := s.topic, s.read
		l := started.ev.Leadership
		if _, err := l.Produce(ctxFor(t, 20*time.Second), coord.Message{Topic: topic, Partition: 0, Key: []byte("a before the outage"), Value: []byte("a before the outage")}); err != nil {
			t.Fatal(err)
		}

		cut := time.Now()
		pa.Cut()
		pb.Cut()
		outage := 3 * leaseMs * time.Millisecond
		sus, rec, healed, resumed := suspendedThenResumed(t, a, outage, pa.Heal)
		if rec.ev.Token != started.ev.Token || l.Token() != started.ev.Token {
			t.Fatalf("resumed under %s (leadership %s), won under %s", rec.ev.Token, l.Token(), started.ev.Token)
		}
		if st := a.e.State(); st != coord.ElectorHolding || a.e.Healthy() != nil {
			t.Fatalf("after resuming: %s, %v", st, a.e.Healthy())
		}
		if _, err := l.Produce(ctxFor(t, 20*time.Second), coord.Message{Topic: topic, Partition: 0, Key: []byte("a after the outage"), Value: []byte("a after the outage")}); err != nil {
			t.Fatalf("a guarded write after resuming: %v", err)
		}
		pb.Heal()
		time.Sleep(2 * leaseMs * time.Millisecond) // b's view catches up; its turn never comes
		if b.count(coord.TermStarted) != 0 || a.count(coord.TermStopped) != 0 {
			t.Fatalf("after healing b: b started %d terms, a stopped %d", b.count(coord.TermStarted), a.count(coord.TermStopped))
		}
		st, _ := rosterOf(t, s.obs, s.role)
		if st.Holder != core.MustMemberID("a") || st.Token != started.ev.Token || !st.Current {
			t.Fatalf("describe after the outage: holder %s token %s current %v", st.Holder, st.Token, st.Current)
		}
		if got := values(read()); !slices.Equal(got, []string{"a before the outage", "a after the outage"}) {
			t.Fatalf("committed records %q", got)
		}
		t.Logf("%s: links cut for %d ms (the lease deadline passed %d ms before the heal); SUSPENDED %d ms before the deadline; "+
			"RECOVERED %d ms after the heal; token %s before and %s after; b stayed a standby (load %s)",
			c.Name, healed.Sub(cut).Milliseconds(), healed.Sub(sus.ev.Deadline).Milliseconds(),
			sus.ev.Deadline.Sub(sus.wall).Milliseconds(), resumed.Sub(healed).Milliseconds(),
			started.ev.Token, rec.ev.Token, loadAverage())
		checkTermLog(t, s.log.all())
	})
}

// The holder's links cut while a standby's are not: the standby mints at
// the holder's lease deadline and writes. The suspended holder's guarded
// write, tried during the cut, and the heal: its term ends FENCED at its
// first request, and the log (read_committed) holds the standby's record
// and nothing the suspended term tried to write.
func TestElectorSuspendedTermEndsFencedAfterAStandbyMinted(t *testing.T) {
	eachTV(t, func(t *testing.T, c *kafkatest.Cluster) {
		s := startRideCut(t, c, "it-ride-fenced-")
		a, b, pa, startedA := s.a, s.b, s.pa, s.started
		topic, read := s.topic, s.read
		la := startedA.ev.Leadership

		cut := time.Now()
		pa.Cut()
		waitUntil(t, 30*time.Second, "a's SUSPENDED", func() bool { return a.count(coord.TermSuspended) == 1 })
		waitUntil(t, 30*time.Second, "b's term", b.holding)
		startedB, _ := b.last(coord.TermStarted)
		if !startedB.ev.Token.Supersedes(startedA.ev.Token) {
			t.Fatalf("b's token %s does not supersede a's %s", startedB.ev.Token, startedA.ev.Token)
		}
		if _, err := startedB.ev.Leadership.Produce(ctxFor(t, 20*time.Second), coord.Message{Topic: topic, Partition: 0, Key: []byte("b after its mint"), Value: []byte("b after its mint")}); err != nil {
			t.Fatal(err)
		}
		if a.count(coord.TermStopped) != 0 {
			r, _ := a.last(coord.TermStopped)
			t.Fatalf("a's term stopped during the cut: %s %v", r.ev.Reason, r.ev.Err)
		}
		// A write of the suspended term (a host that did not stop
		// dispatching): it cannot reach the cluster now, and the broker
		// refuses it once it can.
		wrote := make(chan error, 1)
		go func() {
			_, err := la.Produce(ctxFor(t, 60*time.Second), coord.Message{Topic: topic, Partition: 0, Key: []byte("a while suspended"), Value: []byte("a while suspended")})
			wrote <- err
		}()
		time.Sleep(500 * time.Millisecond)
		healed := time.Now()
		pa.Heal()
		waitUntil(t, 60*time.Second, "a's STOPPED", func() bool { return a.count(coord.TermStopped) == 1 })
		stop, _ := a.last(coord.TermStopped)
		if stop.ev.Reason != coord.StopFenced || !errors.Is(stop.ev.Err, coord.ErrFenced) {
			t.Fatalf("a's suspended term: %s %v", stop.ev.Reason, stop.ev.Err)
		}
		// A RECOVERED before the cut (a renewal late under load) is no
		// matter; none may come after the SUSPENDED.
		sus, _ := a.last(coord.TermSuspended)
		if rec, ok := a.last(coord.TermRecovered); ok && rec.wall.After(sus.wall) {
			t.Fatalf("a's suspended term RECOVERED after a standby minted (token %s)", rec.ev.Token)
		}
		var werr error
		select {
		case werr = <-wrote:
		case <-time.After(60 * time.Second):
			t.Fatal("the suspended term's write never returned")
		}
		if werr == nil {
			t.Fatal("the suspended term's write succeeded after a standby minted")
		}
		recs := values(read())
		if slices.Contains(recs, "a while suspended") || !slices.Contains(recs, "b after its mint") {
			t.Fatalf("committed records %q", recs)
		}
		t.Logf("%s: a's links cut; b minted %d ms after the cut (token %s over %s); a healed after %d ms, STOPPED %s %d ms after the heal; "+
			"a's write while suspended: %v; committed: %q",
			c.Name, startedB.wall.Sub(cut).Milliseconds(), startedB.ev.Token, startedA.ev.Token, healed.Sub(cut).Milliseconds(),
			stop.ev.Reason, stop.wall.Sub(healed).Milliseconds(), werr, recs)
		checkTermLog(t, s.log.all())
	})
}

// Every broker of a cluster of its own stopped (a one-node cluster, the
// node killed) for three leases past the holder's deadline, then
// restarted: the term is SUSPENDED meanwhile and resumes under the token
// it won. The standby rides out outages too: back with the cluster, it
// leaves the holder one lease to renew instead of racing it to the
// restarted coordinator (without that, its mint won the race here).
func TestElectorRidesOutEveryBrokerStopped(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{Name: "i39b-outage"})
	role := core.MustRole(uniq("it-ride-stop-"))
	log := &termLog{}
	ca := newClient(t, c.Bootstrap, "request.timeout.ms", "3000")
	cb := newClient(t, c.Bootstrap)
	a := startCandidate(t, log, "a1", "a", c.Bootstrap, nil, ca, role, rideOpts...)
	waitUntil(t, 60*time.Second, "a's term", a.holding)
	b := startCandidate(t, log, "b1", "b", c.Bootstrap, nil, cb, role, rideOpts...)
	waitUntil(t, 30*time.Second, "b registered", func() bool { return len(roster(t, ca, role)) == 2 })
	started, _ := a.last(coord.TermStarted)

	stopped := time.Now()
	c.KillNode(t, 1)
	var back time.Time
	sus, rec, restart, resumed := suspendedThenResumed(t, a, 3*leaseMs*time.Millisecond, func() {
		c.StartNode(t, 1)
		back = time.Now()
	})
	if rec.ev.Token != started.ev.Token {
		t.Fatalf("resumed under %s, won under %s", rec.ev.Token, started.ev.Token)
	}
	time.Sleep(2 * leaseMs * time.Millisecond)
	if b.count(coord.TermStarted) != 0 || a.count(coord.TermStopped) != 0 {
		t.Fatalf("after the restart: b started %d terms, a stopped %d", b.count(coord.TermStarted), a.count(coord.TermStopped))
	}
	st, _ := rosterOf(t, cb, role)
	if st.Holder != core.MustMemberID("a") || st.Token != started.ev.Token || !st.Current {
		t.Fatalf("describe after the restart: holder %s token %s current %v", st.Holder, st.Token, st.Current)
	}
	t.Logf("%s: outage %d ms (the only broker killed, restarted after %d ms, answering again %d ms later, %d ms past a's lease deadline); "+
		"SUSPENDED %d ms before the deadline; RECOVERED %d ms after the restart began (%+d ms from the readiness check's answer); token %s before and %s after; b stayed a standby (load %s)",
		c.Name, back.Sub(stopped).Milliseconds(), restart.Sub(stopped).Milliseconds(), back.Sub(restart).Milliseconds(), back.Sub(sus.ev.Deadline).Milliseconds(),
		sus.ev.Deadline.Sub(sus.wall).Milliseconds(), resumed.Sub(restart).Milliseconds(), resumed.Sub(back).Milliseconds(), started.ev.Token, rec.ev.Token, loadAverage())
	checkTermLog(t, log.all())
}
