package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/kafka"
	"github.com/krabka/krabka-coord/tests/kafka/kafkatest"
)

// freezeClock is the wall clock of a process that can be frozen (a
// SIGSTOP, a long GC pause): while frozen, NowMs stands still and Sleep
// does not end, so no renewal, deadline or stop-margin timer fires.
type freezeClock struct {
	mu       sync.Mutex
	frozen   bool
	frozenAt int64
}

func (f *freezeClock) NowMs() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.frozen {
		return f.frozenAt
	}
	return time.Now().UnixMilli()
}

func (f *freezeClock) Sleep(ctx context.Context, d time.Duration) error {
	until := f.NowMs() + d.Milliseconds()
	for {
		left := until - f.NowMs()
		if left <= 0 {
			return nil
		}
		step := min(time.Duration(left)*time.Millisecond, 10*time.Millisecond)
		select {
		case <-time.After(step):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (f *freezeClock) freeze() {
	f.mu.Lock()
	f.frozen, f.frozenAt = true, time.Now().UnixMilli()
	f.mu.Unlock()
}

func (f *freezeClock) thaw() {
	f.mu.Lock()
	f.frozen = false
	f.mu.Unlock()
}

// setLog collects an ElectorSet's events.
type setLog struct {
	mu   sync.Mutex
	evs  []coord.RoleEvent
	done chan struct{} // closed when the stream ended
}

func logSet(s *coord.ElectorSet) *setLog {
	l := &setLog{done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for ev := range s.Events() {
			l.mu.Lock()
			l.evs = append(l.evs, ev)
			l.mu.Unlock()
		}
	}()
	return l
}

// started returns each role's latest STARTED event.
func (l *setLog) started() map[core.Role]coord.RoleEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[core.Role]coord.RoleEvent{}
	for _, ev := range l.evs {
		if ev.Kind == coord.TermStarted {
			out[ev.Role] = ev
		}
	}
	return out
}

func (l *setLog) count(k coord.TermEventKind) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, ev := range l.evs {
		if ev.Kind == k {
			n++
		}
	}
	return n
}

func waitSetCond(t *testing.T, what string, max time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(max); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", max, what)
		}
	}
}

// Two ElectorSets in two clients over 50 roles: a holds every role, b
// stands by for every one. a's process freezes (its clock stands still,
// its view reads nothing: a SIGSTOP or a long GC pause); b takes every
// role once a's leases ran out, each event tagged with its role and each
// token superseding a's. a, still believing it holds the roles, writes
// under one of them: the broker refuses it (FENCED), and the write is not
// in the topic when read back, while b's write under the same role is.
func TestElectorSetTakesEveryRoleOfAFrozenSet(t *testing.T) {
	const n = 50
	eachTV(t, func(t *testing.T, c *kafkatest.Cluster) {
		topic, read := dataTopic(t, c.Bootstrap)
		// Leases of 6 s renewed every 1.5 s: 100 roles renewing on a loaded
		// machine (2 cores, other suites) must not lose terms before the freeze.
		slow := []string{"krabka.lease.ms", "6000", "krabka.renew.interval.ms", "1500"}
		cfgA := testConfig(t, c.Bootstrap, slow...)
		trA, err := kafka.New(cfgA)
		if err != nil {
			t.Fatal(err)
		}
		view := &pausableView{Transport: trA}
		clock := &freezeClock{}
		ca, err := coord.NewClient(cfgA, view, clock)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			view.resume()
			clock.thaw()
			ca.Close()
		})
		cb := newClient(t, c.Bootstrap, slow...)
		prefix := uniq("it-set-")
		roles := make([]core.Role, n)
		for i := range roles {
			roles[i] = core.MustRole(fmt.Sprintf("%s-%02d", prefix, i))
		}
		newSet := func(cl *coord.Client, member string) (*coord.ElectorSet, *setLog) {
			s, err := coord.NewElectorSet(cl, core.MustMemberID(member))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close(context.Background()) })
			log := logSet(s)
			for _, r := range roles {
				if err := s.Add(r); err != nil {
					t.Fatal(err)
				}
			}
			return s, log
		}
		sa, la := newSet(ca, "a")
		waitSetCond(t, "a holds every role", 90*time.Second, func() bool { return len(la.started()) == n })
		sb, lb := newSet(cb, "b")
		// b stands by for every role: its registration is in every roster.
		for _, r := range roles {
			waitSetCond(t, "b registered for "+r.String(), 60*time.Second, func() bool {
				st, err := cb.Describe(ctxFor(t, 20*time.Second), r)
				if err != nil {
					return false
				}
				members := map[string]bool{}
				for _, e := range st.Roster {
					members[e.Member.String()] = true
				}
				return members["a"] && members["b"]
			})
		}
		// What a holds at the freeze: every role, unless the load cost it a
		// term (then b holds that one already; b must end with all of them).
		held := sa.Held()
		t.Logf("a holds %d of %d roles, b stands by for each", len(held), n)
		if len(held)+len(sb.Held()) != n {
			t.Fatalf("a holds %d, b %d of %d roles", len(held), len(sb.Held()), n)
		}
		victim := roles[7]
		if held[victim] == nil {
			for _, r := range roles {
				if held[r] != nil {
					victim = r
					break
				}
			}
		}
		aTerm := held[victim]
		if aTerm == nil || aTerm.Role() != victim {
			t.Fatalf("a holds no role to write under (victim %s: %v)", victim, aTerm)
		}
		if _, err := aTerm.Produce(ctxFor(t, 10*time.Second), coord.Message{Topic: topic, Partition: 0, Key: []byte("a-before"), Value: []byte("a-before")}); err != nil {
			t.Fatal(err)
		}

		aStarted := la.started()
		stoppedBefore := la.count(coord.TermStopped)
		la.mu.Lock()
		frozenEv := len(la.evs)
		la.mu.Unlock()
		view.pause()
		clock.freeze()
		frozenAt := time.Now()
		// Held counts a role as soon as its term starts; the recorder
		// takes the STARTED from the stream a moment later: wait for both.
		waitSetCond(t, "b takes every role", 120*time.Second, func() bool { return len(sb.Held()) == n && len(lb.started()) == n })
		t.Logf("b took all %d roles %v after a froze", n, time.Since(frozenAt).Round(time.Millisecond))
		for _, r := range roles {
			ev := lb.started()[r]
			if ev.Role != r || ev.Leadership.Role() != r || ev.Holder.String() != "b" || !ev.Token.Supersedes(aStarted[r].Token) {
				t.Fatalf("b's STARTED of %s: tagged %s, %s %s %s (a had %s)", r, ev.Role, ev.Leadership.Role(), ev.Holder, ev.Token, aStarted[r].Token)
			}
		}
		if la.count(coord.TermStopped) != stoppedBefore || aTerm.State() != coord.Active {
			t.Fatalf("frozen a learned of the takeover without a write: %d stopped, %s", la.count(coord.TermStopped)-stoppedBefore, aTerm.State())
		}
		// The deposed holder writes: the broker refuses its token.
		_, err = aTerm.Produce(ctxFor(t, 10*time.Second), coord.Message{Topic: topic, Partition: 0, Key: []byte("a-after"), Value: []byte("a-after")})
		if !errors.Is(err, coord.ErrFenced) || !(strings.Contains(err.Error(), "PRODUCER_FENCED") || strings.Contains(err.Error(), "INVALID_PRODUCER_EPOCH")) {
			t.Fatalf("the deposed holder's write: %v (want the broker's refusal)", err)
		}
		t.Logf("the deposed holder's write under %s: %v", victim, err)
		bTerm := lb.started()[victim].Leadership
		if _, err := bTerm.Produce(ctxFor(t, 10*time.Second), coord.Message{Topic: topic, Partition: 0, Key: []byte("b-after"), Value: []byte("b-after")}); err != nil {
			t.Fatal(err)
		}
		vals := values(read())
		if !slices.Contains(vals, "a-before") || !slices.Contains(vals, "b-after") || slices.Contains(vals, "a-after") {
			t.Fatalf("read back %v", vals)
		}
		// Thawed, a learns: every term it held at the freeze stops, none
		// resigned (it no longer held them), and b keeps every role.
		view.resume()
		clock.thaw()
		waitSetCond(t, "a's terms stop", 60*time.Second, func() bool { return la.count(coord.TermStopped) == stoppedBefore+len(held) })
		la.mu.Lock()
		for _, ev := range la.evs[frozenEv:] {
			if ev.Kind == coord.TermStopped && ev.Reason == coord.StopResigned {
				t.Errorf("a's term of %s stopped %s: %v", ev.Role, ev.Reason, ev.Err)
			}
		}
		la.mu.Unlock()
		if len(sb.Held()) != n {
			t.Fatalf("b holds %d of %d roles after a thawed", len(sb.Held()), n)
		}
		if err := sa.Close(ctxFor(t, 30*time.Second)); err != nil {
			t.Fatal(err)
		}
		if err := sb.Close(ctxFor(t, 30*time.Second)); err != nil {
			t.Fatal(err)
		}
		<-lb.done
		if lb.count(coord.TermStopped) != lb.count(coord.TermStarted) || lb.count(coord.TermElectorStopped) != n {
			t.Fatalf("b after Close: %d started, %d stopped, %d ended", lb.count(coord.TermStarted), lb.count(coord.TermStopped), lb.count(coord.TermElectorStopped))
		}
	})
}
