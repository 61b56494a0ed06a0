package kafka_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/kafka"
	"github.com/krabka/krabka-coord/tests/kafka/kafkatest"
)

// pausableView is a transport whose live-view fetches can be held back, so
// that a holder cannot see a record that deposes it and its next write has
// to be refused by the broker.
type pausableView struct {
	*kafka.Transport
	mu     sync.Mutex
	paused chan struct{} // non-nil while paused; closed on resume
}

func (p *pausableView) pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused == nil {
		p.paused = make(chan struct{})
	}
}

func (p *pausableView) resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused != nil {
		close(p.paused)
		p.paused = nil
	}
}

// Fetch holds back the answer of a fetch that returns while paused (a long
// poll already in flight when pause was called included).
func (p *pausableView) Fetch(ctx context.Context, partition int32, offset int64, maxWait time.Duration) (coord.Fetched, error) {
	f, err := p.Transport.Fetch(ctx, partition, offset, maxWait)
	p.mu.Lock()
	ch := p.paused
	p.mu.Unlock()
	if ch != nil {
		select {
		case <-ch:
		case <-ctx.Done():
			return coord.Fetched{}, ctx.Err()
		}
	}
	return f, err
}

func waitRegistered(t *testing.T, c *coord.Client, role core.Role, member string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; {
		st, err := c.Describe(ctxFor(t, 10*time.Second), role)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range st.Roster {
			if r.Member.String() == member {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never registered in %s: %+v", member, role, st.Roster)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// An administrative fence (docs/PROTOCOL.md 11.4, krabka-coord fence): the
// holder, whose view is held back so that it cannot learn of the fence from
// the log, has its next produce refused by the broker; the waiting standby
// takes over at once; nothing the deposed holder wrote after the fence is in
// the log; and when it campaigns again it lands at the tail.
func TestFenceDeposesTheHolderThroughTheBroker(t *testing.T) {
	eachTV(t, func(t *testing.T, c *kafkatest.Cluster) {
		topic, read := dataTopic(t, c.Bootstrap)
		long := []string{"krabka.lease.ms", "30000", "krabka.renew.interval.ms", "10000"}
		cfgA := testConfig(t, c.Bootstrap, long...)
		trA, err := kafka.New(cfgA)
		if err != nil {
			t.Fatal(err)
		}
		view := &pausableView{Transport: trA}
		ca, err := coord.NewClient(cfgA, view, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ca.Close() })
		cb := newClient(t, c.Bootstrap, long...)
		cf := newClient(t, c.Bootstrap)
		role := core.MustRole(uniq("it-fence-"))
		a := acquire(t, ca, role, "a")
		if _, err := a.Produce(ctxFor(t, 10*time.Second), coord.Message{Topic: topic, Partition: 0, Key: []byte("a"), Value: []byte("a-before")}); err != nil {
			t.Fatal(err)
		}
		bAcq := acquireAsync(ctxFor(t, 60*time.Second), cb, role, "b")
		waitRegistered(t, cf, role, "b")

		view.pause()
		res, err := cf.Fence(ctxFor(t, 20*time.Second), role, "it-test operator", nil)
		if err != nil {
			t.Fatal(err)
		}
		fencedAt := time.Now()
		if res.Deposed.String() != "a" || res.OldToken != a.Token() || !res.NewToken.Supersedes(a.Token()) || !res.LeaseWasLive {
			t.Fatalf("fence result %+v (a holds %s)", res, a.Token())
		}
		got := <-bAcq
		if got.err != nil {
			t.Fatalf("the standby after the fence: %v", got.err)
		}
		t.Logf("fence %s -> %s; the standby won %s %v after the fence returned",
			res.OldToken, res.NewToken, got.l.Token(), time.UnixMilli(got.at).Sub(fencedAt).Round(time.Millisecond))
		if !got.l.Token().Supersedes(res.NewToken) {
			t.Fatalf("the standby's token %s does not supersede the fence's %s", got.l.Token(), res.NewToken)
		}

		// The deposed holder still believes it leads; the broker refuses it.
		if a.State() != coord.Active {
			t.Fatalf("the holder learned of the fence without a write: %s %v", a.State(), a.Err())
		}
		_, err = a.Produce(ctxFor(t, 10*time.Second), coord.Message{Topic: topic, Partition: 0, Key: []byte("a"), Value: []byte("a-after")})
		if !errors.Is(err, coord.ErrFenced) || !(strings.Contains(err.Error(), "PRODUCER_FENCED") || strings.Contains(err.Error(), "INVALID_PRODUCER_EPOCH")) {
			t.Fatalf("the deposed holder's produce: %v (want the broker's refusal)", err)
		}
		t.Logf("the deposed holder's produce: %v", err)
		view.resume()

		// It campaigns again: registered at the tail, behind the new holder.
		if _, _, err := ca.TryAcquire(ctxFor(t, 10*time.Second), role, core.MustMemberID("a")); err != nil {
			t.Fatal(err)
		}
		st, err := cf.Describe(ctxFor(t, 10*time.Second), role)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Roster) != 2 || st.Roster[0].Member.String() != "b" || st.Roster[1].Member.String() != "a" || st.Holder.String() != "b" {
			t.Fatalf("after the deposed holder came back: holder %s roster %+v", st.Holder, st.Roster)
		}
		vals := strings.Join(values(read()), ",")
		if vals != "a-before" {
			t.Fatalf("the command log holds %q, want only a-before", vals)
		}
	})
}

// fence --to: the named standby takes over at once although another one
// ranks ahead of it; that one is not pruned and would have waited one more
// stagger (docs/PROTOCOL.md 11.3).
func TestFenceToANamedSuccessor(t *testing.T) {
	eachTV(t, func(t *testing.T, c *kafkatest.Cluster) {
		// A 30 s stagger: the rank-0 standby cannot win within this test.
		slow := []string{"krabka.lease.ms", "30000", "krabka.renew.interval.ms", "10000", "krabka.challenge.stagger.ms", "30000"}
		ca := newClient(t, c.Bootstrap, slow...)
		cb := newClient(t, c.Bootstrap, slow...)
		cc := newClient(t, c.Bootstrap, slow...)
		cf := newClient(t, c.Bootstrap, slow...)
		role := core.MustRole(uniq("it-fence-to-"))
		a := acquire(t, ca, role, "a")
		bCtx, bCancel := context.WithCancel(context.Background())
		defer bCancel()
		bAcq := acquireAsync(bCtx, cb, role, "b")
		waitRegistered(t, cf, role, "b")
		cAcq := acquireAsync(ctxFor(t, 60*time.Second), cc, role, "c")
		waitRegistered(t, cf, role, "c")
		cm := core.MustMemberID("c")
		if _, err := cf.Fence(ctxFor(t, 20*time.Second), role, "it-test", &core.MemberID{}); !errors.Is(err, coord.ErrInvalidArgument) {
			t.Fatalf("a successor that is not registered: %v", err)
		}
		res, err := cf.Fence(ctxFor(t, 20*time.Second), role, "it-test", &cm)
		if err != nil {
			t.Fatal(err)
		}
		fencedAt := time.Now()
		got := <-cAcq
		if got.err != nil {
			t.Fatalf("the named successor: %v", got.err)
		}
		t.Logf("the named successor won %s %v after the fence", got.l.Token(), time.UnixMilli(got.at).Sub(fencedAt).Round(time.Millisecond))
		select {
		case r := <-bAcq:
			t.Fatalf("the rank-0 standby returned %v %v although c was named", r.l, r.err)
		default:
		}
		select {
		case <-a.Done():
		case <-time.After(20 * time.Second):
			t.Fatal("the deposed holder was never told")
		}
		if !errors.Is(a.Err(), coord.ErrFenced) {
			t.Fatalf("the deposed holder ended with %v", a.Err())
		}
		st, err := cf.Describe(ctxFor(t, 10*time.Second), role)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, r := range st.Roster {
			names = append(names, r.Member.String())
		}
		if st.Holder.String() != "c" || strings.Join(names, ",") != "b,c" || !got.l.Token().Supersedes(res.NewToken) {
			t.Fatalf("after the hand-over: holder %s token %s roster %v", st.Holder, st.Token, names)
		}
	})
}
